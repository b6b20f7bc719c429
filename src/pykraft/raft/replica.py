"""What every role of the core works on: one replica's parts, the transitions between its
states, and the decisions tests substitute.

The role modules (:mod:`~pykraft.raft.leader_role`, :mod:`~pykraft.raft.follower_role`,
:mod:`~pykraft.raft.election_role`, :mod:`~pykraft.raft.fetch_handler`,
:mod:`~pykraft.raft.voter_handlers`, :mod:`~pykraft.raft.snapshot_state`) are functions of
a :class:`Replica`; :class:`~pykraft.raft.core.RaftClient` is the Replica that routes
inputs to them. Roles depend on this module, never on the core, so the package has no
import cycle.

Five decisions are methods here on purpose, whatever role takes them
(``new_leader_progress``, ``can_grant_vote``, ``truncate_diverging``, ``reconfig_context``
and ``become_prospective``): tests substitute broken versions of exactly these
(tests/sim/sim_mutants.py) to prove that the simulator's invariants catch them.
"""

from __future__ import annotations

import random
import uuid
from abc import ABC, abstractmethod
from dataclasses import dataclass

from pykraft.errors import NotLeaderError
from pykraft.raft import rpc
from pykraft.raft.accumulator import BatchAccumulator
from pykraft.raft.api import OutboundResponse
from pykraft.raft.config import QuorumConfig
from pykraft.raft.control_state import ControlRecordState
from pykraft.raft.leader import LeaderProgress, leader_change_batch
from pykraft.raft.log import OffsetAndEpoch, RaftLog, truncation_offset
from pykraft.raft.quorum_state import QuorumState
from pykraft.raft.reconfig import PendingChange, ReconfigContext
from pykraft.raft.request_manager import RequestManager
from pykraft.raft.states import Candidate, Follower, Leader, State
from pykraft.raft.voter_set import ReplicaKey, VoterSet
from pykraft.records.batch import iter_batches
from pykraft.records.control import VoterEndpoint


@dataclass(slots=True)
class ParkedFetch:
    """A fetch the leader had nothing for yet, answered when data arrives or its wait ends."""

    source: int
    correlation_id: int
    request: rpc.FetchRequest
    fetch_offset: int
    deadline_ms: int


