"""The server configuration: Kafka's key names, types and defaults, validated in one place.

Every key pykraft understands is declared once in ``CONFIG_DEFS`` with its type and default,
the way Kafka's ``ConfigDef`` does, so a bad or missing key is reported by name and the
tools and servers read typed attributes instead of raw strings.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pykraft.config.kafka_keys import value_problems
from pykraft.config.properties import load_properties
from pykraft.errors import ConfigError
from pykraft.ids import InvalidUuidError, uuid_from_str

#: Values of ``pykraft.event.loop``.
EVENT_LOOPS = ("uvloop", "asyncio")
_INT_MAX = 2**31 - 1
#: Kafka's security protocol names (``listener.security.protocol.map`` values).
SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")


@dataclass(frozen=True, slots=True)
class Endpoint:
    """A listener endpoint ``NAME://host:port``."""

    name: str
    host: str
    port: int

    def __str__(self) -> str:
        return f"{self.name}://{self.host}:{self.port}"


@dataclass(frozen=True, slots=True)
class VoterSpec:
    """One entry of ``controller.quorum.voters`` (``id@host:port``) or of
    ``--initial-controllers`` (``id@host:port:directoryId``)."""

    node_id: int
    host: str
    port: int
    directory_id: uuid.UUID | None = None


def _parse_host_port(text: str, key: str) -> tuple[str, int]:
    host, sep, port_text = text.rpartition(":")
    if not sep or not port_text.isdigit():
        raise ConfigError(f"invalid value {text!r} for {key}: expected host:port")
    port = int(port_text)
    if not 0 <= port <= 65535:
        raise ConfigError(f"invalid port {port} in {key}")
    return host.strip("[]"), port


def parse_voter(text: str, key: str, *, with_directory: bool) -> VoterSpec:
    """Parse ``id@host:port`` (static voters) or ``id@host:port:dirId`` (dynamic)."""
    node_text, at, rest = text.strip().partition("@")
    if not at or not node_text.isdigit():
        raise ConfigError(f"invalid voter {text!r} in {key}: expected id@host:port")
    directory: uuid.UUID | None = None
    if with_directory:
        rest, sep, dir_text = rest.rpartition(":")
        if not sep:
            raise ConfigError(f"invalid voter {text!r} in {key}: expected id@host:port:dirId")
        try:
            directory = uuid_from_str(dir_text)
        except InvalidUuidError as exc:
            raise ConfigError(f"invalid directory id in {key} entry {text!r}: {exc}") from None
    host, port = _parse_host_port(rest, key)
    return VoterSpec(int(node_text), host, port, directory)


def parse_listeners(text: str, key: str) -> tuple[Endpoint, ...]:
    """Parse ``NAME://host:port,...``; an empty host means all interfaces, as in Kafka."""
    endpoints: list[Endpoint] = []
    for item in _split_list(text):
        name, sep, address = item.partition("://")
        if not sep or not name:
            raise ConfigError(f"invalid listener {item!r} in {key}: expected NAME://host:port")
        host, port = _parse_host_port(address, key)
        endpoints.append(Endpoint(name.upper(), host, port))
    names = [e.name for e in endpoints]
    if len(set(names)) != len(names):
        raise ConfigError(f"duplicate listener names in {key}: {text!r}")
    return tuple(endpoints)


