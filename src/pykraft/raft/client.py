"""The KRaft consensus core: one replica's protocol logic, with no I/O of its own.

Every input carries the caller's clock (``now_ms``); randomness comes from the injected
``random.Random``; the log and the election store are the two narrow interfaces of
:mod:`pykraft.raft.log` and :mod:`pykraft.raft.quorum_store`. Outputs accumulate until the
driver takes them with :meth:`RaftClient.ready`.

Three decisions are methods on purpose (``_new_leader_progress``, ``_can_grant_vote`` and
``_truncate_diverging``): tests substitute broken versions of exactly these to prove that
the simulator's invariants catch them.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from kio.schema.errors import ErrorCode

from pykraft.errors import (
    CorruptRecordError,
    FatalRaftError,
    NotLeaderError,
    StorageError,
)
from pykraft.raft import rpc
from pykraft.raft.accumulator import BatchAccumulator
from pykraft.raft.api import (
    FlushRequest,
    LeaderAndEpoch,
    OutboundRequest,
    OutboundResponse,
    RaftListener,
    Ready,
)
from pykraft.raft.config import QuorumConfig
from pykraft.raft.election import (
    EpochElection,
    election_backoff_ms,
    end_quorum_backoff_ms,
    is_log_up_to_date,
    random_election_timeout,
)
from pykraft.raft.leader import LeaderProgress, ReplicaProgress, leader_change_batch
from pykraft.raft.log import OffsetAndEpoch, RaftLog, is_valid_fetch_position, truncation_offset
from pykraft.raft.quorum_store import ElectionState, QuorumStateStore
from pykraft.raft.states import (
    Candidate,
    Follower,
    Leader,
    Prospective,
    Resigned,
    State,
    Unattached,
    election_state,
    voted_id_of,
)
from pykraft.raft.voters import VoterSet
from pykraft.records.batch import iter_batches

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
        listener: RaftListener, *, rng: random.Random, now_ms: int,
        cluster_id: str | None = None,
    ) -> None:
        self.node_id = node_id
        self.config = config
        self.voters = VoterSet(config.voters)
        self.cluster_id = cluster_id
        self._log = log
        self._store = store
        self._listener = listener
        self._rng = rng
        self._now = now_ms
        self._requests: list[OutboundRequest] = []
        self._responses: list[OutboundResponse] = []
        self._in_flight: dict[int, _InFlight] = {}
        self._retry_at: dict[int, int] = {}
        self._next_correlation = 0
        self._requested_flush = log.flushed_offset
        self._parked: list[_ParkedFetch] = []
        self._accumulator: BatchAccumulator | None = None
        self._listener_next_offset = 0
        self._notified: LeaderAndEpoch | None = None
        self._shutting_down = False
        self._persisted: ElectionState | None = store.read()
        self.state: State = self._initial_state()
        self._persist()
        if self.voters.is_only_voter(node_id) and not isinstance(self.state, Leader):
            self._become_candidate()
        self._poll()

    # -- public properties ------------------------------------------------------------

    @property
    def epoch(self) -> int:
        return self.state.epoch

    @property
    def is_voter(self) -> bool:
        return self.node_id in self.voters

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
        """A resigning leader waits until every voter acknowledged EndQuorumEpoch."""
        return self._shutting_down and not (
            isinstance(self.state, Resigned) and self.state.unacked_voters
        )

    # -- inputs -----------------------------------------------------------------------

    def tick(self, now_ms: int) -> None:
        self._advance(now_ms)
        self._poll()

    def handle_request(
        self, now_ms: int, source: int, correlation_id: int, request: rpc.RaftRequest
    ) -> None:
        self._advance(now_ms)
        if isinstance(request, rpc.FetchRequest):
            self._handle_fetch_request(source, correlation_id, request, may_park=True)
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
        header = rpc.response_header(response)
        before = self.state
        if not self._handle_common_response(header):
            self._dispatch_response(source, in_flight.request, response, header)
        elif self.state is before and header.error != ErrorCode.none:
            # an error that taught us nothing: do not hammer the peer
            self._retry_at[source] = now_ms + self.config.retry_backoff_ms
        self._poll()

    def handle_send_failure(self, now_ms: int, destination: int, correlation_id: int) -> None:
        """The request could not be delivered or timed out: back off, then retry."""
        self._advance(now_ms)
        in_flight = self._in_flight.get(destination)
        if in_flight is not None and in_flight.correlation_id == correlation_id:
            del self._in_flight[destination]
            self._retry_at[destination] = now_ms + self.config.retry_backoff_ms
        self._poll()

    def flush_completed(self, now_ms: int, offset: int) -> None:
        """The driver made the log durable up to ``offset`` (``log.flushed_offset`` says so)."""
        self._advance(now_ms)
        if isinstance(self.state, Leader) and self.state.progress.update_local_end_offset(
            self._log.flushed_offset, now_ms
        ):
            self._complete_parked(all_fetches=True)
        self._poll()

    def append(self, now_ms: int, records: list[bytes]) -> int:
        """Accept data records on the leader; returns the offset of the last one.

        The records are committed only when the high watermark passes that offset, which
        the listener learns through ``handle_commit``.
        """
        self._advance(now_ms)
        if not isinstance(self.state, Leader) or self._accumulator is None:
            raise NotLeaderError(
                f"node {self.node_id} is {self.state.name} in epoch {self.epoch}, not the leader"
            )
        offset = self._accumulator.append(records, now_ms)
        self._poll()
        return offset

    def begin_shutdown(self, now_ms: int) -> None:
        """Graceful stop: a leader resigns and names its most caught-up voters as successors."""
        self._advance(now_ms)
        self._shutting_down = True
        if isinstance(self.state, Leader):
            self._become_resigned(self.state.progress.preferred_successors())
        self._poll()

    def ready(self) -> Ready:
        """Drain every output produced so far."""
        flush = None
        if self._log.log_end_offset > self._requested_flush:
            self._requested_flush = self._log.log_end_offset
            flush = FlushRequest(self._requested_flush)
        out = Ready(tuple(self._requests), tuple(self._responses), flush, self._next_tick())
        self._requests.clear()
        self._responses.clear()
        return out

    def describe_quorum(self) -> rpc.DescribeQuorumResponse:
        """DescribeQuorum data (leader only); the leader's own row uses ``now``."""
        state = self.state
        if not isinstance(state, Leader):
            return rpc.describe_quorum_error(ErrorCode.not_leader_or_follower)
        progress = state.progress

        def rows(replicas: list[ReplicaProgress]) -> list[rpc.ReplicaRow]:
            return [
                rpc.ReplicaRow(p.replica_id, p.end_offset, self._now, self._now)
                if p.replica_id == self.node_id
                else rpc.ReplicaRow(p.replica_id, p.end_offset, p.last_fetch_ms,
                                    p.last_caught_up_ms)
                for p in replicas
            ]

        return rpc.describe_quorum_response(
            self.node_id, state.epoch, progress.high_watermark,
            rows(list(progress.voter_progress.values())),
            rows(progress.active_observers(self._now)),
        )

    # -- overridable decisions (see module docstring) ---------------------------------

    def _new_leader_progress(self, epoch_start_offset: int) -> LeaderProgress:
        return LeaderProgress(self.node_id, self.epoch, self.voters,
                              epoch_start_offset=epoch_start_offset, now_ms=self._now,
                              config=self.config)

    def _can_grant_vote(self, candidate_id: int, up_to_date: bool, pre_vote: bool) -> bool:
        return self.state.can_grant_vote(candidate_id, up_to_date, pre_vote)

    def _truncate_diverging(self, diverging: OffsetAndEpoch) -> None:
        offset = truncation_offset(self._log, diverging)
        committed = max(self.high_watermark or 0, self._listener_next_offset)
        if offset < committed:
            raise FatalRaftError(
                f"node {self.node_id}: leader asks to truncate to {offset}, below the committed "
                f"offset {committed}"
            )
        self._log.truncate_to(offset)
        self._requested_flush = min(self._requested_flush, self._log.log_end_offset)

    # -- transitions ------------------------------------------------------------------

    def _initial_state(self) -> State:
        stored = self._persisted or ElectionState(0)
        deadline = self._election_deadline()
        log_epoch = self._log.last_fetched_epoch
        if stored.epoch < log_epoch:
            return Unattached(log_epoch, None, deadline)
        if stored.leader_id == self.node_id and self.is_voter:
            return Resigned(stored.epoch, self.node_id, deadline,
                            set(self.voters.others(self.node_id)), ())
        if stored.leader_id is None and stored.voted_id == self.node_id and self.is_voter:
            election = EpochElection(self.voters, granted={self.node_id})
            return Candidate(stored.epoch, election, deadline, retries=1)
        if stored.leader_id is not None and stored.leader_id in self.voters:
            return Follower(stored.epoch, stored.leader_id, stored.voted_id,
                            self._now + self.config.fetch_timeout_ms)
        return Unattached(stored.epoch, stored.voted_id, deadline)

    def _persist(self) -> None:
        current = election_state(self.state, self.node_id)
        if current != self._persisted:
            self._store.write(current)
            self._persisted = current

    def _set_state(self, state: State) -> None:
        was_leader = isinstance(self.state, Leader)
        self.state = state
        self._persist()
        if was_leader and not isinstance(state, Leader):
            self._accumulator = None
            self._complete_parked(all_fetches=True)

    def _election_deadline(self) -> int:
        return self._now + random_election_timeout(self._rng, self.config.election_timeout_ms)

    def _vote_kept_in(self, epoch: int) -> int | None:
        """A vote binds for its whole epoch, whatever state the replica moves to in it."""
        return voted_id_of(self.state, self.node_id) if epoch == self.epoch else None

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
        retries = self.state.retries + 1 if isinstance(self.state, Prospective) else 1
        election = EpochElection(self.voters, granted={self.node_id})
        self._set_state(Candidate(self.epoch + 1, election, self._election_deadline(), retries))
        self._maybe_win_election()

    def _become_leader(self) -> None:
        state = self.state
        assert isinstance(state, Candidate)
        start = self._log.log_end_offset
        self._log.append(leader_change_batch(
            start, state.epoch, leader_id=self.node_id, voters=self.voters,
            granting=state.election.granted, timestamp=self._now,
        ))
        progress = self._new_leader_progress(start)
        self._set_state(Leader(state.epoch, self.node_id, self.node_id, progress))
        self._accumulator = BatchAccumulator(
            state.epoch, self._log.log_end_offset, self.config.append_linger_ms,
            self.config.max_batch_size_bytes,
        )
        progress.update_local_end_offset(self._log.flushed_offset, self._now)

    def _become_resigned(self, successors: tuple[int, ...]) -> None:
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

    def _maybe_transition(self, leader_id: int | None, epoch: int | None) -> None:
        """Adopt what a peer says about the quorum, if it is news."""
        if epoch is None or epoch < self.epoch:
            return
        if leader_id == self.node_id and not isinstance(self.state, Leader | Resigned):
            leader_id = None  # our own lost incarnation: do not follow ourselves
        if epoch > self.epoch:
            if leader_id is not None and leader_id in self.voters:
                self._become_follower(epoch, leader_id)
            else:
                self._become_unattached(epoch)
        elif leader_id is not None:
            known = self.state.leader_id
            if known is None:
                self._become_follower(epoch, leader_id)
            elif known != leader_id:
                raise FatalRaftError(
                    f"node {self.node_id}: epoch {epoch} has leader {known}, "
                    f"a peer says {leader_id}"
                )

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
            elif self._log.flushed_offset >= self._log.log_end_offset:
                self._send(state.leader_id, self._fetch_request(state.epoch, state.high_watermark))
        elif isinstance(state, Leader):
            self._poll_leader(state)
        elif now >= state.election_deadline_ms:
            if self.is_voter:
                self._become_prospective()
            else:
                self._become_unattached(state.epoch + 1)
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
            self._send(voter, rpc.vote_request(self.cluster_id, voter, epoch=state.epoch,
                                               local_id=self.node_id, last=last,
                                               pre_vote=pre_vote))

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
        if self._now >= progress.begin_quorum_resend_ms:  # periodic, so late voters learn too
            progress.begin_quorum_resend_ms = self._now + self.config.begin_quorum_epoch_resend_ms
            progress.begin_quorum_acked.clear()
        for voter in self.voters.others(self.node_id):
            if voter not in progress.begin_quorum_acked:
                self._send(voter, rpc.begin_quorum_request(self.cluster_id, voter, self.node_id,
                                                           state.epoch))
        for parked in [p for p in self._parked if self._now >= p.deadline_ms]:
            self._parked.remove(parked)
            self._handle_fetch_request(parked.source, parked.correlation_id, parked.request,
                                       may_park=False)

    def _next_tick(self) -> int:
        times = [p.deadline_ms for p in self._parked]
        times += [f.deadline_ms for f in self._in_flight.values()]
        times += [t for t in self._retry_at.values() if t > self._now]
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
            max_bytes=self.config.max_fetch_bytes,
        )

    def _fetch_from_any_voter(self) -> None:
        """An observer without a leader asks a random voter, which will name the leader."""
        if self._in_flight:
            return
        candidates = [v for v in self.voters if self._retry_at.get(v, 0) <= self._now]
        if len(candidates) == len(self.voters):  # one attempt per retry backoff
            self._send(self._rng.choice(candidates), self._fetch_request(self.epoch, None))

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
            return self._vote_error(part)
        epoch, candidate = int(part.replica_epoch), int(part.replica_id)
        last_epoch, last_offset = int(part.last_offset_epoch), int(part.last_offset)
        too_new = last_epoch > epoch if part.pre_vote else last_epoch >= epoch
        if candidate < 0 or last_offset < 0 or last_epoch < 0 or too_new:
            return self._vote_error(ErrorCode.invalid_request)
        if epoch < self.epoch:
            return self._vote_error(ErrorCode.fenced_leader_epoch)
        if epoch > self.epoch:
            self._become_unattached(epoch)
        if request.voter_id >= 0 and request.voter_id != self.node_id:
            return self._vote_error(ErrorCode.invalid_voter_key)
        local = OffsetAndEpoch(self._log.log_end_offset, self._log.last_fetched_epoch)
        up_to_date = is_log_up_to_date(OffsetAndEpoch(last_offset, last_epoch), local)
        granted = self._can_grant_vote(candidate, up_to_date, part.pre_vote)
        if granted and not part.pre_vote:
            state = self.state
            if isinstance(state, Unattached):
                self._set_state(Unattached(state.epoch, candidate, self._election_deadline()))
            elif isinstance(state, Prospective):
                state.voted_id = candidate
                self._persist()
        return rpc.vote_response(ErrorCode.none, self.state.leader_id, self.epoch, granted)

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
            return rpc.begin_quorum_response(part, self.state.leader_id, self.epoch)
        if request.voter_id >= 0 and request.voter_id != self.node_id:
            return rpc.begin_quorum_response(ErrorCode.invalid_voter_key, self.state.leader_id,
                                             self.epoch)
        if part.leader_epoch < self.epoch:
            return rpc.begin_quorum_response(ErrorCode.fenced_leader_epoch,
                                             self.state.leader_id, self.epoch)
        if part.leader_id < 0:
            return rpc.begin_quorum_response(ErrorCode.invalid_request, self.state.leader_id,
                                             self.epoch)
        self._maybe_transition(int(part.leader_id), int(part.leader_epoch))
        return rpc.begin_quorum_response(ErrorCode.none, self.state.leader_id, self.epoch)

    def _handle_end_quorum_request(
        self, request: rpc.EndQuorumEpochRequest
    ) -> rpc.EndQuorumEpochResponse:
        if self._cluster_mismatch(request.cluster_id):
            return rpc.end_quorum_response(ErrorCode.none, None, self.epoch,
                                           ErrorCode.inconsistent_cluster_id)
        part = rpc.end_quorum_partition(request)
        if isinstance(part, ErrorCode):
            return rpc.end_quorum_response(part, self.state.leader_id, self.epoch)
        if part.leader_epoch < self.epoch:
            return rpc.end_quorum_response(ErrorCode.fenced_leader_epoch,
                                           self.state.leader_id, self.epoch)
        leader = int(part.leader_id)
        self._maybe_transition(leader if leader >= 0 else None, int(part.leader_epoch))
        state = self.state
        if isinstance(state, Follower) and state.leader_id == leader:
            successors = [int(c.candidate_id) for c in part.preferred_candidates]
            position = successors.index(self.node_id) if self.node_id in successors else None
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
            return rpc.fetch_response(ErrorCode.none, None, self.epoch,
                                      top_error=ErrorCode.inconsistent_cluster_id)
        part = rpc.fetch_partition(request)
        if isinstance(part, ErrorCode):
            if part == ErrorCode.invalid_request:
                return rpc.fetch_response(ErrorCode.none, None, self.epoch, top_error=part)
            return rpc.fetch_response(part, self.state.leader_id, self.epoch)
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
        replica = int(request.replica_state.replica_id)
        progress = state.progress
        progress.record_voter_fetch(replica, self._now)
        diverging = is_valid_fetch_position(self._log, offset, last_epoch)
        if diverging is not None:
            return rpc.fetch_response(ErrorCode.none, self.node_id, self.epoch,
                                      high_watermark=progress.high_watermark,
                                      diverging=diverging)
        records = self._log.read(offset, int(part.partition_max_bytes))
        if replica >= 0 and progress.update_replica(replica, offset, self._now,
                                                    self._log.log_end_offset):
            self._complete_parked(all_fetches=True)
        hwm = progress.high_watermark
        follower_behind = hwm is not None and part.high_watermark < hwm
        if not records and may_park and wait_ms > 0 and not follower_behind:
            self._parked.append(_ParkedFetch(source, correlation_id, request, offset,
                                             self._now + wait_ms))
            return None
        return rpc.fetch_response(ErrorCode.none, self.node_id, self.epoch,
                                  high_watermark=hwm, records=records)

    def _complete_parked(self, *, all_fetches: bool) -> None:
        """Answer parked fetches: all of them (HWM moved, leadership lost) or new-data ones."""
        end = self._log.log_end_offset
        due = [p for p in self._parked if all_fetches or p.fetch_offset < end]
        for parked in due:
            self._parked.remove(parked)
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
            self._retry_at[source] = self._now + self.config.retry_backoff_ms
            return
        if isinstance(response, rpc.VoteResponse) and isinstance(request, rpc.VoteRequest):
            self._handle_vote_response(source, request, response)
        elif isinstance(response, rpc.FetchResponse) and isinstance(request, rpc.FetchRequest):
            self._handle_fetch_response(source, request, response)
        elif isinstance(response, rpc.EndQuorumEpochResponse) and isinstance(self.state, Resigned):
            self.state.unacked_voters.discard(source)
        elif isinstance(response, rpc.BeginQuorumEpochResponse) and isinstance(self.state, Leader):
            self.state.progress.begin_quorum_acked.add(source)

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
        if part.diverging_epoch.epoch >= 0 and part.diverging_epoch.end_offset >= 0:
            self._truncate_diverging(OffsetAndEpoch(int(part.diverging_epoch.end_offset),
                                                    int(part.diverging_epoch.epoch)))
        elif part.records:
            try:
                first = next(iter_batches(bytes(part.records), verify_crc=True))
                if first.base_offset != self._log.log_end_offset:
                    raise CorruptRecordError(
                        f"fetched batch starts at {first.base_offset}, expected "
                        f"{self._log.log_end_offset}"
                    )
                self._log.append(bytes(part.records))
            except (CorruptRecordError, StorageError):
                self._retry_at[source] = self._now + self.config.retry_backoff_ms
                return
        if part.high_watermark >= 0:
            hwm = min(int(part.high_watermark), self._log.log_end_offset)
            if state.high_watermark is None or hwm > state.high_watermark:
                state.high_watermark = hwm
        state.has_fetched_from_leader = True
        state.fetch_deadline_ms = self._now + self.config.fetch_timeout_ms

    # -- listener ---------------------------------------------------------------------

    def _deliver_committed(self) -> None:
        hwm = self.high_watermark
        while hwm is not None and self._listener_next_offset < hwm:
            data = self._log.read(self._listener_next_offset, self.config.max_fetch_bytes)
            delivered = False
            for batch in iter_batches(data, verify_crc=False):
                if batch.last_offset >= hwm:
                    break
                if batch.last_offset >= self._listener_next_offset:
                    self._listener.handle_commit(batch)
                    self._listener_next_offset = batch.last_offset + 1
                    delivered = True
            if not delivered:
                break

    def _notify_leader_change(self) -> None:
        state = self.state
        if isinstance(state, Leader) and (
            self._listener_next_offset <= state.progress.epoch_start_offset
        ):
            return
        current = self.leader_and_epoch
        if current != self._notified:
            self._notified = current
            self._listener.handle_leader_change(current)
