"""The follower's side of the core (etcd's ``stepFollower``): fetching from the leader,
taking its records, truncating where the logs diverge, and pulling the leader's snapshot
when our position is gone from its log (KIP-630).

Functions over the core, not methods, so each role reads on its own; the core routes to
them by state (:mod:`pykraft.raft.core`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pykraft.errors import CorruptRecordError, StorageError
from pykraft.protocol.errors import ErrorCode
from pykraft.raft import rpc, snapshot_state, voter_handlers
from pykraft.raft.log import OffsetAndEpoch, truncation_offset
from pykraft.raft.snapshots import SnapshotDownload
from pykraft.raft.states import Follower
from pykraft.records.batch import iter_batches, records_field

if TYPE_CHECKING:
    from pykraft.raft.replica import Replica


def poll(core: Replica, state: Follower) -> None:
    """A leader silent past the fetch timeout starts a pre-vote (an observer forgets it);
    else the next Fetch, FetchSnapshot chunk, or membership request goes out."""
    log = core.log
    if core.now >= state.fetch_deadline_ms:
        if core.is_voter:
            core.become_prospective()
        else:
            core.become_unattached(state.epoch)
    elif state.download is not None:
        core.send(state.leader_id, rpc.fetch_snapshot_request(
            core.cluster_id, core.node_id, epoch=state.epoch,
            snapshot_id=state.download.snapshot_id, position=state.download.position,
            max_bytes=core.config.max_fetch_bytes, directory_id=core.directory_id))
    elif (log.flushed_offset >= log.log_end_offset
          and not voter_handlers.maybe_send_membership_request(core, state)):
        core.send(state.leader_id, fetch_request(core, state.epoch, state.high_watermark))


def fetch_request(core: Replica, epoch: int, high_watermark: int | None) -> rpc.FetchRequest:
    log = core.log
    position = OffsetAndEpoch(log.log_end_offset, log.last_fetched_epoch)
    return rpc.fetch_request(
        core.cluster_id, core.node_id, epoch=epoch, position=position,
        high_watermark=high_watermark, max_wait_ms=core.config.fetch_max_wait_ms,
        max_bytes=core.config.max_fetch_bytes, directory_id=core.directory_id,
        log_start_offset=log.log_start_offset,
    )


def handle_send_failure(core: Replica, destination: int, request: rpc.RaftRequest,
                        unreachable: bool) -> None:
    """A voter whose fetch from the leader fails, and that has not heard from the leader
    for half the fetch timeout, does not wait out the rest: it moves to Prospective at once.
    Pre-vote keeps this safe: the voters that still hear from the leader refuse, and it
    goes back to following. (Acting on the first failure would let one lost message on a
    lossy link start an election that voters cut off from the leader would support, as in
    KIP-996's ping-pong topology.) ``unreachable`` says the driver knows the leader is gone
    (connection refused: nothing listens there), which starts the pre-vote at once: a dead
    process cannot be a lossy link. Such an early pre-vote is a probe: refused once, the
    follower resumes and waits for its fetch timeout (:func:`~pykraft.raft.election_role.
    maybe_win_election`).
    """
    state = core.state
    if (isinstance(state, Follower) and destination == state.leader_id and core.is_voter
            and not state.probed
            and isinstance(request, rpc.FetchRequest | rpc.FetchSnapshotRequest)
            and (unreachable or _leader_silent_for_half_fetch_timeout(core, state))):
        core.become_prospective()


def _leader_silent_for_half_fetch_timeout(core: Replica, state: Follower) -> bool:
    last_heard = state.fetch_deadline_ms - core.config.fetch_timeout_ms
    return core.now - last_heard >= core.config.fetch_timeout_ms // 2


def handle_response(core: Replica, state: Follower, source: int, request: rpc.RaftRequest,
                    response: rpc.RaftResponse, header: rpc.ResponseHeader) -> None:
    if header.error != ErrorCode.NONE:
        if isinstance(response, rpc.FetchSnapshotResponse):
            abort_download(state)  # e.g. SNAPSHOT_NOT_FOUND: fetch anew
        elif (isinstance(response, rpc.UpdateRaftVoterResponse)
              and header.error != ErrorCode.REQUEST_TIMED_OUT):
            state.membership_done = True  # refused for good in this epoch
            if header.error == ErrorCode.UNSUPPORTED_VERSION and source == state.leader_id:
                _heard_from_leader(core, state)  # Kafka counts it as done, as success
        core.backoff(source)
    elif isinstance(response, rpc.FetchResponse) and isinstance(request, rpc.FetchRequest):
        _handle_fetch_response(core, state, source, request, response)
    elif isinstance(response, rpc.FetchSnapshotResponse) and isinstance(
            request, rpc.FetchSnapshotRequest):
        _handle_fetch_snapshot_response(core, state, source, response)
    elif isinstance(response, rpc.UpdateRaftVoterResponse):
        state.membership_done = True
        if source == state.leader_id:
            _heard_from_leader(core, state)  # as Kafka's handleUpdateVoterResponse


def _handle_fetch_response(core: Replica, state: Follower, source: int,
                           request: rpc.FetchRequest, response: rpc.FetchResponse) -> None:
    log = core.log
    sent = request.topics[0].partitions[0]
    if source != state.leader_id:
        return
    if sent.current_leader_epoch != state.epoch or sent.fetch_offset != log.log_end_offset:
        return
    part = response.responses[0].partitions[0]
    if part.snapshot_id.epoch >= 0 and part.snapshot_id.end_offset >= 0:
        _start_download(core, state, OffsetAndEpoch(int(part.snapshot_id.end_offset),
                                                    int(part.snapshot_id.epoch)))
    elif part.diverging_epoch.epoch >= 0 and part.diverging_epoch.end_offset >= 0:
        diverging = OffsetAndEpoch(int(part.diverging_epoch.end_offset),
                                   int(part.diverging_epoch.epoch))
        if truncation_offset(log, diverging) < max(core.high_watermark or 0,
                                                   core.app_next_offset):
            # committed data is never dropped: Kafka stops here, this replica refuses the
            # answer and asks again
            core.backoff(source)
            return
        core.truncate_diverging(diverging)
    elif part.records:
        try:
            first = next(iter_batches(records_field(part.records), verify_crc=True))
            if first.base_offset != log.log_end_offset:
                raise CorruptRecordError(
                    f"fetched batch starts at {first.base_offset}, expected "
                    f"{log.log_end_offset}"
                )
            core.append_control(records_field(part.records))
        except (CorruptRecordError, StorageError):
            core.backoff(source)
            return
    if part.high_watermark >= 0 and state.download is None:  # else the log is unchecked
        hwm = min(int(part.high_watermark), log.log_end_offset)
        if state.high_watermark is None or hwm > state.high_watermark:
            state.high_watermark = hwm
    _heard_from_leader(core, state)


def _heard_from_leader(core: Replica, state: Follower) -> None:
    """A successful answer from the leader restarts the fetch timer and makes this voter
    refuse pre-votes, as Kafka's ``resetFetchTimeoutForSuccessfulFetch`` after a Fetch,
    FetchSnapshot or UpdateRaftVoter answer (nothing else resets it: not an error answer,
    nor a refused vote)."""
    state.has_fetched_from_leader = True
    state.fetch_deadline_ms = core.now + core.config.fetch_timeout_ms


def _handle_fetch_snapshot_response(core: Replica, state: Follower, source: int,
                                    response: rpc.FetchSnapshotResponse) -> None:
    if source != state.leader_id:
        return
    download = state.download
    # the one partition response_header found (two topics may carry it, one of them empty)
    (part,) = [p for t in response.topics for p in t.partitions]
    got = OffsetAndEpoch(part.snapshot_id.end_offset, part.snapshot_id.epoch)
    if download is None or got != download.snapshot_id:
        return
    chunk = records_field(part.unaligned_records)
    if part.position != download.position or download.position + len(chunk) > part.size:
        abort_download(state)
        return
    download.sink.write(chunk)
    _heard_from_leader(core, state)
    if download.position < part.size:
        return
    try:
        download.sink.freeze()
    except (CorruptRecordError, StorageError):
        abort_download(state)
        core.backoff(source)
        return
    state.download = None
    snapshot_state.install_snapshot(core, download.snapshot_id)


def _start_download(core: Replica, state: Follower, snapshot_id: OffsetAndEpoch) -> None:
    """The leader says our position is gone: pull its snapshot (or use ours if we have it
    already)."""
    if state.download is not None and state.download.snapshot_id == snapshot_id:
        return
    abort_download(state)
    if any(s.snapshot_id == snapshot_id for s in core.log.snapshots()):
        snapshot_state.install_snapshot(core, snapshot_id)
        return
    try:
        state.download = SnapshotDownload(snapshot_id, core.log.create_snapshot(snapshot_id))
    except StorageError:
        core.backoff(state.leader_id)


def abort_download(state: Follower) -> None:
    if state.download is not None:
        state.download.sink.abort()
        state.download = None