class Replica(ABC):
    """One replica's parts and transitions; see the module docstring."""

    quorum: QuorumState
    """The state and its persistence (set up by the core once the log is read)."""

    def __init__(self, node_id: int, config: QuorumConfig, log: RaftLog, *,
                 rng: random.Random, now_ms: int, cluster_id: str | None,
                 directory_id: uuid.UUID | None) -> None:
        self.node_id = node_id
        self.directory_id = directory_id
        self.local_key = ReplicaKey(node_id, directory_id)
        self.config = config
        self.cluster_id = cluster_id
        endpoints = {voter: (VoterEndpoint(config.listener_name, host, port),)
                     for voter, host, port in config.voter_endpoints}
        self.control = ControlRecordState(VoterSet.static(config.voters, endpoints))
        """Voter-set and kraft.version history, from the log and snapshots."""
        self.pending_change: PendingChange | None = None
        """The voter change this leader is carrying out (one at a time)."""
        self.resign_acknowledged = False
        """Graceful shutdown of a leader: every other voter acknowledged EndQuorumEpoch
        (False while waiting, after the wait timed out, or if this node was not leader)."""
        self.log = log
        self.rng = rng
        self.now = now_ms
        self.requests = RequestManager(config.request_timeout_ms, config.retry_backoff_ms)
        self._responses: list[OutboundResponse] = []
        self.requested_flush = log.flushed_offset
        """The log end the driver was last asked to flush to."""
        self.parked: list[ParkedFetch] = []
        self.accumulator: BatchAccumulator | None = None
        self.app_next_offset = 0
        """The next offset to hand the application (``Committed`` events so far)."""
        self.shutting_down = False

    # -- views ------------------------------------------------------------------------

    @property
    def state(self) -> State:
        return self.quorum.state

    @property
    def epoch(self) -> int:
        return self.quorum.epoch

    @property
    def voters(self) -> VoterSet:
        """The voter set in force: the latest in the log, committed or not (KIP-853)."""
        return self.control.last_voter_set

    @property
    def kraft_version(self) -> int:
        return self.control.kraft_version

    @property
    def is_voter(self) -> bool:
        return self.voters.is_voter(self.local_key)

    @property
    def high_watermark(self) -> int | None:
        state = self.state
        if isinstance(state, Leader):
            return state.progress.high_watermark
        return state.high_watermark if isinstance(state, Follower) else None

    def directory_of(self, voter: int) -> uuid.UUID | None:
        node = self.voters.node(voter)
        return None if node is None else node.key.directory_id

    # -- substitutable decisions (see module docstring) -------------------------------

    def new_leader_progress(self, epoch_start_offset: int) -> LeaderProgress:
        return LeaderProgress(self.local_key, self.epoch, self.voters,
                              epoch_start_offset=epoch_start_offset, now_ms=self.now,
                              config=self.config)

    def can_grant_vote(self, candidate: ReplicaKey, up_to_date: bool, pre_vote: bool) -> bool:
        """As the state decides; except that a Follower whose own probe was refused
        grants the pre-votes that come while the leader has been silent for less than
        half the fetch timeout: only another early prober, which saw the leader go as it
        did, asks that soon (Kafka's voters ask at their fetch timeout, and are refused)."""
        state = self.state
        if (isinstance(state, Follower) and state.probed and pre_vote and up_to_date
                and self.now < state.fetch_deadline_ms - self.config.fetch_timeout_ms // 2):
            return True
        return state.can_grant_vote(candidate, up_to_date, pre_vote)

    def truncate_diverging(self, diverging: OffsetAndEpoch) -> None:
        offset = truncation_offset(self.log, diverging)
        self.log.truncate_to(offset)
        self.control.truncate_new_entries(self.log.log_end_offset)
        self.requested_flush = min(self.requested_flush, self.log.log_end_offset)

    def reconfig_context(self, progress: LeaderProgress) -> ReconfigContext:
        """What gates a voter change (one at a time, only once committed)."""
        return ReconfigContext(
            kraft_version=self.kraft_version, voters=self.voters,
            high_watermark=progress.high_watermark,
            last_voters_offset=self.control.last_voter_set_offset,
            change_pending=self.pending_change is not None,
            listener_name=self.config.listener_name,
        )

    def become_prospective(self) -> None:
        """Start a pre-vote (KIP-996); a sole voter has nobody to ask and campaigns."""
        if self.voters.is_only_voter(self.node_id):
            self.become_candidate()
            return
        self.set_state(self.quorum.prospective(self.voters, self.now))
        self.maybe_win_election()

    # -- what the core adds -----------------------------------------------------------

    @abstractmethod
    def maybe_win_election(self) -> None:
        """Act on the votes counted so far (:mod:`~pykraft.raft.election_role`)."""

    @abstractmethod
    def _left_leadership(self) -> None:
        """Answer what waited on this leader: parked fetches, a pending voter change."""

    # -- transitions ------------------------------------------------------------------

    def set_state(self, state: State) -> None:
        """Enter ``state`` (persisted first), and undo what the state left behind."""
        old = self.quorum.transition(state, self.kraft_version)
        if isinstance(old, Follower) and old.download is not None:
            old.download.sink.abort()
        if isinstance(old, Leader) and not isinstance(state, Leader):
            self.accumulator = None
            self._left_leadership()

    def become_unattached(self, epoch: int) -> None:
        self.set_state(self.quorum.unattached(epoch, self.now))

    def become_follower(self, epoch: int, leader_id: int) -> None:
        self.set_state(self.quorum.follower(epoch, leader_id, self.now))

    def become_candidate(self) -> None:
        """Bump the epoch and campaign; at the last epoch there is no next one, so the
        replica stays in its epoch, unattached, and waits for another election timeout."""
        candidate = self.quorum.candidate(self.voters, self.now)
        if candidate is None:
            self.become_unattached(self.epoch)
            return
        self.set_state(candidate)
        self.maybe_win_election()

    def become_leader(self) -> None:
        state = self.state
        assert isinstance(state, Candidate)
        start = self.log.log_end_offset
        self.append_control(leader_change_batch(
            start, state.epoch, leader_id=self.node_id, voters=self.voters,
            granting=state.election.granted, timestamp=self.now,
            write_voters=(self.kraft_version >= 1
                          and self.control.last_voter_set_offset is None),
        ))
        progress = self.new_leader_progress(start)
        self.set_state(Leader(state.epoch, self.node_id, self.local_key, progress))
        self.accumulator = BatchAccumulator(
            state.epoch, self.log.log_end_offset, self.config.append_linger_ms,
            self.config.max_batch_size_bytes,
        )
        progress.update_local_end_offset(self.log.flushed_offset, self.now)

    def become_resigned(self, successors: tuple[ReplicaKey, ...]) -> None:
        self.set_state(self.quorum.resigned(self.voters, successors, self.now))

    def maybe_transition(self, leader_id: int | None, epoch: int | None) -> None:
        """Adopt what a peer says about the quorum, if it is news (callers checked that it
        is believable)."""
        if epoch is None or epoch < self.epoch:
            return
        leader_id = self.quorum.foreign_leader(leader_id)
        if epoch > self.epoch:
            if leader_id is not None:
                self.become_follower(epoch, leader_id)
            else:
                self.become_unattached(epoch)
        elif leader_id is not None and self.state.leader_id is None:
            self.become_follower(epoch, leader_id)

    def require_leader(self) -> tuple[Leader, BatchAccumulator]:
        state = self.state
        if not isinstance(state, Leader) or self.accumulator is None:
            raise NotLeaderError(
                f"node {self.node_id} is {state.name} in epoch {self.epoch}, not the leader"
            )
        return state, self.accumulator

    # -- shared steps -----------------------------------------------------------------

    def send(self, destination: int, request: rpc.RaftRequest) -> None:
        """One request in flight per destination (see :class:`RequestManager`); else skip."""
        self.requests.send(destination, request, self.now)

    def respond(self, destination: int, correlation_id: int, response: rpc.RaftResponse) -> None:
        self._responses.append(OutboundResponse(destination, correlation_id, response))

    def backoff(self, destination: int) -> None:
        self.requests.backoff(destination, self.now)

    def append_control(self, data: bytes) -> None:
        """Append batches that may hold control records, and track those records."""
        self.log.append(data)
        self.control.observe(iter_batches(data, verify_crc=False))

    def cluster_mismatch(self, cluster_id: str | None) -> bool:
        return cluster_id is not None and self.cluster_id is not None and (
            cluster_id != self.cluster_id
        )
