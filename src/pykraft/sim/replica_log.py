"""A simulated broker's partition: an in-memory log of (leader epoch, value) records with
Kafka's leader-epoch cache, a flushed offset and a high watermark, and the messages the
brokers exchange about it.

A crash loses the unflushed suffix (Kafka leaves fsync to the OS), and the high watermark
falls back within what is left. ``dirty_from`` remembers the lowest offset truncated since
the invariants last looked, so they recheck only what changed.
"""

from __future__ import annotations

from dataclasses import dataclass

from pykraft.protocol.errors import ErrorCode
from pykraft.replica.epochs import Divergence
from pykraft.storage.leader_epoch import UNDEFINED_EPOCH, LeaderEpochCache

Record = tuple[int, int]  # (leader epoch, value)
NOTHING_TRUNCATED = 1 << 62


class SimReplicaLog:
    def __init__(self) -> None:
        self.records: list[Record] = []
        self.epochs = LeaderEpochCache()
        self.flushed = 0
        self.high_watermark = 0
        self.dirty_from = NOTHING_TRUNCATED

    @property
    def end_offset(self) -> int:
        return len(self.records)

    @property
    def last_epoch(self) -> int:
        """The latest epoch of the log (a follower's Fetch ``last_fetched_epoch``)."""
        latest = self.epochs.latest_epoch
        return UNDEFINED_EPOCH if latest is None else latest

    def begin_epoch(self, epoch: int) -> None:
        """A new leader starts its epoch at its log end (``maybeAssignEpochStartOffset``)."""
        self.epochs.assign(epoch, self.end_offset)

    def append(self, record: Record) -> int:
        epoch = record[0]
        if self.epochs.latest_epoch != epoch:
            self.epochs.assign(epoch, self.end_offset)
        self.records.append(record)
        return self.end_offset - 1

    def truncate_to(self, offset: int) -> None:
        """Drop the records from ``offset`` on and the epochs begun there."""
        offset = max(0, min(offset, self.end_offset))
        del self.records[offset:]
        self.epochs.truncate_from_end(offset)
        self.flushed = min(self.flushed, offset)
        self.high_watermark = min(self.high_watermark, offset)
        self.dirty_from = min(self.dirty_from, offset)

    def flush(self) -> None:
        self.flushed = self.end_offset

    def lose_unflushed(self) -> None:
        self.truncate_to(self.flushed)

    def take_dirty(self) -> int:
        dirty, self.dirty_from = self.dirty_from, NOTHING_TRUNCATED
        return dirty


@dataclass(frozen=True, slots=True)
class Fetch:
    """A follower's Fetch for the partition (v15+ fields that matter here)."""

    replica_id: int
    broker_epoch: int
    current_leader_epoch: int
    fetch_offset: int
    last_fetched_epoch: int


@dataclass(frozen=True, slots=True)
class FetchAnswer:
    error: ErrorCode
    records: tuple[Record, ...] = ()
    high_watermark: int = -1
    log_end_offset: int = -1
    diverging: Divergence | None = None


@dataclass(frozen=True, slots=True)
class ProduceAnswer:
    error: ErrorCode
    offset: int = -1
