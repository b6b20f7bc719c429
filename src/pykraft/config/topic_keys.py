"""Kafka 4.4's topic config keys (``LogConfig``) and the broker keys that give their defaults
(``ServerTopicConfigSynonyms``), shared by the controller that validates and describes a
topic's configs and the broker that applies them.

A topic's value is its own config, else the first broker synonym set in the broker's merged
layers (dynamic per-broker, dynamic cluster default, properties file), converted from hours or
minutes to milliseconds, else Kafka's default.
"""

from __future__ import annotations

from collections.abc import Mapping

from pykraft.config.definitions import ConfigDef, ConfigType

_COMPRESSION = ("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")
_WEEK_MS = str(7 * 24 * 3600 * 1000)
_LONG_MAX = str(2**63 - 1)
#: ``segment.bytes``' floor since Kafka 4.0 (KIP-1030); tests roll tiny segments through
#: the internal key :data:`INTERNAL_SEGMENT_BYTES` instead, as Kafka's own tests do.
_MIN_SEGMENT_BYTES = 1024 * 1024
#: Kafka's internal topic key that overrides ``segment.bytes`` with no floor: accepted by
#: CreateTopics and AlterConfigs, never described (``LogConfig.nonInternalConfigNames``).
INTERNAL_SEGMENT_BYTES = "internal.segment.bytes"


def _defs(*defs: ConfigDef) -> Mapping[str, ConfigDef]:
    return {d.name: d for d in defs}


#: Every public key of Kafka 4.4's ``LogConfig``, with its type, default and valid values.
TOPIC_CONFIGS = _defs(
    ConfigDef("cleanup.policy", ConfigType.LIST, "delete", choices=("delete", "compact")),
    ConfigDef("compression.gzip.level", ConfigType.INT, "-1", minimum=1, maximum=9,
              or_equal=-1),
    ConfigDef("compression.lz4.level", ConfigType.INT, "9", minimum=1, maximum=17),
    ConfigDef("compression.type", ConfigType.STRING, "producer", choices=_COMPRESSION),
    ConfigDef("compression.zstd.level", ConfigType.INT, "3", minimum=-131072, maximum=22),
    ConfigDef("delete.retention.ms", ConfigType.LONG, "86400000", minimum=0),
    ConfigDef("errors.deadletterqueue.group.enable", ConfigType.BOOLEAN, "false"),
    ConfigDef("file.delete.delay.ms", ConfigType.LONG, "60000", minimum=0),
    ConfigDef("flush.messages", ConfigType.LONG, _LONG_MAX, minimum=1),
    ConfigDef("flush.ms", ConfigType.LONG, _LONG_MAX, minimum=0),
    ConfigDef("follower.replication.throttled.replicas", ConfigType.LIST, ""),
    ConfigDef("index.interval.bytes", ConfigType.INT, "4096", minimum=0),
    ConfigDef("leader.replication.throttled.replicas", ConfigType.LIST, ""),
    ConfigDef("local.retention.bytes", ConfigType.LONG, "-2", minimum=-2),
    ConfigDef("local.retention.ms", ConfigType.LONG, "-2", minimum=-2),
    ConfigDef("max.compaction.lag.ms", ConfigType.LONG, _LONG_MAX, minimum=1),
    ConfigDef("max.decompressed.message.bytes", ConfigType.INT, "2147483639", minimum=1,
              maximum=2147483639),
    ConfigDef("max.message.bytes", ConfigType.INT, "1048588", minimum=0),
    ConfigDef("message.timestamp.after.max.ms", ConfigType.LONG, "3600000", minimum=0),
    ConfigDef("message.timestamp.before.max.ms", ConfigType.LONG, _LONG_MAX, minimum=0),
    ConfigDef("message.timestamp.type", ConfigType.STRING, "CreateTime",
              choices=("CreateTime", "LogAppendTime")),
    ConfigDef("min.cleanable.dirty.ratio", ConfigType.DOUBLE, "0.5", minimum=0, maximum=1),
    ConfigDef("min.compaction.lag.ms", ConfigType.LONG, "0", minimum=0),
    ConfigDef("min.insync.replicas", ConfigType.INT, "1", minimum=1),
    ConfigDef("preallocate", ConfigType.BOOLEAN, "false"),
    ConfigDef("remote.copy.lag.bytes", ConfigType.LONG, "-1", minimum=-1),
    ConfigDef("remote.copy.lag.ms", ConfigType.LONG, "0", minimum=-1),
    ConfigDef("remote.log.copy.disable", ConfigType.BOOLEAN, "false"),
    ConfigDef("remote.log.delete.on.disable", ConfigType.BOOLEAN, "false"),
    ConfigDef("remote.storage.enable", ConfigType.BOOLEAN, "false"),
    ConfigDef("retention.bytes", ConfigType.LONG, "-1"),
    ConfigDef("retention.ms", ConfigType.LONG, _WEEK_MS, minimum=-1),
    ConfigDef("segment.bytes", ConfigType.INT, "1073741824", minimum=_MIN_SEGMENT_BYTES),
    ConfigDef("segment.index.bytes", ConfigType.INT, "10485760", minimum=4),
    ConfigDef("segment.jitter.ms", ConfigType.LONG, "0", minimum=0),
    ConfigDef("segment.ms", ConfigType.LONG, _WEEK_MS, minimum=1),
    ConfigDef("unclean.leader.election.enable", ConfigType.BOOLEAN, "false"),
)

