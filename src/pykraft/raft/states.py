"""The six replica states of KRaft and what each one remembers.

Every state knows its epoch, the leader it knows of and its vote, which is exactly what
gets persisted (:func:`~pykraft.raft.quorum_state.election_state`). A vote is for a replica
key (id and directory id, KIP-853): a replica that lost its disk comes back with a new
directory id and must not inherit the vote of its former self. Timers are absolute deadlines
in the caller's milliseconds.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from pykraft.raft.election import EpochElection
from pykraft.raft.voter_set import ReplicaKey

if TYPE_CHECKING:
    from pykraft.raft.leader import LeaderProgress
    from pykraft.raft.snapshots import SnapshotDownload


@dataclass(slots=True)
class Unattached:
    """Epoch known, no leader yet; maybe voted. Observers look for the leader from here."""

    epoch: int
    voted: ReplicaKey | None
    election_deadline_ms: int
    name = "Unattached"

    @property
    def leader_id(self) -> None:
        """The core routes by replica id, so a known leader always means Follower."""
        return None

    @property
    def voted_id(self) -> int | None:
        return None if self.voted is None else self.voted.id

    def can_grant_vote(self, candidate: ReplicaKey, up_to_date: bool, pre_vote: bool) -> bool:
        return _unattached_grant(None, self.voted, candidate, up_to_date, pre_vote)


@dataclass(slots=True)
class Prospective:
    """KIP-996 pre-vote: asks for votes at the current epoch without bumping it."""

    epoch: int
    leader_id: int | None
    voted: ReplicaKey | None
    election: EpochElection
    election_deadline_ms: int
    retries: int
    #: the Follower an early pre-vote left before its fetch timeout (a probe; see
    #: :func:`pykraft.raft.election_role.maybe_win_election`), None for a real timeout
    resume: Follower | None = None
    name = "Prospective"

    @property
    def voted_id(self) -> int | None:
        return None if self.voted is None else self.voted.id

    def can_grant_vote(self, candidate: ReplicaKey, up_to_date: bool, pre_vote: bool) -> bool:
        return _unattached_grant(self.leader_id, self.voted, candidate, up_to_date, pre_vote)


@dataclass(slots=True)
class Candidate:
    """Bumped the epoch and voted for itself; collects real votes."""

    epoch: int
    election: EpochElection
    election_deadline_ms: int
    retries: int
    backoff_until_ms: int | None = None
    name = "Candidate"

    @property
    def leader_id(self) -> None:
        return None

    def can_grant_vote(self, candidate: ReplicaKey, up_to_date: bool, pre_vote: bool) -> bool:
        """It voted for itself: only pre-votes for others."""
        return pre_vote and up_to_date


@dataclass(slots=True)
class Follower:
    """Fetches from a known leader; exposes data only up to the leader's HWM."""

    epoch: int
    leader_id: int
    voted: ReplicaKey | None
    fetch_deadline_ms: int
    high_watermark: int | None = None
    has_fetched_from_leader: bool = False
    download: SnapshotDownload | None = None  # pulling a snapshot instead of fetching
    next_membership_ms: int = 0  # next UpdateRaftVoter / auto-join attempt
    membership_done: bool = False  # this epoch's leader has our up-to-date entry
    probed: bool = False  # an early pre-vote was refused: wait out the fetch timeout now
    name = "Follower"

    @property
    def voted_id(self) -> int | None:
        return None if self.voted is None else self.voted.id

    def can_grant_vote(self, candidate: ReplicaKey, up_to_date: bool, pre_vote: bool) -> bool:
        """Only pre-votes, and only while the leader has not been heard from (KIP-996)."""
        return pre_vote and not self.has_fetched_from_leader and up_to_date


@dataclass(slots=True)
class Leader:
    """Accepts appends; tracks every replica's progress in ``progress``."""

    epoch: int
    leader_id: int
    voted: ReplicaKey | None
    progress: LeaderProgress
    name = "Leader"

    @property
    def voted_id(self) -> int | None:
        return None if self.voted is None else self.voted.id

    def can_grant_vote(self, candidate: ReplicaKey, up_to_date: bool, pre_vote: bool) -> bool:
        return False


@dataclass(slots=True)
class Resigned:
    """A former leader of this epoch: never leads or votes in it again."""

    epoch: int
    leader_id: int
    election_deadline_ms: int
    unacked_voters: set[int]
    preferred_successors: tuple[ReplicaKey, ...]
    name = "Resigned"

    def can_grant_vote(self, candidate: ReplicaKey, up_to_date: bool, pre_vote: bool) -> bool:
        return pre_vote and up_to_date


def _unattached_grant(
    leader_id: int | None, voted: ReplicaKey | None, candidate: ReplicaKey, up_to_date: bool,
    pre_vote: bool,
) -> bool:
    """A pre-vote needs only an up-to-date log; a real vote is one per epoch, never while a
    leader is known, and only for the very replica voted for (same directory id when both
    are known)."""
    if pre_vote:
        return up_to_date
    if voted is not None:
        return voted.id == candidate.id and (
            voted.directory_id is None or candidate.directory_id is None
            or voted.directory_id == candidate.directory_id)
    return leader_id is None and up_to_date


State = Unattached | Prospective | Candidate | Follower | Leader | Resigned


def voted_key_of(state: State, local: ReplicaKey) -> ReplicaKey | None:
    if isinstance(state, Candidate):
        return local
    if isinstance(state, Resigned):
        return None
    return state.voted

