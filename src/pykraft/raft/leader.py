"""Leader bookkeeping: per-replica progress, high-watermark maths and check-quorum.

Only voters' fetch offsets move the high watermark, and only once it passes the epoch start
offset (the leader's own LeaderChange batch is committed), so a new leader never exposes
entries of older epochs it has not yet proven committed.
"""

from __future__ import annotations

from dataclasses import dataclass

from pykraft.raft.config import (
    MAX_CAUGHT_UP_FETCH_AGE_MS,
    OBSERVER_SESSION_TIMEOUT_MS,
    QuorumConfig,
)
from pykraft.raft.voter_set import ReplicaKey, VoterNode, VoterSet
from pykraft.records.batch import encode_batch
from pykraft.records.control import (
    KRaftVersionRecord,
    LeaderChangeMessage,
    LeaderChangeVoter,
    encode_control,
)


@dataclass(slots=True)
class ReplicaProgress:
    """What the leader knows about one replica (DescribeQuorum reports these)."""

    key: ReplicaKey
    end_offset: int | None = None
    last_fetch_ms: int | None = None
    last_caught_up_ms: int | None = None


class LeaderProgress:
    """Progress of voters and observers as seen by the leader of one epoch."""

    def __init__(
        self, local_key: ReplicaKey, epoch: int, voters: VoterSet, *, epoch_start_offset: int,
        now_ms: int, config: QuorumConfig,
    ) -> None:
        self.local_key = local_key
        self.local_id = local_key.id
        self.epoch = epoch
        self.voters = voters
        self.epoch_start_offset = epoch_start_offset
        self.high_watermark: int | None = None
        self.voter_progress = {n.key.id: ReplicaProgress(n.key) for n in voters.nodes}
        self.observer_progress: dict[ReplicaKey, ReplicaProgress] = {}
        self.static_voter_info: dict[int, VoterNode] = {}  # kraft.version 0 UpdateRaftVoter
        self._check_quorum_timeout_ms = config.check_quorum_timeout_ms
        self.check_quorum_deadline_ms = now_ms + self._check_quorum_timeout_ms
        self._fetched_voters: set[int] = set()
        self.begin_quorum_acked: set[int] = set()
        self.begin_quorum_resend_ms = now_ms + config.begin_quorum_epoch_resend_ms

    def _progress_of(self, key: ReplicaKey) -> ReplicaProgress:
        if self.voters.is_voter(key):
            return self.voter_progress[key.id]
        return self.observer_progress.setdefault(key, ReplicaProgress(key))

    def set_voters(self, voters: VoterSet) -> None:
        """A VotersRecord was appended: it counts from now on; leavers become observers."""
        old = self.voter_progress
        self.voters = voters
        self.voter_progress = {}
        for node in voters.nodes:
            progress = old.pop(node.key.id, None)
            if progress is not None and progress.key.directory_id is None:
                progress.key = node.key  # the kraft.version upgrade names a static voter's disk
            elif progress is None or progress.key != node.key:
                progress = self.observer_progress.pop(node.key, None) or ReplicaProgress(node.key)
            self.voter_progress[node.key.id] = progress
        for progress in old.values():
            self.observer_progress[progress.key] = progress
        self._fetched_voters &= voters.ids

    def update_local_end_offset(self, flushed_offset: int, now_ms: int) -> bool:
        """The leader counts only its flushed offset; True if the HWM moved."""
        return self.update_replica(self.local_key, flushed_offset, now_ms, flushed_offset)

    def update_replica(
        self, key: ReplicaKey, end_offset: int, now_ms: int, leader_end_offset: int
    ) -> bool:
        """Record a valid fetch (or a local flush); True if the HWM moved."""
        progress = self._progress_of(key)
        progress.end_offset = end_offset
        progress.last_fetch_ms = now_ms
        if end_offset >= leader_end_offset:
            progress.last_caught_up_ms = now_ms
        if not self.voters.is_voter(key):
            return False
        return self._maybe_advance_high_watermark()

    def is_caught_up(self, key: ReplicaKey, now_ms: int) -> bool:
        """AddRaftVoter's condition: the replica reached the leader's end, fetching lately."""
        progress = self.observer_progress.get(key)
        return (progress is not None and progress.last_caught_up_ms is not None
                and progress.last_fetch_ms is not None
                and now_ms - progress.last_fetch_ms <= MAX_CAUGHT_UP_FETCH_AGE_MS)

    def majority_end_offset(self) -> int | None:
        """The largest end offset a majority of voters (the leader included) has reached."""
        offsets = sorted(
            (p.end_offset for p in self.voter_progress.values() if p.end_offset is not None),
            reverse=True,
        )
        index = len(self.voters) // 2
        return offsets[index] if index < len(offsets) else None

    def _maybe_advance_high_watermark(self) -> bool:
        candidate = self.majority_end_offset()
        if candidate is None or candidate <= self.epoch_start_offset:
            return False
        if self.high_watermark is not None and candidate <= self.high_watermark:
            return False
        self.high_watermark = candidate
        return True

    def record_voter_fetch(self, key: ReplicaKey, now_ms: int) -> None:
        """Check-quorum: a majority fetching within the window pushes the deadline out."""
        if not self.voters.is_voter(key) or key.id == self.local_id:
            return
        self._fetched_voters.add(key.id)
        needed = self.voters.majority - (1 if self.local_id in self.voters else 0)
        if len(self._fetched_voters) >= needed:
            self._fetched_voters.clear()
            self.check_quorum_deadline_ms = now_ms + self._check_quorum_timeout_ms

    def check_quorum_expired(self, now_ms: int) -> bool:
        """A sole voter never expires, and keeps its window fresh (as Kafka's LeaderState
        resets its check-quorum timer then): the voter it adds next gets a whole window to
        fetch, instead of a deadline long past that resigns the leader the moment the
        VotersRecord is appended."""
        if self.voters.is_only_voter(self.local_id):
            self.check_quorum_deadline_ms = now_ms + self._check_quorum_timeout_ms
            return False
        return now_ms >= self.check_quorum_deadline_ms

    def preferred_successors(self) -> tuple[ReplicaKey, ...]:
        """Other voters, most caught up first: who should win after a graceful resign."""
        others = [p for p in self.voter_progress.values() if p.key.id != self.local_id]
        others.sort(key=lambda p: (-(p.end_offset if p.end_offset is not None else -1),
                                   p.key.id))
        return tuple(p.key for p in others)

    def active_observers(self, now_ms: int) -> list[ReplicaProgress]:
        return [
            p for p in self.observer_progress.values()
            if p.last_fetch_ms is not None
            and now_ms - p.last_fetch_ms < OBSERVER_SESSION_TIMEOUT_MS
        ]


