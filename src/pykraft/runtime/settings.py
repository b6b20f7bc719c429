"""Everything a controller, broker or combined process needs, validated before it starts.

Every refusal is a :class:`ConfigError` or :class:`StorageError` whose message names the
configuration key or file at fault, so ``pykraft server`` can print it and exit non-zero
instead of half-starting.
"""

from __future__ import annotations

import dataclasses
import socket
import ssl
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pykraft.config.broker_configs import CONNECTION_LIMIT_KEYS, static_layer, unknown_key_warnings
from pykraft.config.server import (
    INTERNAL_METADATA_LOG_SEGMENT_BYTES,
    MIGRATION_CONFIG_DEFS,
    Endpoint,
    ServerConfig,
    VoterSpec,
    parse_count,
)
from pykraft.controller import ControllerConfig
from pykraft.controller.activation import (
    DEFAULT_BOOTSTRAP,
    DEFAULT_BOOTSTRAP_SOURCE,
    bootstrap_file_source,
)
from pykraft.errors import ConfigError
from pykraft.raft.config import CONFIG_KEYS, QuorumConfig
from pykraft.records.control import VoterEndpoint
from pykraft.replica.read_replica import replica_selector
from pykraft.runtime.connection_quotas import ConnectionLimits
from pykraft.runtime.sasl_client import SaslCredentials, node_credentials
from pykraft.runtime.tls import ServerTls, client_context, server_tls
from pykraft.runtime.zk_tls import zk_client_context
from pykraft.security.sasl_listener import SaslListener, sasl_listener
from pykraft.security.session import SecurityProtocol
from pykraft.storage.bootstrap import (
    BOOTSTRAP_CHECKPOINT,
    METADATA_LOG_DIR_NAME,
    read_bootstrap_checkpoint,
)
from pykraft.storage.log_dir_check import check_log_dirs

_SUPPORTED_ROLES = (("controller",), ("broker",), ("broker", "controller"))
_NON_NEGATIVE_KEYS = (
    "metadata.log.max.record.bytes.between.snapshots",
    "metadata.log.max.snapshot.interval.ms",
    "metadata.max.retention.bytes",
    "metadata.max.retention.ms",
    "pykraft.shutdown.timeout.ms",
)


@dataclass(frozen=True, slots=True)
class ListenerSettings:
    """One listener to bind: its endpoint, what others are told, its protocol
    (``listener.security.protocol.map``), on SSL and SASL_SSL its TLS side, and on
    SASL_PLAINTEXT and SASL_SSL its SASL mechanisms."""

    endpoint: Endpoint
    advertised: Endpoint
    protocol: SecurityProtocol
    tls: ServerTls | None = None
    sasl: SaslListener | None = None

    @property
    def name(self) -> str:
        return self.endpoint.name


@dataclass(frozen=True, slots=True)
class BrokerListenerSettings:
    """A broker's client listeners (every one in ``listeners`` that is not a controller
    listener), the listener replica fetchers use, and its session with the controller."""

    listeners: tuple[ListenerSettings, ...]
    inter_broker_listener: str
    inter_broker_tls: ssl.SSLContext | None
    """The client context fetchers connect with, when the inter-broker listener is TLS."""
    heartbeat_interval_ms: int
    rack: str | None
    inter_broker_sasl: SaslCredentials | None = None
    """What fetchers authenticate with, when the inter-broker listener is SASL."""

    @property
    def listener(self) -> Endpoint:
        """The first client listener (what logs and metrics name)."""
        return self.listeners[0].endpoint


