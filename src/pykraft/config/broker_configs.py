"""Broker configs as Kafka describes them: every ``KafkaConfig`` key with its value, source,
synonyms, sensitivity, type and update mode (Kafka's ``ConfigHelper`` and
``DynamicBrokerConfig``).

A node's config has four layers, highest precedence first: dynamic configs of this node
(ConfigRecords of BROKER ``"<id>"``), dynamic cluster defaults (BROKER ``""``), the static
properties file the process started with, and Kafka's defaults. The keys and defaults are
Kafka 4.4's (:mod:`pykraft.config.kafka_broker_table`) plus pykraft's own keys, the same
table ``pykraft server`` checks its properties against, so what DescribeConfigs shows is
what the process reads.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, replace

from pykraft.config.authorizer import ALLOW_EVERYONE_IF_NO_ACL_FOUND, SUPER_USERS
from pykraft.config.definitions import ConfigDef, ConfigSource, ConfigType
from pykraft.config.kafka_broker_table import KAFKA_VERSION
from pykraft.config.kafka_keys import KAFKA_KEY_DEFS
from pykraft.config.server import CONFIG_DEFS as SERVER_KEYS
from pykraft.config.server import INTERNAL_METADATA_LOG_SEGMENT_BYTES

#: pykraft's own keys (Kafka has none of them), with their types; defaults and docs come
#: from :mod:`pykraft.config.server`.
_PYKRAFT_KEY_TYPES: Mapping[str, ConfigType] = {
    "metrics.port": ConfigType.INT,
    "metrics.host": ConfigType.STRING,
    "pykraft.server.extension.class": ConfigType.CLASS,
    "pykraft.shutdown.timeout.ms": ConfigType.INT,
    "pykraft.event.loop": ConfigType.STRING,
    "pykraft.broker.fence.on.refused.connection.enable": ConfigType.BOOLEAN,
}
_SERVER_KEYS = {d.key: d for d in SERVER_KEYS}
_LISTENER_OVERRIDE = re.compile(r"listener\.name\.[^.]*\.(.*)")
#: Keys a listener override names as listener.name.<listener>.<mechanism>.<key> (Kafka's
#: ListenerMechanismConfigs): their synonym is <key>, not <mechanism>.<key>.
_MECHANISM_KEYS = ("sasl.jaas.config", "sasl.login.callback.handler.class", "sasl.login.class",
                   "sasl.server.callback.handler.class", "connections.max.reauth.ms")
#: Keys of one setting in several units, highest precedence first (brokerConfigSynonyms).
_UNIT_SYNONYMS = (
    ("log.roll.ms", "log.roll.hours"),
    ("log.roll.jitter.ms", "log.roll.jitter.hours"),
    ("log.retention.ms", "log.retention.minutes", "log.retention.hours"),
)
_FLUSH_SYNONYMS = ("log.flush.interval.ms", "log.flush.scheduler.interval.ms")


def _doc(name: str, mode: str) -> str:
    """pykraft's own doc for a key it reads; for the rest, say plainly that it is only
    accepted (Kafka's prose is not copied)."""
    used = _SERVER_KEYS.get(name)
    if used is not None:
        return used.doc
    return f"Kafka {KAFKA_VERSION} broker config ({mode}); accepted, not used by pykraft."


def _table() -> Iterator[ConfigDef]:
    for kafka in KAFKA_KEY_DEFS.values():
        default = kafka.default
        if kafka.name in _SERVER_KEYS:  # the default pykraft applies; its "" means unset
            default = _SERVER_KEYS[kafka.name].default or (None if kafka.default else
                                                           kafka.default)
        yield replace(kafka, default=default, doc=_doc(kafka.name, kafka.update_mode))
    for name, config_type in _PYKRAFT_KEY_TYPES.items():
        yield ConfigDef(name, config_type, _SERVER_KEYS[name].default or None,
                        doc=_SERVER_KEYS[name].doc)


#: Every broker key, by name.
BROKER_CONFIG_DEFS: Mapping[str, ConfigDef] = {d.name: d for d in _table()}
#: The keys Kafka lets IncrementalAlterConfigs change on a running broker.
DYNAMIC_BROKER_CONFIGS: Mapping[str, ConfigDef] = {
    name: d for name, d in BROKER_CONFIG_DEFS.items() if d.update_mode != "read-only"}
_DEFAULTS = {name: d.default for name, d in BROKER_CONFIG_DEFS.items() if d.default is not None}
#: The connection limits a running broker re-reads from its dynamic configs (Kafka's
#: DynamicConnectionQuota; :func:`pykraft.runtime.settings.dynamic_connection_limits`).
CONNECTION_LIMIT_KEYS = ("max.connections", "max.connections.per.ip",
                         "max.connections.per.ip.overrides", "max.connection.creation.rate")
#: The dynamic keys pykraft applies on a running node: the broker defaults of topic settings,
#: which each broker re-reads whenever a config changes
#: (:func:`pykraft.broker.topic_settings.topic_settings`), the connection limits, the log
#: cleaner's settings (:mod:`pykraft.broker.log_cleaner`, as Kafka's ``LogCleaner.
#: reconfigure``), and the controller's unclean election switch, read at each election.
#: Every other dynamic key of
#: Kafka's is read once at start, so IncrementalAlterConfigs refuses it as Kafka refuses a
#: read-only key.
APPLIED_DYNAMIC_CONFIGS: Mapping[str, ConfigDef] = {name: DYNAMIC_BROKER_CONFIGS[name] for name in (
    "compression.type", "log.cleaner.backoff.ms", "log.cleaner.dedupe.buffer.size",
    "log.cleaner.delete.retention.ms", "log.cleaner.io.buffer.load.factor",
    "log.cleaner.io.buffer.size", "log.cleaner.io.max.bytes.per.second",
    "log.cleaner.max.compaction.lag.ms", "log.cleaner.min.cleanable.ratio",
    "log.cleaner.min.compaction.lag.ms", "log.cleaner.threads", "log.cleanup.policy",
    "log.index.interval.bytes", "log.index.size.max.bytes",
    "log.message.timestamp.after.max.ms", "log.message.timestamp.before.max.ms",
    "log.message.timestamp.type", "log.retention.bytes", "log.retention.ms",
    "log.roll.jitter.ms", "log.roll.ms", "log.segment.bytes", "log.segment.delete.delay.ms",
    "message.max.bytes", "min.insync.replicas", "unclean.leader.election.enable",
    *CONNECTION_LIMIT_KEYS)}
#: The replication throttles a broker reads from its dynamic configs only, this node's then
#: the cluster default's, never its properties file (Kafka's ``BrokerConfigHandler``, keys
#: of ``DynamicConfig.Broker`` outside ``KafkaConfig``): bytes/s, unlimited when unset. The
#: third bounds the copies AlterReplicaLogDirs makes between a broker's log dirs.
LEADER_REPLICATION_THROTTLED_RATE = "leader.replication.throttled.rate"
FOLLOWER_REPLICATION_THROTTLED_RATE = "follower.replication.throttled.rate"
REPLICA_ALTER_LOG_DIRS_RATE = "replica.alter.log.dirs.io.max.bytes.per.second"
REPLICATION_THROTTLED_RATE_DEFAULT = 2**63 - 1
THROTTLE_RATE_DEFS: Mapping[str, ConfigDef] = {name: ConfigDef(
    name, ConfigType.LONG, str(REPLICATION_THROTTLED_RATE_DEFAULT), minimum=0,
    update_mode="cluster-wide", doc=doc) for name, doc in (
        (LEADER_REPLICATION_THROTTLED_RATE, "Bytes/s a leader sends its throttled replicas."),
        (FOLLOWER_REPLICATION_THROTTLED_RATE,
         "Bytes/s a follower fetches for its throttled replicas."),
        (REPLICA_ALTER_LOG_DIRS_RATE,
         "Bytes/s a broker copies moving replicas between its log dirs."))}
#: The broker keys IncrementalAlterConfigs may set (the controller checks against them).
ALTERABLE_BROKER_CONFIGS: Mapping[str, ConfigDef] = {**APPLIED_DYNAMIC_CONFIGS,
                                                     **THROTTLE_RATE_DEFS}


#: Kafka 4.4's internal keys (``defineInternal``): known, so accepted silently, but Kafka's
#: DescribeConfigs leaves them out, and so does pykraft.
_INTERNAL_KEYS = frozenset({
    "controller.performance.always.log.threshold.ms",
    "controller.performance.sample.period.ms", "group.consumer.assignor.offload.enable",
    "group.consumer.regex.refresh.interval.ms", "group.share.assignor.offload.enable",
    "group.share.dlq.manager.class.name", "group.share.initialize.retry.interval.ms",
    "group.share.persister.class.name", "group.streams.acceptable.recovery.lag",
    "group.streams.assignor.offload.enable", "group.streams.max.warmup.replicas",
    "group.streams.min.task.offset.interval.ms", "group.streams.num.warmup.replicas",
    "group.streams.task.offset.interval.ms", "internal.metadata.delete.delay.millis",
    INTERNAL_METADATA_LOG_SEGMENT_BYTES, "internal.metadata.max.batch.size.in.bytes",
    "log.initial.task.delay.ms", "producer.id.expiration.check.interval.ms",
    "remote.log.index.file.cache.ttl.ms", "remote.log.manager.task.retry.backoff.max.ms",
    "remote.log.manager.task.retry.backoff.ms", "remote.log.manager.task.retry.jitter",
    "server.max.startup.time.ms", "share.coordinator.cold.partition.snapshot.interval.ms",
    "share.coordinator.state.topic.prune.interval.ms", "unclean.leader.election.interval.ms",
    "unstable.api.versions.enable", "unstable.feature.versions.enable",
})
#: Prefixes whose keys Kafka passes on without knowing them: per-listener overrides, config
#: providers, and the remote storage plugins' own configs.
#: Read by the authorizer ``authorizer.class.name`` names (StandardAuthorizer), not by
#: KafkaConfig's own definitions: keys of a secured cluster, not typos.
_AUTHORIZER_KEYS = frozenset({SUPER_USERS, ALLOW_EVERYONE_IF_NO_ACL_FOUND})
_FREE_PREFIXES = ("listener.name.", "config.providers.", "rsm.config.", "rlmm.config.",
                  "remote.log.metadata.")


#: Keys Kafka 4.4 changes on a running broker that are not public ``KafkaConfig`` keys (the
#: internal assignor switches): known, so
#: IncrementalAlterConfigs refuses them (pykraft applies none) rather than storing them as a
#: plugin's unknown key, and a properties file naming one gets no warning.
_KAFKA_4_DYNAMIC_KEYS = frozenset({
    "group.consumer.assignor.offload.enable", "group.share.assignor.offload.enable",
    "group.streams.assignor.offload.enable",
})


def is_known(name: str) -> bool:
    return (name in BROKER_CONFIG_DEFS or name in _INTERNAL_KEYS or name in _AUTHORIZER_KEYS
            or name in _KAFKA_4_DYNAMIC_KEYS or name in THROTTLE_RATE_DEFS
            or name.startswith(_FREE_PREFIXES))


def unknown_key_warnings(names: Iterable[str]) -> list[str]:
    """Kafka's warning for each supplied key it does not know (AbstractConfig: "The
    configuration 'x' was supplied but isn't a known config."), naming the closest known
    key, so a typo does not pass unnoticed while the node still starts, as Kafka's does."""
    warnings = []
    for name in sorted(names):
        if is_known(name):
            continue
        text = f"The configuration '{name}' was supplied but isn't a known config."
        close = difflib.get_close_matches(name, BROKER_CONFIG_DEFS, n=1)
        if close:
            text += f" Did you mean '{close[0]}'?"
        warnings.append(text)
    return warnings


def synonyms(name: str) -> tuple[str, ...]:
    """The keys that set the same thing as ``name``, highest precedence first (Kafka's
    ``DynamicBrokerConfig.brokerConfigSynonyms`` with listener overrides)."""
    if name == _FLUSH_SYNONYMS[0]:  # the scheduler interval is its default, not the reverse
        return _FLUSH_SYNONYMS
    group = next((g for g in _UNIT_SYNONYMS if name in g), None)
    if group is not None:
        return group
    override = _LISTENER_OVERRIDE.fullmatch(name)
    if override:
        base = override.group(1)
        return name, next((key for key in _MECHANISM_KEYS if base.endswith(key)), base)
    return (name,)


def definition(name: str) -> ConfigDef | None:
    """The key's definition; a listener override takes its base key's, a throttle rate
    ``DynamicConfig.Broker``'s (configType)."""
    found = BROKER_CONFIG_DEFS.get(name) or THROTTLE_RATE_DEFS.get(name)
    if found is None and _LISTENER_OVERRIDE.fullmatch(name):
        found = next((BROKER_CONFIG_DEFS[s] for s in synonyms(name) if s in BROKER_CONFIG_DEFS),
                     None)
    return found


def static_layer(raw: Mapping[str, str]) -> dict[str, str]:
    """The properties file as Kafka's ``KafkaConfig`` reads it: ``node.id`` and ``broker.id``
    name one value, so the one given fills in the other (``populateSynonyms``) and both
    show as STATIC_BROKER_CONFIG."""
    static = dict(raw)
    for given, missing in (("node.id", "broker.id"), ("broker.id", "node.id")):
        if given in static and missing not in static:
            static[missing] = static[given]
    return static


@dataclass(frozen=True, slots=True)
class BrokerConfigLayers:
    """A node's config layers; see the module docstring."""

    dynamic_broker: Mapping[str, str]
    dynamic_default: Mapping[str, str]
    static: Mapping[str, str]

    @classmethod
    def of(cls, broker_configs: Callable[[str], Mapping[str, str]], node_id: int,
           static: Mapping[str, str]) -> BrokerConfigLayers:
        """Node ``node_id``'s layers; ``broker_configs`` gives a BROKER resource's configs by
        name (``""`` for the cluster default)."""
        return cls(dynamic_broker=broker_configs(str(node_id)),
                   dynamic_default=broker_configs(""), static=static)

    def applied(self) -> dict[str, str]:
        """The properties file with the dynamic keys pykraft applies laid over it, cluster
        default then this node's, as Kafka's DynamicBrokerConfig merges them."""
        merged = dict(self.static)
        for layer in (self.dynamic_default, self.dynamic_broker):
            merged.update((k, v) for k, v in layer.items() if k in APPLIED_DYNAMIC_CONFIGS)
        return merged

    def sources(self) -> tuple[tuple[Mapping[str, str], ConfigSource], ...]:
        return ((self.dynamic_broker, ConfigSource.DYNAMIC_BROKER_CONFIG),
                (self.dynamic_default, ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG),
                (self.static, ConfigSource.STATIC_BROKER_CONFIG),
                (_DEFAULTS, ConfigSource.DEFAULT_CONFIG))


@dataclass(frozen=True, slots=True)
class DescribedConfig:
    """One DescribeConfigs entry of a broker resource (value None = null)."""

    name: str
    value: str | None
    source: ConfigSource
    read_only: bool
    sensitive: bool
    config_type: ConfigType
    synonyms: tuple[tuple[str, str | None, ConfigSource], ...]
    documentation: str | None


def describe_broker(layers: BrokerConfigLayers, *, per_broker: bool,
                    keys: frozenset[str] | None = None) -> list[DescribedConfig]:
    """The entries Kafka's ConfigHelper gives for BROKER ``"<this node>"`` (``per_broker``:
    every known key plus every key set in a layer) or for BROKER ``""`` (only the dynamic
    cluster defaults); ``keys`` narrows them (None = all). Synonyms are always filled in;
    the caller drops them when the request did not ask."""
    if per_broker:
        names = set(BROKER_CONFIG_DEFS) | set(layers.static) | set(layers.dynamic_default)
        names |= set(layers.dynamic_broker)
    else:
        names = set(layers.dynamic_default)
    return [_entry(layers, name, per_broker=per_broker)
            for name in sorted(names) if keys is None or name in keys]


def describe_key(layers: BrokerConfigLayers, name: str) -> DescribedConfig:
    """One key as BROKER "<this node>" describes it (a topic's broker synonym)."""
    return _entry(layers, name, per_broker=True)


def _entry(layers: BrokerConfigLayers, name: str, *, per_broker: bool) -> DescribedConfig:
    found = definition(name)
    # A key Kafka does not know has no type, so it may be secret: its value is hidden.
    sensitive = found is None or found.sensitive
    chain = [(synonym, value, source)
             for layer, source in layers.sources()
             for synonym in synonyms(name) if (value := layer.get(synonym)) is not None]
    # Kafka drops the synonyms ahead of the key itself (e.g. a listener override's base).
    while chain and chain[0][0] != name:
        chain.pop(0)
    if not per_broker:
        chain = [item for item in chain if item[2] == ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG]
    # BROKER "" shows the cluster default itself, BROKER "<id>" the value in force
    own = (next((value for layer, _ in layers.sources() if (value := layer.get(name)) is not None),
                None) if per_broker else layers.dynamic_default.get(name))
    return DescribedConfig(
        name=name, value=None if sensitive else own,
        source=chain[0][2] if chain else ConfigSource.DEFAULT_CONFIG,
        read_only=name not in ALTERABLE_BROKER_CONFIGS, sensitive=sensitive,
        config_type=ConfigType.UNKNOWN if found is None else found.type,
        synonyms=tuple((synonym, None if sensitive else value, source)
                       for synonym, value, source in chain),
        documentation=None if found is None else found.doc)
