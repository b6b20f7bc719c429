"""The KRaft consensus core (Kafka's ``KafkaRaftClient``): one replica, no I/O of its own.

Every input carries the caller's clock (``now_ms``); randomness comes from the injected
``random.Random``; the log and the election store are the two narrow interfaces of
:mod:`pykraft.raft.log` and :mod:`pykraft.raft.quorum_state`. Outputs (messages, a flush,
the next tick, and the application's events) accumulate until the driver takes them with
:meth:`RaftClient.ready`; the core never calls the application.

This class is the driver-facing surface and the router: each input goes to the module of
the role or RPC it concerns, as etcd's ``stepLeader``/``stepFollower``/``stepCandidate``
and Kafka's per-role states: :mod:`~pykraft.raft.leader_role`,
:mod:`~pykraft.raft.follower_role`, :mod:`~pykraft.raft.election_role` (unattached,
prospective, candidate, resigned, and the election RPCs), :mod:`~pykraft.raft.fetch_handler`,
:mod:`~pykraft.raft.voter_handlers` (KIP-853) and :mod:`~pykraft.raft.snapshot_state`
(KIP-630). What they share (parts, transitions, substitutable decisions) is
:class:`~pykraft.raft.replica.Replica`; the state and its persistence are
:class:`~pykraft.raft.quorum_state.QuorumState`; requests out are
:class:`~pykraft.raft.request_manager.RequestManager`'s.

A request's ``source`` (and a response's) is an opaque routing token of the driver, handed
back unchanged as the destination of the answer: it is never a replica id (the runtime uses
values >= 2**40 for inbound connections). Replica ids always come from the request body.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Iterable, Sequence

from pykraft.errors import RaftError
from pykraft.protocol.errors import ErrorCode
from pykraft.raft import (
    election_role,
    fetch_handler,
    follower_role,
    leader_role,
    rpc,
    snapshot_state,
    voter_handlers,
)
from pykraft.raft.api import (
    FlushRequest,
    LeaderAndEpoch,
    LeaderChange,
    RaftEvent,
    Ready,
)
from pykraft.raft.config import SNAPSHOT_CLEAN_INTERVAL_MS, QuorumConfig
from pykraft.raft.control_state import ControlRecordState
from pykraft.raft.log import OffsetAndEpoch, RaftLog
from pykraft.raft.quorum_state import QuorumState, QuorumStateStore
from pykraft.raft.reconfig import Refusal
from pykraft.raft.replica import Replica
from pykraft.raft.states import Follower, Leader, Resigned
from pykraft.records.batch import RecordBatch
from pykraft.records.control import VoterEndpoint

NEVER = 2**62
MAX_TRANSITIONS_PER_POLL = 16
"""A poll re-runs while each pass changes the state (a new state's timers may be due at
once); a chain longer than this is a livelock, i.e. a bug, and stops the replica loudly."""


class RaftClient(Replica):
    """One replica of the metadata partition (voter or observer)."""

    def __init__(
        self, node_id: int, config: QuorumConfig, log: RaftLog, store: QuorumStateStore,
        *, rng: random.Random, now_ms: int,
        cluster_id: str | None = None, directory_id: uuid.UUID | None = None,
    ) -> None:
        super().__init__(node_id, config, log, rng=rng, now_ms=now_ms,
                         cluster_id=cluster_id, directory_id=directory_id)
        self._events: list[RaftEvent] = []
        self._notified: LeaderAndEpoch | None = None
        self._next_clean_ms = now_ms + SNAPSHOT_CLEAN_INTERVAL_MS
        snapshot_state.load_control_state(self)
        self.quorum = QuorumState(self.local_key, store, rng, config,
                                  log_epoch=log.last_fetched_epoch, voters=self.voters,
                                  is_voter=self.is_voter, now_ms=now_ms,
                                  kraft_version=self.kraft_version)
        if (self.voters.is_only_voter(node_id) and self.is_voter
                and not isinstance(self.state, Leader)):
            self.become_candidate()
        self._poll()

    # -- public properties ------------------------------------------------------------

    @property
    def control_state(self) -> ControlRecordState:
        """Voter-set and kraft.version history (read-only use: observers, tests)."""
        return self.control

    @property
    def log_start_offset(self) -> int:
        return self.log.log_start_offset

    @property
    def leader_and_epoch(self) -> LeaderAndEpoch:
        return LeaderAndEpoch(self.state.leader_id, self.state.epoch)

    @property
    def shutdown_complete(self) -> bool:
        """A resigning leader waits until every voter acknowledged EndQuorumEpoch, or until
        its election timeout ends the wait."""
        return self.shutting_down and not (
            isinstance(self.state, Resigned) and self.state.unacked_voters
        )

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
            fetch_handler.handle_fetch_request(self, source, correlation_id, request,
                                             may_park=True)
        elif isinstance(request, rpc.ReconfigRequest):
            answer = voter_handlers.handle_reconfig(self, source, correlation_id, request)
            if answer is not None:
                self.respond(source, correlation_id, answer)
        else:
            self.respond(source, correlation_id, self._dispatch_request(request))
        self._poll()

    def handle_response(self, now_ms: int, source: int, correlation_id: int,
                        response: rpc.RaftResponse) -> None:
        self._advance(now_ms)
        in_flight = self.requests.complete(source, correlation_id)
        if in_flight is None:
            pass  # a late answer to a request that timed out: dropped, but time moved on
        elif isinstance(response, rpc.ApiVersionsResponse):
            voter_handlers.handle_api_versions_response(self, source, response)
        else:
            self._handle_response(now_ms, source, in_flight.request, response)
        # Always: a retry backoff may end at this very millisecond, and the timers the
        # driver is given next only count those still ahead.
        self._poll()

    def handle_send_failure(self, now_ms: int, destination: int, correlation_id: int, *,
                            unreachable: bool = False) -> None:
        """The request could not be delivered or timed out: back off, then retry (and a
        voter that lost its leader may start a pre-vote at once:
        :func:`~pykraft.raft.follower_role.handle_send_failure`)."""
        self._advance(now_ms)
        in_flight = self.requests.complete(destination, correlation_id)
        if in_flight is not None:
            self.requests.backoff(destination, now_ms)
            follower_role.handle_send_failure(self, destination, in_flight.request,
                                              unreachable)
        self._poll()

    def flush_completed(self, now_ms: int, offset: int) -> None:
        """The driver made the log durable up to ``offset`` (``log.flushed_offset`` says so)."""
        self._advance(now_ms)
        if isinstance(self.state, Leader) and self.state.progress.update_local_end_offset(
            self.log.flushed_offset, now_ms
        ):
            fetch_handler.complete_parked(self, all_fetches=True)
        self._poll()

    def append(self, now_ms: int, records: list[bytes], *, poll: bool = True) -> int:
        """Accept data records on the leader; returns the offset of the last one.

        The records are committed only when the high watermark passes that offset, which
        the application learns from a ``Committed`` event. With ``poll=False`` they wait in
        the accumulator for the caller's next input (e.g. :meth:`tick`): a driver appending
        for several requests at once then gets one batch and one log write for all of them,
        even with a zero linger.
        """
        self._advance(now_ms)
        offset = self.require_leader()[1].append(records, now_ms)
        if poll:
            self._poll()
        return offset

    def begin_shutdown(self, now_ms: int) -> None:
        """Graceful stop: a leader resigns and names its most caught-up voters as successors."""
        self._advance(now_ms)
        self.shutting_down = True
        if isinstance(self.state, Leader):
            self.become_resigned(self.state.progress.preferred_successors())
        self._poll()

    def upgrade_kraft_version(self, now_ms: int, version: int, *,
                              validate_only: bool = False) -> int | Refusal | None:
        """Finalize ``kraft.version`` (see :func:`~pykraft.raft.voter_handlers.upgrade`)."""
        self._advance(now_ms)
        result = voter_handlers.upgrade(self, self.require_leader()[0], version, validate_only)
        if isinstance(result, int):
            self._poll()
        return result

    def create_snapshot(
        self, now_ms: int, snapshot_id: OffsetAndEpoch, batches: Iterable[Sequence[bytes]], *,
        timestamp_ms: int | None = None,
    ) -> None:
        """Write a snapshot of the state machine at ``snapshot_id`` (see
        :func:`~pykraft.raft.snapshot_state.create_snapshot`)."""
        self._advance(now_ms)
        snapshot_state.create_snapshot(self, snapshot_id, batches, timestamp_ms)
        self._poll()

    def read_snapshot(self, snapshot_id: OffsetAndEpoch) -> list[RecordBatch]:
        """The batches of a frozen snapshot (what the application reads on ``LoadSnapshot``)."""
        return snapshot_state.read_snapshot(self, snapshot_id)

    def ready(self) -> Ready:
        """Drain every output produced so far."""
        flush = None
        if self.log.log_end_offset > self.requested_flush:
            self.requested_flush = self.log.log_end_offset
            flush = FlushRequest(self.requested_flush)
        out = Ready(self.requests.take_outbox(), tuple(self._responses), flush,
                    self._next_tick(), tuple(self._events))
        self._responses.clear()
        self._events.clear()
        return out

    def describe_quorum(self) -> rpc.DescribeQuorumResponse:
        """DescribeQuorum data (leader only), see :func:`leader_role.describe_quorum`."""
        return leader_role.describe_quorum(self)

    def endpoint_of(self, destination: int) -> VoterEndpoint | None:
        """Where the driver sends a request for replica ``destination``, see
        :func:`~pykraft.raft.voter_handlers.endpoint_of`."""
        return voter_handlers.endpoint_of(self, destination)

    # -- what the roles ask of the core -----------------------------------------------

    def maybe_win_election(self) -> None:
        election_role.maybe_win_election(self)

    def _left_leadership(self) -> None:
        fetch_handler.complete_parked(self, all_fetches=True)
        voter_handlers.finish_pending_change(self, ErrorCode.NOT_LEADER_OR_FOLLOWER,
                                         "leadership changed before the change committed")

    # -- the poll loop ----------------------------------------------------------------

    def _advance(self, now_ms: int) -> None:
        self.now = max(self.now, now_ms)

    def _poll(self) -> None:
        """Act on timers until the state is stable, then hand out committed data."""
        for _ in range(MAX_TRANSITIONS_PER_POLL):
            before = self.state
            self.requests.expire(self.now)
            self._poll_state()
            if self.state is before:
                break
        else:
            raise RaftError(f"node {self.node_id}: the state changed on each of "
                            f"{MAX_TRANSITIONS_PER_POLL} passes of one poll (a livelock), "
                            f"last {self.state.name} in epoch {self.epoch}")
        if self.now >= self._next_clean_ms:  # snapshots age out even with no new ones
            self._next_clean_ms = self.now + SNAPSHOT_CLEAN_INTERVAL_MS
            snapshot_state.clean_snapshots(self)
        self._events += snapshot_state.committed_events(self)
        self._notify_leader_change()

    def _poll_state(self) -> None:
        state = self.state
        if isinstance(state, Leader):
            leader_role.poll(self, state)
        elif isinstance(state, Follower):
            follower_role.poll(self, state)
        else:
            election_role.poll(self, state)

    def _notify_leader_change(self) -> None:
        state = self.state
        if isinstance(state, Leader) and (
            self.app_next_offset <= state.progress.epoch_start_offset
        ):
            return  # the new leader is announced once its LeaderChange record commits
        current = self.leader_and_epoch
        if current != self._notified:
            self._notified = current
            self._events.append(LeaderChange(current))

    def _next_tick(self) -> int:
        times = [p.deadline_ms for p in self.parked]
        times += self.requests.deadlines(self.now)
        times.append(self._next_clean_ms)
        state = self.state
        if isinstance(state, Leader):
            times += leader_role.deadlines(self, state)
        elif isinstance(state, Follower):
            times.append(state.fetch_deadline_ms)
        else:
            times += election_role.deadlines(self, state)
        return max(self.now, min(times, default=NEVER))

    # -- routing by request, response and role --------------------------------------

    def _dispatch_request(self, request: rpc.RaftRequest) -> rpc.RaftResponse:
        if isinstance(request, rpc.VoteRequest):
            return election_role.handle_vote_request(self, request)
        if isinstance(request, rpc.BeginQuorumEpochRequest):
            return election_role.handle_begin_quorum_request(self, request)
        if isinstance(request, rpc.EndQuorumEpochRequest):
            return election_role.handle_end_quorum_request(self, request)
        if isinstance(request, rpc.DescribeQuorumRequest):
            return leader_role.describe_quorum(self)
        if isinstance(request, rpc.FetchSnapshotRequest):
            return fetch_handler.handle_fetch_snapshot_request(self, request)
        if isinstance(request, rpc.ApiVersionsRequest):  # a real listener answers these itself
            return voter_handlers.api_versions_response(self)
        raise TypeError(f"not a KRaft request: {type(request).__name__}")

    def _handle_response(self, now_ms: int, source: int, request: rpc.RaftRequest,
                         response: rpc.RaftResponse) -> None:
        """Kafka's ``maybeHandleCommonResponse``, then the answer to the role it is for."""
        header = rpc.response_header(response)
        if header.epoch is not None and not self.quorum.is_believable(header.leader_id,
                                                                      header.epoch):
            self.requests.backoff(source, now_ms)
            return
        before = self.state
        if not self._handle_common_response(header):
            self._dispatch_response(source, request, response, header)
        elif self.state is before and header.error != ErrorCode.NONE:
            # an error that taught us nothing: do not hammer the peer
            self.requests.backoff(source, now_ms)

    def _handle_common_response(self, header: rpc.ResponseHeader) -> bool:
        """True when nothing more is to be done with the response."""
        if header.epoch is not None and header.epoch < self.epoch:
            return True
        if header.error in (ErrorCode.FENCED_LEADER_EPOCH, ErrorCode.NOT_LEADER_OR_FOLLOWER):
            self.maybe_transition(header.leader_id, header.epoch)
            return True
        if header.epoch is not None and header.epoch > self.epoch:
            self.maybe_transition(header.leader_id, header.epoch)
            return True
        if (header.epoch == self.epoch and header.leader_id is not None
                and self.state.leader_id is None):
            self.maybe_transition(header.leader_id, header.epoch)
            return header.error != ErrorCode.NONE
        return False

    def _dispatch_response(self, source: int, request: rpc.RaftRequest,
                           response: rpc.RaftResponse, header: rpc.ResponseHeader) -> None:
        state = self.state
        if isinstance(state, Leader):
            leader_role.handle_response(self, state, source, response, header)
        elif isinstance(state, Follower):
            follower_role.handle_response(self, state, source, request, response, header)
        else:
            election_role.handle_response(self, state, source, request, response, header)
