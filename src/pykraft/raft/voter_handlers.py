"""KIP-853 in the core: Kafka's ``AddVoterHandler``, ``RemoveVoterHandler`` and
``UpdateVoterHandler`` on the leader, the change in progress (one at a time, answered once
it commits), the kraft.version upgrade, and the follower's side: asking the leader to add
or update this replica.

The rules of what may change live in :mod:`pykraft.raft.reconfig` (pure planning); this
module carries them out on the core.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from pykraft import __version__
from pykraft.protocol.errors import ErrorCode
from pykraft.raft import fetch_handler, rpc
from pykraft.raft.leader import LeaderProgress, voters_batch
from pykraft.raft.reconfig import (
    PendingChange,
    Refusal,
    learn_static_voter,
    plan_add,
    plan_remove,
    plan_update,
    plan_upgrade,
    validate_add,
)
from pykraft.raft.states import Follower, Leader
from pykraft.raft.voter_set import SUPPORTED_KRAFT_VERSIONS, VoterNode, VoterSet
from pykraft.records.control import KRaftVersionFeature, VoterEndpoint

if TYPE_CHECKING:
    from pykraft.raft.replica import Replica


def endpoint_of(core: Replica, destination: int) -> VoterEndpoint | None:
    """Where the driver sends a request for ``destination`` (a replica id) on the
    controller listener: a replica being added (its AddRaftVoter listeners), else the
    newest voter set naming it, else None (bootstrap servers are the driver's own map)."""
    pending = core.pending_change
    if pending is not None and pending.joining is not None and (
            pending.joining.key.id == destination):
        return pending.joining.endpoint(core.config.listener_name)
    for voters in core.control.voter_sets_newest_first():
        node = voters.node(destination)
        endpoint = None if node is None else node.endpoint(core.config.listener_name)
        if endpoint is not None:
            return endpoint
    return None


def api_versions_response(core: Replica) -> rpc.ApiVersionsResponse:
    """What a joining replica answers the leader's probe with (its kraft.version range)."""
    return rpc.kraft_api_versions_response(
        (SUPPORTED_KRAFT_VERSIONS.min_supported_version,
         SUPPORTED_KRAFT_VERSIONS.max_supported_version), core.kraft_version)


# -- the leader's handlers ----------------------------------------------------------------

def handle_reconfig(core: Replica, source: int, correlation_id: int,
                    request: rpc.ReconfigRequest) -> rpc.ReconfigResponse | None:
    """Validate and append a voter change; None while the answer waits for its commit."""
    if core.cluster_mismatch(request.cluster_id):
        return _answer(core, request, ErrorCode.INCONSISTENT_CLUSTER_ID,  # KafkaRaftClient's
                       f'The given id "{request.cluster_id}" doesn\'t match the cluster id '
                       f'"{core.cluster_id}"')
    epoch = (int(request.current_leader_epoch)
             if isinstance(request, rpc.UpdateRaftVoterRequest) else core.epoch)
    error = fetch_handler.leader_only_error(core, epoch)
    state = core.state
    if error is not None or not isinstance(state, Leader):
        return _answer(core, request, error or ErrorCode.NOT_LEADER_OR_FOLLOWER,
                       f"node {core.node_id} is not the leader")
    if isinstance(request, rpc.AddRaftVoterRequest):
        return _add_voter(core, state, source, correlation_id, request)
    if isinstance(request, rpc.RemoveRaftVoterRequest):
        return _remove_voter(core, state, source, correlation_id, request)
    return _update_voter(core, state, request)


def _add_voter(core: Replica, state: Leader, source: int, correlation_id: int,
               request: rpc.AddRaftVoterRequest) -> rpc.ReconfigResponse | None:
    """Kafka's ``AddVoterHandler``: probe the new replica (ApiVersions) first; the voter set
    is appended when it answers (:func:`handle_api_versions_response`)."""
    joining = validate_add(core.reconfig_context(state.progress), request)
    if isinstance(joining, Refusal):
        return _answer(core, request, joining.error, joining.message)
    core.pending_change = PendingChange(source, correlation_id, request,
                                        core.now + request.timeout_ms,
                                        joining=joining)
    probe_joining_replica(core)
    return None


def _remove_voter(core: Replica, state: Leader, source: int, correlation_id: int,
                  request: rpc.RemoveRaftVoterRequest) -> rpc.ReconfigResponse | None:
    """Kafka's ``RemoveVoterHandler``: answered once the smaller voter set commits."""
    plan = plan_remove(core.reconfig_context(state.progress), request)
    if isinstance(plan, Refusal):
        return _answer(core, request, plan.error, plan.message)
    offset = _append_voters(core, state, plan)
    core.pending_change = PendingChange(
        source, correlation_id, request, core.now + core.config.request_timeout_ms,
        voters_offset=offset)
    return None


def _update_voter(core: Replica, state: Leader,
                  request: rpc.UpdateRaftVoterRequest) -> rpc.ReconfigResponse:
    """Kafka's ``UpdateVoterHandler``: answered on append, since the voter sending it is
    also the one whose fetches commit it; in a static quorum it only teaches the leader
    what the kraft.version upgrade needs."""
    context = core.reconfig_context(state.progress)
    if core.control.is_static:
        learned = learn_static_voter(core.voters, request, core.config.listener_name)
        if isinstance(learned, Refusal):
            return _answer(core, request, learned.error, learned.message)
        state.progress.static_voter_info[learned.key.id] = learned
        return _answer(core, request, ErrorCode.NONE, None)
    plan = plan_update(context, request)
    if isinstance(plan, Refusal):
        return _answer(core, request, plan.error, plan.message)
    _append_voters(core, state, plan)
    return _answer(core, request, ErrorCode.NONE, None)


def probe_joining_replica(core: Replica) -> None:
    """Ask the replica being added for its ApiVersions (its kraft.version range); sent
    again after a failure until the request's timeout."""
    pending = core.pending_change
    if pending is None or pending.joining is None or pending.voters_offset is not None:
        return
    destination = pending.joining.key.id
    in_flight = core.requests.in_flight.get(destination)
    if in_flight is None or not isinstance(in_flight.request, rpc.ApiVersionsRequest):
        core.send(destination, rpc.api_versions_request(__version__))


def handle_api_versions_response(core: Replica, source: int,
                                 response: rpc.ApiVersionsResponse) -> None:
    """The probe's answer: append the new voter if it qualifies, else refuse."""
    pending, state = core.pending_change, core.state
    if (pending is None or pending.joining is None or pending.voters_offset is not None
            or pending.joining.key.id != source or not isinstance(state, Leader)):
        return
    if response.error_code != ErrorCode.NONE:
        core.backoff(source)
        return
    low, high = rpc.supported_kraft_versions(response)
    context = dataclasses.replace(core.reconfig_context(state.progress), change_pending=False)
    plan = plan_add(context, pending.joining, KRaftVersionFeature(low, high),
                    lambda key: state.progress.is_caught_up(key, core.now))
    if isinstance(plan, Refusal):
        finish_pending_change(core, plan.error, plan.message)
        return
    pending.voters_offset = _append_voters(core, state, plan)
    assert isinstance(pending.request, rpc.AddRaftVoterRequest)
    if not pending.request.ack_when_committed:
        finish_pending_change(core, ErrorCode.NONE, None)


def poll_voter_change(core: Replica, progress: LeaderProgress) -> None:
    """Answer a committed (or expired) change; a leader removed by a committed change
    resigns."""
    hwm = progress.high_watermark
    pending = core.pending_change
    if (pending is not None and pending.voters_offset is not None and hwm is not None
            and hwm > pending.voters_offset):
        finish_pending_change(core, ErrorCode.NONE, None)
    elif pending is not None and core.now >= pending.deadline_ms:
        finish_pending_change(core, ErrorCode.REQUEST_TIMED_OUT,
                              "the change did not commit in time")
    last = core.control.last_voter_set_offset
    if not core.is_voter and last is not None and hwm is not None and hwm > last:
        core.become_resigned(progress.preferred_successors())


def finish_pending_change(core: Replica, error: ErrorCode, message: str | None) -> None:
    pending = core.pending_change
    if pending is None:
        return
    core.pending_change = None
    core.respond(pending.source, pending.correlation_id,
                 _answer(core, pending.request, error, message))


def upgrade(core: Replica, state: Leader, version: int,
            validate_only: bool) -> int | Refusal | None:
    """Finalize ``kraft.version`` (0 -> 1 turns a static quorum into a dynamic one).

    Once every static voter told the leader (UpdateRaftVoter) its directory id, endpoints
    and supported range, appends KRaftVersion and the first VotersRecord and returns the
    offset that is committed when the high watermark passes it; None when the version is
    already finalized (or ``validate_only`` found nothing against it); a Refusal with
    Kafka's error code otherwise.
    """
    if version == core.kraft_version:
        return None
    plan = plan_upgrade(core.reconfig_context(state.progress), version,
                        lambda voter: _static_voter_info(core, state, voter))
    if isinstance(plan, Refusal) or validate_only:
        return plan if isinstance(plan, Refusal) else None
    return _append_voters(core, state, plan, kraft_version=version)


def maybe_update_own_entry(core: Replica, state: Leader) -> None:
    """A leader whose own entry in the voter set is stale (new endpoints, or a new
    release) rewrites it, once the previous change committed."""
    local, current = _local_voter_node(core), core.voters.node(core.node_id)
    hwm, last = state.progress.high_watermark, core.control.last_voter_set_offset
    if (local is None or current is None or core.control.is_static
            or core.pending_change is not None or hwm is None
            or (last is not None and last >= hwm) or current.key != local.key
            or current.same_as(local)):
        return
    updated = core.voters.with_updated(local)
    if updated is not None:
        _append_voters(core, state, updated)


def _static_voter_info(core: Replica, state: Leader, voter: int) -> VoterNode | None:
    if voter == core.node_id:
        return _local_voter_node(core)
    return state.progress.static_voter_info.get(voter)


def _answer(core: Replica, request: rpc.ReconfigRequest, error: ErrorCode,
            message: str | None) -> rpc.ReconfigResponse:
    leader = core.state.leader_id
    endpoint = None if leader is None else endpoint_of(core, leader)
    return rpc.reconfig_response(request, error, message, leader_id=leader, epoch=core.epoch,
                                 leader_endpoint=None if endpoint is None
                                 else (endpoint.host, endpoint.port))


def _append_voters(core: Replica, state: Leader, voters: VoterSet, *,
                   kraft_version: int | None = None) -> int:
    """Append a VotersRecord (after a KRaftVersion record for an upgrade) after every
    offset already handed out; it counts at once. Returns the VotersRecord's offset."""
    accumulator = core.accumulator
    assert accumulator is not None
    pending = accumulator.drain(core.now, force=True)
    if pending:
        core.log.append(pending)
    core.append_control(voters_batch(core.log.log_end_offset, state.epoch, voters,
                                     core.now, kraft_version=kraft_version))
    offset = core.log.log_end_offset - 1
    accumulator.next_offset = core.log.log_end_offset
    state.progress.set_voters(core.voters)
    fetch_handler.complete_parked(core, all_fetches=False)
    return offset


# -- the follower's side ------------------------------------------------------------------

def _local_voter_node(core: Replica) -> VoterNode | None:
    """This replica as a voter entry, if the driver told the core its listeners."""
    if core.directory_id is None or not core.config.local_listeners:
        return None
    return VoterNode(core.local_key, core.config.local_listeners, SUPPORTED_KRAFT_VERSIONS)


def _membership_request(core: Replica) -> rpc.ReconfigRequest | None:
    """What a follower asks of the leader about its own membership, if anything: a voter
    whose entry is stale (or any voter of a static quorum, so the leader learns its
    directory id) sends UpdateRaftVoter; an observer with auto-join first removes a
    voter with its id but an old directory, then asks to be added (AckWhenCommitted
    false: its own fetches are what commits the change)."""
    local = _local_voter_node(core)
    if local is None:
        return None
    listeners = [(e.name, e.host, e.port) for e in local.endpoints]
    current = core.voters.node(core.node_id)
    if core.is_voter:
        if current is not None and not core.control.is_static and current.same_as(local):
            return None
        return rpc.update_voter_request(
            core.cluster_id, core.epoch, core.node_id, core.directory_id, listeners,
            (local.supported.min_supported_version, local.supported.max_supported_version))
    if not core.config.auto_join or core.control.is_static:
        return None
    if current is not None:
        return rpc.remove_voter_request(core.cluster_id, core.node_id,
                                        current.key.directory_id)
    return rpc.add_voter_request(core.cluster_id, core.node_id, core.directory_id, listeners,
                                 ack_when_committed=False)


def maybe_send_membership_request(core: Replica, state: Follower) -> bool:
    """True when a membership request went to the leader instead of the next Fetch."""
    if (state.membership_done or not state.has_fetched_from_leader
            or core.now < state.next_membership_ms
            or state.leader_id in core.requests.in_flight):
        return False
    request = _membership_request(core)
    if request is None:
        state.membership_done = True
        return False
    core.send(state.leader_id, request)
    sent = state.leader_id in core.requests.in_flight
    if sent:
        state.next_membership_ms = core.now + core.config.update_voter_period_ms
    return sent
