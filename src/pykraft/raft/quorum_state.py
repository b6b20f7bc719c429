"""Kafka's ``QuorumState``: the replica's current state, how it moves, and what is persisted.

One home for the election state: the persisted form (:class:`ElectionState`, Kafka's
``quorum-state`` file) and its store interface, the state the replica is in now, and the
construction of each next state (deadlines drawn from the injected ``random.Random``).

Writes are synchronous and durable by contract: a vote is on disk before any response that
reports it exists, which is what keeps a restarted voter from voting twice in one epoch.
A store refuses (``StorageError``, nothing written) a state it could not read back, so the
replica, which writes before it acts (:meth:`QuorumState.transition`), never acts in such a
state. ``kraft_version`` is the finalized kraft.version when the state is written: from 1
on, the vote's directory id is kept too (Kafka's ``FileQuorumStateStore`` picks the file's
data version from it).

What a transition does to the rest of the replica (the accumulator, parked fetches, a
pending voter change) is the core's business (:meth:`pykraft.raft.core.RaftClient._set_state`).
"""

from __future__ import annotations

import random
import uuid
from dataclasses import dataclass
from typing import Protocol

from pykraft.errors import StorageError
from pykraft.raft.config import QuorumConfig
from pykraft.raft.election import EpochElection, random_election_timeout
from pykraft.raft.limits import INT32_MAX, can_adopt_epoch
from pykraft.raft.states import (
    Candidate,
    Follower,
    Leader,
    Prospective,
    Resigned,
    State,
    Unattached,
    voted_key_of,
)
from pykraft.raft.voter_set import ReplicaKey, VoterSet


@dataclass(frozen=True, slots=True)
class ElectionState:
    """(epoch, leader?, vote?) as stored; at most one of leader and vote matters for restart."""

    epoch: int
    leader_id: int | None = None
    voted_id: int | None = None
    voted_directory_id: uuid.UUID | None = None


def check_storable(state: ElectionState) -> None:
    """Refuse a state whose epoch or ids the int32 fields of ``quorum-state`` cannot hold."""
    fields = {"epoch": state.epoch, "leader_id": state.leader_id, "voted_id": state.voted_id}
    for name, value in fields.items():
        if value is not None and not 0 <= value <= INT32_MAX:
            raise StorageError(f"refusing to store election state {state}: {name} {value} "
                               f"is outside 0..{INT32_MAX}")


class QuorumStateStore(Protocol):
    def read(self) -> ElectionState | None:
        """The last written state, None if nothing was ever written."""
        ...

    def write(self, state: ElectionState, kraft_version: int = 0) -> None:
        """Durably replace the stored state before returning; refuse (``StorageError``,
        nothing written) a state :func:`check_storable` refuses."""
        ...


class MemoryQuorumStateStore:
    """A store that survives simulated crashes (it models the small atomic file, whose
    version 0 has no room for the vote's directory id)."""

    def __init__(self, initial: ElectionState | None = None) -> None:
        self._state = initial
        self.writes = 0

    def read(self) -> ElectionState | None:
        return self._state

    def write(self, state: ElectionState, kraft_version: int = 0) -> None:
        check_storable(state)
        if kraft_version < 1 and state.voted_directory_id is not None:
            state = ElectionState(state.epoch, state.leader_id, state.voted_id)
        self._state = state
        self.writes += 1

    def wipe(self) -> None:
        self._state = None


def election_state(state: State, local: ReplicaKey) -> ElectionState:
    """The persisted form of ``state``."""
    voted = voted_key_of(state, local)
    return ElectionState(state.epoch, state.leader_id, None if voted is None else voted.id,
                         None if voted is None else voted.directory_id)


