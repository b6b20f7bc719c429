"""``metadata-quorum describe``: Kafka's ``kafka-metadata-quorum.sh`` against a controller.

Like Kafka's admin client with ``--bootstrap-controller``, it asks the bootstrap controller
(DescribeCluster, controller endpoints) which controller is active, then sends
DescribeQuorum there; every connection opens with ApiVersions. The text layouts are
Kafka's (``--status`` lines, ``--replication`` tab-terminated padded table).
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass
from typing import Any

from kio.schema.describe_cluster.v2 import request as dc_req
from kio.static.primitive import i8

from pykraft.errors import ProtocolError
from pykraft.ids import ZERO_UUID, uuid_to_str
from pykraft.protocol.api_versions import listener_ranges
from pykraft.protocol.apis import ApiKey, Listener
from pykraft.protocol.errors import ErrorCode, error_name
from pykraft.raft import rpc
from pykraft.runtime.client import CONNECTION_ERRORS, ClientConnection, open_with_timeout

CLIENT_ID = "pykraft-metadata-quorum"
_TOOL_APIS = (ApiKey.API_VERSIONS, ApiKey.DESCRIBE_QUORUM, ApiKey.DESCRIBE_CLUSTER)
TOOL_RANGES = {k: r for k, r in listener_ranges(Listener.CONTROLLER).items() if k in _TOOL_APIS}
CONTROLLER_ENDPOINTS = 2


class QuorumToolError(ProtocolError):
    """The quorum could not be described (no leader, refused, unreachable)."""


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

    @property
    def leader(self) -> Replica | None:
        return next((v for v in self.voters if v.replica_id == self.leader_id), None)


def parse_host_port(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit():
        raise QuorumToolError(f"invalid --bootstrap-controller {text!r}: expected host:port")
    return host.strip("[]"), int(port)


async def describe_quorum(bootstrap: tuple[str, int], *, timeout_s: float = 10.0) -> QuorumInfo:
    """Find the active controller through ``bootstrap`` and describe its quorum."""
    deadline = time.monotonic() + timeout_s
    last_error = "no attempt"
    while time.monotonic() < deadline:
        try:
            return await _attempt(bootstrap, deadline)
        except (*CONNECTION_ERRORS, QuorumToolError) as exc:
            last_error = str(exc)
        await asyncio.sleep(0.2)  # a leader election in progress: retry within the deadline
    raise QuorumToolError(f"could not describe the quorum within {timeout_s:.0f} s: "
                          f"{last_error}")


async def _attempt(bootstrap: tuple[str, int], deadline: float) -> QuorumInfo:
    connection = await _open(bootstrap, deadline)
    try:
        cluster = await connection.request(dc_req.DescribeClusterRequest(
            include_cluster_authorized_operations=False, endpoint_type=i8(CONTROLLER_ENDPOINTS),
            include_fenced_brokers=False))
    finally:
        connection.close()
    if cluster.error_code != ErrorCode.none:
        raise QuorumToolError(f"DescribeCluster failed: {error_name(cluster.error_code)}")
    leader = next((b for b in cluster.brokers if b.broker_id == cluster.controller_id), None)
    if leader is None:
        raise QuorumToolError("no active controller known yet")
    connection = await _open((leader.host, int(leader.port)), deadline)
    try:
        response = await connection.request(rpc.describe_quorum_request())
    finally:
        connection.close()
    return _quorum_info(cluster.cluster_id, response)


async def _open(address: tuple[str, int], deadline: float) -> ClientConnection:
    remaining = max(0.1, deadline - time.monotonic())
    return await open_with_timeout(address[0], address[1], client_id=CLIENT_ID,
                                   ours=TOOL_RANGES, timeout_s=remaining)


def _quorum_info(cluster_id: str, response: rpc.DescribeQuorumResponse) -> QuorumInfo:
    if response.error_code != ErrorCode.none:
        raise QuorumToolError(f"DescribeQuorum failed: {error_name(response.error_code)}")
    parts = [p for t in response.topics for p in t.partitions]
    if len(parts) != 1:
        raise QuorumToolError(f"DescribeQuorum returned {len(parts)} partitions, expected 1")
    part = parts[0]
    if part.error_code != ErrorCode.none:
        raise QuorumToolError(f"DescribeQuorum failed: {error_name(part.error_code)}")
    endpoints = {
        int(node.node_id): tuple(f"{lst.name}://{lst.host}:{lst.port}" for lst in node.listeners)
        for node in response.nodes
    }
    return QuorumInfo(
        cluster_id=cluster_id, leader_id=int(part.leader_id),
        leader_epoch=int(part.leader_epoch), high_watermark=int(part.high_watermark),
        voters=tuple(_replica(r) for r in part.current_voters),
        observers=tuple(_replica(r) for r in part.observers), endpoints=endpoints,
    )


def _replica(state: Any) -> Replica:
    directory = state.replica_directory_id
    return Replica(
        replica_id=int(state.replica_id),
        directory_id=uuid_to_str(ZERO_UUID if directory is None else directory),
        log_end_offset=int(state.log_end_offset),
        last_fetch_ms=int(state.last_fetch_timestamp),
        last_caught_up_ms=int(state.last_caught_up_timestamp),
    )


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
    voters = []
    for voter in info.voters:
        text = f'{{"id": {voter.replica_id}, "directoryId": {_json_directory(voter)}'
        endpoints = info.endpoints.get(voter.replica_id, ())
        if endpoints:
            text += ", \"endpoints\": [" + ", ".join(f'"{e}"' for e in endpoints) + "]"
        voters.append(text + "}")
    observers = [f'{{"id": {o.replica_id}, "directoryId": {_json_directory(o)}}}'
                 for o in info.observers]
    return [
        f"ClusterId:              {info.cluster_id}",
        f"LeaderId:               {info.leader_id}",
        f"LeaderEpoch:            {info.leader_epoch}",
        f"HighWatermark:          {info.high_watermark}",
        f"MaxFollowerLag:         {lag}",
        f"MaxFollowerLagTimeMs:   {lag_ms}",
        f"CurrentVoters:          [{', '.join(voters)}]",
        f"CurrentObservers:       [{', '.join(observers)}]",
    ]


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
    """Machine-readable form (pykraft extension): the same facts as ``--status`` rows."""
    def replica(r: Replica) -> dict[str, object]:
        return {"id": r.replica_id, "directoryId": r.directory_id,
                "logEndOffset": r.log_end_offset, "lastFetchTimestamp": r.last_fetch_ms,
                "lastCaughtUpTimestamp": r.last_caught_up_ms,
                "endpoints": list(info.endpoints.get(r.replica_id, ()))}
    return json.dumps({
        "clusterId": info.cluster_id, "leaderId": info.leader_id,
        "leaderEpoch": info.leader_epoch, "highWatermark": info.high_watermark,
        "voters": [replica(v) for v in info.voters],
        "observers": [replica(o) for o in info.observers],
    }, indent=2)

