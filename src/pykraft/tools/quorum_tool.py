"""``pykraft metadata-quorum``: Kafka's ``kafka-metadata-quorum.sh`` against the controllers.

Like Kafka's admin client with ``--bootstrap-controller``, it asks a bootstrap controller
(DescribeCluster, controller endpoints) which controller is active, then sends
DescribeQuorum, AddRaftVoter or RemoveRaftVoter there; every connection opens with
ApiVersions. While a leader is being elected (no active controller, NOT_LEADER_OR_FOLLOWER,
REQUEST_TIMED_OUT because the previous voter change is not committed yet, a closed
connection) it tries again until a deadline. With ``--command-config`` it connects as
Kafka's admin would with those properties (``security.protocol``, ``ssl.*``, SASL: see
:func:`pykraft.tools.admin_client.client_security`); a refused SASL authentication or a
server certificate that does not verify is final, as in Kafka's admin. The text layouts
are Kafka's (``--status`` lines, ``--replication`` tab-terminated padded table, ``Added
controller ...``).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import ssl
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pykraft.config.server import Endpoint, parse_listeners
from pykraft.errors import ConfigError, ProtocolError
from pykraft.ids import ZERO_UUID, InvalidUuidError, uuid_from_str, uuid_to_str
from pykraft.messages.kafka.describe_cluster_request import DescribeClusterRequest
from pykraft.messages.kafka.describe_cluster_response import DescribeClusterResponse
from pykraft.protocol.api_versions import listener_ranges
from pykraft.protocol.apis import ApiKey, Listener
from pykraft.protocol.describe_cluster import BROKER_ENDPOINTS, CONTROLLER_ENDPOINTS
from pykraft.protocol.errors import ErrorCode, error_name
from pykraft.raft import rpc
from pykraft.runtime.kafka_client import CONNECTION_ERRORS, ClientConnection, open_with_timeout
from pykraft.runtime.sasl_client import SaslClientError
from pykraft.storage.meta_properties import META_PROPERTIES, read_meta_properties
from pykraft.tools.admin_client import Address, ClientSecurity
from pykraft.tools.metadata_reader import MetadataReadError, read_committed_image

CLIENT_ID = "pykraft-metadata-quorum"
_TOOL_APIS = (ApiKey.API_VERSIONS, ApiKey.DESCRIBE_QUORUM, ApiKey.DESCRIBE_CLUSTER,
              ApiKey.ADD_RAFT_VOTER, ApiKey.REMOVE_RAFT_VOTER, ApiKey.UPDATE_FEATURES,
              ApiKey.FETCH, ApiKey.FETCH_SNAPSHOT)
TOOL_RANGES = {k: r for k, r in listener_ranges(Listener.CONTROLLER).items() if k in _TOOL_APIS}
#: Kafka's admin ``request.timeout.ms`` (one attempt) and ``default.api.timeout.ms`` (all).
REQUEST_TIMEOUT_S = 30.0
DEFAULT_API_TIMEOUT_S = 60.0
_RETRY_BACKOFF_S = 0.2



class QuorumToolError(ProtocolError):
    """The quorum could not be described or changed (no leader, refused, unreachable)."""


class RefusedError(QuorumToolError):
    """The controller gave an answer that asking again would not change."""


class VoterChangeError(RefusedError):
    """The leader refused a voter change; ``error`` is Kafka's error code."""

    def __init__(self, error: ErrorCode, message: str | None) -> None:
        self.error = error
        super().__init__(f"{error_name(error)}: {message or _DEFAULT_MESSAGES.get(error, '')}"
                         .rstrip(": "))


#: Kafka's default exception messages for the errors the voter RPCs answer with.
_DEFAULT_MESSAGES = {
    ErrorCode.DUPLICATE_VOTER: "The voter is already part of the set of voters.",
    ErrorCode.VOTER_NOT_FOUND: "The voter is not part of the set of voters.",
    ErrorCode.INVALID_REQUEST: "This most likely occurs because of a request being malformed "
                               "by the client library or the message was sent to an "
                               "incompatible broker. See the broker logs for more details.",
    ErrorCode.UNSUPPORTED_VERSION: "The version of API is not supported.",
    ErrorCode.INCONSISTENT_CLUSTER_ID: "The clusterId in the request does not match that "
                                       "found on the server",
}


@dataclass(frozen=True, slots=True)
class Replica:
    replica_id: int
    directory_id: str
    log_end_offset: int
    last_fetch_ms: int
    last_caught_up_ms: int


