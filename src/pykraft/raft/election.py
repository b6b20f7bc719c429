"""Vote tallies, vote-granting rules and election timing: the pure maths of elections."""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from pykraft.raft.log import OffsetAndEpoch
from pykraft.raft.voter_set import VoterSet


@dataclass(slots=True)
class EpochElection:
    """Who granted and who rejected this node's (pre-)vote in one epoch."""

    voters: VoterSet
    granted: set[int] = field(default_factory=set)
    rejected: set[int] = field(default_factory=set)

    def record(self, voter: int, granted: bool) -> None:
        if voter not in self.voters or voter in self.granted or voter in self.rejected:
            return
        (self.granted if granted else self.rejected).add(voter)

    def unrecorded(self) -> list[int]:
        return [v for v in self.voters if v not in self.granted and v not in self.rejected]

    @property
    def is_granted(self) -> bool:
        return self.voters.is_majority(self.granted)

    @property
    def is_rejected(self) -> bool:
        """Even every unrecorded voter granting could no longer make a majority."""
        return len(self.granted) + len(self.unrecorded()) < self.voters.majority


def is_log_up_to_date(candidate: OffsetAndEpoch, local: OffsetAndEpoch) -> bool:
    """Raft's restriction, compared epoch first: (epoch, offset) >= ours."""
    return (candidate.epoch, candidate.offset) >= (local.epoch, local.offset)


def random_election_timeout(rng: random.Random, timeout_ms: int) -> int:
    """Kafka randomises the election timeout in [T, 2T)."""
    return timeout_ms + rng.randrange(timeout_ms)


def election_backoff_ms(rng: random.Random, retries: int, base_ms: int, max_ms: int) -> int:
    """Binary exponential backoff after a rejected election (``retries`` starts at 1)."""
    bound = 2 << min(20, max(retries, 1) - 1)
    return min(base_ms * rng.randrange(bound), max_ms)


def end_quorum_backoff_ms(position: int | None, candidates: int, max_ms: int) -> int:
    """How long a follower waits after EndQuorumEpoch: the first preferred successor at once.

    ``position`` is the 0-based place in the preferred list; absent means wait the maximum.
    """
    if position is None:
        return max_ms
    if position == 0:
        return 0
    return min(max_ms, (max_ms >> (candidates - 1)) << (position - 1))
