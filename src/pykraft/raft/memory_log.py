"""An in-memory :class:`~pykraft.raft.log.RaftLog` for tests and the simulator.

It keeps whole encoded batches and a flushed mark, so a simulated crash can drop exactly
the data that was appended but never flushed. Frozen snapshots model files that were
fsynced before being renamed into place: they survive a crash, not a lost disk.
"""

from __future__ import annotations

import bisect

from pykraft.errors import CorruptRecordError, StorageError
from pykraft.raft.log import OffsetAndEpoch, SnapshotInfo
from pykraft.records.batch import RecordBatch, iter_batches
from pykraft.records.control import SnapshotHeaderRecord, decode_control


class MemorySnapshotSink:
    """Bytes of one snapshot being written; checked and published by :meth:`freeze`."""

    def __init__(self, log: MemoryLog, snapshot_id: OffsetAndEpoch) -> None:
        self._log = log
        self.snapshot_id = snapshot_id
        self._data = bytearray()
        self._done = False

    @property
    def size(self) -> int:
        return len(self._data)

    def write(self, chunk: bytes) -> None:
        if self._done:
            raise StorageError(f"snapshot {self.snapshot_id} is already finished")
        self._data += chunk

    def freeze(self) -> None:
        if self._done:
            raise StorageError(f"snapshot {self.snapshot_id} is already finished")
        data = bytes(self._data)
        timestamp = snapshot_timestamp(data)
        self._done = True
        self._log.publish_snapshot(SnapshotInfo(self.snapshot_id, len(data), timestamp), data)

    def abort(self) -> None:
        self._done = True
        self._log.writing.discard(self.snapshot_id)


def snapshot_timestamp(data: bytes) -> int:
    """Validate a snapshot's framing; returns its SnapshotHeader's LastContainedLogTimestamp."""
    expected = 0
    timestamp: int | None = None
    end = 0
    for batch in iter_batches(data, verify_crc=True):
        if batch.base_offset != expected:
            raise CorruptRecordError(
                f"snapshot batch at {batch.base_offset}, expected {expected}",
                position=batch.position,
            )
        if timestamp is None:
            first = next(iter(batch.records()), None)
            header = None if first is None or not batch.is_control else (
                decode_control(first.key, first.value).message)
            if not isinstance(header, SnapshotHeaderRecord):
                raise CorruptRecordError("snapshot does not start with a SnapshotHeader",
                                         position=0)
            timestamp = header.last_contained_log_timestamp
        expected = batch.last_offset + 1
        end = batch.position + len(batch.data)
    if timestamp is None or end != len(data):
        raise CorruptRecordError(f"snapshot of {len(data)} bytes is not whole batches",
                                 position=end)
    return timestamp