@dataclass(frozen=True, slots=True)
class QuorumInfo:
    cluster_id: str
    leader_id: int
    leader_epoch: int
    high_watermark: int
    voters: tuple[Replica, ...]
    observers: tuple[Replica, ...]
    endpoints: dict[int, tuple[str, ...]]
    zk_migration_state: str | None = None
    """Shown while the controllers migrate from ZooKeeper (:func:`migration_state`)."""

    @property
    def leader(self) -> Replica | None:
        return next((v for v in self.voters if v.replica_id == self.leader_id), None)

    def has_voter(self, node_id: int, directory_id: uuid.UUID) -> bool:
        return any(v.replica_id == node_id and v.directory_id == uuid_to_str(directory_id)
                   for v in self.voters)


def parse_host_port(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit():
        raise QuorumToolError(f"invalid --bootstrap-controller {text!r}: expected host:port")
    return host.strip("[]"), int(port)


def parse_bootstrap(text: str) -> tuple[Address, ...]:
    """Kafka's ``--bootstrap-controller``: a comma-separated list of host:port."""
    addresses = tuple(parse_host_port(part.strip()) for part in text.split(",") if part.strip())
    if not addresses:
        raise QuorumToolError("--bootstrap-controller names no host:port")
    return addresses


# -- finding the active controller ----------------------------------------------------------

@dataclass(frozen=True, slots=True)
class ActiveController:
    cluster_id: str
    node_id: int
    address: Address
    via_broker: bool = False
    """``address`` is the bootstrap broker, which forwards the quorum APIs."""


PLAINTEXT = ClientSecurity()


async def _open(address: Address, deadline: float, security: ClientSecurity
                ) -> ClientConnection:
    remaining = max(0.1, deadline - time.monotonic())
    try:
        return await open_with_timeout(address[0], address[1], client_id=CLIENT_ID,
                                       ours=TOOL_RANGES, timeout_s=remaining,
                                       tls=security.tls, sasl=security.sasl)
    except (SaslClientError, ssl.SSLCertVerificationError) as exc:
        raise RefusedError(f"{address[0]}:{address[1]}: {exc}") from None


async def request_once(address: Address, body: Any, deadline: float,
                       security: ClientSecurity = PLAINTEXT) -> Any:
    """One request on a fresh connection, bounded by the deadline and one request timeout."""
    connection = await _open(address, deadline, security)
    try:
        remaining = min(REQUEST_TIMEOUT_S, max(0.1, deadline - time.monotonic()))
        return await asyncio.wait_for(connection.request(body), remaining)
    finally:
        connection.close()


async def _ask_controller(address: Address, deadline: float, security: ClientSecurity
                          ) -> ActiveController:
    cluster = await request_once(address, DescribeClusterRequest(
        endpoint_type=CONTROLLER_ENDPOINTS), deadline, security)
    assert isinstance(cluster, DescribeClusterResponse)
    if cluster.error_code in (ErrorCode.MISMATCHED_ENDPOINT_TYPE,
                              ErrorCode.UNSUPPORTED_ENDPOINT_TYPE):  # Kafka 3.7-3.9
        # A broker (--bootstrap-server): it forwards the quorum APIs to the active controller.
        brokers = await request_once(address, DescribeClusterRequest(
            endpoint_type=BROKER_ENDPOINTS), deadline, security)
        assert isinstance(brokers, DescribeClusterResponse)
        return ActiveController(brokers.cluster_id, brokers.controller_id, address,
                                via_broker=True)
    if cluster.error_code != ErrorCode.NONE:
        raise QuorumToolError(f"DescribeCluster failed: {error_name(cluster.error_code)}")
    leader = next((b for b in cluster.brokers if b.broker_id == cluster.controller_id), None)
    if leader is None:
        raise QuorumToolError("no active controller known yet")
    return ActiveController(cluster.cluster_id, leader.broker_id, (leader.host, leader.port))


async def active_controller(bootstrap: Sequence[Address], deadline: float,
                            security: ClientSecurity = PLAINTEXT) -> ActiveController:
    """The active controller as the first answering bootstrap controller knows it.

    When every bootstrap controller refuses the connection nothing listens there: that is a
    definite answer (:class:`RefusedError`), not a reason to retry until the deadline."""
    errors = []
    refused = []
    for address in bootstrap:
        try:
            return await _ask_controller(address, deadline, security)
        except RefusedError:
            raise  # a refused handshake or login: another controller would refuse it too
        except ConnectionRefusedError:
            refused.append(f"Connection to {address[0]}:{address[1]} refused")
        except (*CONNECTION_ERRORS, QuorumToolError) as exc:
            errors.append(f"{address[0]}:{address[1]}: {exc}")
    if refused and not errors:
        raise RefusedError("; ".join(refused))
    raise QuorumToolError("; ".join(errors + refused))


async def retrying(what: str, attempt: Callable[[float], Awaitable[Any]],
                    timeout_s: float) -> Any:
    """Run ``attempt(deadline)`` until it returns; transient failures are retried."""
    deadline = time.monotonic() + timeout_s
    last_error = "no attempt"
    while time.monotonic() < deadline:
        try:
            return await attempt(deadline)
        except (*CONNECTION_ERRORS, QuorumToolError) as exc:
            if isinstance(exc, RefusedError):
                raise
            last_error = str(exc) or type(exc).__name__
        await asyncio.sleep(_RETRY_BACKOFF_S)  # an election or a voter change in progress
    raise QuorumToolError(f"could not {what} within {timeout_s:.0f} s: {last_error}")


# -- describe -------------------------------------------------------------------------------

async def describe_quorum(bootstrap: Address, *more: Address, timeout_s: float = 10.0,
                          security: ClientSecurity = PLAINTEXT,
                          with_migration_state: bool = False) -> QuorumInfo:
    """Find the active controller through the bootstrap controllers; describe its quorum
    (and, ``with_migration_state``, the ZooKeeper migration's: :func:`migration_state`)."""
    async def attempt(deadline: float) -> QuorumInfo:
        active = await active_controller((bootstrap, *more), deadline, security)
        response = await request_once(active.address, rpc.describe_quorum_request(), deadline,
                                      security)
        info = _quorum_info(active.cluster_id, response)
        if not with_migration_state:
            return info
        state = await migration_state(active, deadline, security)
        return dataclasses.replace(info, zk_migration_state=state)
    info: QuorumInfo = await retrying("describe the quorum", attempt, timeout_s)
    return info


async def migration_state(active: ActiveController, deadline: float,
                          security: ClientSecurity) -> str | None:
    """The ZooKeeper migration state (KIP-866) of the active controller's committed
    metadata, when that controller runs with ``zookeeper.metadata.migration.enable`` (its
    ApiVersions answer says ZkMigrationReady); None otherwise, and through a broker.

    No Kafka admin RPC carries the state, so it is read from the metadata log itself
    (:mod:`pykraft.tools.metadata_reader`); a principal without ClusterAction gets the
    reason instead of the state, and the rest of the answer still prints."""
    if active.via_broker:
        return None
    connection = await _open(active.address, deadline, security)
    try:
        def ask(body: Any) -> Awaitable[Any]:
            remaining = min(REQUEST_TIMEOUT_S, max(0.1, deadline - time.monotonic()))
            return asyncio.wait_for(connection.request(body), remaining)
        versions = await ask(rpc.api_versions_request("pykraft"))
        if versions.error_code != ErrorCode.NONE or not versions.zk_migration_ready:
            return None
        quorum = _quorum_info(active.cluster_id, await ask(rpc.describe_quorum_request()))
        try:
            image = await read_committed_image(connection, cluster_id=active.cluster_id,
                                               leader_epoch=quorum.leader_epoch,
                                               deadline=deadline)
        except MetadataReadError as exc:
            if exc.error == ErrorCode.CLUSTER_AUTHORIZATION_FAILED:  # Kafka's ClusterAction
                return f"unknown ({exc}: reading the metadata log needs ClusterAction)"
            raise
        return image.features.zk_migration_state.name
    finally:
        connection.close()


def _quorum_info(cluster_id: str, response: rpc.DescribeQuorumResponse) -> QuorumInfo:
    if response.error_code != ErrorCode.NONE:
        raise QuorumToolError(f"DescribeQuorum failed: {error_name(response.error_code)}")
    parts = [p for t in response.topics for p in t.partitions]
    if len(parts) != 1:
        raise QuorumToolError(f"DescribeQuorum returned {len(parts)} partitions, expected 1")
    part = parts[0]
    if part.error_code != ErrorCode.NONE:
        raise QuorumToolError(f"DescribeQuorum failed: {error_name(part.error_code)}")
    endpoints = {
        node.node_id: tuple(f"{lst.name}://{lst.host}:{lst.port}" for lst in node.listeners)
        for node in response.nodes
    }
    return QuorumInfo(
        cluster_id=cluster_id, leader_id=part.leader_id, leader_epoch=part.leader_epoch,
        high_watermark=part.high_watermark,
        voters=tuple(_replica(r) for r in part.current_voters),
        observers=tuple(_replica(r) for r in part.observers), endpoints=endpoints,
    )


def _replica(state: rpc.ReplicaState) -> Replica:
    return Replica(
        replica_id=state.replica_id, directory_id=uuid_to_str(state.replica_directory_id),
        log_end_offset=state.log_end_offset, last_fetch_ms=state.last_fetch_timestamp,
        last_caught_up_ms=state.last_caught_up_timestamp,
    )


# -- add-controller / remove-controller -----------------------------------------------------

@dataclass(frozen=True, slots=True)
class ControllerIdentity:
    """What AddRaftVoter needs about a controller, read from its own configuration."""

    node_id: int
    directory_id: uuid.UUID
    endpoints: tuple[Endpoint, ...]


_NOT_A_CONTROLLER_CONFIG = "Is this a valid controller configuration file?"


def controller_identity(props: Mapping[str, str]) -> ControllerIdentity:
    """Kafka's checks of ``add-controller``'s ``--command-config`` (the new controller's
    server properties), with Kafka's messages."""
    node_text = props.get("node.id")
    if node_text is None:
        raise ConfigError(f"node.id not found in configuration file. {_NOT_A_CONTROLLER_CONFIG}")
    try:
        node_id = int(node_text.strip())
    except ValueError:
        raise ConfigError(f"invalid value {node_text!r} for node.id: expected an integer"
                          ) from None
    if node_id < 0:
        raise ConfigError(f"node.id was negative in configuration file. "
                          f"{_NOT_A_CONTROLLER_CONFIG}")
    if "controller" not in props.get("process.roles", ""):
        raise ConfigError("process.roles did not contain 'controller' in configuration file. "
                          f"{_NOT_A_CONTROLLER_CONFIG}")
    directory = _metadata_directory(props)
    return ControllerIdentity(node_id, _directory_id(directory), _controller_endpoints(props))


def _metadata_directory(props: Mapping[str, str]) -> Path:
    if "metadata.log.dir" in props:
        return Path(props["metadata.log.dir"])
    first = props.get("log.dirs", props.get("log.dir", "")).strip().split(",")[0].strip()
    if first:
        return Path(first)
    raise ConfigError("Neither metadata.log.dir nor log.dirs were found. "
                      f"{_NOT_A_CONTROLLER_CONFIG}")


def _directory_id(directory: Path) -> uuid.UUID:
    path = directory / META_PROPERTIES
    if not path.is_file():
        raise ConfigError(f"Unable to read meta.properties from {directory}")
    meta = read_meta_properties(path)
    if meta.directory_id is None:
        raise ConfigError(f"No directory id found in {directory}")
    return meta.directory_id


def _controller_endpoints(props: Mapping[str, str]) -> tuple[Endpoint, ...]:
    """Each controller listener, advertised if it is, else as bound; an empty host means
    ``localhost`` (Kafka's rule)."""
    by_name = {e.name: e for e in parse_listeners(props.get("listeners", ""), "listeners")}
    by_name.update({e.name: e for e in parse_listeners(props.get("advertised.listeners", ""),
                                                       "advertised.listeners")})
    if "controller.listener.names" not in props:
        raise ConfigError("controller.listener.names was not found. "
                          f"{_NOT_A_CONTROLLER_CONFIG}")
    endpoints: list[Endpoint] = []
    for text in props["controller.listener.names"].split(","):
        name = text.strip().upper()
        found = by_name.get(name)
        if found is None:
            raise ConfigError(f"Cannot find information about controller listener name: {name}")
        endpoint = Endpoint(found.name, found.host or "localhost", found.port)
        if endpoint not in endpoints:
            endpoints.append(endpoint)
    return tuple(endpoints)


def parse_controller_id(value: int) -> int:
    if value < 0:
        raise QuorumToolError(f"Invalid negative --controller-id: {value}")
    return value


def parse_directory_id(text: str) -> uuid.UUID:
    try:
        return uuid_from_str(text)
    except InvalidUuidError as exc:
        raise QuorumToolError(f"Failed to parse --controller-directory-id: {exc}") from None


def _endpoint_text(endpoint: Endpoint) -> str:
    host = f"[{endpoint.host}]" if ":" in endpoint.host else endpoint.host
    return f"{endpoint.name}://{host}:{endpoint.port}"


def added_message(identity: ControllerIdentity, *, dry_run: bool) -> str:
    return (f"{'DRY RUN of adding' if dry_run else 'Added'} controller {identity.node_id} "
            f"with directory id {uuid_to_str(identity.directory_id)} and endpoints: "
            + ", ".join(_endpoint_text(e) for e in identity.endpoints))


def removed_message(node_id: int, directory_id: uuid.UUID, *, dry_run: bool) -> str:
    """Kafka's line, with its two spaces after the verb."""
    return (f"{'DRY RUN of removing ' if dry_run else 'Removed '} KRaft controller {node_id} "
            f"with directory id {uuid_to_str(directory_id)}")


async def add_controller(bootstrap: Sequence[Address], identity: ControllerIdentity, *,
                         timeout_s: float = DEFAULT_API_TIMEOUT_S,
                         security: ClientSecurity = PLAINTEXT) -> None:
    """AddRaftVoter for ``identity`` at the active controller, answered once committed."""
    def request(cluster_id: str, deadline: float) -> rpc.AddRaftVoterRequest:
        timeout_ms = int(min(REQUEST_TIMEOUT_S, deadline - time.monotonic()) * 1000)
        return rpc.add_voter_request(
            cluster_id, identity.node_id, identity.directory_id,
            [(e.name, e.host, e.port) for e in identity.endpoints], max(timeout_ms, 1))

    await _change_voters(
        "add the controller", bootstrap, request, ErrorCode.DUPLICATE_VOTER,
        lambda info: info.has_voter(identity.node_id, identity.directory_id), timeout_s,
        security)


async def remove_controller(bootstrap: Sequence[Address], node_id: int,
                            directory_id: uuid.UUID, *,
                            timeout_s: float = DEFAULT_API_TIMEOUT_S,
                            security: ClientSecurity = PLAINTEXT) -> None:
    """RemoveRaftVoter for (``node_id``, ``directory_id``), answered once committed."""
    await _change_voters(
        "remove the controller", bootstrap,
        lambda cluster_id, _: rpc.remove_voter_request(cluster_id, node_id, directory_id),
        ErrorCode.VOTER_NOT_FOUND,
        lambda info: not info.has_voter(node_id, directory_id), timeout_s, security)


async def _change_voters(
    what: str, bootstrap: Sequence[Address],
    make_request: Callable[[str, float], rpc.ReconfigRequest], already_done_error: ErrorCode,
    is_done: Callable[[QuorumInfo], bool], timeout_s: float, security: ClientSecurity,
) -> None:
    """Send the change to the active controller, retrying transient failures.

    An attempt whose answer was lost may still have been applied; the retry then meets
    DUPLICATE_VOTER / VOTER_NOT_FOUND, and the voter set tells whether that means done.
    """
    sent = False

    async def attempt(deadline: float) -> None:
        nonlocal sent
        active = await active_controller(bootstrap, deadline, security)
        request = make_request(active.cluster_id, deadline)
        retry_is_ambiguous = sent
        sent = True
        response = await request_once(active.address, request, deadline, security)
        error = ErrorCode(response.error_code)
        if error == ErrorCode.NONE:
            return
        if error == already_done_error and retry_is_ambiguous:
            described = await request_once(active.address, rpc.describe_quorum_request(),
                                           deadline, security)
            if is_done(_quorum_info(active.cluster_id, described)):
                return
        if error.retriable:
            raise QuorumToolError(f"{error_name(error)} from controller {active.node_id}")
        raise VoterChangeError(error, response.error_message)

    await retrying(what, attempt, timeout_s)


# -- output ---------------------------------------------------------------------------------

def _json_directory(replica: Replica) -> str:
    return "null" if replica.directory_id == uuid_to_str(ZERO_UUID) else (
        f'"{replica.directory_id}"')


def status_lines(info: QuorumInfo) -> list[str]:
    """``describe --status`` exactly as Kafka prints it."""
    leader = info.leader
    lag, lag_ms = 0, 0
    if leader is not None and info.voters:
        laggard = min(info.voters, key=lambda v: v.log_end_offset)
        lag = leader.log_end_offset - laggard.log_end_offset
        if laggard is leader:
            lag_ms = 0
        elif leader.last_caught_up_ms >= 0 and laggard.last_caught_up_ms >= 0:
            lag_ms = leader.last_caught_up_ms - laggard.last_caught_up_ms
        else:
            lag_ms = -1

    def replicas(group: tuple[Replica, ...]) -> str:
        """Kafka prints a replica's endpoints whenever the answer has some for its id (an
        observer too: a controller that was a voter under another directory id)."""
        texts = []
        for replica in group:
            text = f'{{"id": {replica.replica_id}, "directoryId": {_json_directory(replica)}'
            endpoints = info.endpoints.get(replica.replica_id, ())
            if endpoints:
                text += ", \"endpoints\": [" + ", ".join(f'"{e}"' for e in endpoints) + "]"
            texts.append(text + "}")
        return "[" + ", ".join(texts) + "]"

    return [
        f"ClusterId:              {info.cluster_id}",
        f"LeaderId:               {info.leader_id}",
        f"LeaderEpoch:            {info.leader_epoch}",
        f"HighWatermark:          {info.high_watermark}",
        f"MaxFollowerLag:         {lag}",
        f"MaxFollowerLagTimeMs:   {lag_ms}",
        f"CurrentVoters:          {replicas(info.voters)}",
        f"CurrentObservers:       {replicas(info.observers)}",
        *migration_lines(info.zk_migration_state),
    ]


def migration_lines(state: str | None) -> list[str]:
    """pykraft's extra line while the controllers migrate from ZooKeeper (Kafka's tools print
    none; its operators read the controller gauge ``ZkMigrationState``)."""
    return [] if state is None else [f"ZkMigrationState:       {state}"]


REPLICATION_HEADERS = ("NodeId", "DirectoryId", "LogEndOffset", "Lag", "LastFetchTimestamp",
                       "LastCaughtUpTimestamp", "Status")


def replication_rows(info: QuorumInfo, *, human_readable: bool,
                     now_ms: int | None = None) -> list[tuple[str, ...]]:
    leader = info.leader
    leader_end = leader.log_end_offset if leader is not None else 0
    now = time.time_ns() // 1_000_000 if now_ms is None else now_ms

    def stamp(value: int) -> str:
        if value < 0 or not human_readable:
            return str(value)
        return f"{now - value} ms ago"

    ordered = ([(leader, "Leader")] if leader is not None else []) + [
        (v, "Follower") for v in info.voters if v.replica_id != info.leader_id
    ] + [(o, "Observer") for o in info.observers]
    return [
        (str(r.replica_id), r.directory_id, str(r.log_end_offset),
         str(leader_end - r.log_end_offset), stamp(r.last_fetch_ms),
         stamp(r.last_caught_up_ms), status)
        for r, status in ordered
    ]


def pretty_table(headers: tuple[str, ...], rows: list[tuple[str, ...]]) -> list[str]:
    """Kafka's ``ToolsUtils.prettyPrintTable``: left-aligned, padded, each cell + a tab."""
    widths = [max(len(row[i]) for row in (headers, *rows)) for i in range(len(headers))]
    return ["".join(cell.ljust(width) + "\t" for cell, width in zip(row, widths, strict=True))
            for row in (headers, *rows)]


def as_json(info: QuorumInfo) -> str:
    """Machine-readable form (pykraft extension): the facts of ``--status`` and
    ``--replication``; ``directoryId`` is null for a static (kraft.version 0) voter."""
    def replica(r: Replica) -> dict[str, object]:
        directory = None if r.directory_id == uuid_to_str(ZERO_UUID) else r.directory_id
        return {"id": r.replica_id, "directoryId": directory,
                "logEndOffset": r.log_end_offset, "lastFetchTimestamp": r.last_fetch_ms,
                "lastCaughtUpTimestamp": r.last_caught_up_ms,
                "endpoints": list(info.endpoints.get(r.replica_id, ()))}
    return json.dumps({
        "clusterId": info.cluster_id, "leaderId": info.leader_id,
        "leaderEpoch": info.leader_epoch, "highWatermark": info.high_watermark,
        "voters": [replica(v) for v in info.voters],
        "observers": [replica(o) for o in info.observers],
        **({} if info.zk_migration_state is None
           else {"zkMigrationState": info.zk_migration_state}),
    }, indent=2)

