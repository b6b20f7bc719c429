"""AddRaftVoter, RemoveRaftVoter and UpdateRaftVoter on the leader (KIP-853).

Each handler turns a request into either a refusal with Kafka's error code or the voter set
to append. The leader applies one change at a time: while a change is pending, before it has
a high watermark (older leaders may still be unfenced), or while the latest VotersRecord is
uncommitted, every request gets REQUEST_TIMED_OUT. The new set takes effect when appended;
the request is answered once it commits (the high watermark, computed with the new set,
passes the record), or at once after the append when an AddRaftVoter says
``AckWhenCommitted=false``.

AddRaftVoter has two steps, as in Kafka: :func:`validate_add` checks the request, then the
leader asks the new replica for its ApiVersions, and :func:`plan_add` checks that it supports
the finalized kraft.version and has caught up before the record is appended.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Protocol

from pykraft.protocol.errors import ErrorCode
from pykraft.raft import rpc
from pykraft.raft.voter_set import (
    SUPPORTED_KRAFT_VERSIONS,
    ReplicaKey,
    VoterNode,
    VoterSet,
)
from pykraft.records.control import KRaftVersionFeature, VoterEndpoint


class _Listener(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def host(self) -> str: ...
    @property
    def port(self) -> int: ...


@dataclass(frozen=True, slots=True)
class Refusal:
    error: ErrorCode
    message: str


@dataclass(frozen=True, slots=True)
class ReconfigContext:
    """What the leader knows when a change request arrives."""

    kraft_version: int
    voters: VoterSet
    high_watermark: int | None
    last_voters_offset: int | None
    change_pending: bool
    listener_name: str


@dataclass(slots=True)
class PendingChange:
    """A change in progress: an AddRaftVoter probing the new replica (``voters_offset`` is
    None, ``joining`` is the node to add), or an appended change waiting to commit."""

    source: int
    correlation_id: int
    request: rpc.ReconfigRequest
    deadline_ms: int
    voters_offset: int | None = None
    joining: VoterNode | None = None


def _gate(ctx: ReconfigContext) -> Refusal | None:
    if ctx.change_pending:
        return Refusal(ErrorCode.REQUEST_TIMED_OUT, "another voter change is in progress")
    if ctx.high_watermark is None:
        return Refusal(ErrorCode.REQUEST_TIMED_OUT,
                       "the leader has not committed its first record of this epoch yet")
    if ctx.kraft_version < 1:
        return Refusal(ErrorCode.UNSUPPORTED_VERSION,
                       "kraft.version 0: the voter set is static (controller.quorum.voters)")
    if ctx.last_voters_offset is not None and ctx.last_voters_offset >= ctx.high_watermark:
        return Refusal(ErrorCode.REQUEST_TIMED_OUT, "the last voter change is not committed yet")
    return None


def _unsupported(ctx: ReconfigContext, key: ReplicaKey,
                 supported: KRaftVersionFeature) -> Refusal | None:
    if supported.min_supported_version <= ctx.kraft_version <= supported.max_supported_version:
        return None
    return Refusal(ErrorCode.INVALID_REQUEST,
                   f"replica {key} supports kraft.version {supported.min_supported_version}-"
                   f"{supported.max_supported_version}, not the finalized {ctx.kraft_version}")


def _endpoints(listeners: Iterable[_Listener], listener_name: str) -> (
    tuple[VoterEndpoint, ...] | Refusal
):
    endpoints = tuple(VoterEndpoint(item.name, item.host, int(item.port)) for item in listeners)
    if not any(e.name == listener_name for e in endpoints):
        return Refusal(ErrorCode.INVALID_REQUEST,
                       f"no endpoint for the default listener {listener_name}")
    return endpoints


def validate_add(ctx: ReconfigContext, request: rpc.AddRaftVoterRequest) -> VoterNode | Refusal:
    """The replica to add (its kraft.version range not known yet), or why not."""
    refusal = _gate(ctx)
    if refusal is not None:
        return refusal
    key = ReplicaKey.of(int(request.voter_id), request.voter_directory_id)
    if key.directory_id is None or key.id < 0:
        return Refusal(ErrorCode.INVALID_REQUEST, "the new voter needs an id and a directory id")
    if key.id in ctx.voters:
        return Refusal(ErrorCode.DUPLICATE_VOTER, f"replica id {key.id} is already a voter")
    endpoints = _endpoints(request.listeners, ctx.listener_name)
    if isinstance(endpoints, Refusal):
        return endpoints
    return VoterNode(key, endpoints, SUPPORTED_KRAFT_VERSIONS)


def plan_add(ctx: ReconfigContext, joining: VoterNode, supported: KRaftVersionFeature,
             caught_up: Callable[[ReplicaKey], bool]) -> VoterSet | Refusal:
    """After the ApiVersions probe: the voter set with the new voter, if it supports the
    finalized kraft.version and has caught up with the leader."""
    refusal = _gate(ctx) or _unsupported(ctx, joining.key, supported)
    if refusal is not None:
        return refusal
    added = ctx.voters.with_added(VoterNode(joining.key, joining.endpoints, supported))
    if added is None:
        return Refusal(ErrorCode.DUPLICATE_VOTER, f"replica id {joining.key.id} is already a voter")
    if not caught_up(joining.key):
        return Refusal(ErrorCode.REQUEST_TIMED_OUT,
                       f"replica {joining.key} has not caught up with the leader")
    return added


def plan_remove(ctx: ReconfigContext, request: rpc.RemoveRaftVoterRequest) -> VoterSet | Refusal:
    refusal = _gate(ctx)
    if refusal is not None:
        return refusal
    key = ReplicaKey.of(int(request.voter_id), request.voter_directory_id)
    removed = ctx.voters.with_removed(key)
    if removed is None:
        return Refusal(ErrorCode.VOTER_NOT_FOUND, f"replica {key} is not a voter")
    if not removed.ids:
        return Refusal(ErrorCode.INVALID_REQUEST, "the last voter cannot be removed")
    return removed


def plan_update(ctx: ReconfigContext, request: rpc.UpdateRaftVoterRequest) -> VoterSet | Refusal:
    refusal = _gate(ctx)
    if refusal is not None:
        return refusal
    feature = request.k_raft_version_feature
    supported = KRaftVersionFeature(int(feature.min_supported_version),
                                    int(feature.max_supported_version))
    key = ReplicaKey.of(int(request.voter_id), request.voter_directory_id)
    refusal = _unsupported(ctx, key, supported)
    if refusal is not None:
        return refusal
    endpoints = _endpoints(request.listeners, ctx.listener_name)
    if isinstance(endpoints, Refusal):
        return endpoints
    updated = ctx.voters.with_updated(VoterNode(key, endpoints, supported))
    if updated is None:
        return Refusal(ErrorCode.VOTER_NOT_FOUND, f"replica {key} is not a voter")
    return updated


def learn_static_voter(voters: VoterSet, request: rpc.UpdateRaftVoterRequest,
                       listener_name: str) -> VoterNode | Refusal:
    """kraft.version 0: UpdateRaftVoter appends nothing, but tells the leader a static
    voter's directory id, endpoints and kraft.version range, which the upgrade to
    kraft.version 1 needs to write the first VotersRecord."""
    key = ReplicaKey.of(int(request.voter_id), request.voter_directory_id)
    if not voters.is_voter(key):
        return Refusal(ErrorCode.VOTER_NOT_FOUND, f"replica {key} is not a voter")
    if key.directory_id is None:
        return Refusal(ErrorCode.INVALID_REQUEST, "the voter needs a directory id")
    endpoints = _endpoints(request.listeners, listener_name)
    if isinstance(endpoints, Refusal):
        return endpoints
    feature = request.k_raft_version_feature
    return VoterNode(key, endpoints, KRaftVersionFeature(int(feature.min_supported_version),
                                                         int(feature.max_supported_version)))


def plan_upgrade(ctx: ReconfigContext, version: int,
                 known: Callable[[int], VoterNode | None]) -> VoterSet | Refusal:
    """kraft.version 0 -> 1: the static voters become the first VotersRecord, once the
    leader knows each one's directory id and endpoints and each supports version 1."""
    if version == ctx.kraft_version:
        return ctx.voters
    if version < ctx.kraft_version or version > SUPPORTED_KRAFT_VERSIONS.max_supported_version:
        return Refusal(ErrorCode.INVALID_UPDATE_VERSION,
                       f"cannot change kraft.version {ctx.kraft_version} to {version}")
    if ctx.change_pending or ctx.high_watermark is None:
        return Refusal(ErrorCode.REQUEST_TIMED_OUT, "the leader is busy; retry")
    nodes = []
    for voter in sorted(ctx.voters.ids):
        node = known(voter)
        if node is None:
            return Refusal(ErrorCode.REQUEST_TIMED_OUT,
                           f"voter {voter} has not told the leader its directory id yet")
        if not node.supported.min_supported_version <= version <= (
                node.supported.max_supported_version):
            return Refusal(ErrorCode.INVALID_UPDATE_VERSION,
                           f"voter {voter} does not support kraft.version {version}")
        nodes.append(node)
    return VoterSet(nodes)