#: Kafka's internal topic keys (``defineInternal``): valid in a topic's configs, never
#: listed. pykraft keeps a floor of 14 bytes (Kafka 3.x's, a v0 record's overhead): Kafka
#: checks none, and a segment smaller than a batch header would roll at every append.
INTERNAL_TOPIC_CONFIGS = _defs(ConfigDef(INTERNAL_SEGMENT_BYTES, ConfigType.INT, None, minimum=14))
#: Every key a topic's configs may hold.
TOPIC_KEYS: Mapping[str, ConfigDef] = {**TOPIC_CONFIGS, **INTERNAL_TOPIC_CONFIGS}

#: Topic key -> the broker keys that give its default, highest precedence first (Kafka's
#: ``ServerTopicConfigSynonyms.ALL_TOPIC_CONFIG_SYNONYMS``); a key missing here has none.
BROKER_SYNONYMS: Mapping[str, tuple[str, ...]] = {
    "cleanup.policy": ("log.cleanup.policy",),
    "compression.gzip.level": ("compression.gzip.level",),
    "compression.lz4.level": ("compression.lz4.level",),
    "compression.type": ("compression.type",),
    "compression.zstd.level": ("compression.zstd.level",),
    "delete.retention.ms": ("log.cleaner.delete.retention.ms",),
    "file.delete.delay.ms": ("log.segment.delete.delay.ms",),
    "flush.messages": ("log.flush.interval.messages",),
    "flush.ms": ("log.flush.interval.ms", "log.flush.scheduler.interval.ms"),
    "index.interval.bytes": ("log.index.interval.bytes",),
    "local.retention.bytes": ("log.local.retention.bytes",),
    "local.retention.ms": ("log.local.retention.ms",),
    "max.compaction.lag.ms": ("log.cleaner.max.compaction.lag.ms",),
    "max.decompressed.message.bytes": ("max.decompressed.message.bytes",),
    "max.message.bytes": ("message.max.bytes",),
    "message.timestamp.after.max.ms": ("log.message.timestamp.after.max.ms",),
    "message.timestamp.before.max.ms": ("log.message.timestamp.before.max.ms",),
    "message.timestamp.type": ("log.message.timestamp.type",),
    "min.cleanable.dirty.ratio": ("log.cleaner.min.cleanable.ratio",),
    "min.compaction.lag.ms": ("log.cleaner.min.compaction.lag.ms",),
    "min.insync.replicas": ("min.insync.replicas",),
    "preallocate": ("log.preallocate",),
    "remote.copy.lag.bytes": ("log.remote.copy.lag.bytes",),
    "remote.copy.lag.ms": ("log.remote.copy.lag.ms",),
    "retention.bytes": ("log.retention.bytes",),
    "retention.ms": ("log.retention.ms", "log.retention.minutes", "log.retention.hours"),
    "segment.bytes": ("log.segment.bytes",),
    "segment.index.bytes": ("log.index.size.max.bytes",),
    "segment.jitter.ms": ("log.roll.jitter.ms", "log.roll.jitter.hours"),
    "segment.ms": ("log.roll.ms", "log.roll.hours"),
    "unclean.leader.election.enable": ("unclean.leader.election.enable",),
}
_TO_MS = {"log.roll.hours": 3_600_000, "log.roll.jitter.hours": 3_600_000,
          "log.retention.hours": 3_600_000, "log.retention.minutes": 60_000}

#: What Kafka answers a topic that asks for remote storage on a cluster without it
#: (``LogConfig.validateRemoteStorageOnlyIfSystemEnabled``): pykraft has no tiered storage.
REMOTE_STORAGE_DISABLED = ("Tiered Storage functionality is disabled in the broker. Topic "
                           "cannot be configured with remote log storage.")


def remote_storage_problem(configs: Mapping[str, str]) -> str | None:
    enabled = configs.get("remote.storage.enable", "false").strip().lower() == "true"
    return REMOTE_STORAGE_DISABLED if enabled else None


def broker_value(key: str, broker: Mapping[str, str]) -> str | None:
    """The broker's default for topic key ``key`` from its merged layers ``broker``, in the
    topic key's unit, or None when no synonym is set."""
    for synonym in BROKER_SYNONYMS.get(key, ()):
        if synonym in broker:
            text = broker[synonym]
            factor = _TO_MS.get(synonym)
            return text if factor is None else str(int(text) * factor)
    return None


def topic_value(key: str, own: Mapping[str, str], broker: Mapping[str, str]) -> str:
    """The value in force for topic key ``key``: its own, the broker's, else Kafka's."""
    if key in own:
        return own[key]
    found = broker_value(key, broker)
    if found is not None:
        return found
    default = TOPIC_CONFIGS[key].default
    assert default is not None, key
    return default