@dataclass(frozen=True, slots=True)
class ZkClientSettings:
    """A migrating controller's ZooKeeper session, from Kafka 3.9's ``zookeeper.*`` keys
    (ZkConfigs): the ensemble with its chroot, the session's bounds, and its TLS."""

    connect: str
    """``host:port[,host:port...][/chroot]``, as ``zookeeper.connect``."""
    session_timeout_ms: int = 18000
    connection_timeout_ms: int = 18000
    """``zookeeper.connection.timeout.ms``, else the session timeout (Kafka's default)."""
    max_in_flight_requests: int = 10
    set_acl: bool = False
    tls: ssl.SSLContext | None = field(default=None, compare=False)
    """The session's TLS (``zookeeper.ssl.*``, :mod:`pykraft.runtime.zk_tls`); None for
    plaintext."""

    @classmethod
    def of(cls, config: ServerConfig) -> ZkClientSettings:
        session: int = config.get("zookeeper.session.timeout.ms")
        connection: int | None = config.get("zookeeper.connection.timeout.ms")
        connect: str = config.require("zookeeper.connect").strip()
        hosts, chroot = split_chroot(connect)
        if not hosts or any(not part.strip() for part in hosts.split(",")):
            raise ConfigError(f"invalid value {connect!r} for zookeeper.connect: expected "
                              "host:port[,host:port...][/chroot]")
        if chroot is not None and ("//" in chroot or chroot.endswith("/")):
            raise ConfigError(f"invalid value {connect!r} for zookeeper.connect: the chroot "
                              f"{chroot!r} is not a ZooKeeper path")
        return cls(connect=connect, session_timeout_ms=session,
                   connection_timeout_ms=session if connection is None else connection,
                   max_in_flight_requests=config.get("zookeeper.max.in.flight.requests"),
                   set_acl=config.get("zookeeper.set.acl"), tls=zk_client_context(config))

    @property
    def hosts(self) -> str:
        return split_chroot(self.connect)[0]

    @property
    def chroot(self) -> str | None:
        return split_chroot(self.connect)[1]


def split_chroot(connect: str) -> tuple[str, str | None]:
    """``zookeeper.connect`` as its hosts and its chroot (None without one, or for ``/``)."""
    hosts, slash, path = connect.partition("/")
    return hosts, f"/{path}" if slash and path else None


