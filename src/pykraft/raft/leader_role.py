"""The leader's side of the core (etcd's ``stepLeader``): check-quorum, writing appends,
BeginQuorumEpoch, voter changes to answer, and DescribeQuorum. The fetches it serves are
:mod:`pykraft.raft.fetch_handler`'s.

Functions over the core, not methods, so each role reads on its own; the core routes to
them by state (:mod:`pykraft.raft.core`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pykraft.protocol.errors import ErrorCode
from pykraft.raft import fetch_handler, rpc, voter_handlers
from pykraft.raft.leader import ReplicaProgress
from pykraft.raft.states import Leader

if TYPE_CHECKING:
    from pykraft.raft.replica import Replica


def poll(core: Replica, state: Leader) -> None:
    """Check-quorum, write what the accumulator holds, voter changes, BeginQuorumEpoch to
    voters that have not acknowledged it, and fetches whose wait ended."""
    progress = state.progress
    now = core.now
    if progress.check_quorum_expired(now):
        core.become_resigned(())
        return
    if core.accumulator is not None:
        data = core.accumulator.drain(now)
        if data:
            core.log.append(data)
            fetch_handler.complete_parked(core, all_fetches=False)
    voter_handlers.poll_voter_change(core, progress)
    if not isinstance(core.state, Leader):
        return
    voter_handlers.probe_joining_replica(core)
    voter_handlers.maybe_update_own_entry(core, state)
    if now >= progress.begin_quorum_resend_ms:  # periodic, so late voters learn too
        progress.begin_quorum_resend_ms = now + core.config.begin_quorum_epoch_resend_ms
        progress.begin_quorum_acked.clear()
    for voter in core.voters.others(core.node_id):
        if voter not in progress.begin_quorum_acked:
            core.send(voter, rpc.begin_quorum_request(
                core.cluster_id, voter, core.node_id, state.epoch,
                voter_directory_id=core.directory_of(voter)))
    fetch_handler.answer_parked(core, lambda p: now >= p.deadline_ms)


def deadlines(core: Replica, state: Leader) -> list[int]:
    progress = state.progress
    times = []
    if not core.voters.is_only_voter(core.node_id):
        times.append(progress.check_quorum_deadline_ms)
    times.append(progress.begin_quorum_resend_ms)
    if core.pending_change is not None:
        times.append(core.pending_change.deadline_ms)
    if core.accumulator is not None:
        drain = core.accumulator.drain_deadline_ms()
        if drain is not None:
            times.append(drain)
    return times


def handle_response(core: Replica, state: Leader, source: int, response: rpc.RaftResponse,
                    header: rpc.ResponseHeader) -> None:
    if header.error != ErrorCode.NONE:
        core.backoff(source)
    elif isinstance(response, rpc.BeginQuorumEpochResponse):
        state.progress.begin_quorum_acked.add(source)


def describe_quorum(core: Replica) -> rpc.DescribeQuorumResponse:
    """DescribeQuorum data (leader only); the leader's own row uses ``now``, as Kafka's,
    so no follower looks more caught up than the leader (a negative lag time). The row
    is found by id: a static voter set names no directory id for the leader."""
    state = core.state
    if not isinstance(state, Leader):
        return rpc.describe_quorum_error(ErrorCode.NOT_LEADER_OR_FOLLOWER)
    progress = state.progress
    now = core.now

    def rows(replicas: list[ReplicaProgress]) -> list[rpc.ReplicaRow]:
        return [
            rpc.ReplicaRow(p.key.id, p.end_offset, now, now, p.key.directory_id)
            if p.key.id == core.node_id
            else rpc.ReplicaRow(p.key.id, p.end_offset, p.last_fetch_ms,
                                p.last_caught_up_ms, p.key.directory_id)
            for p in replicas
        ]

    return rpc.describe_quorum_response(
        core.node_id, state.epoch, progress.high_watermark,
        rows(list(progress.voter_progress.values())),
        rows(progress.active_observers(now)), core.voters,
    )
