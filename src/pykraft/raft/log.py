"""The narrow log interface the consensus core needs, and the epoch arithmetic on top of it.

Appends land in memory; durability is a separate step the core requests with a
``FlushRequest`` and learns about through ``flush_completed``. ``flushed_offset`` is what
survives a crash.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True, slots=True, order=True)
class OffsetAndEpoch:
    """An exclusive end offset and the epoch of the record just before it."""

    offset: int
    epoch: int


class RaftLog(Protocol):
    """What the core reads and writes; offsets are Kafka offsets (record counts)."""

    @property
    def log_start_offset(self) -> int: ...

    @property
    def log_end_offset(self) -> int: ...

    @property
    def flushed_offset(self) -> int: ...

    @property
    def last_fetched_epoch(self) -> int:
        """Epoch of the last record, 0 for an empty log (Kafka's convention)."""
        ...

    def append(self, batches: bytes) -> None:
        """Append encoded v2 batches whose first base offset is the log end offset."""
        ...

    def truncate_to(self, offset: int) -> None:
        """Drop every record at or after ``offset``."""
        ...

    def read(self, offset: int, max_bytes: int) -> bytes:
        """Whole batches from the one holding ``offset``; at least one batch if any."""
        ...

    def end_offset_for_epoch(self, epoch: int) -> OffsetAndEpoch:
        """End of the largest epoch <= ``epoch``: Kafka's ``endOffsetForEpoch``."""
        ...


def is_valid_fetch_position(log: RaftLog, offset: int, epoch: int) -> OffsetAndEpoch | None:
    """None when (offset, epoch) is a prefix of ``log``; else where the fetcher diverges."""
    if offset == 0 and log.log_start_offset == 0:
        return None
    end = log.end_offset_for_epoch(epoch)
    if end.epoch != epoch or end.offset < offset:
        return end
    return None


def truncation_offset(log: RaftLog, diverging: OffsetAndEpoch) -> int:
    """Where a follower truncates after the leader reported ``diverging`` (Kafka's rule)."""
    if diverging.epoch == 0:
        return min(diverging.offset, log.log_end_offset)
    local = log.end_offset_for_epoch(diverging.epoch)
    if local.epoch == diverging.epoch:
        return min(local.offset, diverging.offset)
    return local.offset