@dataclass(frozen=True, slots=True)
class NodeSettings:
    node_id: int
    cluster_id: str
    directory_id: uuid.UUID | None
    quorum: QuorumConfig
    voters: tuple[VoterSpec, ...]
    listener: Endpoint
    metadata_dir: Path
    segment_bytes: int
    segment_ms: int
    max_frame_size: int
    metrics_address: tuple[str, int] | None
    extension: str | None
    """``pykraft.server.extension.class``: see :mod:`pykraft.runtime.extension`."""
    shutdown_timeout_ms: int
    controller: ControllerConfig
    event_loop: str = "uvloop"
    """``pykraft.event.loop``: see :mod:`pykraft.runtime.event_loop`."""
    log_dir_ids: Mapping[Path, uuid.UUID] = dataclasses.field(default_factory=dict)
    """Each ``log.dirs`` entry's ``directory.id`` (its meta.properties): what the broker
    registers and assigns replicas to (KIP-858)."""
    offline_log_dirs: Mapping[Path, str] = dataclasses.field(default_factory=dict)
    """The directories that failed the start-up checks, each with why: the broker starts
    without them (:mod:`pykraft.storage.log_dir_check`)."""
    roles: tuple[str, ...] = ("controller",)
    bootstrap: tuple[object, ...] = DEFAULT_BOOTSTRAP
    """The records ``storage format`` chose (metadata.version first): the first active
    controller writes them to an empty log."""
    bootstrap_source: str = DEFAULT_BOOTSTRAP_SOURCE
    """Where :attr:`bootstrap` came from, as Kafka names it in its activation line."""
    broker: BrokerListenerSettings | None = None
    """Set when ``process.roles`` includes ``broker``."""
    bootstrap_servers: tuple[tuple[str, int], ...] = ()
    """``controller.quorum.bootstrap.servers`` of a dynamic quorum, in order: the core
    addresses entry ``i`` as destination ``-(i + 1)`` (see :func:`bootstrap_destination`)."""
    config_warnings: tuple[str, ...] = ()
    """Kafka's warning for each supplied key it does not know: logged once logging is up."""
    controller_listeners: tuple[ListenerSettings, ...] = ()
    """A controller's bound ``controller.listener.names`` listeners, first name first."""
    controller_tls: ssl.SSLContext | None = None
    """The client context for connections to controllers (raft peers, the broker's and the
    registrar's controller channel), when the first controller listener is TLS."""
    controller_sasl: SaslCredentials | None = None
    """What those connections authenticate with, when that listener is SASL."""
    protocols: dict[str, SecurityProtocol] | None = None
    """Every listener name this node binds or connects to, with its protocol."""
    connections: ConnectionLimits = dataclasses.field(default_factory=ConnectionLimits)
    """``max.connections*``, ``connections.max.idle.ms`` and the failed-login delay."""
    queued_max_requests: int = 500
    """``queued.max.requests``: the bound of each side's request queue."""
    zookeeper: ZkClientSettings | None = None
    """Set on a controller with ``zookeeper.metadata.migration.enable`` (KIP-866)."""
    legacy_tls: ssl.SSLContext | None = None
    """A migrating controller's TLS towards the ZK brokers' inter-broker listener, when that
    listener's protocol is SSL or SASL_SSL (the controller's ``ssl.*`` keys for it)."""
    legacy_sasl: SaslCredentials | None = None
    """A migrating controller's SASL towards that listener, when SASL_PLAINTEXT or SASL_SSL
    (``sasl.mechanism.inter.broker.protocol`` and the listener's JAAS)."""

    def protocol_of(self, listener: str) -> SecurityProtocol:
        return (self.protocols or {}).get(listener, SecurityProtocol.PLAINTEXT)

    @property
    def is_controller(self) -> bool:
        return "controller" in self.roles

    @property
    def partition_dir(self) -> Path:
        return self.metadata_dir / METADATA_LOG_DIR_NAME

    @property
    def is_dynamic(self) -> bool:
        """A KIP-853 quorum: voters come from the log, peers are found through bootstrap
        servers instead of ``controller.quorum.voters``."""
        return not self.voters

    def voter(self, node_id: int) -> VoterSpec | None:
        return next((v for v in self.voters if v.node_id == node_id), None)

    def bootstrap_address(self, destination: int) -> tuple[str, int] | None:
        """The host and port behind a bootstrap destination of the core (ids < 0)."""
        index = -destination - 1
        return self.bootstrap_servers[index] if 0 <= index < len(self.bootstrap_servers) else None


def bootstrap_destination(index: int) -> int:
    """The opaque destination the core uses for bootstrap server ``index``: negative, so it
    never collides with a replica id."""
    return -index - 1