def _split_list(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def _to_int(text: str, key: str) -> int:
    try:
        return int(text.strip())
    except ValueError:
        raise ConfigError(f"invalid value {text!r} for {key}: expected an integer") from None


def parse_count(text: str, key: str) -> int:
    """An int of Kafka's ``atLeast(0)`` keys (connection counts, delays)."""
    number = _to_int(text, key)
    if not 0 <= number <= _INT_MAX:
        bound = "at least 0" if number < 0 else f"at most {_INT_MAX}"
        raise ConfigError(f"Invalid value {number} for configuration {key}: Value must be "
                          f"{bound}")
    return number


def _to_window(text: str, key: str) -> int:
    """A quota window count or size, ``queued.max.requests`` (Kafka's ``atLeast(1)``)."""
    number = _to_int(text, key)
    if number < 1:
        raise ConfigError(f"Invalid value {number} for configuration {key}: Value must be "
                          "at least 1")
    return number


def _to_host_counts(text: str, key: str) -> dict[str, int]:
    """``host:count,...`` (``max.connections.per.ip.overrides``); the count follows the
    last colon, so an IPv6 address may be given as is."""
    counts: dict[str, int] = {}
    for item in _split_list(text):
        host, sep, count = item.rpartition(":")
        if not sep or not host.strip():
            raise ConfigError(f"Invalid value {item!r} in {key}: expected host:count")
        counts[host.strip().strip("[]")] = parse_count(count, key)
    return counts


def _to_bool(text: str, key: str) -> bool:
    lowered = text.strip().lower()
    if lowered not in ("true", "false"):
        raise ConfigError(f"invalid value {text!r} for {key}: expected true or false")
    return lowered == "true"


def _to_event_loop(text: str, key: str) -> str:
    lowered = text.strip().lower()
    if lowered not in EVENT_LOOPS:
        raise ConfigError(f"invalid value {text!r} for {key}: expected one of "
                          f"{', '.join(EVENT_LOOPS)}")
    return lowered


def _to_list(text: str, key: str) -> tuple[str, ...]:
    return tuple(_split_list(text))


def _to_roles(text: str, key: str) -> tuple[str, ...]:
    roles = _to_list(text, key)
    for role in roles:
        if role not in ("broker", "controller"):
            raise ConfigError(f"invalid role {role!r} in {key}: expected broker and/or controller")
    return roles


def _to_voters(text: str, key: str) -> tuple[VoterSpec, ...]:
    voters = tuple(parse_voter(item, key, with_directory=False) for item in _split_list(text))
    ids = [v.node_id for v in voters]
    if len(set(ids)) != len(ids):
        raise ConfigError(f"duplicate voter ids in {key}: {text!r}")
    return voters


def _to_addresses(text: str, key: str) -> tuple[tuple[str, int], ...]:
    """``host:port,...`` where a client must connect: unlike a listener, no empty host."""
    addresses = []
    for item in _split_list(text):
        host, port = _parse_host_port(item, key)
        if not host:
            raise ConfigError(f"invalid value {item!r} for {key}: the host is missing")
        addresses.append((host, port))
    return tuple(addresses)


def _to_listeners(text: str, key: str) -> tuple[Endpoint, ...]:
    return parse_listeners(text, key)


def _to_optional_str(text: str, key: str) -> str | None:
    return text.strip() or None


def _to_optional_int(text: str, key: str) -> int | None:
    return _to_int(text, key) if text.strip() else None


def _to_protocol(text: str, key: str) -> str | None:
    protocol = text.strip().upper()
    if protocol and protocol not in SECURITY_PROTOCOLS:
        raise ConfigError(f"invalid value {text!r} for {key}: expected one of "
                          f"{', '.join(SECURITY_PROTOCOLS)}")
    return protocol or None


def _to_protocol_map(text: str, key: str) -> dict[str, str]:
    """``NAME:PROTOCOL,...`` (names upper-cased, as listener names are)."""
    mapping: dict[str, str] = {}
    for item in _split_list(text):
        name, sep, protocol = item.partition(":")
        if not sep or not name.strip():
            raise ConfigError(f"invalid value {item!r} in {key}: expected NAME:PROTOCOL")
        parsed = _to_protocol(protocol, key)
        if parsed is None:
            raise ConfigError(f"invalid value {item!r} in {key}: the protocol is missing")
        mapping[name.strip().upper()] = parsed
    return mapping


@dataclass(frozen=True, slots=True)
class ConfigDef:
    """One configuration key: Kafka name, parser, default (None = required or unset)."""

    key: str
    parse: Callable[[str, str], Any]
    default: str | None
    doc: str


#: Kafka's internal override of ``metadata.log.segment.bytes``, whose floor is 8 MiB since
#: Kafka 4.0: how Kafka's own tests (and pykraft's) roll small metadata segments.
INTERNAL_METADATA_LOG_SEGMENT_BYTES = "internal.metadata.log.segment.bytes"

MIGRATION_ENABLE = "zookeeper.metadata.migration.enable"
ZOOKEEPER_CONNECT = "zookeeper.connect"

#: A controller's ZooKeeper migration keys (KIP-866), as Kafka 3.9's KRaftConfigs and
#: ZkConfigs define them; Kafka 4 removed them (so a broker still warns of them as unknown,
#: and describes them as unknown keys).
MIGRATION_CONFIG_DEFS: tuple[ConfigDef, ...] = (
    ConfigDef(MIGRATION_ENABLE, _to_bool, "false", "Enable ZK to KRaft migration"),
    ConfigDef("zookeeper.metadata.migration.min.batch.size", _to_window, "200",
              "Soft minimum batch size to use when migrating metadata from ZooKeeper to KRaft"),
    ConfigDef(ZOOKEEPER_CONNECT, _to_optional_str, "", "the ZooKeeper ensemble (and chroot)"),
    ConfigDef("zookeeper.session.timeout.ms", _to_int, "18000", "Zookeeper session timeout"),
    ConfigDef("zookeeper.connection.timeout.ms", _to_optional_int, "",
              "connection wait; zookeeper.session.timeout.ms when unset"),
    ConfigDef("zookeeper.set.acl", _to_bool, "false", "Set client to use secure ACLs"),
    ConfigDef("zookeeper.max.in.flight.requests", _to_window, "10",
              "unacknowledged requests the client sends to ZooKeeper before blocking"),
    ConfigDef("zookeeper.ssl.client.enable", _to_bool, "false", "TLS to ZooKeeper"),
    *(ConfigDef(f"zookeeper.{key}", _to_optional_str, "", "ZooKeeper TLS client setting")
      for key in ("clientCnxnSocket", "ssl.keystore.location", "ssl.keystore.password",
                  "ssl.keystore.type", "ssl.truststore.location", "ssl.truststore.password",
                  "ssl.truststore.type")),
    ConfigDef("zookeeper.ssl.protocol", _to_optional_str, "TLSv1.2", "ZooKeeper TLS protocol"),
    ConfigDef("zookeeper.ssl.enabled.protocols", _to_list, "", "ZooKeeper TLS protocols"),
    ConfigDef("zookeeper.ssl.cipher.suites", _to_list, "", "ZooKeeper TLS cipher suites"),
    ConfigDef("zookeeper.ssl.endpoint.identification.algorithm", _to_optional_str, "HTTPS",
              "ZooKeeper TLS host name verification"),
    ConfigDef("zookeeper.ssl.crl.enable", _to_bool, "false", "ZooKeeper TLS CRL checks"),
    ConfigDef("zookeeper.ssl.ocsp.enable", _to_bool, "false", "ZooKeeper TLS OCSP checks"),
)

CONFIG_DEFS: tuple[ConfigDef, ...] = (
    ConfigDef("process.roles", _to_roles, None, "broker, controller, or both"),
    ConfigDef("node.id", _to_int, None, "this node's id, unique in the cluster"),
    ConfigDef("listeners", _to_listeners, "", "NAME://host:port listeners to bind"),
    ConfigDef("advertised.listeners", _to_listeners, "", "listeners others connect to"),
    ConfigDef("controller.listener.names", _to_list, "", "listener names of the controller"),
    ConfigDef("inter.broker.listener.name", _to_optional_str, "", "listener brokers use"),
    ConfigDef("security.inter.broker.protocol", _to_protocol, "",
              "protocol brokers use (when inter.broker.listener.name is unset)"),
    ConfigDef("listener.security.protocol.map", _to_protocol_map,
              # each protocol to itself, in the order Kafka's default string has them
              "SASL_SSL:SASL_SSL,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT",
              "listener name -> security protocol"),
    ConfigDef("controller.quorum.voters", _to_voters, "", "static voters id@host:port"),
    ConfigDef("controller.quorum.bootstrap.servers", _to_addresses, "",
              "dynamic quorum (KIP-853): host:port of controllers to find the leader through"),
    ConfigDef("log.dirs", _to_list, "", "data directories"),
    ConfigDef("log.dir", _to_list, "/tmp/kafka-logs", "data directory if log.dirs unset"),
    ConfigDef("metadata.log.dir", _to_optional_str, "", "metadata log directory"),
    ConfigDef("controller.quorum.election.timeout.ms", _to_int, "1000", "election timeout"),
    ConfigDef("controller.quorum.fetch.timeout.ms", _to_int, "2000", "follower fetch timeout"),
    ConfigDef("controller.quorum.election.backoff.max.ms", _to_int, "1000", "backoff cap"),
    ConfigDef("controller.quorum.append.linger.ms", _to_int, "25", "leader batching linger"),
    ConfigDef("controller.quorum.request.timeout.ms", _to_int, "2000", "RPC timeout"),
    ConfigDef("controller.quorum.retry.backoff.ms", _to_int, "20", "RPC retry backoff"),
    ConfigDef("controller.quorum.auto.join.enable", _to_bool, "false", "auto-join (KIP-853)"),
    ConfigDef("metadata.log.segment.bytes", _to_int, str(1 << 30), "segment size"),
    ConfigDef(INTERNAL_METADATA_LOG_SEGMENT_BYTES, _to_optional_int, "",
              "segment size below metadata.log.segment.bytes' 8 MiB floor (tests; internal)"),
    ConfigDef("metadata.log.segment.ms", _to_int, str(7 * 24 * 3600 * 1000), "segment age"),
    ConfigDef("metadata.max.retention.bytes", _to_int, str(100 << 20), "retention bytes"),
    ConfigDef("metadata.max.retention.ms", _to_int, str(7 * 24 * 3600 * 1000), "retention"),
    ConfigDef("metadata.log.max.record.bytes.between.snapshots", _to_int, str(20 << 20),
              "snapshot after this many bytes"),
    ConfigDef("metadata.log.max.snapshot.interval.ms", _to_int, "3600000",
              "snapshot after this long"),
    ConfigDef("metadata.max.idle.interval.ms", _to_int, "500", "NoOpRecord cadence"),
    ConfigDef("broker.heartbeat.interval.ms", _to_int, "2000", "broker heartbeat period"),
    ConfigDef("broker.session.timeout.ms", _to_int, "9000", "broker session timeout"),
    ConfigDef("socket.request.max.bytes", _to_int, str(100 * 1024 * 1024), "max frame size"),
    ConfigDef("max.connections", parse_count, str(_INT_MAX),
              "connections each side (broker, controller) holds at most; beyond, accepting "
              "waits (the inter-broker listener is exempt); listener.name.<name>."
              "max.connections caps one listener; the open-file limit bounds all of them"),
    ConfigDef("queued.max.requests", _to_window, "500",
              "requests each side (broker, controller) holds read and not yet answered or "
              "parked in a purgatory; beyond, the next connection with a request waits "
              "(nothing more is read from it)"),
    ConfigDef("quota.window.num", _to_window, "11",
              "samples a client's produce and fetch byte rates are kept over"),
    ConfigDef("quota.window.size.seconds", _to_window, "1",
              "the length of each sample of a client's quota rates"),
    ConfigDef("controller.quota.window.num", _to_window, "11",
              "samples of a client's controller mutation rate (the token bucket's burst)"),
    ConfigDef("controller.quota.window.size.seconds", _to_window, "1",
              "the length of each sample of a client's controller mutation rate"),
    ConfigDef("max.connection.creation.rate", parse_count, str(_INT_MAX),
              "new connections a second each side accepts (the inter-broker listener is "
              "exempt); listener.name.<name>.max.connection.creation.rate for one listener"),
    ConfigDef("max.connections.per.ip", parse_count, str(_INT_MAX),
              "connections one address may hold; beyond, a new one is closed at once"),
    ConfigDef("max.connections.per.ip.overrides", _to_host_counts, "",
              "host:count,... overriding max.connections.per.ip for those hosts"),
    ConfigDef("connections.max.idle.ms", _to_int, "600000",
              "close a connection idle this long, authenticated or not"),
    ConfigDef("connection.failed.authentication.delay.ms", parse_count, "100",
              "delay before answering a failed SASL authentication and closing"),
    ConfigDef("num.partitions", _to_int, "1",
              "partitions of a topic created without a count (CreateTopics -1, auto-creation)"),
    ConfigDef("default.replication.factor", _to_int, "1",
              "replication factor of a topic created without one (CreateTopics -1, "
              "auto-creation)"),
    ConfigDef("request.timeout.ms", _to_int, "30000",
              "how long a broker waits for replication of what it writes for another node "
              "(transaction markers)"),
    ConfigDef("transaction.partition.verification.enable", _to_bool, "true",
              "a partition leader asks the transaction's coordinator before a transaction's "
              "first write there (KIP-890)"),
    ConfigDef("auto.create.topics.enable", _to_bool, "true",
              "a Metadata request naming a missing topic creates it"),
    ConfigDef("max.request.partition.size.limit", _to_int, "2000",
              "the most partitions a DescribeTopicPartitions answer holds, whatever the "
              "request's limit"),
    # pykraft's own keys (no Kafka equivalent).
    ConfigDef("metrics.port", _to_int, "-1", "Prometheus /metrics port; -1 = off"),
    ConfigDef("metrics.host", _to_optional_str, "", "metrics bind host; default = listener's"),
    ConfigDef("pykraft.server.extension.class", _to_optional_str, "",
              "module:attribute of a server extension (test and benchmark harnesses)"),
    ConfigDef("pykraft.shutdown.timeout.ms", _to_int, "5000",
              "graceful shutdown bound: wait this long for EndQuorumEpoch acks"),
    ConfigDef("pykraft.event.loop", _to_event_loop, "uvloop",
              "uvloop (asyncio when uvloop is not installed) or asyncio"),
    ConfigDef("pykraft.broker.fence.on.refused.connection.enable", _to_bool, "true",
              "the active controller fences a broker at once when its heartbeat connection "
              "closes and every listener it registered refuses connections (its process is "
              "gone), instead of waiting out broker.session.timeout.ms"),
)

#: Every key a node parses: the broker keys Kafka 4 describes, and a controller's migration
#: keys (Kafka 3.9's, which a broker describes as unknown keys, as Kafka 4 does).
_ALL_DEFS = (*CONFIG_DEFS, *MIGRATION_CONFIG_DEFS)
_DEFS_BY_KEY = {d.key: d for d in _ALL_DEFS}


class ServerConfig:
    """Typed, validated view of a server's properties; unknown keys are kept but unused."""

    def __init__(self, props: Mapping[str, str]) -> None:
        self.raw = dict(props)
        problems = value_problems(self.raw)
        if problems:
            raise ConfigError(problems[0])
        self._values: dict[str, Any] = {}
        for definition in _ALL_DEFS:
            text = self.raw.get(definition.key, definition.default)
            self._values[definition.key] = (
                None if text is None else definition.parse(text, definition.key)
            )

    @classmethod
    def load(cls, path: Path, overrides: Mapping[str, str] | None = None) -> ServerConfig:
        props = load_properties(path)
        props.update(overrides or {})
        return cls(props)

    def get(self, key: str) -> Any:
        if key not in _DEFS_BY_KEY:
            raise KeyError(f"unknown configuration key {key}")
        return self._values[key]

    def require(self, key: str) -> Any:
        value = self.get(key)
        if value is None or value == ():
            raise ConfigError(f"missing required configuration {key}")
        return value

    @property
    def node_id(self) -> int:
        node_id: int = self.require("node.id")
        if node_id < 0:
            raise ConfigError(f"invalid value {node_id} for node.id: must be >= 0")
        return node_id

    @property
    def process_roles(self) -> tuple[str, ...]:
        roles: tuple[str, ...] = self.require("process.roles")
        return roles

    @property
    def is_controller(self) -> bool:
        return "controller" in self.process_roles

    @property
    def log_dirs(self) -> tuple[Path, ...]:
        dirs: tuple[str, ...] = self.get("log.dirs") or self.get("log.dir")
        return tuple(Path(d) for d in dirs)

    @property
    def metadata_log_dir(self) -> Path:
        """``metadata.log.dir``, else the first of ``log.dirs`` (Kafka's rule)."""
        explicit: str | None = self.get("metadata.log.dir")
        if explicit:
            return Path(explicit)
        if not self.log_dirs:
            raise ConfigError("missing required configuration log.dirs (or metadata.log.dir)")
        return self.log_dirs[0]

    @property
    def all_log_dirs(self) -> tuple[Path, ...]:
        """Every directory to format: the data dirs plus the metadata dir, without repeats."""
        dirs = list(self.log_dirs)
        if self.metadata_log_dir not in dirs:
            dirs.append(self.metadata_log_dir)
        return tuple(dirs)

    @property
    def controller_listener_names(self) -> tuple[str, ...]:
        names: tuple[str, ...] = self.get("controller.listener.names")
        return tuple(n.upper() for n in names)

    @property
    def static_voters(self) -> tuple[VoterSpec, ...]:
        voters: tuple[VoterSpec, ...] = self.get("controller.quorum.voters")
        return voters

    def require_quorum(self) -> None:
        """KafkaConfig's check that the node can find the controllers: ``storage format``
        loads the same KafkaConfig as the server, so a configuration the server refuses is
        refused when formatting too."""
        if not self.static_voters and not self.get("controller.quorum.bootstrap.servers"):
            raise ConfigError(
                "If using process.roles, either controller.quorum.bootstrap.servers must "
                "contain the set of bootstrap controllers or controller.quorum.voters must "
                "contain a parseable set of controllers.")

    @property
    def zk_migration_enabled(self) -> bool:
        """``zookeeper.metadata.migration.enable``, refused without ``zookeeper.connect``
        as Kafka 3.9's KafkaConfig refuses it in KRaft mode."""
        enabled: bool = self.get(MIGRATION_ENABLE)
        if enabled and self.get(ZOOKEEPER_CONNECT) is None:
            raise ConfigError(f"If using `{MIGRATION_ENABLE}` in KRaft mode, "
                              f"`{ZOOKEEPER_CONNECT}` must also be set.")
        return enabled

    def security_protocol(self, listener: str) -> str:
        """The protocol of ``listener`` (Kafka's ``effectiveListenerSecurityProtocolMap``):
        with no explicit map and no SSL or SASL listener anywhere, controller listeners not
        in the default map are PLAINTEXT, as KRaft configurations written before the map
        existed expect."""
        mapping: dict[str, str] = dict(self.get("listener.security.protocol.map"))
        if "listener.security.protocol.map" not in self.raw:
            bound: tuple[Endpoint, ...] = self.get("listeners")
            names = {*self.controller_listener_names, *(e.name for e in bound)}
            if not names & {"SSL", "SASL_SSL", "SASL_PLAINTEXT"}:
                mapping.update({n: "PLAINTEXT" for n in self.controller_listener_names
                                if n not in mapping})
        protocol = mapping.get(listener.upper())
        if protocol is None:
            raise ConfigError(f"No security protocol defined for listener {listener}: add it "
                              "to listener.security.protocol.map")
        return protocol

    def advertised_controller_endpoints(self) -> tuple[Endpoint, ...]:
        """The controller listeners others reach: advertised if set, else bound listeners."""
        advertised: tuple[Endpoint, ...] = self.get("advertised.listeners")
        bound: tuple[Endpoint, ...] = self.get("listeners")
        names = self.controller_listener_names
        chosen = [e for e in advertised if e.name in names] or [e for e in bound if e.name in names]
        return tuple(sorted(chosen, key=lambda e: names.index(e.name)))
