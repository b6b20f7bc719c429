"""The narrow log interface the consensus core needs, and the epoch arithmetic on top of it.

Appends land in memory; durability is a separate step the core requests with a
``FlushRequest`` and learns about through ``flush_completed``. ``flushed_offset`` is what
survives a crash. Snapshots (KIP-630) live beside the log: frozen ones are durable, and the
log start offset only ever moves to a snapshot's end offset.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True, slots=True, order=True)
class OffsetAndEpoch:
    """An exclusive end offset and the epoch of the record just before it."""

    offset: int
    epoch: int


@dataclass(frozen=True, slots=True)
class SnapshotInfo:
    """A frozen snapshot: id (end offset, epoch), byte size, LastContainedLogTimestamp."""

    snapshot_id: OffsetAndEpoch
    size: int
    timestamp_ms: int


class SnapshotSink(Protocol):
    """A snapshot being written (locally or downloaded); invisible until frozen."""

    @property
    def size(self) -> int: ...

    def write(self, chunk: bytes) -> None:
        """Append raw bytes (whole batches or a FetchSnapshot slice)."""
        ...

    def freeze(self) -> None:
        """Check the bytes are whole, CRC-valid batches from offset 0, then publish durably;
        raises :class:`~pykraft.errors.CorruptRecordError` or ``StorageError`` otherwise."""
        ...

    def abort(self) -> None: ...


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

    @property
    def size_bytes(self) -> int:
        """Bytes held by the log itself (snapshots excluded), for snapshot retention."""
        ...

    def snapshots(self) -> list[SnapshotInfo]:
        """Frozen snapshots, oldest first (the bootstrap 0-0 checkpoint included)."""
        ...

    def create_snapshot(self, snapshot_id: OffsetAndEpoch) -> SnapshotSink:
        """Start writing a snapshot; ``StorageError`` if it exists or is being written."""
        ...

    def read_snapshot(self, snapshot_id: OffsetAndEpoch, position: int, max_bytes: int) -> bytes:
        """Up to ``max_bytes`` raw bytes from ``position``; ``StorageError`` if absent."""
        ...

    def delete_before_snapshot(self, snapshot_id: OffsetAndEpoch) -> None:
        """Move the log start to the snapshot's end offset (at most the log end offset) and
        delete older snapshots and the segments wholly below it."""
        ...

    def truncate_to_snapshot(self, snapshot_id: OffsetAndEpoch) -> None:
        """Drop the whole log and restart it empty at the snapshot (a follower installed it);
        ``last_fetched_epoch`` is then the snapshot's epoch."""
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