def load_settings(config: ServerConfig) -> NodeSettings:
    """Validate ``config`` for a node of a static or dynamic quorum and check its storage."""
    roles = tuple(sorted(config.process_roles))
    if roles not in _SUPPORTED_ROLES:
        raise ConfigError(f"process.roles={','.join(roles)} is not supported: use "
                          "controller, broker, or broker,controller")
    node_id = config.node_id
    voters = config.static_voters
    bootstrap_servers: tuple[tuple[str, int], ...] = ()
    if voters:
        _check_static_membership(node_id, roles, voters)
    else:
        # Without static voters the quorum is dynamic (KIP-853): its voters are in the log,
        # and the bootstrap servers are where this node first looks for the leader.
        config.require_quorum()
        bootstrap_servers = config.get("controller.quorum.bootstrap.servers")
    quorum = _quorum_config(config, voters, len(bootstrap_servers),
                            local=_local_listeners(config) if "controller" in roles else ())
    # a controller without its listener is named first, before that listener's protocol
    bound = _controller_listener(config) if "controller" in roles else None
    protocols = _protocols(config)
    broker = _broker_settings(config, protocols) if "broker" in roles else None
    listener = bound or (broker.listener if broker is not None
                         else _controller_listener(config))
    controller_name = config.controller_listener_names[0]
    controller_tls = (client_context(config.raw, controller_name)
                      if protocols[controller_name].uses_tls else None)
    controller_sasl = (node_credentials(config.raw, controller_name,
                                        "sasl.mechanism.controller.protocol")
                       if protocols[controller_name].uses_sasl else None)
    migrating = "controller" in roles and config.zk_migration_enabled
    legacy_tls, legacy_sasl = (legacy_channel_security(config) if migrating
                               else (None, None))
    metadata_dir = config.metadata_log_dir
    found = check_log_dirs(config.log_dirs, metadata_dir, node_id,
                           broker="broker" in roles)
    bootstrap, bootstrap_source = _bootstrap(metadata_dir)
    for key in _NON_NEGATIVE_KEYS:
        if config.get(key) < 0:
            raise ConfigError(f"invalid value {config.get(key)} for {key}: must be >= 0")
    segment_key = ("metadata.log.segment.bytes"
                   if config.get(INTERNAL_METADATA_LOG_SEGMENT_BYTES) is None
                   else INTERNAL_METADATA_LOG_SEGMENT_BYTES)  # as Kafka's MetadataLogConfig
    segment_bytes = config.get(segment_key)
    if segment_bytes <= 0:
        raise ConfigError(f"invalid value {segment_bytes} for {segment_key}: must be positive")
    segment_ms = config.get("metadata.log.segment.ms")
    if segment_ms <= 0:
        raise ConfigError(f"invalid value {segment_ms} for metadata.log.segment.ms: "
                          "must be positive")
    max_frame = config.get("socket.request.max.bytes")
    if max_frame <= 0:
        raise ConfigError(f"invalid value {max_frame} for socket.request.max.bytes: "
                          "must be positive")
    return NodeSettings(
        node_id=node_id, cluster_id=found.cluster_id,
        directory_id=found.metas[metadata_dir].directory_id,
        log_dir_ids={d: dir_id for d in config.log_dirs if d in found.metas
                     and (dir_id := found.metas[d].directory_id) is not None},
        offline_log_dirs=found.offline, quorum=quorum,
        voters=voters, listener=listener, metadata_dir=metadata_dir,
        segment_bytes=segment_bytes, segment_ms=segment_ms, max_frame_size=max_frame,
        metrics_address=_metrics_address(config, listener),
        extension=config.get("pykraft.server.extension.class"),
        shutdown_timeout_ms=config.get("pykraft.shutdown.timeout.ms"),
        event_loop=config.get("pykraft.event.loop"),
        controller=ControllerConfig(
            node_id=node_id, cluster_id=found.cluster_id,
            session_timeout_ms=config.get("broker.session.timeout.ms"),
            fence_on_refused_connection=config.get(
                "pykraft.broker.fence.on.refused.connection.enable"),
            broker_heartbeat_interval_ms=config.get("broker.heartbeat.interval.ms"),
            mutation_quota_samples=config.get("controller.quota.window.num"),
            mutation_quota_window_s=config.get("controller.quota.window.size.seconds"),
            max_idle_interval_ms=config.get("metadata.max.idle.interval.ms"),
            default_num_partitions=config.get("num.partitions"),
            default_replication_factor=config.get("default.replication.factor"),
            max_bytes_between_snapshots=config.get(
                "metadata.log.max.record.bytes.between.snapshots"),
            max_snapshot_interval_ms=config.get("metadata.log.max.snapshot.interval.ms"),
            zk_migration_enabled=migrating,
            zk_migration_min_batch_size=config.get(
                "zookeeper.metadata.migration.min.batch.size"),
            inter_broker_listener_name=_inter_broker_listener_name(config),
            properties=static_layer(config.raw)),
        roles=roles, broker=broker, bootstrap=bootstrap, bootstrap_source=bootstrap_source,
        bootstrap_servers=bootstrap_servers,
        config_warnings=tuple(unknown_key_warnings(
            key for key in config.raw if "controller" not in roles or key not in MIGRATION_KEYS)),
        controller_listeners=(_controller_listeners(config, protocols)
                              if "controller" in roles else ()),
        controller_tls=controller_tls, controller_sasl=controller_sasl, protocols=protocols,
        connections=connection_limits(config, broker),
        queued_max_requests=config.get("queued.max.requests"),
        zookeeper=ZkClientSettings.of(config) if migrating else None,
        legacy_tls=legacy_tls, legacy_sasl=legacy_sasl,
    )


