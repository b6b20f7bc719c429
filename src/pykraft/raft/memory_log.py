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
    """Batches in a list; epoch start offsets derived from batch headers."""

    def __init__(self) -> None:
        self._batches: list[RecordBatch] = []
        self._flushed = 0

    @property
    def log_start_offset(self) -> int:
        return 0

    @property
    def log_end_offset(self) -> int:
        return self._batches[-1].last_offset + 1 if self._batches else 0

    @property
    def flushed_offset(self) -> int:
        return self._flushed

    @property
    def last_fetched_epoch(self) -> int:
        return self._batches[-1].epoch if self._batches else 0

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
        self._batches.extend(parsed)

    def truncate_to(self, offset: int) -> None:
        keep = bisect.bisect_left([b.last_offset for b in self._batches], offset)
        del self._batches[keep:]
        self._flushed = min(self._flushed, self.log_end_offset)

    def read(self, offset: int, max_bytes: int) -> bytes:
        start = bisect.bisect_right([b.last_offset for b in self._batches], offset - 1)
        out = bytearray()
        for batch in self._batches[start:]:
            if out and len(out) + len(batch.data) > max_bytes:
                break
            out += batch.data
        return bytes(out)

    def end_offset_for_epoch(self, epoch: int) -> OffsetAndEpoch:
        lower_epoch = 0
        current = -1
        for batch in self._batches:
            if batch.epoch != current:
                if batch.epoch > epoch:
                    return OffsetAndEpoch(batch.base_offset, lower_epoch)
                lower_epoch = current = batch.epoch
        return OffsetAndEpoch(self.log_end_offset, self.last_fetched_epoch)

    def flush(self, up_to_offset: int) -> None:
        """Make whole batches durable up to ``up_to_offset`` (a batch is never half durable)."""
        ends = [b.last_offset + 1 for b in self._batches]
        index = bisect.bisect_right(ends, up_to_offset)
        if index:
            self._flushed = max(self._flushed, ends[index - 1])

    def lose_unflushed(self) -> None:
        """What a crash does: everything after the flushed mark disappears."""
        self.truncate_to(self._flushed)

    def wipe(self) -> None:
        """What losing the whole disk does."""
        self._batches.clear()
        self._flushed = 0
