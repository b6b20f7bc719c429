"""An in-memory :class:`~pykraft.raft.log.RaftLog` for tests and the simulator.

It keeps whole encoded batches and a flushed mark, so a simulated crash can drop exactly
the data that was appended but never flushed.
"""

from __future__ import annotations

import bisect

from pykraft.errors import StorageError
from pykraft.raft.log import OffsetAndEpoch
from pykraft.records.batch import RecordBatch, iter_batches


class MemoryLog:
    """Batches in a list, with their end offsets and the epoch start offsets alongside."""

    def __init__(self) -> None:
        self._batches: list[RecordBatch] = []
        self._ends: list[int] = []  # exclusive end offset of each batch
        self._epochs: list[tuple[int, int]] = []  # (epoch, start offset), epochs ascending
        self._flushed = 0

    @property
    def log_start_offset(self) -> int:
        return 0

    @property
    def log_end_offset(self) -> int:
        return self._ends[-1] if self._ends else 0

    @property
    def flushed_offset(self) -> int:
        return self._flushed

    @property
    def last_fetched_epoch(self) -> int:
        return self._epochs[-1][0] if self._epochs else 0

    @property
    def batches(self) -> tuple[RecordBatch, ...]:
        return tuple(self._batches)

    def append(self, batches: bytes) -> None:
        parsed = list(iter_batches(batches))
        expected = self.log_end_offset
        epoch = self.last_fetched_epoch
        for batch in parsed:
            if batch.base_offset != expected:
                raise StorageError(
                    f"append at offset {batch.base_offset}, log end offset is {expected}"
                )
            if batch.epoch < epoch:
                raise StorageError(f"append of epoch {batch.epoch} after epoch {epoch}")
            expected = batch.last_offset + 1
            epoch = batch.epoch
        for batch in parsed:
            if not self._epochs or self._epochs[-1][0] != batch.epoch:
                self._epochs.append((batch.epoch, batch.base_offset))
            self._batches.append(batch)
            self._ends.append(batch.last_offset + 1)

    def truncate_to(self, offset: int) -> None:
        """Drop batches ending after ``offset`` (a batch is kept or dropped whole)."""
        keep = bisect.bisect_right(self._ends, offset)
        del self._batches[keep:]
        del self._ends[keep:]
        end = self.log_end_offset
        while self._epochs and self._epochs[-1][1] >= end:
            self._epochs.pop()
        self._flushed = min(self._flushed, end)

    def read(self, offset: int, max_bytes: int) -> bytes:
        start = bisect.bisect_right(self._ends, offset)
        out = bytearray()
        for batch in self._batches[start:]:
            if out and len(out) + len(batch.data) > max_bytes:
                break
            out += batch.data
        return bytes(out)

    def end_offset_for_epoch(self, epoch: int) -> OffsetAndEpoch:
        lower_epoch = 0
        for start_epoch, start_offset in self._epochs:
            if start_epoch > epoch:
                return OffsetAndEpoch(start_offset, lower_epoch)
            lower_epoch = start_epoch
        return OffsetAndEpoch(self.log_end_offset, self.last_fetched_epoch)

    def flush(self, up_to_offset: int) -> None:
        """Make whole batches durable up to ``up_to_offset`` (a batch is never half durable)."""
        index = bisect.bisect_right(self._ends, up_to_offset)
        if index:
            self._flushed = max(self._flushed, self._ends[index - 1])

    def lose_unflushed(self) -> None:
        """What a crash does: everything after the flushed mark disappears."""
        self.truncate_to(self._flushed)

    def wipe(self) -> None:
        """What losing the whole disk does."""
        self.truncate_to(0)