def legacy_channel_security(config: ServerConfig
                             ) -> tuple[ssl.SSLContext | None, SaslCredentials | None]:
    """``legacy_tls`` and ``legacy_sasl``: what Kafka's migrating controller connects to the
    ZK brokers with, from the protocol of ``inter.broker.listener.name`` in its own
    ``listener.security.protocol.map`` and its client settings for that listener."""
    listener = _inter_broker_listener_name(config)
    try:
        protocol = SecurityProtocol[config.security_protocol(listener)]
    except ConfigError:
        raise ConfigError(f"Listener with name {listener} defined in inter.broker.listener.name "
                          "not found in listener.security.protocol.map.") from None
    return (client_context(config.raw, listener) if protocol.uses_tls else None,
            node_credentials(config.raw, listener, "sasl.mechanism.inter.broker.protocol")
            if protocol.uses_sasl else None)


#: A controller knows the migration keys (a broker, as Kafka 4's, warns of them as unknown).
MIGRATION_KEYS = frozenset(d.key for d in MIGRATION_CONFIG_DEFS)


def connection_limits(config: ServerConfig, broker: BrokerListenerSettings | None
                       ) -> ConnectionLimits:
    """Kafka's connection keys, checked as KafkaConfig checks them."""
    per_ip: int = config.get("max.connections.per.ip")
    overrides: dict[str, int] = config.get("max.connections.per.ip.overrides")
    if per_ip == 0 and not overrides:
        raise ConfigError("max.connections.per.ip can be set to zero only if "
                          "max.connections.per.ip.overrides property is set.")
    idle_ms: int = config.get("connections.max.idle.ms")
    delay_ms: int = config.get("connection.failed.authentication.delay.ms")
    if delay_ms >= idle_ms:
        raise ConfigError(f"connection.failed.authentication.delay.ms={delay_ms} should always "
                          f"be less than connections.max.idle.ms={idle_ms} to prevent failed "
                          "authentication responses from timing out")
    bound: tuple[Endpoint, ...] = config.get("listeners")
    per_listener: dict[str, dict[str, int]] = {"max.connections": {},
                                               "max.connection.creation.rate": {}}
    for endpoint in bound:
        for base, values in per_listener.items():
            key = f"listener.name.{endpoint.name.lower()}.{base}"
            if key in config.raw:
                values[endpoint.name] = parse_count(config.raw[key], key)
    protected = (broker.inter_broker_listener
                 if broker is not None and len(broker.listeners) > 1 else None)
    return ConnectionLimits(
        max_connections=config.get("max.connections"),
        listener_max=per_listener["max.connections"],
        per_ip=per_ip, per_ip_overrides=_resolved(overrides), max_idle_ms=idle_ms,
        failed_authentication_delay_ms=delay_ms,
        controller_listeners=frozenset(config.controller_listener_names),
        protected_listener=protected, creation_rate=config.get("max.connection.creation.rate"),
        listener_creation_rate=per_listener["max.connection.creation.rate"],
        quota_window_num=config.get("quota.window.num"),
        quota_window_size_s=config.get("quota.window.size.seconds"))


_DYNAMIC_LISTENER_SUFFIXES = (".max.connections", ".max.connection.creation.rate")


def dynamic_connection_keys(layer: Mapping[str, str]) -> dict[str, str]:
    """The entries of a dynamic config layer that change connection limits."""
    return {key: value for key, value in layer.items()
            if key in CONNECTION_LIMIT_KEYS
            or (key.startswith("listener.name.") and key.endswith(_DYNAMIC_LISTENER_SUFFIXES))}


def dynamic_connection_limits(static: Mapping[str, str], dynamic: Mapping[str, str],
                              broker: BrokerListenerSettings | None) -> ConnectionLimits:
    """The limits with ``dynamic`` (:func:`dynamic_connection_keys` of the cluster default
    and this broker's layers, the broker's winning) over the static properties; refused as
    at start (a :class:`ConfigError`)."""
    return connection_limits(ServerConfig({**static, **dynamic}), broker)


