"""The raft core's log on real disk: a :class:`RaftLog` over :class:`MetadataLog`.

Appends and reads run on the event loop; the fsync does not. A flush is split in two so a
worker thread can do the slow part: :meth:`DiskRaftLog.prepare_flush` (loop) notes the log
end offset and the segment files holding unflushed data, :func:`run_flush` (thread) fsyncs
those files through fds of its own, and :meth:`DiskRaftLog.complete_flush` (loop) publishes
the new flushed offset. Appends may continue meanwhile: they are simply not covered by this
fsync but by the next one (group commit). The MetadataLog itself is only ever touched from
the loop thread, as its contract requires.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from pathlib import Path

from pykraft.errors import CorruptLogError, CorruptRecordError, StorageError
from pykraft.raft.log import OffsetAndEpoch, SnapshotInfo
from pykraft.raft.memory_log import snapshot_timestamp
from pykraft.storage.fsutil import fsync_dir, fsync_files
from pykraft.storage.leader_epoch import (
    LEADER_EPOCH_CHECKPOINT,
    UNDEFINED_EPOCH,
    write_epoch_checkpoint,
)
from pykraft.storage.log_config import DEFAULT_SEGMENT_MS
from pykraft.storage.metadata_log import MetadataLog
from pykraft.storage.segment import segment_name
from pykraft.storage.snapshot_files import (
    SnapshotId,
    SnapshotReader,
    SnapshotWriter,
    mark_for_deletion,
    recover_snapshots,
)


@dataclass(frozen=True, slots=True)
class FlushJob:
    """What one fsync round must make durable; built on the loop, run in a thread."""

    target_offset: int
    segment_paths: tuple[Path, ...]
    directory: Path | None  # set when segment files were created since the last flush


def run_flush(job: FlushJob) -> None:
    """The blocking part of a flush (thread-safe: only opens, fsyncs and closes files).

    fsync through a second descriptor flushes the file's data no matter which descriptor
    wrote it. A segment deleted meanwhile (truncation) needs no fsync any more.
    """
    fsync_files(job.segment_paths)
    if job.directory is not None:
        fsync_dir(job.directory)


class DiskSnapshotSink:
    """A snapshot being written to ``<id>.checkpoint.part``; see :class:`SnapshotSink`."""

    def __init__(self, owner: DiskRaftLog, snapshot_id: OffsetAndEpoch) -> None:
        self._owner = owner
        self.snapshot_id = snapshot_id
        self._writer = SnapshotWriter(owner.directory, _file_id(snapshot_id))

    @property
    def size(self) -> int:
        return self._writer.size

    def write(self, chunk: bytes) -> None:
        self._writer.append_unaligned(chunk)

    def freeze(self) -> None:
        """Validate framing and the SnapshotHeader, then publish the file durably."""
        try:
            timestamp = snapshot_timestamp(self._writer.path.read_bytes())
        except BaseException:
            self._writer.abort()
            raise
        self._writer.freeze()
        self._owner.add_snapshot(SnapshotInfo(self.snapshot_id, self._writer.size, timestamp))

    def abort(self) -> None:
        self._writer.abort()


def _file_id(snapshot_id: OffsetAndEpoch) -> SnapshotId:
    return SnapshotId(snapshot_id.offset, snapshot_id.epoch)


def _read_info(directory: Path, file_id: SnapshotId) -> SnapshotInfo:
    path = directory / file_id.file_name
    try:
        timestamp = snapshot_timestamp(path.read_bytes())
    except CorruptRecordError as exc:  # name the file: the node refuses to start on it
        raise CorruptLogError(str(path), exc.position or 0, str(exc)) from None
    return SnapshotInfo(OffsetAndEpoch(file_id.end_offset, file_id.epoch),
                        path.stat().st_size, timestamp)


class DiskRaftLog:
    """:class:`~pykraft.raft.log.RaftLog` backed by the segmented metadata log.

    Snapshots are ``%020d-%010d.checkpoint`` files beside the segments. The log start offset
    is not stored separately: on open it is the earliest real snapshot (the 0-0 bootstrap
    checkpoint excluded) when that lies inside the log, and a snapshot beyond the log end
    means the log is truncated to it (Kafka's ``truncateToLatestSnapshot``).
    """

    def __init__(self, log: MetadataLog) -> None:
        self._log = log
        self._snapshots: dict[OffsetAndEpoch, SnapshotInfo] = {}
        self._start_epoch = 0  # epoch of the snapshot the log starts at
        for file_id in recover_snapshots(log.directory):
            info = _read_info(log.directory, file_id)
            self._snapshots[info.snapshot_id] = info
        real = [i for i in sorted(self._snapshots) if i.offset > 0]
        if real and real[-1].offset > log.log_end_offset:
            log.truncate_fully_and_start_at(real[-1].offset)
            self._start_epoch = real[-1].epoch
        elif real and log.log_start_offset <= real[0].offset:
            log.log_start_offset = real[0].offset
            self._start_epoch = real[0].epoch
        self._flushed = log.log_end_offset  # open() recovered and fsynced what is there
        self._dirty_from = log.log_end_offset  # first offset not yet covered by a flush job
        self._known_segments = tuple(log.segment_base_offsets)
        self._floor_since_prepare: int | None = None
        self._checkpointed = log.epoch_entries

    @classmethod
    def open(cls, directory: Path, *, segment_bytes: int,
             segment_ms: int = DEFAULT_SEGMENT_MS) -> DiskRaftLog:
        return cls(MetadataLog.open(directory, segment_bytes=segment_bytes,
                                    segment_ms=segment_ms))

    @property
    def metadata_log(self) -> MetadataLog:
        return self._log

    @property
    def directory(self) -> Path:
        return self._log.directory

    # -- RaftLog ------------------------------------------------------------------------

    @property
    def log_start_offset(self) -> int:
        return self._log.log_start_offset

    @property
    def log_end_offset(self) -> int:
        return self._log.log_end_offset

    @property
    def flushed_offset(self) -> int:
        return self._flushed

    @property
    def last_fetched_epoch(self) -> int:
        last = self._log.last_epoch
        return self._start_epoch if last is None else last

    def append(self, batches: bytes) -> None:
        self._log.append(batches)

    def truncate_to(self, offset: int) -> None:
        end = self._log.truncate_to(offset)  # durable when it returns
        self._flushed = min(self._flushed, end)
        self._dirty_from = min(self._dirty_from, end)
        if self._floor_since_prepare is not None:
            self._floor_since_prepare = min(self._floor_since_prepare, end)
        self._checkpointed = self._log.epoch_entries  # truncate_to rewrote the checkpoint

    def read(self, offset: int, max_bytes: int) -> bytes:
        return self._log.read(offset, max_bytes)

    def end_offset_for_epoch(self, epoch: int) -> OffsetAndEpoch:
        """Kafka's ``KafkaMetadataLog.endOffsetForEpoch``: unknown epochs map to the log end."""
        start = self.log_start_offset
        if start > 0 and epoch < self._start_epoch:  # older than the log: its snapshot
            return OffsetAndEpoch(start, self._start_epoch)
        found_epoch, end_offset = self._log.end_offset_for_epoch(epoch)
        if found_epoch == UNDEFINED_EPOCH:
            return OffsetAndEpoch(self.log_end_offset, self.last_fetched_epoch)
        return OffsetAndEpoch(end_offset, found_epoch)

    @property
    def size_bytes(self) -> int:
        directory = self._log.directory
        return sum((directory / segment_name(base)).stat().st_size
                   for base in self._log.segment_base_offsets)

    # -- snapshots ------------------------------------------------------------------------

    def snapshots(self) -> list[SnapshotInfo]:
        return [self._snapshots[key] for key in sorted(self._snapshots)]

    def add_snapshot(self, info: SnapshotInfo) -> None:
        """Called by a frozen :class:`DiskSnapshotSink`."""
        self._snapshots[info.snapshot_id] = info

    def create_snapshot(self, snapshot_id: OffsetAndEpoch) -> DiskSnapshotSink:
        if snapshot_id in self._snapshots:
            raise StorageError(f"snapshot {snapshot_id} already exists")
        return DiskSnapshotSink(self, snapshot_id)

    def read_snapshot(self, snapshot_id: OffsetAndEpoch, position: int, max_bytes: int) -> bytes:
        if snapshot_id not in self._snapshots:
            raise StorageError(f"no snapshot {snapshot_id}")
        with SnapshotReader(self.directory / _file_id(snapshot_id).file_name) as reader:
            return reader.read_bytes(position, max_bytes)

    def delete_before_snapshot(self, snapshot_id: OffsetAndEpoch) -> None:
        if snapshot_id not in self._snapshots:
            raise StorageError(f"no snapshot {snapshot_id}")
        self._retire_snapshots_before(snapshot_id)
        offset = min(snapshot_id.offset, self.log_end_offset)
        if offset > self.log_start_offset:
            self._log.delete_before(offset)
            self._start_epoch = snapshot_id.epoch
            self._known_segments = tuple(self._log.segment_base_offsets)

    def truncate_to_snapshot(self, snapshot_id: OffsetAndEpoch) -> None:
        if snapshot_id not in self._snapshots:
            raise StorageError(f"no snapshot {snapshot_id}")
        self._retire_snapshots_before(snapshot_id)
        self._log.truncate_fully_and_start_at(snapshot_id.offset)
        self._start_epoch = snapshot_id.epoch
        self._flushed = self._dirty_from = snapshot_id.offset
        if self._floor_since_prepare is not None:
            self._floor_since_prepare = min(self._floor_since_prepare, snapshot_id.offset)
        self._known_segments = tuple(self._log.segment_base_offsets)
        self._checkpointed = self._log.epoch_entries

    def _retire_snapshots_before(self, snapshot_id: OffsetAndEpoch) -> None:
        for older in [key for key in self._snapshots if key < snapshot_id]:
            retired = mark_for_deletion(self.directory, _file_id(older))
            retired.unlink()
            del self._snapshots[older]

    # -- group commit -------------------------------------------------------------------

    def prepare_flush(self) -> FlushJob | None:
        """The next fsync round, or None when everything appended is already durable."""
        end = self.log_end_offset
        if end <= self._flushed:
            return None
        bases = self._log.segment_base_offsets
        directory = self._log.directory
        # Only segments that can hold bytes at or after the first unflushed offset.
        first = max(0, bisect.bisect_right(bases, self._dirty_from) - 1)
        paths = tuple(directory / segment_name(base) for base in bases[first:])
        created = tuple(bases) != self._known_segments
        self._known_segments = tuple(bases)
        self._floor_since_prepare = end
        self._dirty_from = end
        return FlushJob(end, paths, directory if created else None)

    def complete_flush(self, job: FlushJob) -> int:
        """Publish a finished fsync round; returns the new flushed offset.

        A truncation during the round lowers what the round proves durable: data written
        after the truncation point may postdate the fsync.
        """
        floor = job.target_offset if self._floor_since_prepare is None else (
            self._floor_since_prepare)
        self._floor_since_prepare = None
        self._flushed = max(self._flushed, min(job.target_offset, floor, self.log_end_offset))
        self._write_epoch_checkpoint_if_changed()
        return self._flushed

    def _write_epoch_checkpoint_if_changed(self) -> None:
        """Keep Kafka's ``leader-epoch-checkpoint`` current; epochs change once per election,
        so this small synchronous write is rare."""
        entries = self._log.epoch_entries
        if entries != self._checkpointed:
            write_epoch_checkpoint(self._log.directory / LEADER_EPOCH_CHECKPOINT, entries)
            self._checkpointed = entries

    def close(self) -> None:
        """Make everything durable and close the segment files (clean shutdown)."""
        self._log.flush()
        self._flushed = self._log.log_end_offset
        self._log.close()
