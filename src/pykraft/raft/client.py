"""The KRaft consensus core: one replica's protocol logic, with no I/O of its own.

Every input carries the caller's clock (``now_ms``); randomness comes from the injected
``random.Random``; the log and the election store are the two narrow interfaces of
:mod:`pykraft.raft.log` and :mod:`pykraft.raft.quorum_store`. Outputs accumulate until the
driver takes them with :meth:`RaftClient.ready`.

Four decisions are methods on purpose (``_new_leader_progress``, ``_can_grant_vote``,
``_truncate_diverging`` and ``_reconfig_context``): tests substitute broken versions of
exactly these to prove that the simulator's invariants catch them.

Snapshots (KIP-630) and dynamic voters (KIP-853) live in their own modules
(:mod:`~pykraft.raft.snapshots`, :mod:`~pykraft.raft.voter_set`,
:mod:`~pykraft.raft.control_state`, :mod:`~pykraft.raft.reconfig`); this class wires them
into the replica's states and messages.

A request's ``source`` (and a response's) is an opaque routing token of the driver, handed
back unchanged as the destination of the answer: it is never a replica id (the runtime uses
values >= 2**40 for inbound connections). Replica ids always come from the request body.
"""

from __future__ import annotations

import dataclasses
import random
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from kio.schema.errors import ErrorCode

from pykraft import __version__
from pykraft.errors import (
    CorruptRecordError,
    NotLeaderError,
    RaftError,
    StorageError,
)
from pykraft.ids import ZERO_UUID
from pykraft.raft import rpc
from pykraft.raft.accumulator import BatchAccumulator
from pykraft.raft.api import (
    Committed,
    FlushRequest,
    LeaderAndEpoch,
    LeaderChange,
    LoadSnapshot,
    OutboundRequest,
    OutboundResponse,
    RaftEvent,
    Ready,
)
from pykraft.raft.config import SNAPSHOT_CLEAN_INTERVAL_MS, QuorumConfig
from pykraft.raft.control_state import ControlRecordState
from pykraft.raft.election import (
    EpochElection,
    election_backoff_ms,
    end_quorum_backoff_ms,
    is_log_up_to_date,
    random_election_timeout,
)
from pykraft.raft.leader import (
    LeaderProgress,
    ReplicaProgress,
    leader_change_batch,
    voters_batch,
)
from pykraft.raft.limits import MAX_EPOCH, can_adopt_epoch
from pykraft.raft.log import OffsetAndEpoch, RaftLog, is_valid_fetch_position, truncation_offset
from pykraft.raft.quorum_store import ElectionState, QuorumStateStore
from pykraft.raft.reconfig import (
    PendingChange,
    ReconfigContext,
    Refusal,
    learn_static_voter,
    plan_add,
    plan_remove,
    plan_update,
    plan_upgrade,
    validate_add,
)
from pykraft.raft.snapshots import (
    BOOTSTRAP_SNAPSHOT_ID,
    SnapshotDownload,
    retention_target,
    snapshot_content,
    snapshot_for_fetch,
)
from pykraft.raft.states import (
    Candidate,
    Follower,
    Leader,
    Prospective,
    Resigned,
    State,
    Unattached,
    election_state,
    voted_key_of,
)
from pykraft.raft.voter_set import SUPPORTED_KRAFT_VERSIONS, ReplicaKey, VoterNode, VoterSet
from pykraft.records.batch import RecordBatch, iter_batches
from pykraft.records.control import KRaftVersionFeature, KRaftVersionRecord, VoterEndpoint

NEVER = 2**62


@dataclass(slots=True)
class _InFlight:
    correlation_id: int
    request: rpc.RaftRequest
    deadline_ms: int


@dataclass(slots=True)
class _ParkedFetch:
    source: int
    correlation_id: int
    request: rpc.FetchRequest
    fetch_offset: int
    deadline_ms: int