def _resolved(overrides: dict[str, int]) -> dict[str, int]:
    """``max.connections.per.ip.overrides`` by address: a host name counts for each of its
    addresses (Kafka resolves the names when it starts)."""
    resolved: dict[str, int] = {}
    for host, count in overrides.items():
        try:
            infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
        except OSError as exc:
            raise ConfigError(f"Invalid value {host}:{count} for configuration "
                              f"max.connections.per.ip.overrides: {exc}") from None
        resolved.update({str(info[4][0]): count for info in infos})
    return resolved


def _check_static_membership(node_id: int, roles: tuple[str, ...],
                             voters: tuple[VoterSpec, ...]) -> None:
    is_voter = node_id in {v.node_id for v in voters}
    if "controller" in roles and not is_voter:
        raise ConfigError(f"node.id {node_id} is not in controller.quorum.voters: a "
                          "controller of a static quorum must be one of the voters")
    if "controller" not in roles and is_voter:
        raise ConfigError(f"node.id {node_id} is in controller.quorum.voters, but "
                          "process.roles=broker: a broker-only node cannot be a voter")


def _quorum_config(config: ServerConfig, voters: tuple[VoterSpec, ...], bootstrap_count: int,
                   *, local: tuple[VoterEndpoint, ...]) -> QuorumConfig:
    """The core's settings; timing keys only when set, so the core's defaults stay Kafka's
    hard-coded ones (retention -1 unless configured)."""
    names = config.controller_listener_names
    values: dict[str, Any] = {field: config.get(key) for key, field in CONFIG_KEYS.items()
                              if key in config.raw}
    if names:
        values["listener_name"] = names[0]
    return QuorumConfig(
        voters=frozenset(v.node_id for v in voters),
        voter_endpoints=tuple((v.node_id, v.host, v.port) for v in voters),
        bootstrap_servers=tuple(bootstrap_destination(i) for i in range(bootstrap_count)),
        local_listeners=local,
        auto_join=config.get("controller.quorum.auto.join.enable"), **values)


def _local_listeners(config: ServerConfig) -> tuple[VoterEndpoint, ...]:
    """This controller's endpoints as other replicas reach them (advertised, else bound):
    what UpdateRaftVoter and auto-join send, and what the voter set should hold."""
    return tuple(VoterEndpoint(e.name, e.host, e.port)
                 for e in config.advertised_controller_endpoints())


def _bootstrap(metadata_dir: Path) -> tuple[tuple[object, ...], str]:
    """The bootstrap records and their source: ``bootstrap.checkpoint``'s, else the
    default."""
    path = metadata_dir / BOOTSTRAP_CHECKPOINT
    if not path.exists():
        return DEFAULT_BOOTSTRAP, DEFAULT_BOOTSTRAP_SOURCE
    return (tuple(r.message for r in read_bootstrap_checkpoint(metadata_dir)),
            bootstrap_file_source(path))


def _protocols(config: ServerConfig) -> dict[str, SecurityProtocol]:
    """The protocol of every bound listener and controller listener name; a name missing
    from ``listener.security.protocol.map`` is refused, as Kafka refuses it."""
    bound: tuple[Endpoint, ...] = config.get("listeners")
    names = dict.fromkeys([*(e.name for e in bound), *config.controller_listener_names])
    if not config.controller_listener_names:
        raise ConfigError("missing required configuration controller.listener.names")
    return {name: SecurityProtocol[config.security_protocol(name)] for name in names}


def _listener(config: ServerConfig, endpoint: Endpoint, advertised: Endpoint,
              protocols: dict[str, SecurityProtocol]) -> ListenerSettings:
    protocol = protocols[endpoint.name]
    return ListenerSettings(
        endpoint, advertised, protocol,
        server_tls(config.raw, endpoint.name) if protocol.uses_tls else None,
        sasl_listener(config.raw, endpoint.name) if protocol.uses_sasl else None)