def leader_change_batch(
    base_offset: int, epoch: int, *, leader_id: int, voters: VoterSet, granting: set[int],
    timestamp: int, write_voters: bool = False,
) -> bytes:
    """The start-of-epoch control batch: LeaderChange (value version 0) and, when the voter
    set so far came only from the bootstrap checkpoint, KRaftVersion(1) and Voters."""
    message = LeaderChangeMessage(
        version=0, leader_id=leader_id,
        voters=tuple(LeaderChangeVoter(voter_id=v) for v in voters),
        granting_voters=tuple(LeaderChangeVoter(voter_id=v) for v in sorted(granting)),
    )
    records = [encode_control(message)]
    if write_voters:
        records += [encode_control(KRaftVersionRecord(0, 1)), encode_control(voters.to_record())]
    return encode_batch(base_offset, records, partition_leader_epoch=epoch,
                        timestamp=timestamp, control=True)


def voters_batch(base_offset: int, epoch: int, voters: VoterSet, timestamp: int, *,
                 kraft_version: int | None = None) -> bytes:
    """A control batch with one VotersRecord (a voter-set change), after a KRaftVersion
    record when the change is the upgrade to ``kraft_version``."""
    records = [] if kraft_version is None else [encode_control(KRaftVersionRecord(0,
                                                                                  kraft_version))]
    records.append(encode_control(voters.to_record()))
    return encode_batch(base_offset, records, partition_leader_epoch=epoch, timestamp=timestamp,
                        control=True)
