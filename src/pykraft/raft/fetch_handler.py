"""Fetch and FetchSnapshot as the leader serves them (KIP-595, KIP-630): validation,
progress and high-watermark updates from each fetch, diverging-epoch and snapshot answers,
and fetches parked until data arrives or their wait ends (a long poll).

Every replica answers these requests (a non-leader with the error that names the leader);
only the leader serves data.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from pykraft.protocol.errors import ErrorCode
from pykraft.raft import rpc
from pykraft.raft.log import OffsetAndEpoch, is_valid_fetch_position
from pykraft.raft.replica import ParkedFetch
from pykraft.raft.snapshots import BOOTSTRAP_SNAPSHOT_ID, snapshot_for_fetch
from pykraft.raft.states import Leader
from pykraft.raft.voter_set import ReplicaKey

if TYPE_CHECKING:
    from pykraft.raft.replica import Replica


def leader_only_error(core: Replica, request_epoch: int) -> ErrorCode | None:
    """Kafka's validation of leader-only requests (Fetch, FetchSnapshot, UpdateVoter)."""
    if request_epoch < core.epoch:
        return ErrorCode.FENCED_LEADER_EPOCH
    if request_epoch > core.epoch:
        return ErrorCode.UNKNOWN_LEADER_EPOCH
    if not isinstance(core.state, Leader):
        return ErrorCode.NOT_LEADER_OR_FOLLOWER
    if core.shutting_down:
        return ErrorCode.BROKER_NOT_AVAILABLE
    return None


def handle_fetch_request(core: Replica, source: int, correlation_id: int,
                         request: rpc.FetchRequest, *, may_park: bool) -> None:
    response = _try_fetch(core, source, correlation_id, request, may_park)
    if response is not None:
        core.respond(source, correlation_id, response)


def _try_fetch(core: Replica, source: int, correlation_id: int, request: rpc.FetchRequest,
               may_park: bool) -> rpc.FetchResponse | None:
    """The answer to a Fetch, or None when it was parked."""
    if core.cluster_mismatch(request.cluster_id):
        return rpc.fetch_error(ErrorCode.INCONSISTENT_CLUSTER_ID)
    part = rpc.fetch_partition(request)
    if part is None:
        return rpc.fetch_error(ErrorCode.INVALID_REQUEST)
    wait_ms = rpc.max_wait_ms(request)
    offset, last_epoch = part.fetch_offset, part.last_fetched_epoch
    if wait_ms < 0 or offset < 0 or last_epoch < 0 or last_epoch > part.current_leader_epoch:
        return rpc.fetch_response(ErrorCode.INVALID_REQUEST, core.state.leader_id, core.epoch)
    state = core.state
    error = leader_only_error(core, part.current_leader_epoch)
    if error is not None or not isinstance(state, Leader):
        return rpc.fetch_response(error or ErrorCode.NOT_LEADER_OR_FOLLOWER,
                                  core.state.leader_id, core.epoch)
    replica = ReplicaKey.of(rpc.fetch_replica_id(request), part.replica_directory_id)
    progress = state.progress
    now, log = core.now, core.log
    progress.record_voter_fetch(replica, now)
    start = log.log_start_offset
    snapshot = snapshot_for_fetch(log, offset, last_epoch)
    if snapshot is not None:
        return rpc.fetch_response(ErrorCode.NONE, core.node_id, core.epoch,
                                  high_watermark=progress.high_watermark,
                                  snapshot_id=snapshot, log_start_offset=start)
    diverging = is_valid_fetch_position(log, offset, last_epoch)
    if diverging is not None:
        return rpc.fetch_response(ErrorCode.NONE, core.node_id, core.epoch,
                                  high_watermark=progress.high_watermark,
                                  diverging=diverging, log_start_offset=start)
    records = log.read(offset, part.partition_max_bytes)
    if replica.id >= 0 and progress.update_replica(replica, offset, now, log.log_end_offset):
        complete_parked(core, all_fetches=True)
    hwm = progress.high_watermark
    follower_behind = hwm is not None and part.high_watermark < hwm
    if not records and may_park and wait_ms > 0 and not follower_behind:
        core.parked.append(ParkedFetch(source, correlation_id, request, offset, now + wait_ms))
        return None
    return rpc.fetch_response(ErrorCode.NONE, core.node_id, core.epoch,
                              high_watermark=hwm, records=records, log_start_offset=start)


def complete_parked(core: Replica, *, all_fetches: bool) -> None:
    """Answer parked fetches: all of them (HWM moved, leadership lost) or new-data ones."""
    end = core.log.log_end_offset
    answer_parked(core, lambda p: all_fetches or p.fetch_offset < end)


def answer_parked(core: Replica, is_due: Callable[[ParkedFetch], bool]) -> None:
    due = [p for p in core.parked if is_due(p)]
    core.parked = [p for p in core.parked if not any(p is d for d in due)]
    for parked in due:  # answering one may move the HWM and complete others: re-entrant
        handle_fetch_request(core, parked.source, parked.correlation_id, parked.request,
                             may_park=False)


def handle_fetch_snapshot_request(core: Replica, request: rpc.FetchSnapshotRequest
                                  ) -> rpc.FetchSnapshotResponse:
    if core.cluster_mismatch(request.cluster_id):
        return rpc.fetch_snapshot_error(ErrorCode.INCONSISTENT_CLUSTER_ID)
    part = rpc.fetch_snapshot_partition(request)
    if isinstance(part, ErrorCode):
        if part == ErrorCode.INVALID_REQUEST:
            return rpc.fetch_snapshot_error(part)
        return rpc.fetch_snapshot_response(part, core.state.leader_id, core.epoch)
    state = core.state
    error = leader_only_error(core, int(part.current_leader_epoch))
    if error is None and request.max_bytes <= 0:
        error = ErrorCode.INVALID_REQUEST
    if error is not None or not isinstance(state, Leader):
        return rpc.fetch_snapshot_response(error or ErrorCode.NOT_LEADER_OR_FOLLOWER,
                                           core.state.leader_id, core.epoch)
    wanted = OffsetAndEpoch(int(part.snapshot_id.end_offset), int(part.snapshot_id.epoch))
    info = next((s for s in core.log.snapshots() if s.snapshot_id == wanted), None)
    if info is None or wanted == BOOTSTRAP_SNAPSHOT_ID:
        return rpc.fetch_snapshot_response(ErrorCode.SNAPSHOT_NOT_FOUND, core.node_id,
                                           core.epoch, snapshot_id=wanted)
    position = int(part.position)
    if position < 0 or position >= info.size:
        return rpc.fetch_snapshot_response(ErrorCode.POSITION_OUT_OF_RANGE, core.node_id,
                                           core.epoch, snapshot_id=wanted, size=info.size)
    state.progress.record_voter_fetch(
        ReplicaKey.of(int(request.replica_id), part.replica_directory_id), core.now)
    chunk = core.log.read_snapshot(
        wanted, position, min(int(request.max_bytes), core.config.max_fetch_bytes))
    return rpc.fetch_snapshot_response(ErrorCode.NONE, core.node_id, core.epoch,
                                       snapshot_id=wanted, size=info.size,
                                       position=position, chunk=chunk)