class RaftClient:
    """One replica of the metadata partition (voter or observer)."""

    def __init__(
        self, node_id: int, config: QuorumConfig, log: RaftLog, store: QuorumStateStore,
        *, rng: random.Random, now_ms: int,
        cluster_id: str | None = None, directory_id: uuid.UUID | None = None,
    ) -> None:
        self.node_id = node_id
        self.directory_id = directory_id
        self.local_key = ReplicaKey(node_id, directory_id)
        self.config = config
        self.cluster_id = cluster_id
        endpoints = {voter: (VoterEndpoint(config.listener_name, host, port),)
                     for voter, host, port in config.voter_endpoints}
        self._control = ControlRecordState(VoterSet.static(config.voters, endpoints))
        self._pending_change: PendingChange | None = None
        self._resign_acked = False
        self._log = log
        self._store = store
        self._rng = rng
        self._now = now_ms
        self._requests: list[OutboundRequest] = []
        self._responses: list[OutboundResponse] = []
        self._events: list[RaftEvent] = []
        self._in_flight: dict[int, _InFlight] = {}
        self._retry_at: dict[int, int] = {}
        self._next_correlation = 0
        self._requested_flush = log.flushed_offset
        self._parked: list[_ParkedFetch] = []
        self._accumulator: BatchAccumulator | None = None
        self._app_next_offset = 0
        self._notified: LeaderAndEpoch | None = None
        self._shutting_down = False
        self._next_clean_ms = now_ms + SNAPSHOT_CLEAN_INTERVAL_MS
        self._load_control_state()
        self._persisted: ElectionState | None = store.read()
        initial = self._initial_state()
        self._persist(initial)
        self.state: State = initial
        if (self.voters.is_only_voter(node_id) and self.is_voter
                and not isinstance(self.state, Leader)):
            self._become_candidate()
        self._poll()

    # -- public properties ------------------------------------------------------------

    @property
    def epoch(self) -> int:
        return self.state.epoch

    @property
    def voters(self) -> VoterSet:
        """The voter set in force: the latest in the log, committed or not (KIP-853)."""
        return self._control.last_voter_set

    @property
    def kraft_version(self) -> int:
        return self._control.kraft_version

    @property
    def control_state(self) -> ControlRecordState:
        """Voter-set and kraft.version history (read-only use: observers, tests)."""
        return self._control

    @property
    def is_voter(self) -> bool:
        return self.voters.is_voter(self.local_key)

    @property
    def log_start_offset(self) -> int:
        return self._log.log_start_offset

    @property
    def high_watermark(self) -> int | None:
        if isinstance(self.state, Leader):
            return self.state.progress.high_watermark
        if isinstance(self.state, Follower):
            return self.state.high_watermark
        return None

    @property
    def leader_and_epoch(self) -> LeaderAndEpoch:
        return LeaderAndEpoch(self.state.leader_id, self.state.epoch)

    @property
    def shutdown_complete(self) -> bool:
        """A resigning leader waits until every voter acknowledged EndQuorumEpoch, or until
        its election timeout ends the wait."""
        return self._shutting_down and not (
            isinstance(self.state, Resigned) and self.state.unacked_voters
        )

    @property
    def resign_acknowledged(self) -> bool:
        """Graceful shutdown of a leader: every other voter acknowledged EndQuorumEpoch
        (False while waiting, after the wait timed out, or if this node was not leader)."""
        return self._resign_acked

    # -- inputs -----------------------------------------------------------------------

    def tick(self, now_ms: int) -> None:
        self._advance(now_ms)
        self._poll()

    def handle_request(
        self, now_ms: int, source: int, correlation_id: int, request: rpc.RaftRequest
    ) -> None:
        """An inbound request; ``source`` is the driver's opaque routing token for the reply
        (never a replica id: those are read from the request body)."""
        self._advance(now_ms)
        if isinstance(request, rpc.FetchRequest):
            self._handle_fetch_request(source, correlation_id, request, may_park=True)
        elif isinstance(request, rpc.AddRaftVoterRequest | rpc.RemoveRaftVoterRequest
                        | rpc.UpdateRaftVoterRequest):
            answer = self._handle_reconfig(source, correlation_id, request)
            if answer is not None:
                self._respond(source, correlation_id, answer)
        else:
            self._respond(source, correlation_id, self._dispatch_request(request))
        self._poll()

    def handle_response(self, now_ms: int, source: int, correlation_id: int,
                        response: rpc.RaftResponse) -> None:
        self._advance(now_ms)
        in_flight = self._in_flight.get(source)
        if in_flight is None or in_flight.correlation_id != correlation_id:
            return  # a late answer to a request that already timed out
        del self._in_flight[source]
        if isinstance(response, rpc.ApiVersionsResponse):
            self._handle_api_versions_response(source, response)
            self._poll()
            return
        header = rpc.response_header(response)
        if header.epoch is not None and not self._is_believable(header.leader_id, header.epoch):
            self._retry_at[source] = now_ms + self.config.retry_backoff_ms
            self._poll()
            return
        before = self.state
        if not self._handle_common_response(header):
            self._dispatch_response(source, in_flight.request, response, header)
        elif self.state is before and header.error != ErrorCode.none:
            # an error that taught us nothing: do not hammer the peer
            self._retry_at[source] = now_ms + self.config.retry_backoff_ms
        self._poll()

    def handle_send_failure(self, now_ms: int, destination: int, correlation_id: int, *,
                            unreachable: bool = False) -> None:
        """The request could not be delivered or timed out: back off, then retry.

        A voter whose fetch from the leader fails this way, and that has not heard from the
        leader for half the fetch timeout, does not wait out the rest: it moves to
        Prospective at once. Pre-vote keeps this safe: the voters that still hear from the
        leader refuse, and it goes back to following. (Acting on the first failure would let
        one lost message on a lossy link start an election that voters cut off from the
        leader would support, as in KIP-996's ping-pong topology.) ``unreachable`` says the
        driver knows the leader is gone (connection refused: nothing listens there), which
        starts the pre-vote at once: a dead process cannot be a lossy link.
        """
        self._advance(now_ms)
        in_flight = self._in_flight.get(destination)
        if in_flight is not None and in_flight.correlation_id == correlation_id:
            del self._in_flight[destination]
            self._retry_at[destination] = now_ms + self.config.retry_backoff_ms
            state = self.state
            if (isinstance(state, Follower) and destination == state.leader_id and self.is_voter
                    and isinstance(in_flight.request,
                                   rpc.FetchRequest | rpc.FetchSnapshotRequest)
                    and (unreachable or self._leader_silent_for_half_fetch_timeout(state))):
                self._become_prospective()
        self._poll()

    def _leader_silent_for_half_fetch_timeout(self, state: Follower) -> bool:
        last_heard = state.fetch_deadline_ms - self.config.fetch_timeout_ms
        return self._now - last_heard >= self.config.fetch_timeout_ms // 2

    def flush_completed(self, now_ms: int, offset: int) -> None:
        """The driver made the log durable up to ``offset`` (``log.flushed_offset`` says so)."""
        self._advance(now_ms)
        if isinstance(self.state, Leader) and self.state.progress.update_local_end_offset(
            self._log.flushed_offset, now_ms
        ):
            self._complete_parked(all_fetches=True)
        self._poll()

    def append(self, now_ms: int, records: list[bytes], *, poll: bool = True) -> int:
        """Accept data records on the leader; returns the offset of the last one.

        The records are committed only when the high watermark passes that offset, which
        the application learns from a ``Committed`` event. With ``poll=False`` they wait in the
        accumulator for the caller's next input (e.g. :meth:`tick`): a driver appending for
        several requests at once then gets one batch and one log write for all of them,
        even with a zero linger.
        """
        self._advance(now_ms)
        if not isinstance(self.state, Leader) or self._accumulator is None:
            raise NotLeaderError(
                f"node {self.node_id} is {self.state.name} in epoch {self.epoch}, not the leader"
            )
        offset = self._accumulator.append(records, now_ms)
        if poll:
            self._poll()
        return offset

    def begin_shutdown(self, now_ms: int) -> None:
        """Graceful stop: a leader resigns and names its most caught-up voters as successors."""
        self._advance(now_ms)
        self._shutting_down = True
        if isinstance(self.state, Leader):
            self._become_resigned(self.state.progress.preferred_successors())
        self._poll()

    def upgrade_kraft_version(self, now_ms: int, version: int, *,
                              validate_only: bool = False) -> int | Refusal | None:
        """Finalize ``kraft.version`` (0 -> 1 turns a static quorum into a dynamic one).

        On the leader, once every static voter told it (UpdateRaftVoter) its directory id,
        endpoints and supported range, appends KRaftVersion and the first VotersRecord and
        returns the offset that is committed when the high watermark passes it; None when
        the version is already finalized (or ``validate_only`` found nothing against it); a
        Refusal with Kafka's error code otherwise.
        """
        self._advance(now_ms)
        state = self.state
        if not isinstance(state, Leader) or self._accumulator is None:
            raise NotLeaderError(
                f"node {self.node_id} is {self.state.name} in epoch {self.epoch}, not the leader"
            )
        if version == self.kraft_version:
            return None
        plan = plan_upgrade(self._reconfig_context(state.progress), version,
                            lambda voter: self._static_voter_info(state, voter))
        if isinstance(plan, Refusal) or validate_only:
            return plan if isinstance(plan, Refusal) else None
        offset = self._append_voters(state, plan, kraft_version=version)
        self._poll()
        return offset

    def create_snapshot(
        self, now_ms: int, snapshot_id: OffsetAndEpoch, batches: Iterable[Sequence[bytes]], *,
        timestamp_ms: int | None = None,
    ) -> None:
        """Write a snapshot of the state machine at ``snapshot_id`` (end offset exclusive,
        epoch of the last record), then let retention move the log start behind it.

        The offset must be committed and already handed out (``Committed`` events), at or above the
        log start, at a batch boundary, and (offset, epoch) must be a position of this log.
        ``batches`` are the state machine's record values; the core adds the SnapshotHeader
        (with KRaftVersion and Voters at kraft.version 1) and the SnapshotFooter.
        """
        self._advance(now_ms)
        offset = snapshot_id.offset
        problem = None
        if offset <= 0 or offset > self._app_next_offset:
            problem = f"offset {offset} is not committed and delivered yet"
        elif offset < self._log.log_start_offset or offset > self._log.log_end_offset:
            problem = (f"offset {offset} is outside the log [{self._log.log_start_offset}, "
                       f"{self._log.log_end_offset}]")
        elif not self._is_batch_boundary(offset):
            problem = f"offset {offset} is not at a batch boundary"
        elif is_valid_fetch_position(self._log, offset, snapshot_id.epoch) is not None:
            problem = f"epoch {snapshot_id.epoch} does not end at or after offset {offset}"
        elif any(s.snapshot_id == snapshot_id for s in self._log.snapshots()):
            problem = "it exists already"
        if problem is not None:
            raise RaftError(f"node {self.node_id}: cannot snapshot at {snapshot_id}: {problem}")
        header: list[object] = []
        if self._control.kraft_version_at(offset - 1) >= 1:
            header = [KRaftVersionRecord(0, self._control.kraft_version_at(offset - 1)),
                      self._control.voter_set_at(offset - 1).to_record()]
        sink = self._log.create_snapshot(snapshot_id)
        try:
            for data in snapshot_content(snapshot_id, header_records=header, batches=batches,
                                         timestamp_ms=self._now if timestamp_ms is None
                                         else timestamp_ms):
                sink.write(data)
            sink.freeze()
        except BaseException:
            sink.abort()
            raise
        self._clean_snapshots()
        self._poll()

    def read_snapshot(self, snapshot_id: OffsetAndEpoch) -> list[RecordBatch]:
        """The batches of a frozen snapshot (what the application reads on ``LoadSnapshot``)."""
        info = next((s for s in self._log.snapshots() if s.snapshot_id == snapshot_id), None)
        if info is None:
            raise StorageError(f"node {self.node_id}: no snapshot {snapshot_id}")
        data = self._log.read_snapshot(snapshot_id, 0, info.size)
        return list(iter_batches(data, verify_crc=True))

    def ready(self) -> Ready:
        """Drain every output produced so far."""
        flush = None
        if self._log.log_end_offset > self._requested_flush:
            self._requested_flush = self._log.log_end_offset
            flush = FlushRequest(self._requested_flush)
        out = Ready(tuple(self._requests), tuple(self._responses), flush, self._next_tick(),
                    tuple(self._events))
        self._requests.clear()
        self._responses.clear()
        self._events.clear()
        return out

    def describe_quorum(self) -> rpc.DescribeQuorumResponse:
        """DescribeQuorum data (leader only); the leader's own row uses ``now``, as Kafka's,
        so no follower looks more caught up than the leader (a negative lag time). The row
        is found by id: a static voter set names no directory id for the leader."""
        state = self.state
        if not isinstance(state, Leader):
            return rpc.describe_quorum_error(ErrorCode.not_leader_or_follower)
        progress = state.progress

        def rows(replicas: list[ReplicaProgress]) -> list[rpc.ReplicaRow]:
            return [
                rpc.ReplicaRow(p.key.id, p.end_offset, self._now, self._now, p.key.directory_id)
                if p.key.id == self.node_id
                else rpc.ReplicaRow(p.key.id, p.end_offset, p.last_fetch_ms,
                                    p.last_caught_up_ms, p.key.directory_id)
                for p in replicas
            ]

        return rpc.describe_quorum_response(
            self.node_id, state.epoch, progress.high_watermark,
            rows(list(progress.voter_progress.values())),
            rows(progress.active_observers(self._now)), self.voters,
        )

    # -- overridable decisions (see module docstring) ---------------------------------

    def _new_leader_progress(self, epoch_start_offset: int) -> LeaderProgress:
        return LeaderProgress(self.local_key, self.epoch, self.voters,
                              epoch_start_offset=epoch_start_offset, now_ms=self._now,
                              config=self.config)

    def _can_grant_vote(self, candidate: ReplicaKey, up_to_date: bool, pre_vote: bool) -> bool:
        return self.state.can_grant_vote(candidate, up_to_date, pre_vote)

    def _truncate_diverging(self, diverging: OffsetAndEpoch) -> None:
        offset = truncation_offset(self._log, diverging)
        self._log.truncate_to(offset)
        self._control.truncate_new_entries(self._log.log_end_offset)
        self._requested_flush = min(self._requested_flush, self._log.log_end_offset)

    def _reconfig_context(self, progress: LeaderProgress) -> ReconfigContext:
        """What gates a voter change (one at a time, only once committed)."""
        return ReconfigContext(
            kraft_version=self.kraft_version, voters=self.voters,
            high_watermark=progress.high_watermark,
            last_voters_offset=self._control.last_voter_set_offset,
            change_pending=self._pending_change is not None,
            listener_name=self.config.listener_name,
        )

    # -- transitions ------------------------------------------------------------------

    def _initial_state(self) -> State:
        stored = self._persisted or ElectionState(0)
        deadline = self._election_deadline()
        log_epoch = self._log.last_fetched_epoch
        stored_vote = (None if stored.voted_id is None
                       else ReplicaKey(stored.voted_id, stored.voted_directory_id))
        if stored.epoch < log_epoch:
            return Unattached(log_epoch, None, deadline)
        if stored.leader_id == self.node_id:
            return Resigned(stored.epoch, self.node_id, deadline,
                            set(self.voters.others(self.node_id)), ())
        if stored.leader_id is None and stored.voted_id == self.node_id and self.is_voter:
            election = EpochElection(self.voters, granted={self.node_id})
            return Candidate(stored.epoch, election, deadline, retries=1)
        if stored.leader_id is not None:
            return Follower(stored.epoch, stored.leader_id, stored_vote,
                            self._now + self.config.fetch_timeout_ms)
        return Unattached(stored.epoch, stored_vote, deadline)

    def _persist(self, state: State) -> None:
        """Write ``state`` before the replica acts in it: a state the store refuses (or
        fails to write) is never entered."""
        current = election_state(state, self.local_key)
        if current != self._persisted:
            self._store.write(current, self.kraft_version)
            self._persisted = current

    def _set_state(self, state: State) -> None:
        self._persist(state)
        old = self.state
        self.state = state
        if isinstance(old, Follower) and old.download is not None:
            old.download.sink.abort()
        if isinstance(old, Leader) and not isinstance(state, Leader):
            self._accumulator = None
            self._complete_parked(all_fetches=True)
            self._finish_pending_change(ErrorCode.not_leader_or_follower,
                                        "leadership changed before the change committed")

    def _election_deadline(self) -> int:
        return self._now + random_election_timeout(self._rng, self.config.election_timeout_ms)

    def _vote_kept_in(self, epoch: int) -> ReplicaKey | None:
        """A vote binds for its whole epoch, whatever state the replica moves to in it."""
        return voted_key_of(self.state, self.local_key) if epoch == self.epoch else None

    def _become_unattached(self, epoch: int) -> None:
        self._set_state(Unattached(epoch, self._vote_kept_in(epoch), self._election_deadline()))

    def _become_follower(self, epoch: int, leader_id: int) -> None:
        self._set_state(Follower(epoch, leader_id, self._vote_kept_in(epoch),
                                 self._now + self.config.fetch_timeout_ms))

    def _become_prospective(self) -> None:
        if self.voters.is_only_voter(self.node_id):
            self._become_candidate()
            return
        state = self.state
        leader = state.leader_id if isinstance(state, Follower) else None
        retries = state.retries if isinstance(state, Candidate) else 1
        election = EpochElection(self.voters, granted={self.node_id})
        self._set_state(Prospective(state.epoch, leader, self._vote_kept_in(state.epoch),
                                    election, self._election_deadline(), retries))
        self._maybe_win_election()

    def _become_candidate(self) -> None:
        """Bump the epoch and campaign; at :data:`MAX_EPOCH` there is no next epoch, so the
        replica stays in its epoch, unattached, and waits for another election timeout."""
        if not can_adopt_epoch(self.epoch + 1):
            self._become_unattached(self.epoch)
            return
        retries = self.state.retries + 1 if isinstance(self.state, Prospective) else 1
        election = EpochElection(self.voters, granted={self.node_id})
        self._set_state(Candidate(self.epoch + 1, election, self._election_deadline(), retries))
        self._maybe_win_election()

    def _become_leader(self) -> None:
        state = self.state
        assert isinstance(state, Candidate)
        start = self._log.log_end_offset
        self._append_control(leader_change_batch(
            start, state.epoch, leader_id=self.node_id, voters=self.voters,
            granting=state.election.granted, timestamp=self._now,
            write_voters=(self.kraft_version >= 1
                          and self._control.last_voter_set_offset is None),
        ))
        progress = self._new_leader_progress(start)
        self._set_state(Leader(state.epoch, self.node_id, self.local_key, progress))
        self._accumulator = BatchAccumulator(
            state.epoch, self._log.log_end_offset, self.config.append_linger_ms,
            self.config.max_batch_size_bytes,
        )
        progress.update_local_end_offset(self._log.flushed_offset, self._now)

    def _become_resigned(self, successors: tuple[ReplicaKey, ...]) -> None:
        others = set(self.voters.others(self.node_id))
        self._set_state(Resigned(self.epoch, self.node_id, self._election_deadline(), others,
                                 successors))

    def _maybe_win_election(self) -> None:
        state = self.state
        if isinstance(state, Prospective):
            if state.election.is_granted:
                self._become_candidate()
            elif state.election.is_rejected:
                self._lose_pre_vote()
        elif isinstance(state, Candidate):
            if state.election.is_granted:
                self._become_leader()
            elif state.election.is_rejected and state.backoff_until_ms is None:
                state.backoff_until_ms = self._now + election_backoff_ms(
                    self._rng, state.retries, self.config.election_backoff_base_ms,
                    self.config.election_backoff_max_ms,
                )

    def _lose_pre_vote(self) -> None:
        state = self.state
        assert isinstance(state, Prospective)
        if state.leader_id is not None:
            self._become_follower(state.epoch, state.leader_id)
        else:
            self._become_unattached(state.epoch)

    def _foreign_leader(self, leader_id: int | None) -> int | None:
        """The leader a peer names, except our own lost incarnation: never follow ourselves."""
        if leader_id == self.node_id and not isinstance(self.state, Leader | Resigned):
            return None
        return leader_id

    def _is_believable(self, leader_id: int | None, epoch: int) -> bool:
        """Whether a peer's (leader, epoch) may be acted on: an epoch this replica can take
        on (:mod:`~pykraft.raft.limits`), and no second leader for an epoch whose leader it
        knows (Kafka's ``hasConsistentLeader``). Kafka stops on such a message; here the
        message is refused instead, so no peer can stop this node."""
        if epoch > self.epoch and not can_adopt_epoch(epoch):
            return False
        leader, known = self._foreign_leader(leader_id), self.state.leader_id
        return epoch != self.epoch or leader is None or known is None or known == leader

    def _maybe_transition(self, leader_id: int | None, epoch: int | None) -> None:
        """Adopt what a peer says about the quorum, if it is news (callers checked that it
        is believable)."""
        if epoch is None or epoch < self.epoch:
            return
        leader_id = self._foreign_leader(leader_id)
        if epoch > self.epoch:
            if leader_id is not None:
                self._become_follower(epoch, leader_id)
            else:
                self._become_unattached(epoch)
        elif leader_id is not None and self.state.leader_id is None:
            self._become_follower(epoch, leader_id)

    # -- the poll loop ----------------------------------------------------------------

    def _advance(self, now_ms: int) -> None:
        self._now = max(self._now, now_ms)

    def _poll(self) -> None:
        for _ in range(8):  # a transition may make the new state's timers due at once
            before = self.state
            self._expire_in_flight()
            self._poll_state()
            if self.state is before:
                break
        if self._now >= self._next_clean_ms:  # snapshots age out even with no new ones
            self._next_clean_ms = self._now + SNAPSHOT_CLEAN_INTERVAL_MS
            self._clean_snapshots()
        self._deliver_committed()
        self._notify_leader_change()

    def _expire_in_flight(self) -> None:
        for dst, in_flight in list(self._in_flight.items()):
            if self._now >= in_flight.deadline_ms:
                del self._in_flight[dst]
                self._retry_at[dst] = self._now + self.config.retry_backoff_ms

    def _poll_state(self) -> None:
        state = self.state
        now = self._now
        if isinstance(state, Unattached):
            if not self.is_voter:
                self._fetch_from_any_voter()
            elif now >= state.election_deadline_ms:
                self._become_prospective()
        elif isinstance(state, Prospective | Candidate):
            self._poll_nominee(state)
        elif isinstance(state, Follower):
            if now >= state.fetch_deadline_ms:
                if self.is_voter:
                    self._become_prospective()
                else:
                    self._become_unattached(state.epoch)
            elif state.download is not None:
                self._send(state.leader_id, rpc.fetch_snapshot_request(
                    self.cluster_id, self.node_id, epoch=state.epoch,
                    snapshot_id=state.download.snapshot_id, position=state.download.position,
                    max_bytes=self.config.max_fetch_bytes, directory_id=self.directory_id))
            elif (self._log.flushed_offset >= self._log.log_end_offset
                  and not self._maybe_send_membership_request(state)):
                self._send(state.leader_id, self._fetch_request(state.epoch, state.high_watermark))
        elif isinstance(state, Leader):
            self._poll_leader(state)
        elif now >= state.election_deadline_ms:
            if self.is_voter:
                self._become_prospective()
            else:
                bumped = state.epoch + 1
                self._become_unattached(bumped if can_adopt_epoch(bumped) else state.epoch)
        else:
            request = rpc.end_quorum_request(self.cluster_id, self.node_id, state.epoch,
                                             state.preferred_successors)
            for voter in sorted(state.unacked_voters):
                self._send(voter, request)

    def _poll_nominee(self, state: Prospective | Candidate) -> None:
        if isinstance(state, Candidate) and state.backoff_until_ms is not None:
            if self._now >= state.backoff_until_ms:
                self._become_prospective()
            return
        if self._now >= state.election_deadline_ms:
            if isinstance(state, Prospective):
                self._lose_pre_vote()
            else:
                self._become_prospective()
            return
        last = OffsetAndEpoch(self._log.log_end_offset, self._log.last_fetched_epoch)
        pre_vote = isinstance(state, Prospective)
        for voter in state.election.unrecorded():
            self._send(voter, rpc.vote_request(
                self.cluster_id, voter, epoch=state.epoch, local_id=self.node_id, last=last,
                pre_vote=pre_vote, local_directory_id=self.directory_id,
                voter_directory_id=self._directory_of(voter)))

    def _poll_leader(self, state: Leader) -> None:
        progress = state.progress
        if progress.check_quorum_expired(self._now):
            self._become_resigned(())
            return
        if self._accumulator is not None:
            data = self._accumulator.drain(self._now)
            if data:
                self._log.append(data)
                self._complete_parked(all_fetches=False)
        self._poll_voter_change(progress)
        if not isinstance(self.state, Leader):
            return
        self._probe_joining_replica()
        self._maybe_update_own_entry(state)
        if self._now >= progress.begin_quorum_resend_ms:  # periodic, so late voters learn too
            progress.begin_quorum_resend_ms = self._now + self.config.begin_quorum_epoch_resend_ms
            progress.begin_quorum_acked.clear()
        for voter in self.voters.others(self.node_id):
            if voter not in progress.begin_quorum_acked:
                self._send(voter, rpc.begin_quorum_request(
                    self.cluster_id, voter, self.node_id, state.epoch,
                    voter_directory_id=self._directory_of(voter)))
        self._answer_parked(lambda p: self._now >= p.deadline_ms)

    def _next_tick(self) -> int:
        times = [p.deadline_ms for p in self._parked]
        times += [f.deadline_ms for f in self._in_flight.values()]
        times += [t for t in self._retry_at.values() if t > self._now]
        times.append(self._next_clean_ms)
        state = self.state
        if isinstance(state, Unattached):
            if self.is_voter:
                times.append(state.election_deadline_ms)
        elif isinstance(state, Prospective | Resigned):
            times.append(state.election_deadline_ms)
        elif isinstance(state, Candidate):
            times.append(state.backoff_until_ms or state.election_deadline_ms)
        elif isinstance(state, Follower):
            times.append(state.fetch_deadline_ms)
        else:
            if not self.voters.is_only_voter(self.node_id):
                times.append(state.progress.check_quorum_deadline_ms)
            times.append(state.progress.begin_quorum_resend_ms)
            if self._pending_change is not None:
                times.append(self._pending_change.deadline_ms)
            if self._accumulator is not None:
                drain = self._accumulator.drain_deadline_ms()
                if drain is not None:
                    times.append(drain)
        return max(self._now, min(times, default=NEVER))

    # -- sending ----------------------------------------------------------------------

    def _send(self, destination: int, request: rpc.RaftRequest) -> None:
        """One request in flight per destination (as Kafka's RequestManager); else skip."""
        if destination in self._in_flight or self._retry_at.get(destination, 0) > self._now:
            return
        self._next_correlation += 1
        self._in_flight[destination] = _InFlight(
            self._next_correlation, request, self._now + self.config.request_timeout_ms
        )
        self._requests.append(OutboundRequest(destination, self._next_correlation, request))

    def _respond(self, destination: int, correlation_id: int, response: rpc.RaftResponse) -> None:
        self._responses.append(OutboundResponse(destination, correlation_id, response))

    def _fetch_request(self, epoch: int, high_watermark: int | None) -> rpc.FetchRequest:
        position = OffsetAndEpoch(self._log.log_end_offset, self._log.last_fetched_epoch)
        return rpc.fetch_request(
            self.cluster_id, self.node_id, epoch=epoch, position=position,
            high_watermark=high_watermark, max_wait_ms=self.config.fetch_max_wait_ms,
            max_bytes=self.config.max_fetch_bytes, directory_id=self.directory_id,
            log_start_offset=self._log.log_start_offset,
        )

    def _fetch_from_any_voter(self) -> None:
        """An observer without a leader asks a random bootstrap server (else voter), which
        will name the leader."""
        if self._in_flight:
            return
        targets = [t for t in (self.config.bootstrap_servers or tuple(self.voters))
                   if t != self.node_id]
        candidates = [t for t in targets if self._retry_at.get(t, 0) <= self._now]
        if candidates and len(candidates) == len(targets):  # one attempt per retry backoff
            self._send(self._rng.choice(candidates), self._fetch_request(self.epoch, None))

    def endpoint_of(self, destination: int) -> VoterEndpoint | None:
        """Where the driver sends a request for ``destination`` (a replica id) on the
        controller listener: a replica being added (its AddRaftVoter listeners), else the
        newest voter set naming it, else None (bootstrap servers are the driver's own map)."""
        pending = self._pending_change
        if pending is not None and pending.joining is not None and (
                pending.joining.key.id == destination):
            return pending.joining.endpoint(self.config.listener_name)
        for voters in self._control.voter_sets_newest_first():
            node = voters.node(destination)
            endpoint = None if node is None else node.endpoint(self.config.listener_name)
            if endpoint is not None:
                return endpoint
        return None

    def _directory_of(self, voter: int) -> uuid.UUID | None:
        node = self.voters.node(voter)
        return None if node is None else node.key.directory_id

    # -- requests ---------------------------------------------------------------------

    def _dispatch_request(self, request: rpc.RaftRequest) -> rpc.RaftResponse:
        if isinstance(request, rpc.VoteRequest):
            return self._handle_vote_request(request)
        if isinstance(request, rpc.BeginQuorumEpochRequest):
            return self._handle_begin_quorum_request(request)
        if isinstance(request, rpc.EndQuorumEpochRequest):
            return self._handle_end_quorum_request(request)
        if isinstance(request, rpc.DescribeQuorumRequest):
            return self.describe_quorum()
        if isinstance(request, rpc.FetchSnapshotRequest):
            return self._handle_fetch_snapshot_request(request)
        if isinstance(request, rpc.ApiVersionsRequest):  # a real listener answers these itself
            return rpc.kraft_api_versions_response(
                (SUPPORTED_KRAFT_VERSIONS.min_supported_version,
                 SUPPORTED_KRAFT_VERSIONS.max_supported_version), self.kraft_version)
        raise TypeError(f"not a KRaft request: {type(request).__name__}")

    def _cluster_mismatch(self, cluster_id: str | None) -> bool:
        return cluster_id is not None and self.cluster_id is not None and (
            cluster_id != self.cluster_id
        )

    def _handle_vote_request(self, request: rpc.VoteRequest) -> rpc.VoteResponse:
        if self._cluster_mismatch(request.cluster_id):
            return rpc.vote_response(ErrorCode.none, None, self.epoch, False,
                                     ErrorCode.inconsistent_cluster_id)
        part = rpc.vote_partition(request)
        if isinstance(part, ErrorCode):
            return rpc.vote_response(ErrorCode.none, None, self.epoch, False, part)
        epoch, candidate = int(part.replica_epoch), int(part.replica_id)
        last_epoch, last_offset = int(part.last_offset_epoch), int(part.last_offset)
        too_new = last_epoch > epoch if part.pre_vote else last_epoch >= epoch
        if last_offset < 0 or last_epoch < 0 or too_new or epoch > MAX_EPOCH:
            return self._vote_error(ErrorCode.invalid_request)
        if epoch < self.epoch:
            return self._vote_error(ErrorCode.fenced_leader_epoch)
        if candidate < 0:
            return self._vote_error(ErrorCode.invalid_request)
        if epoch > self.epoch:
            self._become_unattached(epoch)
        if not self._is_addressed_to_me(request.voter_id, part.voter_directory_id):
            return self._vote_error(ErrorCode.invalid_voter_key)
        local = OffsetAndEpoch(self._log.log_end_offset, self._log.last_fetched_epoch)
        up_to_date = is_log_up_to_date(OffsetAndEpoch(last_offset, last_epoch), local)
        candidate_key = ReplicaKey.of(candidate, part.replica_directory_id)
        granted = self._can_grant_vote(candidate_key, up_to_date, part.pre_vote)
        if granted and not part.pre_vote:
            state = self.state
            if isinstance(state, Unattached):
                self._set_state(Unattached(state.epoch, candidate_key,
                                           self._election_deadline()))
            elif isinstance(state, Prospective):
                self._persist(dataclasses.replace(state, voted=candidate_key))
                state.voted = candidate_key
        return rpc.vote_response(ErrorCode.none, self.state.leader_id, self.epoch, granted)

    def _is_me(self, key: ReplicaKey) -> bool:
        """``key`` names this replica: its id, and its directory id when the key has one."""
        return key.id == self.node_id and key.directory_id in (None, self.directory_id)

    def _is_addressed_to_me(self, voter_id: int, directory_id: uuid.UUID | None) -> bool:
        """The request's voter key (id, and directory id when both sides know one) is ours."""
        if voter_id >= 0 and voter_id != self.node_id:
            return False
        return directory_id in (None, ZERO_UUID) or self.directory_id is None or (
            directory_id == self.directory_id)

    def _voter_only_error(self, leader_id: int, epoch: int) -> ErrorCode | None:
        """Kafka's ``validateVoterOnlyRequest`` for BeginQuorumEpoch and EndQuorumEpoch
        (fenced epoch, negative leader id), plus the refusal of a leader or epoch this
        replica cannot believe (:meth:`_is_believable`)."""
        if epoch < self.epoch:
            return ErrorCode.fenced_leader_epoch
        if leader_id < 0 or not self._is_believable(leader_id, epoch):
            return ErrorCode.invalid_request
        return None

    def _vote_error(self, error: ErrorCode) -> rpc.VoteResponse:
        return rpc.vote_response(error, self.state.leader_id, self.epoch, False)

    def _handle_begin_quorum_request(
        self, request: rpc.BeginQuorumEpochRequest
    ) -> rpc.BeginQuorumEpochResponse:
        if self._cluster_mismatch(request.cluster_id):
            return rpc.begin_quorum_response(ErrorCode.none, None, self.epoch,
                                             ErrorCode.inconsistent_cluster_id)
        part = rpc.begin_quorum_partition(request)
        if isinstance(part, ErrorCode):
            return rpc.begin_quorum_response(ErrorCode.none, None, self.epoch, part)
        leader, epoch = int(part.leader_id), int(part.leader_epoch)
        error = self._voter_only_error(leader, epoch)
        if error is not None:
            return rpc.begin_quorum_response(error, self.state.leader_id, self.epoch)
        # as Kafka: the leader is news even to a replica that is not the voter addressed
        # (e.g. the same id with a new disk), which answers INVALID_VOTER_KEY after learning
        self._maybe_transition(leader, epoch)
        if not self._is_addressed_to_me(request.voter_id, part.voter_directory_id):
            return rpc.begin_quorum_response(ErrorCode.invalid_voter_key, self.state.leader_id,
                                             self.epoch)
        return rpc.begin_quorum_response(ErrorCode.none, self.state.leader_id, self.epoch)

    def _handle_end_quorum_request(
        self, request: rpc.EndQuorumEpochRequest
    ) -> rpc.EndQuorumEpochResponse:
        if self._cluster_mismatch(request.cluster_id):
            return rpc.end_quorum_response(ErrorCode.none, None, self.epoch,
                                           ErrorCode.inconsistent_cluster_id)
        part = rpc.end_quorum_partition(request)
        if isinstance(part, ErrorCode):
            return rpc.end_quorum_response(ErrorCode.none, None, self.epoch, part)
        leader, epoch = int(part.leader_id), int(part.leader_epoch)
        error = self._voter_only_error(leader, epoch)
        if error is not None:
            return rpc.end_quorum_response(error, self.state.leader_id, self.epoch)
        self._maybe_transition(leader, epoch)
        state = self.state
        if isinstance(state, Follower) and state.leader_id == leader:
            successors = [ReplicaKey.of(int(c.candidate_id), c.candidate_directory_id)
                          for c in part.preferred_candidates]
            position = next((i for i, key in enumerate(successors) if self._is_me(key)), None)
            state.fetch_deadline_ms = self._now + end_quorum_backoff_ms(
                position, len(successors), self.config.election_backoff_max_ms
            )
            state.has_fetched_from_leader = False  # the leader left: pre-votes are fair again
        return rpc.end_quorum_response(ErrorCode.none, self.state.leader_id, self.epoch)

    def _handle_fetch_request(
        self, source: int, correlation_id: int, request: rpc.FetchRequest, *, may_park: bool
    ) -> None:
        response = self._try_fetch(source, correlation_id, request, may_park)
        if response is not None:
            self._respond(source, correlation_id, response)

    def _try_fetch(
        self, source: int, correlation_id: int, request: rpc.FetchRequest, may_park: bool
    ) -> rpc.FetchResponse | None:
        if self._cluster_mismatch(request.cluster_id):
            return rpc.fetch_error(ErrorCode.inconsistent_cluster_id)
        part = rpc.fetch_partition(request)
        if part is None:
            return rpc.fetch_error(ErrorCode.invalid_request)
        wait_ms = rpc.max_wait_ms(request)
        offset, last_epoch = int(part.fetch_offset), int(part.last_fetched_epoch)
        if wait_ms < 0 or offset < 0 or last_epoch < 0 or last_epoch > part.current_leader_epoch:
            return rpc.fetch_response(ErrorCode.invalid_request, self.state.leader_id, self.epoch)
        state = self.state
        error = ErrorCode.none
        if part.current_leader_epoch < self.epoch:
            error = ErrorCode.fenced_leader_epoch
        elif part.current_leader_epoch > self.epoch:
            error = ErrorCode.unknown_leader_epoch
        elif not isinstance(state, Leader):
            error = ErrorCode.not_leader_or_follower
        elif self._shutting_down:
            error = ErrorCode.broker_not_available
        if error != ErrorCode.none or not isinstance(state, Leader):
            return rpc.fetch_response(error, self.state.leader_id, self.epoch)
        replica = ReplicaKey.of(int(request.replica_state.replica_id), part.replica_directory_id)
        progress = state.progress
        progress.record_voter_fetch(replica, self._now)
        start = self._log.log_start_offset
        snapshot = snapshot_for_fetch(self._log, offset, last_epoch)
        if snapshot is not None:
            return rpc.fetch_response(ErrorCode.none, self.node_id, self.epoch,
                                      high_watermark=progress.high_watermark,
                                      snapshot_id=snapshot, log_start_offset=start)
        diverging = is_valid_fetch_position(self._log, offset, last_epoch)
        if diverging is not None:
            return rpc.fetch_response(ErrorCode.none, self.node_id, self.epoch,
                                      high_watermark=progress.high_watermark,
                                      diverging=diverging, log_start_offset=start)
        records = self._log.read(offset, int(part.partition_max_bytes))
        if replica.id >= 0 and progress.update_replica(replica, offset, self._now,
                                                       self._log.log_end_offset):
            self._complete_parked(all_fetches=True)
        hwm = progress.high_watermark
        follower_behind = hwm is not None and part.high_watermark < hwm
        if not records and may_park and wait_ms > 0 and not follower_behind:
            self._parked.append(_ParkedFetch(source, correlation_id, request, offset,
                                             self._now + wait_ms))
            return None
        return rpc.fetch_response(ErrorCode.none, self.node_id, self.epoch,
                                  high_watermark=hwm, records=records, log_start_offset=start)

    def _complete_parked(self, *, all_fetches: bool) -> None:
        """Answer parked fetches: all of them (HWM moved, leadership lost) or new-data ones."""
        end = self._log.log_end_offset
        self._answer_parked(lambda p: all_fetches or p.fetch_offset < end)

    def _answer_parked(self, is_due: Callable[[_ParkedFetch], bool]) -> None:
        due = [p for p in self._parked if is_due(p)]
        self._parked = [p for p in self._parked if not any(p is d for d in due)]
        for parked in due:  # answering one may move the HWM and complete others: re-entrant
            self._handle_fetch_request(parked.source, parked.correlation_id, parked.request,
                                       may_park=False)

    # -- responses --------------------------------------------------------------------

    def _handle_common_response(self, header: rpc.ResponseHeader) -> bool:
        """Kafka's ``maybeHandleCommonResponse``: True when nothing more is to be done."""
        if header.epoch is not None and header.epoch < self.epoch:
            return True
        if header.error in (ErrorCode.fenced_leader_epoch, ErrorCode.not_leader_or_follower):
            self._maybe_transition(header.leader_id, header.epoch)
            return True
        if header.epoch is not None and header.epoch > self.epoch:
            self._maybe_transition(header.leader_id, header.epoch)
            return True
        if (header.epoch == self.epoch and header.leader_id is not None
                and self.state.leader_id is None):
            self._maybe_transition(header.leader_id, header.epoch)
            return header.error != ErrorCode.none
        return False

    def _dispatch_response(self, source: int, request: rpc.RaftRequest,
                           response: rpc.RaftResponse, header: rpc.ResponseHeader) -> None:
        if (header.error == ErrorCode.unsupported_version and isinstance(self.state, Prospective)
                and isinstance(response, rpc.VoteResponse)):
            self._become_candidate()  # the peer predates pre-vote (KIP-996): campaign for real
            return
        if header.error != ErrorCode.none:
            state = self.state
            if isinstance(response, rpc.FetchSnapshotResponse) and isinstance(state, Follower):
                self._abort_download(state)  # e.g. SNAPSHOT_NOT_FOUND: fetch anew
            elif (isinstance(response, rpc.UpdateRaftVoterResponse) and isinstance(state, Follower)
                  and header.error != ErrorCode.request_timed_out):
                state.membership_done = True  # refused for good in this epoch
            self._retry_at[source] = self._now + self.config.retry_backoff_ms
            return
        if isinstance(response, rpc.VoteResponse) and isinstance(request, rpc.VoteRequest):
            self._handle_vote_response(source, request, response)
        elif isinstance(response, rpc.FetchResponse) and isinstance(request, rpc.FetchRequest):
            self._handle_fetch_response(source, request, response)
        elif isinstance(response, rpc.FetchSnapshotResponse) and isinstance(
                request, rpc.FetchSnapshotRequest):
            self._handle_fetch_snapshot_response(source, response)
        elif isinstance(response, rpc.EndQuorumEpochResponse) and isinstance(self.state, Resigned):
            self.state.unacked_voters.discard(source)
            if self._shutting_down and not self.state.unacked_voters:
                self._resign_acked = True
        elif isinstance(response, rpc.BeginQuorumEpochResponse) and isinstance(self.state, Leader):
            self.state.progress.begin_quorum_acked.add(source)
        elif isinstance(response, rpc.UpdateRaftVoterResponse) and isinstance(self.state,
                                                                               Follower):
            self.state.membership_done = True

    def _handle_vote_response(self, source: int, request: rpc.VoteRequest,
                              response: rpc.VoteResponse) -> None:
        state = self.state
        sent = request.topics[0].partitions[0]
        if not isinstance(state, Prospective | Candidate) or sent.replica_epoch != state.epoch:
            return
        if sent.pre_vote != isinstance(state, Prospective):
            return
        state.election.record(source, response.topics[0].partitions[0].vote_granted)
        self._maybe_win_election()

    def _handle_fetch_response(self, source: int, request: rpc.FetchRequest,
                               response: rpc.FetchResponse) -> None:
        state = self.state
        sent = request.topics[0].partitions[0]
        if not isinstance(state, Follower) or source != state.leader_id:
            return
        if sent.current_leader_epoch != state.epoch or sent.fetch_offset != (
            self._log.log_end_offset
        ):
            return
        part = response.responses[0].partitions[0]
        if part.snapshot_id.epoch >= 0 and part.snapshot_id.end_offset >= 0:
            self._start_download(state, OffsetAndEpoch(int(part.snapshot_id.end_offset),
                                                       int(part.snapshot_id.epoch)))
        elif part.diverging_epoch.epoch >= 0 and part.diverging_epoch.end_offset >= 0:
            diverging = OffsetAndEpoch(int(part.diverging_epoch.end_offset),
                                       int(part.diverging_epoch.epoch))
            if truncation_offset(self._log, diverging) < max(self.high_watermark or 0,
                                                             self._app_next_offset):
                # committed data is never dropped: Kafka stops here, this replica refuses
                # the answer and asks again
                self._retry_at[source] = self._now + self.config.retry_backoff_ms
                return
            self._truncate_diverging(diverging)
        elif part.records:
            try:
                first = next(iter_batches(bytes(part.records), verify_crc=True))
                if first.base_offset != self._log.log_end_offset:
                    raise CorruptRecordError(
                        f"fetched batch starts at {first.base_offset}, expected "
                        f"{self._log.log_end_offset}"
                    )
                self._append_control(bytes(part.records))
            except (CorruptRecordError, StorageError):
                self._retry_at[source] = self._now + self.config.retry_backoff_ms
                return
        if part.high_watermark >= 0 and state.download is None:  # else the log is unchecked
            hwm = min(int(part.high_watermark), self._log.log_end_offset)
            if state.high_watermark is None or hwm > state.high_watermark:
                state.high_watermark = hwm
        state.has_fetched_from_leader = True
        state.fetch_deadline_ms = self._now + self.config.fetch_timeout_ms

    # -- snapshots (KIP-630) -----------------------------------------------------------

    def _load_control_state(self) -> None:
        """Rebuild kraft.version and voter-set history: latest snapshot, then the log.

        A snapshot beyond the log end (the crash lost an unflushed tail it covers) replaces
        the whole log, as Kafka does when it opens the log.
        """
        latest = self._latest_snapshot(include_bootstrap=True)
        if latest is not None and latest.offset > self._log.log_end_offset:
            self._log.truncate_to_snapshot(latest)
            self._requested_flush = self._log.log_end_offset
        offset = self._log.log_start_offset
        if latest is not None:
            self._control.load_snapshot(latest.offset, self.read_snapshot(latest))
            offset = max(offset, latest.offset)
        while offset < self._log.log_end_offset:
            batches = [b for b in iter_batches(self._log.read(offset, self.config.max_fetch_bytes),
                                               verify_crc=False) if b.last_offset >= offset]
            if not batches:
                break
            self._control.observe(batches)
            offset = batches[-1].last_offset + 1

    def _append_control(self, data: bytes) -> None:
        """Append batches that may hold control records, and track those records."""
        self._log.append(data)
        self._control.observe(iter_batches(data, verify_crc=False))

    def _latest_snapshot(self, *, include_bootstrap: bool = False) -> OffsetAndEpoch | None:
        ids = [s.snapshot_id for s in self._log.snapshots()
               if include_bootstrap or s.snapshot_id != BOOTSTRAP_SNAPSHOT_ID]
        return ids[-1] if ids else None

    def _is_batch_boundary(self, offset: int) -> bool:
        if offset == self._log.log_end_offset:
            return True
        first = next(iter_batches(self._log.read(offset, 1), verify_crc=False), None)
        return first is not None and first.base_offset == offset

    def _clean_snapshots(self) -> None:
        """Apply snapshot retention: move the log start to a newer snapshot if allowed."""
        target = retention_target(
            self._log.snapshots(), self._log.size_bytes, self._now,
            retention_bytes=self.config.snapshot_retention_bytes,
            retention_ms=self.config.snapshot_retention_ms,
            committed_offset=self._app_next_offset,
        )
        if target is not None and target.offset > self._log.log_start_offset:
            self._log.delete_before_snapshot(target)
            self._control.truncate_old_entries(self._log.log_start_offset)

    def _start_download(self, state: Follower, snapshot_id: OffsetAndEpoch) -> None:
        """The leader says our position is gone: pull its snapshot (or use ours if we have
        it already)."""
        if state.download is not None and state.download.snapshot_id == snapshot_id:
            return
        self._abort_download(state)
        if any(s.snapshot_id == snapshot_id for s in self._log.snapshots()):
            self._install_snapshot(snapshot_id)
            return
        try:
            state.download = SnapshotDownload(snapshot_id, self._log.create_snapshot(snapshot_id))
        except StorageError:
            self._retry_at[state.leader_id] = self._now + self.config.retry_backoff_ms

    def _abort_download(self, state: Follower) -> None:
        if state.download is not None:
            state.download.sink.abort()
            state.download = None

    def _handle_fetch_snapshot_request(
        self, request: rpc.FetchSnapshotRequest
    ) -> rpc.FetchSnapshotResponse:
        if self._cluster_mismatch(request.cluster_id):
            return rpc.fetch_snapshot_response(ErrorCode.none, None, self.epoch,
                                               top_error=ErrorCode.inconsistent_cluster_id)
        part = rpc.fetch_snapshot_partition(request)
        if isinstance(part, ErrorCode):
            if part == ErrorCode.invalid_request:
                return rpc.fetch_snapshot_response(ErrorCode.none, None, self.epoch,
                                                   top_error=part)
            return rpc.fetch_snapshot_response(part, self.state.leader_id, self.epoch)
        state = self.state
        error = self._leader_only_error(int(part.current_leader_epoch))
        if error is None and request.max_bytes <= 0:
            error = ErrorCode.invalid_request
        if error is not None or not isinstance(state, Leader):
            return rpc.fetch_snapshot_response(error or ErrorCode.not_leader_or_follower,
                                               self.state.leader_id, self.epoch)
        wanted = OffsetAndEpoch(int(part.snapshot_id.end_offset), int(part.snapshot_id.epoch))
        info = next((s for s in self._log.snapshots() if s.snapshot_id == wanted), None)
        if info is None or wanted == BOOTSTRAP_SNAPSHOT_ID:
            return rpc.fetch_snapshot_response(ErrorCode.snapshot_not_found, self.node_id,
                                               self.epoch, snapshot_id=wanted)
        position = int(part.position)
        if position < 0 or position >= info.size:
            return rpc.fetch_snapshot_response(ErrorCode.position_out_of_range, self.node_id,
                                               self.epoch, snapshot_id=wanted, size=info.size)
        state.progress.record_voter_fetch(
            ReplicaKey.of(int(request.replica_id), part.replica_directory_id), self._now)
        chunk = self._log.read_snapshot(
            wanted, position, min(int(request.max_bytes), self.config.max_fetch_bytes))
        return rpc.fetch_snapshot_response(ErrorCode.none, self.node_id, self.epoch,
                                           snapshot_id=wanted, size=info.size,
                                           position=position, chunk=chunk)

    def _leader_only_error(self, request_epoch: int) -> ErrorCode | None:
        """Kafka's validation of leader-only requests (Fetch, FetchSnapshot, UpdateVoter)."""
        if request_epoch < self.epoch:
            return ErrorCode.fenced_leader_epoch
        if request_epoch > self.epoch:
            return ErrorCode.unknown_leader_epoch
        if not isinstance(self.state, Leader):
            return ErrorCode.not_leader_or_follower
        if self._shutting_down:
            return ErrorCode.broker_not_available
        return None

    def _handle_fetch_snapshot_response(self, source: int,
                                        response: rpc.FetchSnapshotResponse) -> None:
        state = self.state
        if not isinstance(state, Follower) or source != state.leader_id:
            return
        download = state.download
        part = response.topics[0].partitions[0]
        got = OffsetAndEpoch(int(part.snapshot_id.end_offset), int(part.snapshot_id.epoch))
        if download is None or got != download.snapshot_id:
            return
        chunk = bytes(part.unaligned_records or b"")
        if part.position != download.position or download.position + len(chunk) > part.size:
            self._abort_download(state)
            return
        download.sink.write(chunk)
        state.has_fetched_from_leader = True
        state.fetch_deadline_ms = self._now + self.config.fetch_timeout_ms
        if download.position < part.size:
            return
        try:
            download.sink.freeze()
        except (CorruptRecordError, StorageError):
            self._abort_download(state)
            self._retry_at[source] = self._now + self.config.retry_backoff_ms
            return
        state.download = None
        self._install_snapshot(download.snapshot_id)

    def _install_snapshot(self, snapshot_id: OffsetAndEpoch) -> None:
        """Replace the whole log by a snapshot (a follower far behind); the application loads
        it (a ``LoadSnapshot`` event) since its next offset is now below the log start."""
        self._log.truncate_to_snapshot(snapshot_id)
        self._requested_flush = self._log.log_end_offset
        self._control.load_snapshot(snapshot_id.offset, self.read_snapshot(snapshot_id))

    # -- voter changes (KIP-853) ------------------------------------------------------

    def _handle_reconfig(self, source: int, correlation_id: int,
                         request: rpc.ReconfigRequest) -> rpc.ReconfigResponse | None:
        """Validate and append a voter change; None while the answer waits for its commit."""
        if self._cluster_mismatch(request.cluster_id):
            return self._reconfig_answer(request, ErrorCode.inconsistent_cluster_id,
                                          "cluster id mismatch")
        epoch = (int(request.current_leader_epoch)
                 if isinstance(request, rpc.UpdateRaftVoterRequest) else self.epoch)
        error = self._leader_only_error(epoch)
        state = self.state
        if error is not None or not isinstance(state, Leader):
            return self._reconfig_answer(request, error or ErrorCode.not_leader_or_follower,
                                          f"node {self.node_id} is not the leader")
        context = self._reconfig_context(state.progress)
        if isinstance(request, rpc.AddRaftVoterRequest):
            joining = validate_add(context, request)
            if isinstance(joining, Refusal):
                return self._reconfig_answer(request, joining.error, joining.message)
            timeout = int(request.timeout.total_seconds() * 1000)
            self._pending_change = PendingChange(source, correlation_id, request,
                                                 self._now + timeout, joining=joining)
            self._probe_joining_replica()
            return None
        if isinstance(request, rpc.UpdateRaftVoterRequest) and self._control.is_static:
            learned = learn_static_voter(self.voters, request, self.config.listener_name)
            if isinstance(learned, Refusal):
                return self._reconfig_answer(request, learned.error, learned.message)
            state.progress.static_voter_info[learned.key.id] = learned
            return self._reconfig_answer(request, ErrorCode.none, None)
        plan = (plan_remove(context, request) if isinstance(request, rpc.RemoveRaftVoterRequest)
                else plan_update(context, request))
        if isinstance(plan, Refusal):
            return self._reconfig_answer(request, plan.error, plan.message)
        offset = self._append_voters(state, plan)
        if isinstance(request, rpc.UpdateRaftVoterRequest):
            # answered on append: the voter sending it is also the one whose fetches commit it
            return self._reconfig_answer(request, ErrorCode.none, None)
        self._pending_change = PendingChange(
            source, correlation_id, request, self._now + self.config.request_timeout_ms,
            voters_offset=offset)
        return None

    def _local_voter_node(self) -> VoterNode | None:
        """This replica as a voter entry, if the driver told the core its listeners."""
        if self.directory_id is None or not self.config.local_listeners:
            return None
        return VoterNode(self.local_key, self.config.local_listeners, SUPPORTED_KRAFT_VERSIONS)

    def _static_voter_info(self, state: Leader, voter: int) -> VoterNode | None:
        if voter == self.node_id:
            return self._local_voter_node()
        return state.progress.static_voter_info.get(voter)

    def _maybe_update_own_entry(self, state: Leader) -> None:
        """A leader whose own entry in the voter set is stale (new endpoints, or a new
        release) rewrites it, once the previous change committed."""
        local, current = self._local_voter_node(), self.voters.node(self.node_id)
        hwm, last = state.progress.high_watermark, self._control.last_voter_set_offset
        if (local is None or current is None or self._control.is_static
                or self._pending_change is not None or hwm is None
                or (last is not None and last >= hwm) or current.key != local.key
                or current.same_as(local)):
            return
        updated = self.voters.with_updated(local)
        if updated is not None:
            self._append_voters(state, updated)

    def _membership_request(self) -> rpc.ReconfigRequest | None:
        """What a follower asks of the leader about its own membership, if anything: a voter
        whose entry is stale (or any voter of a static quorum, so the leader learns its
        directory id) sends UpdateRaftVoter; an observer with auto-join first removes a
        voter with its id but an old directory, then asks to be added (AckWhenCommitted
        false: its own fetches are what commits the change)."""
        local = self._local_voter_node()
        if local is None:
            return None
        listeners = [(e.name, e.host, e.port) for e in local.endpoints]
        current = self.voters.node(self.node_id)
        if self.is_voter:
            if current is not None and not self._control.is_static and current.same_as(local):
                return None
            return rpc.update_voter_request(
                self.cluster_id, self.epoch, self.node_id, self.directory_id, listeners,
                (local.supported.min_supported_version, local.supported.max_supported_version))
        if not self.config.auto_join or self._control.is_static:
            return None
        if current is not None:
            return rpc.remove_voter_request(self.cluster_id, self.node_id,
                                            current.key.directory_id)
        return rpc.add_voter_request(self.cluster_id, self.node_id, self.directory_id, listeners,
                                     ack_when_committed=False)

    def _maybe_send_membership_request(self, state: Follower) -> bool:
        """True when a membership request went to the leader instead of the next Fetch."""
        if (state.membership_done or not state.has_fetched_from_leader
                or self._now < state.next_membership_ms or state.leader_id in self._in_flight):
            return False
        request = self._membership_request()
        if request is None:
            state.membership_done = True
            return False
        self._send(state.leader_id, request)
        sent = state.leader_id in self._in_flight
        if sent:
            state.next_membership_ms = self._now + self.config.update_voter_period_ms
        return sent

    def _probe_joining_replica(self) -> None:
        """Ask the replica being added for its ApiVersions (its kraft.version range); sent
        again after a failure until the request's timeout."""
        pending = self._pending_change
        if pending is None or pending.joining is None or pending.voters_offset is not None:
            return
        destination = pending.joining.key.id
        in_flight = self._in_flight.get(destination)
        if in_flight is None or not isinstance(in_flight.request, rpc.ApiVersionsRequest):
            self._send(destination, rpc.api_versions_request(__version__))

    def _handle_api_versions_response(self, source: int,
                                      response: rpc.ApiVersionsResponse) -> None:
        """The probe's answer: append the new voter if it qualifies, else refuse."""
        pending, state = self._pending_change, self.state
        if (pending is None or pending.joining is None or pending.voters_offset is not None
                or pending.joining.key.id != source or not isinstance(state, Leader)):
            return
        if response.error_code != ErrorCode.none:
            self._retry_at[source] = self._now + self.config.retry_backoff_ms
            return
        low, high = rpc.supported_kraft_versions(response)
        context = dataclasses.replace(self._reconfig_context(state.progress),
                                      change_pending=False)
        plan = plan_add(context, pending.joining, KRaftVersionFeature(low, high),
                        lambda key: state.progress.is_caught_up(key, self._now))
        if isinstance(plan, Refusal):
            self._finish_pending_change(plan.error, plan.message)
            return
        pending.voters_offset = self._append_voters(state, plan)
        assert isinstance(pending.request, rpc.AddRaftVoterRequest)
        if not pending.request.ack_when_committed:
            self._finish_pending_change(ErrorCode.none, None)

    def _reconfig_answer(self, request: rpc.ReconfigRequest, error: ErrorCode,
                         message: str | None) -> rpc.ReconfigResponse:
        leader = self.state.leader_id
        endpoint = None if leader is None else self.endpoint_of(leader)
        return rpc.reconfig_response(request, error, message, leader_id=leader, epoch=self.epoch,
                                     leader_endpoint=None if endpoint is None
                                     else (endpoint.host, endpoint.port))

    def _append_voters(self, state: Leader, voters: VoterSet, *,
                       kraft_version: int | None = None) -> int:
        """Append a VotersRecord (after a KRaftVersion record for an upgrade) after every
        offset already handed out; it counts at once. Returns the VotersRecord's offset."""
        assert self._accumulator is not None
        pending = self._accumulator.drain(self._now, force=True)
        if pending:
            self._log.append(pending)
        self._append_control(voters_batch(self._log.log_end_offset, state.epoch, voters,
                                          self._now, kraft_version=kraft_version))
        offset = self._log.log_end_offset - 1
        self._accumulator.next_offset = self._log.log_end_offset
        state.progress.set_voters(self.voters)
        self._complete_parked(all_fetches=False)
        return offset

    def _poll_voter_change(self, progress: LeaderProgress) -> None:
        """Answer a committed (or expired) change; a leader removed by a committed change
        resigns."""
        hwm = progress.high_watermark
        pending = self._pending_change
        if (pending is not None and pending.voters_offset is not None and hwm is not None
                and hwm > pending.voters_offset):
            self._finish_pending_change(ErrorCode.none, None)
        elif pending is not None and self._now >= pending.deadline_ms:
            self._finish_pending_change(ErrorCode.request_timed_out,
                                        "the change did not commit in time")
        last = self._control.last_voter_set_offset
        if (not self.is_voter and last is not None and hwm is not None and hwm > last):
            self._become_resigned(progress.preferred_successors())

    def _finish_pending_change(self, error: ErrorCode, message: str | None) -> None:
        pending = self._pending_change
        if pending is None:
            return
        self._pending_change = None
        self._respond(pending.source, pending.correlation_id,
                      self._reconfig_answer(pending.request, error, message))

    # -- application events (Ready.events) ----------------------------------------------

    def _deliver_committed(self) -> None:
        if self._app_next_offset < self._log.log_start_offset:
            latest = self._latest_snapshot()
            if latest is not None:
                self._app_next_offset = latest.offset
                self._events.append(LoadSnapshot(latest))
        hwm = self.high_watermark
        while hwm is not None and self._app_next_offset < hwm:
            data = self._log.read(self._app_next_offset, self.config.max_fetch_bytes)
            delivered = False
            for batch in iter_batches(data, verify_crc=False):
                if batch.last_offset >= hwm:
                    break
                if batch.last_offset >= self._app_next_offset:
                    self._events.append(Committed(batch))
                    self._app_next_offset = batch.last_offset + 1
                    delivered = True
            if not delivered:
                break

    def _notify_leader_change(self) -> None:
        state = self.state
        if isinstance(state, Leader) and (
            self._app_next_offset <= state.progress.epoch_start_offset
        ):
            return
        current = self.leader_and_epoch
        if current != self._notified:
            self._notified = current
            self._events.append(LeaderChange(current))