class MemoryLog:
    """Batches in a list, with their end offsets and the epoch start offsets alongside."""

    def __init__(self) -> None:
        self._batches: list[RecordBatch] = []
        self._ends: list[int] = []  # exclusive end offset of each batch
        self._epochs: list[tuple[int, int]] = []  # (epoch, start offset), epochs ascending
        self._flushed = 0
        self._start = 0
        self._start_epoch = 0  # epoch of the snapshot the log starts at
        self._snapshots: dict[OffsetAndEpoch, tuple[SnapshotInfo, bytes]] = {}
        self._sorted: list[SnapshotInfo] | None = []
        self.writing: set[OffsetAndEpoch] = set()
        self.generation = 0  # bumped whenever the snapshots or the log start change

    @property
    def log_start_offset(self) -> int:
        return self._start

    @property
    def log_end_offset(self) -> int:
        return self._ends[-1] if self._ends else self._start

    @property
    def flushed_offset(self) -> int:
        return self._flushed

    @property
    def last_fetched_epoch(self) -> int:
        return self._epochs[-1][0] if self._epochs else self._start_epoch

    @property
    def batches(self) -> tuple[RecordBatch, ...]:
        return tuple(self._batches)

    @property
    def size_bytes(self) -> int:
        return sum(len(batch.data) for batch in self._batches)

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
        if offset < self._start:
            raise StorageError(f"cannot truncate to {offset}, below the log start {self._start}")
        keep = bisect.bisect_right(self._ends, offset)
        del self._batches[keep:]
        del self._ends[keep:]
        end = self.log_end_offset
        while self._epochs and self._epochs[-1][1] >= end and end > self._start:
            self._epochs.pop()
        if end == self._start:
            self._epochs.clear()
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
        if self._start > 0 and epoch < self._start_epoch:  # older than the log: its snapshot
            return OffsetAndEpoch(self._start, self._start_epoch)
        lower = OffsetAndEpoch(self._start, self._start_epoch) if self._start else (
            OffsetAndEpoch(0, 0))
        for start_epoch, start_offset in self._epochs:
            if start_epoch > epoch:
                return OffsetAndEpoch(start_offset, lower.epoch)
            lower = OffsetAndEpoch(start_offset, start_epoch)
        return OffsetAndEpoch(self.log_end_offset, self.last_fetched_epoch)

    def flush(self, up_to_offset: int) -> None:
        """Make whole batches durable up to ``up_to_offset`` (a batch is never half durable)."""
        index = bisect.bisect_right(self._ends, up_to_offset)
        if index:
            self._flushed = max(self._flushed, self._ends[index - 1])

    def lose_unflushed(self) -> None:
        """What a crash does: everything after the flushed mark disappears (snapshots stay;
        a log start beyond the flushed mark leaves the log empty at its start)."""
        self.writing.clear()
        if self._flushed < self._start:
            self._clear_from(self._start)
        else:
            self.truncate_to(self._flushed)

    def wipe(self) -> None:
        """What losing the whole disk does."""
        self._snapshots.clear()
        self.writing.clear()
        self._start_epoch = 0
        self._clear_from(0)

    # -- snapshots ----------------------------------------------------------------------

    def snapshots(self) -> list[SnapshotInfo]:
        if self._sorted is None:
            self._sorted = sorted((info for info, _ in self._snapshots.values()),
                                  key=lambda info: info.snapshot_id)
        return list(self._sorted)

    def _changed(self) -> None:
        self._sorted = None
        self.generation += 1

    def create_snapshot(self, snapshot_id: OffsetAndEpoch) -> MemorySnapshotSink:
        if snapshot_id in self._snapshots or snapshot_id in self.writing:
            raise StorageError(f"snapshot {snapshot_id} already exists or is being written")
        self.writing.add(snapshot_id)
        return MemorySnapshotSink(self, snapshot_id)

    def publish_snapshot(self, info: SnapshotInfo, data: bytes) -> None:
        self.writing.discard(info.snapshot_id)
        self._snapshots[info.snapshot_id] = (info, data)
        self._changed()

    def read_snapshot(self, snapshot_id: OffsetAndEpoch, position: int, max_bytes: int) -> bytes:
        found = self._snapshots.get(snapshot_id)
        if found is None:
            raise StorageError(f"no snapshot {snapshot_id}")
        return found[1][position: position + max_bytes]

    def delete_before_snapshot(self, snapshot_id: OffsetAndEpoch) -> None:
        if snapshot_id not in self._snapshots:
            raise StorageError(f"no snapshot {snapshot_id}")
        for older in [s for s in self._snapshots if s < snapshot_id]:
            del self._snapshots[older]
        self._changed()
        offset = min(snapshot_id.offset, self.log_end_offset)
        if offset <= self._start:
            return
        keep = bisect.bisect_right(self._ends, offset)
        del self._batches[:keep]
        del self._ends[:keep]
        self._epochs = [(e, max(o, offset)) for e, o in self._epochs]
        while len(self._epochs) > 1 and self._epochs[1][1] <= offset:
            self._epochs.pop(0)
        self._start = offset
        self._start_epoch = snapshot_id.epoch
        self._flushed = max(self._flushed, offset)  # what lies below is in the snapshot
        if not self._batches:
            self._epochs.clear()

    def truncate_to_snapshot(self, snapshot_id: OffsetAndEpoch) -> None:
        if snapshot_id not in self._snapshots:
            raise StorageError(f"no snapshot {snapshot_id}")
        for older in [s for s in self._snapshots if s < snapshot_id]:
            del self._snapshots[older]
        self._start_epoch = snapshot_id.epoch
        self._clear_from(snapshot_id.offset)

    def _clear_from(self, offset: int) -> None:
        self._changed()
        self._batches.clear()
        self._ends.clear()
        self._epochs.clear()
        self._start = offset
        self._flushed = offset
