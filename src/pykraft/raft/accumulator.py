"""The leader's batch accumulator: linger and size-bounded data batches.

Offsets are assigned when records are accepted, so ``append`` can return them at once; the
records reach the log only when a batch is drained. One ``append`` call never straddles
two batches, and control records never go through here (they have their own batches).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pykraft.errors import RecordTooLargeError
from pykraft.records.batch import HEADER_SIZE, encode_batch

_RECORD_OVERHEAD = 21  # worst-case varints + attributes + null key + header count


@dataclass(slots=True)
class _OpenBatch:
    base_offset: int
    created_ms: int
    records: list[bytes] = field(default_factory=list)
    size: int = HEADER_SIZE


class BatchAccumulator:
    """Collects data records of one leader epoch into v2 batches."""

    def __init__(self, epoch: int, next_offset: int, linger_ms: int, max_batch_bytes: int) -> None:
        self.epoch = epoch
        self.next_offset = next_offset
        self._linger_ms = linger_ms
        self._max_batch_bytes = max_batch_bytes
        self._closed: list[_OpenBatch] = []
        self._open: _OpenBatch | None = None

    def append(self, records: list[bytes], now_ms: int) -> int:
        """Accept ``records`` in one batch; returns the offset of the last one."""
        if not records:
            raise ValueError("append needs at least one record")
        size = sum(len(r) + _RECORD_OVERHEAD for r in records)
        if size + HEADER_SIZE > self._max_batch_bytes:
            raise RecordTooLargeError(
                f"{len(records)} records need {size + HEADER_SIZE} bytes, more than the "
                f"maximum batch size {self._max_batch_bytes}"
            )
        if self._open is not None and self._open.size + size > self._max_batch_bytes:
            self._closed.append(self._open)
            self._open = None
        if self._open is None:
            self._open = _OpenBatch(self.next_offset, now_ms)
        self._open.records.extend(records)
        self._open.size += size
        self.next_offset += len(records)
        return self.next_offset - 1

    def drain_deadline_ms(self) -> int | None:
        """When the next batch is due: now if one is full, else at the end of its linger."""
        if self._closed:
            return 0
        if self._open is not None:
            return self._open.created_ms + self._linger_ms
        return None

    def drain(self, now_ms: int, *, force: bool = False) -> bytes:
        """Encoded batches that are due (possibly none), in offset order; ``force`` drains
        the open batch too (a control batch must come after every offset handed out)."""
        due = list(self._closed)
        self._closed.clear()
        if self._open is not None and (force or now_ms >= self._open.created_ms + self._linger_ms):
            due.append(self._open)
            self._open = None
        return b"".join(
            encode_batch(
                batch.base_offset, [(None, value) for value in batch.records],
                partition_leader_epoch=self.epoch, timestamp=now_ms,
            )
            for batch in due
        )

    @property
    def pending(self) -> bool:
        return bool(self._closed) or self._open is not None