def _broker_settings(config: ServerConfig, protocols: dict[str, SecurityProtocol]
                     ) -> BrokerListenerSettings:
    """Every bound listener that is not a controller listener serves clients."""
    names = set(config.controller_listener_names)
    bound: tuple[Endpoint, ...] = config.get("listeners")
    advertised: tuple[Endpoint, ...] = config.get("advertised.listeners")
    chosen = [e for e in bound if e.name not in names]
    if not chosen:
        raise ConfigError("process.roles includes broker, but listeners has no listener "
                          "outside controller.listener.names for clients")
    listeners = tuple(
        _listener(config, e, next((a for a in advertised if a.name == e.name), e), protocols)
        for e in chosen)
    inter_broker = _inter_broker_listener(config, tuple(e.name for e in chosen))
    interval = config.get("broker.heartbeat.interval.ms")
    if interval <= 0:
        raise ConfigError(f"invalid value {interval} for broker.heartbeat.interval.ms: "
                          "must be positive")
    replica_selector(config.raw)  # refuse a selector class pykraft does not have
    return BrokerListenerSettings(
        listeners=listeners, inter_broker_listener=inter_broker,
        inter_broker_tls=(client_context(config.raw, inter_broker)
                          if protocols[inter_broker].uses_tls else None),
        heartbeat_interval_ms=interval, rack=config.raw.get("broker.rack") or None,
        inter_broker_sasl=(node_credentials(config.raw, inter_broker,
                                            "sasl.mechanism.inter.broker.protocol")
                           if protocols[inter_broker].uses_sasl else None))


def _inter_broker_listener_name(config: ServerConfig) -> str:
    """``inter.broker.listener.name``, else the listener named after
    ``security.inter.broker.protocol`` (PLAINTEXT by default), as Kafka picks it."""
    name: str | None = config.get("inter.broker.listener.name")
    protocol: str | None = config.get("security.inter.broker.protocol")
    if name and protocol:
        raise ConfigError("Only one of inter.broker.listener.name and "
                          "security.inter.broker.protocol should be set.")
    return (name or protocol or "PLAINTEXT").upper()


def _inter_broker_listener(config: ServerConfig, names: tuple[str, ...]) -> str:
    """The inter-broker listener name, which must be one of the broker's ``names``."""
    chosen = _inter_broker_listener_name(config)
    if chosen not in names:
        raise ConfigError(f"inter.broker.listener.name must be a listener name defined in "
                          f"advertised.listeners. The valid options based on currently "
                          f"configured listeners are {','.join(names)}")
    return chosen


def _controller_listeners(config: ServerConfig, protocols: dict[str, SecurityProtocol]
                          ) -> tuple[ListenerSettings, ...]:
    first = _controller_listener(config)  # refuses a first name that is not bound
    bound: tuple[Endpoint, ...] = config.get("listeners")
    advertised = {e.name: e for e in config.advertised_controller_endpoints()}
    others = [e for e in bound if e.name in config.controller_listener_names and e != first]
    return tuple(_listener(config, e, advertised.get(e.name, e), protocols)
                 for e in (first, *others))


def _controller_listener(config: ServerConfig) -> Endpoint:
    names = config.controller_listener_names
    if not names:
        raise ConfigError("missing required configuration controller.listener.names")
    bound: tuple[Endpoint, ...] = config.get("listeners")
    chosen = next((e for e in bound if e.name == names[0]), None)
    if chosen is None:
        raise ConfigError(f"controller.listener.names names {names[0]}, which is not in "
                          f"listeners ({', '.join(str(e) for e in bound) or 'empty'})")
    return chosen


def _metrics_address(config: ServerConfig, listener: Endpoint) -> tuple[str, int] | None:
    port: int = config.get("metrics.port")
    if port == -1:
        return None
    if not 0 <= port <= 65535:
        raise ConfigError(f"invalid value {port} for metrics.port: expected -1 (off) or a port")
    return (config.get("metrics.host") or listener.host or "0.0.0.0", port)