class QuorumState:
    """The state this replica is in, and the next states it may build (not enter: the core
    enters them through :meth:`transition`, which persists first).

    It starts from the stored state (Kafka's ``QuorumState.initialize``), read once the
    log is open: a log whose last epoch is newer than the stored one wins.
    """

    def __init__(self, local_key: ReplicaKey, store: QuorumStateStore, rng: random.Random,
                 config: QuorumConfig, *, log_epoch: int, voters: VoterSet, is_voter: bool,
                 now_ms: int, kraft_version: int) -> None:
        self.local_key = local_key
        self._store = store
        self._rng = rng
        self._config = config
        self._persisted = store.read()
        self.state = self._initial_state(log_epoch, voters, is_voter, now_ms)
        self.persist(self.state, kraft_version)

    @property
    def node_id(self) -> int:
        return self.local_key.id

    @property
    def epoch(self) -> int:
        return self.state.epoch

    def _initial_state(self, log_epoch: int, voters: VoterSet, is_voter: bool,
                       now_ms: int) -> State:
        stored = self._persisted or ElectionState(0)
        deadline = self.election_deadline(now_ms)
        stored_vote = (None if stored.voted_id is None
                       else ReplicaKey(stored.voted_id, stored.voted_directory_id))
        if stored.epoch < log_epoch:
            return Unattached(log_epoch, None, deadline)
        if stored.leader_id == self.node_id:
            return Resigned(stored.epoch, self.node_id, deadline,
                            set(voters.others(self.node_id)), ())
        if stored.leader_id is None and stored.voted_id == self.node_id and is_voter:
            election = EpochElection(voters, granted={self.node_id})
            return Candidate(stored.epoch, election, deadline, retries=1)
        if stored.leader_id is not None:
            return Follower(stored.epoch, stored.leader_id, stored_vote,
                            now_ms + self._config.fetch_timeout_ms)
        return Unattached(stored.epoch, stored_vote, deadline)

    def persist(self, state: State, kraft_version: int) -> None:
        """Write ``state`` before the replica acts in it: a state the store refuses (or
        fails to write) is never entered."""
        current = election_state(state, self.local_key)
        if current != self._persisted:
            self._store.write(current, kraft_version)
            self._persisted = current

    def transition(self, state: State, kraft_version: int) -> State:
        """Persist, then enter ``state``; returns the state left."""
        self.persist(state, kraft_version)
        old, self.state = self.state, state
        return old

    def election_deadline(self, now_ms: int) -> int:
        return now_ms + random_election_timeout(self._rng, self._config.election_timeout_ms)

    def vote_kept_in(self, epoch: int) -> ReplicaKey | None:
        """A vote binds for its whole epoch, whatever state the replica moves to in it."""
        return voted_key_of(self.state, self.local_key) if epoch == self.epoch else None

    # -- next states --------------------------------------------------------------------

    def unattached(self, epoch: int, now_ms: int) -> Unattached:
        return Unattached(epoch, self.vote_kept_in(epoch), self.election_deadline(now_ms))

    def follower(self, epoch: int, leader_id: int, now_ms: int) -> Follower:
        return Follower(epoch, leader_id, self.vote_kept_in(epoch),
                        now_ms + self._config.fetch_timeout_ms)

    def prospective(self, voters: VoterSet, now_ms: int) -> Prospective:
        """KIP-996's pre-vote at the current epoch (keeping a known leader to go back to)."""
        state = self.state
        leader = state.leader_id if isinstance(state, Follower) else None
        retries = state.retries if isinstance(state, Candidate) else 1
        resume = (state if isinstance(state, Follower) and now_ms < state.fetch_deadline_ms
                  else None)
        election = EpochElection(voters, granted={self.node_id})
        return Prospective(state.epoch, leader, self.vote_kept_in(state.epoch), election,
                           self.election_deadline(now_ms), retries, resume)

    def candidate(self, voters: VoterSet, now_ms: int) -> Candidate | None:
        """The next epoch's candidacy; None at :data:`~pykraft.raft.limits.MAX_EPOCH`, which
        has no next epoch."""
        if not can_adopt_epoch(self.epoch + 1):
            return None
        retries = self.state.retries + 1 if isinstance(self.state, Prospective) else 1
        election = EpochElection(voters, granted={self.node_id})
        return Candidate(self.epoch + 1, election, self.election_deadline(now_ms), retries)

    def resigned(self, voters: VoterSet, successors: tuple[ReplicaKey, ...],
                 now_ms: int) -> Resigned:
        others = set(voters.others(self.node_id))
        return Resigned(self.epoch, self.node_id, self.election_deadline(now_ms), others,
                        successors)

    # -- what peers say -----------------------------------------------------------------

    def foreign_leader(self, leader_id: int | None) -> int | None:
        """The leader a peer names, except our own lost incarnation: never follow ourselves."""
        if leader_id == self.node_id and not isinstance(self.state, Leader | Resigned):
            return None
        return leader_id

    def is_believable(self, leader_id: int | None, epoch: int) -> bool:
        """Whether a peer's (leader, epoch) may be acted on: an epoch this replica can take
        on (:mod:`~pykraft.raft.limits`), and no second leader for an epoch whose leader it
        knows (Kafka's ``hasConsistentLeader``). Kafka stops on such a message; here the
        message is refused instead, so no peer can stop this node."""
        if epoch > self.epoch and not can_adopt_epoch(epoch):
            return False
        leader, known = self.foreign_leader(leader_id), self.state.leader_id
        return epoch != self.epoch or leader is None or known is None or known == leader
