"""A user partition's log: the ``<topic>-<partition>/`` directory in Kafka's on-disk layout.

Segments (:mod:`pykraft.storage.segment`) of whole v2 batches with sparse ``.index`` and
``.timeindex`` files, plus ``leader-epoch-checkpoint``; Kafka reads what pykraft writes and
the other way round. The rules follow Kafka's ``UnifiedLog``/``LocalLog``/``LogLoader``.

Interface (time is always passed in as ``now_ms``; nothing here reads a clock)::

    log = PartitionLog.open(directory, LogConfig(...), now_ms=...,
                            recovery_point=..., log_start_offset=..., clean_shutdown=...,
                            jitter=random.Random().randrange)  # segment.jitter.ms source
    info = log.append(batches, now_ms)   # offsets already assigned; rolls by size/time/index
    data = log.read(offset, max_bytes, max_offset=hw)  # whole batches of one segment
    region = log.read_region(offset, max_bytes, max_offset=hw)  # ... left in the file
    log.batch_headers(offset)             # headers only, from the batch holding offset on
    log.offset_for_timestamp(ts)          # ListOffsets by timestamp
    header, data = log.batch_for_timestamp(ts, after)   # ... its steps: the batch to walk
    log.flush()                           # fsync up to the LEO; returns the new recovery point
    job = log.plan_flush(); run_log_flush(job)  # ... the same, the fsyncs on another thread
    log.flushed(job)                      # then on the log's thread again
    log.truncate_to(offset, now_ms)       # follower truncation
    log.truncate_fully_and_start_at(offset, now_ms)
    log.increment_log_start_offset(offset, high_watermark)   # DeleteRecords
    log.segment_stats()  ->  log.retention  ->  log.delete_segments(base_offsets, now_ms)
    log.segment_data(base); log.replace_segment(base, cleaned, now_ms)   # compaction
    log.remove_deleted_segments(now_ms)   # periodic: files of segments deleted (renamed
                                          # *.deleted) file.delete.delay.ms ago go
    log.close(); rename_for_delete(directory); remove_deleted_dir(path)

Opening recovers: temporary files of interrupted operations are removed, index files without
their segment deleted, every segment's indexes sanity-checked (rebuilt when missing or
corrupt) and, after an unclean shutdown, every segment from the one holding the recovery
point on is rescanned (CRC checked) with its indexes rebuilt -- the one holding it from its
last indexed batch below the recovery point, when its indexes allow (beyond Kafka, which
rescans that segment whole: with the default 1 GiB segments, all of a partition); at the
first invalid batch the segment is truncated and every later segment deleted, as Kafka
does. The recovery point, log start offset and high watermark checkpoints of the log
directory are the caller's (:mod:`pykraft.storage.offset_checkpoints`). Not thread-safe.
"""

from __future__ import annotations

import bisect
import logging
import os
import re
import shutil
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from pykraft.errors import CorruptRecordError, OffsetOutOfRangeError, StorageError
from pykraft.ids import TopicPartition
from pykraft.records.batch import BatchHeader, complete_batches
from pykraft.storage.batch_check import BatchProblemError, check_framing, continuity_problem
from pykraft.storage.file_error import StateFileError
from pykraft.storage.fsutil import atomic_write_in, fsync_dir, fsync_files, write_all_at
from pykraft.storage.index_file import CorruptIndexError
from pykraft.storage.leader_epoch import (
    LEADER_EPOCH_CHECKPOINT,
    LeaderEpochCache,
    encode_epoch_checkpoint,
    read_epoch_checkpoint,
)
from pykraft.storage.log_config import JitterSource, LogConfig, no_jitter
from pykraft.storage.log_verify import TornTail, verify_segments
from pykraft.storage.offset_index import INDEX_SUFFIX
from pykraft.storage.segment import (
    DELETED_SUFFIX,
    LOG_SUFFIX,
    TXN_INDEX_SUFFIX,
    FileRegion,
    LogSegment,
    RecordTimes,
    TimestampAndOffset,
    first_record_at,
    segment_file,
)
from pykraft.storage.time_index import TIME_INDEX_SUFFIX
from pykraft.storage.txn_index import AbortedTxn

DELETE_DIR_SUFFIX = "-delete"
FUTURE_DIR_SUFFIX = "-future"
_SEGMENT_FILE = re.compile(r"([0-9]{20})(\.log|\.index|\.timeindex|\.txnindex)")
_SEGMENT_NAME_HINT = "not a segment name (expected 20 digits and .log)"
_DIR_NAME = re.compile(r"(.+)-(0|[1-9][0-9]*)(?:\.([0-9a-f]{32})-(delete|future|stray))?")
_CLEANED_SUFFIX = ".cleaned"
_TEMP_SUFFIXES = (DELETED_SUFFIX, _CLEANED_SUFFIX)
_SWAP_SUFFIX = ".swap"

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class SegmentStats:
    """A segment's base offset, end (the next segment's base, or the log end offset for the
    last), size in bytes, largest batch timestamp (its mtime when it has none) and its first
    batch's max timestamp (-1 without a batch; read once, then kept): what the retention and
    compaction rules decide over."""

    base_offset: int
    end_offset: int
    size: int
    largest_timestamp: int
    first_batch_timestamp: int = -1


def _or_none(timestamp: int | None) -> int:
    return -1 if timestamp is None else timestamp


class RecordBatchTooLargeError(StorageError):
    """An append larger than ``segment.bytes`` (Kafka's RECORD_LIST_TOO_LARGE)."""


@dataclass(frozen=True, slots=True)
class AppendInfo:
    """What an append wrote: its offsets, its largest batch timestamp and that batch's last
    offset (-1 timestamps when the batches carry none)."""

    first_offset: int
    last_offset: int
    max_timestamp: int
    offset_of_max_timestamp: int
    size: int


@dataclass(frozen=True, slots=True)
class LogFlush:
    """One flush of a log planned on its thread (:meth:`PartitionLog.plan_flush`): the
    segment and index files to fsync, whether the directory needs one, the leader-epoch
    checkpoint to write (None: unchanged) and the recovery point it makes true.
    ``identity`` (device, inode) tells the log's directory from one re-created at its path."""

    directory: Path
    identity: tuple[int, int]
    files: tuple[Path, ...]
    sync_directory: bool
    epochs: tuple[tuple[int, int], ...] | None
    recovery_point: int
    truncations: int


def run_log_flush(job: LogFlush) -> None:
    """The blocking part of a flush, safe beside the log's thread: it opens files by name.
    A file gone meanwhile (a segment deleted) needs no fsync; the directory is written
    only if it is still the log's (not renamed for deletion, or re-created since)."""
    fsync_files(job.files)
    if not job.sync_directory and job.epochs is None:
        return
    try:
        directory = os.open(job.directory, os.O_RDONLY | os.O_DIRECTORY)
    except FileNotFoundError:
        return
    try:
        found = os.fstat(directory)
        if (found.st_dev, found.st_ino) != job.identity:
            return
        if job.epochs is None:
            os.fsync(directory)
        else:  # the rename's directory fsync covers the directory's own changes too
            atomic_write_in(directory, LEADER_EPOCH_CHECKPOINT,
                            encode_epoch_checkpoint(job.epochs))
    finally:
        os.close(directory)


def partition_dir_name(tp: TopicPartition) -> str:
    return f"{tp.topic}-{tp.partition}"


def future_dir_name(tp: TopicPartition, unique: uuid.UUID | None = None) -> str:
    """Kafka's ``logFutureDirName``, ``<topic>-<partition>.<uuid>-future``: where
    AlterReplicaLogDirs copies a replica before it replaces the current one."""
    return f"{partition_dir_name(tp)}.{(unique or uuid.uuid4()).hex}{FUTURE_DIR_SUFFIX}"


def parse_partition_dir_name(name: str) -> TopicPartition:
    """The topic partition of ``<topic>-<partition>`` (also with a ``.<uuid>-delete``,
    ``-future`` or ``-stray`` suffix); the partition follows the last ``-``."""
    match = _DIR_NAME.fullmatch(name)
    if match is None:
        raise StateFileError(name, "not a partition directory name (<topic>-<partition>)")
    return TopicPartition(match.group(1), int(match.group(2)))


def rename_for_delete(directory: Path, unique: uuid.UUID | None = None, *,
                      sync: bool = True) -> Path:
    """Rename a (closed) partition directory to ``<topic>-<partition>.<uuid>-delete``, as
    Kafka does before removing it, so a crash midway leaves no half-deleted live log.
    ``sync=False``: the caller fsyncs the parent directory, once for many renames."""
    unique = unique or uuid.uuid4()
    target = directory.with_name(f"{directory.name}.{unique.hex}{DELETE_DIR_SUFFIX}")
    os.rename(directory, target)
    if sync:
        fsync_dir(directory.parent)
    return target


def remove_deleted_dir(path: Path, *, sync: bool = True) -> None:
    """Remove a directory renamed by :func:`rename_for_delete` (Kafka waits
    ``file.delete.delay.ms`` first; the caller schedules this). ``sync=False``: the caller
    fsyncs the parent directory, once for many removals."""
    if not path.name.endswith(DELETE_DIR_SUFFIX):
        raise StorageError(f"refusing to remove {path}: not a partition renamed for deletion")
    shutil.rmtree(path)
    if sync:
        fsync_dir(path.parent)


class PartitionLog:
    """The segmented log of one partition replica; open it with :meth:`open`."""

    def __init__(self, directory: Path, config: LogConfig, segments: list[LogSegment],
                 epochs: LeaderEpochCache, jitter: JitterSource = no_jitter, *,
                 strict: bool = False) -> None:
        self.directory = directory
        self.config = config
        self.strict = strict
        self._jitter = jitter
        #: (when due, files renamed *.deleted) of deleted segments, oldest first
        self._pending_deletes: list[tuple[int, list[Path]]] = []
        self._segments = segments
        self._bases = [segment.base_offset for segment in segments]
        self.leader_epochs = epochs
        self.log_start_offset = segments[0].base_offset
        self.log_end_offset = segments[-1].read_next_offset()
        self.recovery_point = self.log_end_offset
        self._dir_dirty = False
        self._epochs_dirty = False
        self._closed = False
        #: truncations so far: a flush planned before one must not move the recovery point
        self._truncations = 0
        found = os.stat(directory)
        self._identity = (found.st_dev, found.st_ino)

    # ------------------------------------------------------------------ opening / recovery

    @classmethod
    def open(cls, directory: Path, config: LogConfig, *, now_ms: int, recovery_point: int = 0,
             log_start_offset: int = 0, clean_shutdown: bool = False,
             jitter: JitterSource = no_jitter, strict: bool = False) -> PartitionLog:
        """Open (creating if needed) and recover the log in ``directory``.

        ``recovery_point`` and ``log_start_offset`` come from the log directory's
        checkpoints; ``clean_shutdown`` from its ``.kafka_cleanshutdown`` marker.
        ``strict`` is the metadata log's mode: every segment is rescanned, offsets must
        continue exactly and epochs never go back, at recovery and on append, and only a
        torn tail is cut; any other damage refuses to open (:class:`CorruptLogError`).
        """
        directory.mkdir(parents=False, exist_ok=True)
        bases = _clean_directory(directory)
        if strict:  # refuse before a byte changes; only a torn tail is cut
            _cut_torn_tail(verify_segments([segment_file(directory, base, LOG_SUFFIX)
                                            for base in bases]))
        # after a crash the segments from the one holding the recovery point are rescanned
        # anyway; the indexes of the others must pass the sanity check or be rebuilt
        first_unflushed = (0 if strict else len(bases) if clean_shutdown
                           else max(0, bisect.bisect_right(bases, recovery_point) - 1))
        segments: list[LogSegment] = []
        try:
            for number, base in enumerate(bases):
                segment = LogSegment.open(directory, base, config, now_ms,
                                          config.roll_jitter_ms(jitter))
                segments.append(segment)
                if number < first_unflushed:
                    _check_or_rebuild_indexes(segment)
            epochs = _load_epochs(directory)
            _recover_from(segments, first_unflushed, epochs, 0 if strict else recovery_point)
            if not segments:
                segments.append(LogSegment.open(directory, log_start_offset, config, now_ms,
                                                config.roll_jitter_ms(jitter)))
                fsync_dir(directory)
        except BaseException:
            for segment in segments:
                segment.close()
            raise
        partition_log = cls(directory, config, segments, epochs, jitter, strict=strict)
        partition_log._finish_loading(recovery_point, log_start_offset, now_ms)
        return partition_log

    def _finish_loading(self, recovery_point: int, log_start_offset: int, now_ms: int) -> None:
        self.active.resize_indexes()
        if log_start_offset > self.log_end_offset:
            log.warning("%s: log start offset %d is past the log end offset %d; starting the "
                        "log over there", self.directory, log_start_offset, self.log_end_offset)
            self.truncate_fully_and_start_at(log_start_offset, now_ms)
            return
        self.log_start_offset = max(log_start_offset, self.log_start_offset)
        self.recovery_point = min(recovery_point, self.log_end_offset)
        changed = self.leader_epochs.truncate_from_end(self.log_end_offset)
        changed = self.leader_epochs.truncate_from_start(self.log_start_offset) or changed
        try:
            stored = self._epoch_checkpoint_path().read_bytes()
        except FileNotFoundError:
            stored = None
        entries = self.leader_epochs.entries
        # an empty user partition gets no checkpoint until it knows an epoch; the metadata
        # log always keeps one (as pykraft's raft layer always has)
        self._epochs_dirty = changed or (
            (stored is not None or bool(entries) or self.strict)
            and stored != encode_epoch_checkpoint(entries))

    # ------------------------------------------------------------------ state

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def active(self) -> LogSegment:
        return self._segments[-1]

    @property
    def size(self) -> int:
        """Bytes in all segments (what ``retention.bytes`` limits)."""
        return sum(segment.size for segment in self._segments)

    def segment_stats(self) -> list[SegmentStats]:
        """Each segment's offsets, size and timestamps, oldest first (retention, cleaning)."""
        ends = [*self._bases[1:], self.log_end_offset]
        return [SegmentStats(segment.base_offset, end, segment.size, segment.largest_timestamp(),
                             _or_none(segment.first_batch_timestamp()))
                for segment, end in zip(self._segments, ends, strict=True)]

    # ------------------------------------------------------------------ writing

    def append(self, data: bytes, now_ms: int) -> AppendInfo:
        """Append whole batches whose offsets continue the log (assigned by the caller).

        Every batch's framing and CRC are checked and its base offset must be the next
        offset; nothing is written otherwise (:class:`CorruptRecordError`). Rolls first when
        the active segment is full by ``segment.bytes``, old by ``segment.ms`` or has a full
        index. Not durable until :meth:`flush`.
        """
        self._check_open()
        if len(data) > self.config.segment_bytes and not self.strict:
            raise RecordBatchTooLargeError(
                f"Message batch size is {len(data)} bytes in append to partition "
                f"{self.directory.name}, which exceeds the maximum configured segment size of "
                f"{self.config.segment_bytes}.")
        info = self._analyze(data)
        if self.active.size and self.active.should_roll(info.size, info.max_timestamp,
                                                        info.last_offset, now_ms):
            self._roll(now_ms)
        self.active.append(info.last_offset, info.max_timestamp, info.offset_of_max_timestamp,
                           data)
        self.log_end_offset = info.last_offset + 1
        return info

    def check_appendable(self, data: bytes) -> None:
        """Raise what :meth:`append` would for ``data``, changing nothing (a caller that
        appends ``data`` in several runs checks it whole first)."""
        self._check_open()
        self._scan(data)

    def _analyze(self, data: bytes) -> AppendInfo:
        """Validate every batch before anything changes; then learn their leader epochs."""
        info, epoch_starts = self._scan(data)
        for epoch, start in epoch_starts:
            self._epochs_dirty |= self.leader_epochs.assign(epoch, start)
        return info

    def _scan(self, data: bytes) -> tuple[AppendInfo, list[tuple[int, int]]]:
        """The append's offsets and timestamps and the epochs it starts, or the error."""
        if not data:
            raise CorruptRecordError("cannot append: no record batch")
        expected = self.log_end_offset
        max_timestamp, offset_of_max = -1, -1
        epoch_starts: list[tuple[int, int]] = []
        latest = self.leader_epochs.latest_epoch
        pos = 0
        with memoryview(data) as buf:
            while pos < len(data):
                try:
                    header = check_framing(buf, pos, len(data))
                except BatchProblemError as problem:
                    raise CorruptRecordError(f"cannot append: {problem}", position=pos) from None
                gap = continuity_problem(header, expected, (latest or 0) if self.strict else None)
                if gap is not None:
                    raise CorruptRecordError(f"cannot append: {gap}", position=pos)
                if header.max_timestamp > max_timestamp:
                    max_timestamp, offset_of_max = header.max_timestamp, header.last_offset
                epoch = header.partition_leader_epoch
                if epoch >= 0 and (latest is None or epoch > latest):
                    epoch_starts.append((epoch, header.base_offset))
                    latest = epoch
                expected = header.next_offset
                pos += header.size
        return AppendInfo(self.log_end_offset, expected - 1, max_timestamp, offset_of_max,
                          len(data)), epoch_starts

    def clear_leader_epochs(self) -> None:
        """Forget every epoch (a strict log emptied to its start: the snapshot's epoch is
        the raft layer's to know, and a reopen rebuilds this same state)."""
        self._epochs_dirty |= bool(self.leader_epochs.entries)
        self.leader_epochs.clear()

    def assign_epoch_start_offset(self, epoch: int, offset: int) -> None:
        """A new leader's epoch starts at its log end offset, before any batch of it is
        written (Kafka's ``maybeAssignEpochStartOffset`` on becoming leader)."""
        self._check_open()
        self._epochs_dirty |= self.leader_epochs.assign(epoch, offset)

    def roll(self, now_ms: int) -> None:
        """Start a new segment at the log end offset (no-op if the active one is empty)."""
        self._check_open()
        if self.active.size:
            self._roll(now_ms)

    def _roll(self, now_ms: int) -> None:
        base = self.log_end_offset
        for suffix in (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX):
            stale = self.directory / f"{base:020d}{suffix}"
            if suffix == LOG_SUFFIX and stale.exists():
                raise StorageError(f"cannot roll the log: {stale} already exists")
            stale.unlink(missing_ok=True)
        self.active.on_become_inactive()
        if self.strict:  # as Kafka's flush on roll, but at once: only the last segment of
            self.active.flush()  # a strict log may have a torn tail after a crash
            self.recovery_point = max(self.recovery_point, base)
        self._segments.append(self._new_segment(base, now_ms))
        self._bases.append(base)
        self._dir_dirty = True

    def flush(self) -> int:
        """Fsync every segment from the recovery point on, the directory and the
        leader-epoch checkpoint; returns the new recovery point (the log end offset)."""
        job = self.plan_flush()
        run_log_flush(job)
        return self.flushed(job)

    def plan_flush(self) -> LogFlush:
        """What :meth:`flush` makes durable, for :func:`run_log_flush` on another thread
        (Kafka's periodic flush and checkpoints run on its scheduler thread, never a request
        thread: 1,000 leader-epoch checkpoints held the loop 0.7 s, seconds on a busy disk);
        then :meth:`flushed` on the loop."""
        self._check_open()
        files: list[Path] = []
        if self.recovery_point < self.log_end_offset:  # as Kafka, nothing new: no fsync
            first = max(0, bisect.bisect_right(self._bases, self.recovery_point) - 1)
            for segment in self._segments[first:]:
                files += (segment.path, segment.offset_index.path, segment.time_index.path)
        epochs = tuple(self.leader_epochs.entries) if self._epochs_dirty else None
        job = LogFlush(self.directory, self._identity, tuple(files), self._dir_dirty, epochs,
                       self.log_end_offset, self._truncations)
        self._dir_dirty = self._epochs_dirty = False  # a failed job fails the directory
        return job

    def flushed(self, job: LogFlush) -> int:
        """Publish a finished :func:`run_log_flush`: the recovery point moves to where it
        was planned, unless the log was truncated (or closed) meanwhile; returns it."""
        if not self._closed and job.truncations == self._truncations:
            self.recovery_point = max(self.recovery_point,
                                      min(job.recovery_point, self.log_end_offset))
        return self.recovery_point

    def truncate_to(self, offset: int, now_ms: int) -> int:
        """Drop every batch at and after ``offset`` (batch aligned); returns the new log
        end offset. Below the first segment this is :meth:`truncate_fully_and_start_at`."""
        self._check_open()
        if offset < 0:
            raise ValueError(f"cannot truncate to a negative offset {offset}")
        if offset >= self.log_end_offset:
            # as Kafka's truncateTo: the epoch cache is truncated anyway, since a broker
            # that led briefly may hold an epoch starting at its log end with no batch
            # (left there, a follower would be told to truncate for it forever)
            self._epochs_dirty |= self.leader_epochs.truncate_from_end(self.log_end_offset)
            return self.log_end_offset
        if offset < self._bases[0]:
            self.truncate_fully_and_start_at(offset, now_ms)
            return offset
        keep = bisect.bisect_right(self._bases, offset)
        self._truncations += 1
        self._remove(self._segments[keep:], now_ms)
        self.active.truncate_to(offset, now_ms)
        self.log_end_offset = self.active.read_next_offset()
        self.log_start_offset = min(self.log_start_offset, self.log_end_offset)
        self.recovery_point = min(self.recovery_point, self.log_end_offset)
        self._epochs_dirty |= self.leader_epochs.truncate_from_end(self.log_end_offset)
        return self.log_end_offset

    def truncate_fully_and_start_at(self, offset: int, now_ms: int) -> None:
        """Delete every segment and restart empty at ``offset`` (a follower far behind)."""
        self._check_open()
        if offset < 0:
            raise ValueError(f"offset must be non-negative, not {offset}")
        self._truncations += 1
        self._remove(list(self._segments), now_ms)
        self._segments.append(self._new_segment(offset, now_ms))
        self._bases.append(offset)
        fsync_dir(self.directory)
        self.log_start_offset = self.log_end_offset = self.recovery_point = offset
        self.leader_epochs.clear()
        self._epochs_dirty = True

    def increment_log_start_offset(self, offset: int, high_watermark: int) -> bool:
        """Move the log start offset forward (DeleteRecords, retention); True if it moved.

        It never goes back and never past the high watermark. Segments below it are deleted
        by the next retention pass (the log start offset breach).
        """
        self._check_open()
        if offset > high_watermark:
            raise OffsetOutOfRangeError(
                f"Cannot increment the log start offset to {offset} of partition "
                f"{self.directory.name} since it is larger than the high watermark "
                f"{high_watermark}")
        if offset <= self.log_start_offset:
            return False
        self.log_start_offset = offset
        self._epochs_dirty |= self.leader_epochs.truncate_from_start(offset)
        return True

    def delete_segments(self, base_offsets: Sequence[int], now_ms: int) -> int:
        """Delete the oldest segments named (a retention decision); returns how many.

        When every segment goes, an empty one is rolled first so the log keeps its end
        offset; the log start offset moves to the first remaining segment, as in Kafka.
        """
        self._check_open()
        count = len(base_offsets)
        if list(base_offsets) != self._bases[:count]:
            raise StorageError(f"can only delete the oldest segments, not {list(base_offsets)}")
        if count == len(self._segments):
            if self.active.size:
                self._roll(now_ms)
            else:  # the empty active segment already starts at the log end offset
                count -= 1
        if not count:
            return 0
        self._remove(self._segments[:count], now_ms)
        self.log_start_offset = max(self.log_start_offset, self._bases[0])
        self._epochs_dirty |= self.leader_epochs.truncate_from_start(self.log_start_offset)
        return count

    def segment_data(self, base_offset: int) -> bytes:
        """Every byte of the (inactive) segment based at ``base_offset``, for the cleaner."""
        segment = self._inactive_segment(base_offset)
        return segment.read_bytes(0, segment.size)

    def replace_segment(self, base_offset: int, data: bytes, now_ms: int) -> None:
        """Swap in a cleaned copy of an inactive segment, crash-safe as Kafka's
        ``replaceSegments``: write ``<base>.log.cleaned``, rename it ``.log.swap``, delete
        the old segment, then drop the ``.swap`` suffix (opening the log completes a swap
        left behind and deletes a leftover ``.cleaned``). Indexes are rebuilt; the aborted
        transactions' entries are kept."""
        self._check_open()
        old = self._inactive_segment(base_offset)
        final = segment_file(self.directory, base_offset, LOG_SUFFIX)
        cleaned = final.with_name(final.name + _CLEANED_SUFFIX)
        swap = final.with_name(final.name + _SWAP_SUFFIX)
        fd = os.open(cleaned, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            write_all_at(fd, cleaned, data, 0)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.rename(cleaned, swap)
        fsync_dir(self.directory)
        aborted = old.txn_index.all()
        self._delete_later(old, now_ms)
        fsync_dir(self.directory)
        os.rename(swap, final)
        fsync_dir(self.directory)
        fresh = self._new_segment(base_offset, now_ms)
        fresh.recover()
        fresh.txn_index_reset_from = None  # the old segment's entries, kept as they were
        for txn in aborted:
            fresh.txn_index.append(txn)
        fresh.txn_index.flush()
        self._segments[self._bases.index(base_offset)] = fresh
        self.remove_deleted_segments(now_ms)

    def _segment(self, base_offset: int) -> LogSegment:
        number = bisect.bisect_left(self._bases, base_offset)
        if number == len(self._bases) or self._bases[number] != base_offset:
            raise StorageError(f"{self.directory}: no segment based at {base_offset}")
        return self._segments[number]

    def _inactive_segment(self, base_offset: int) -> LogSegment:
        self._check_open()
        segment = self._segment(base_offset)
        if segment is self.active:
            raise StorageError(f"{self.directory}: the active segment is never cleaned")
        return segment

    def _new_segment(self, base_offset: int, now_ms: int) -> LogSegment:
        """Open a segment with its own ``segment.jitter.ms`` draw, as Kafka's
        ``LogSegment.open``."""
        return LogSegment.open(self.directory, base_offset, self.config, now_ms,
                               self.config.roll_jitter_ms(self._jitter))

    def _remove(self, doomed: Sequence[LogSegment], now_ms: int) -> None:
        if not doomed:
            return
        gone = set(map(id, doomed))
        for segment in doomed:
            self._delete_later(segment, now_ms)
        self._segments[:] = [s for s in self._segments if id(s) not in gone]
        self._bases[:] = [segment.base_offset for segment in self._segments]
        fsync_dir(self.directory)
        self.remove_deleted_segments(now_ms)

    def _delete_later(self, segment: LogSegment, now_ms: int) -> None:
        """Kafka's asynchronous segment delete: rename now, remove after the delay."""
        self._pending_deletes.append((now_ms + self.config.file_delete_delay_ms,
                                      segment.rename_deleted()))

    def remove_deleted_segments(self, now_ms: int) -> int:
        """Remove the files of segments deleted ``file.delete.delay.ms`` ago or more;
        returns how many segments went. Files still pending at close are removed when
        the log is next opened, as Kafka's loader does."""
        due = [paths for when, paths in self._pending_deletes if when <= now_ms]
        if not due:
            return 0
        self._pending_deletes = [(when, paths) for when, paths in self._pending_deletes
                                 if when > now_ms]
        for paths in due:
            for path in paths:
                path.unlink(missing_ok=True)
        fsync_dir(self.directory)
        return len(due)

    def _epoch_checkpoint_path(self) -> Path:
        return self.directory / LEADER_EPOCH_CHECKPOINT

    # ------------------------------------------------------------------ reading

    def read(self, offset: int, max_bytes: int, *, max_offset: int | None = None,
             min_one_batch: bool = True) -> bytes:
        """Batches from the one holding ``offset``, from a single segment as Kafka's reads
        are: at most ``max_bytes`` (but the first batch whole with ``min_one_batch``,
        KIP-74; the last batch may be cut short, as in Kafka's file slices, and clients drop
        it) and only batches before ``max_offset`` (the high watermark for consumers).
        Reading at the log end offset (or ``max_offset``) gives ``b""``."""
        found = self._locate(offset, max_bytes, max_offset, min_one_batch)
        if found is None:
            return b""
        segment, position, length = found
        return segment.read_bytes(position, length)

    def read_region(self, offset: int, max_bytes: int, *, max_offset: int | None = None,
                    min_one_batch: bool = True) -> FileRegion | bytes:
        """What :meth:`read` reads, left in the segment file (a Fetch answer sent with
        ``sendfile``); ``b""`` when that is nothing."""
        found = self._locate(offset, max_bytes, max_offset, min_one_batch)
        if found is None:
            return b""
        segment, position, length = found
        return segment.region(position, length)

    def _locate(self, offset: int, max_bytes: int, max_offset: int | None,
                min_one_batch: bool) -> tuple[LogSegment, int, int] | None:
        """The segment, position and length a read takes; None when it is empty."""
        self._check_open()
        if offset < self.log_start_offset or offset > self.log_end_offset:
            raise OffsetOutOfRangeError(
                f"Received request for offset {offset} for partition {self.directory.name}, "
                f"but we only have log segments from offset {self.log_start_offset} up to "
                f"{self.log_end_offset}.")
        upper = self.log_end_offset if max_offset is None else min(max_offset,
                                                                   self.log_end_offset)
        number = bisect.bisect_right(self._bases, offset) - 1
        for segment in self._segments[number:]:
            if segment.base_offset >= upper or offset >= upper:
                break
            max_position = None
            if upper < self.log_end_offset:
                bound = segment.translate_offset(upper)
                max_position = None if bound is None else bound.position
            found = segment.locate(offset, max_bytes, max_position, min_one_batch=min_one_batch)
            if found is not None:
                position, length = found
                return (segment, position, length) if length else None
        return None

    def read_committed(self, offset: int, max_bytes: int, *, max_offset: int,
                       min_one_batch: bool = True, in_files: bool = False
                       ) -> tuple[FileRegion | bytes, list[AbortedTxn]]:
        """A read_committed consumer's read (:meth:`read`, or :meth:`read_region`
        ``in_files``, up to ``max_offset``, the last stable offset) and the aborted
        transactions it may meet, as Kafka's
        ``LocalLog.read`` adds them: those overlapping [offset, bound) where the bound is
        the first index entry past the read, else the next segment's base, else the log
        end, collected from the segment read on until an entry proves the rest clean."""
        found = self._locate(offset, max_bytes, max_offset, min_one_batch)
        if found is None:
            return b"", []
        segment, position, length = found
        number = self._bases.index(segment.base_offset)
        bound = segment.fetch_upper_bound(position, length)
        if bound is None:
            bound = (self._bases[number + 1] if number + 1 < len(self._bases)
                     else self.log_end_offset)
        records = (segment.region(position, length) if in_files
                   else segment.read_bytes(position, length))
        return records, self._collect_aborted(number, offset, bound)

    def collect_aborted(self, start_offset: int, upper_bound: int) -> list[AbortedTxn]:
        """The aborted transactions overlapping [start_offset, upper_bound), from the
        segment holding ``start_offset`` on (Kafka's ``collectAbortedTransactions``)."""
        self._check_open()
        number = max(0, bisect.bisect_right(self._bases, start_offset) - 1)
        return self._collect_aborted(number, start_offset, upper_bound)

    def _collect_aborted(self, number: int, start_offset: int,
                         upper_bound: int) -> list[AbortedTxn]:
        found: list[AbortedTxn] = []
        for segment in self._segments[number:]:
            search = segment.txn_index.collect(start_offset, upper_bound)
            found.extend(search.aborted)
            if search.complete:
                break
        return found

    def append_aborted(self, txn: AbortedTxn) -> None:
        """Index an aborted transaction in the segment holding its marker."""
        self._check_open()
        number = max(0, bisect.bisect_right(self._bases, txn.last_offset) - 1)
        self._segments[number].txn_index.append(txn)

    @property
    def txn_index_reset_from(self) -> int | None:
        """The first offset whose aborted-transaction entries recovery dropped (None: every
        ``.txnindex`` is whole); the log layer replays the markers from there."""
        return min((s.txn_index_reset_from for s in self._segments
                    if s.txn_index_reset_from is not None), default=None)

    def txn_indexes_rebuilt(self) -> None:
        """The markers from :attr:`txn_index_reset_from` on are indexed again."""
        for segment in self._segments:
            segment.txn_index_reset_from = None

    def batch_headers(self, offset: int) -> Iterator[BatchHeader]:
        """The headers of the batches from the one holding ``offset`` to the log end, read
        without their records (rebuilding producer state needs nothing more, as Kafka's
        loader reads only batch headers). The log must not change meanwhile."""
        self._check_open()
        number = max(0, bisect.bisect_right(self._bases, offset) - 1)
        for segment in self._segments[number:]:
            found = segment.translate_offset(offset)
            if found is not None:
                for batch in segment.batches_from(found.position):
                    yield batch.header

    def offset_for_timestamp(self, timestamp: int, times: RecordTimes | None = None
                             ) -> TimestampAndOffset | None:
        """The first record at or after ``timestamp`` from the log start (ListOffsets);
        ``times`` reads the records of the batches that may hold it (see the segment's)."""
        after = self.log_start_offset
        while (found := self.batch_for_timestamp(timestamp, after)) is not None:
            header, data = found
            hit = first_record_at(header, data, timestamp, after, times)
            if hit is not None:
                return hit
            after = header.last_offset + 1
        return None

    def batch_for_timestamp(self, timestamp: int, after: int
                            ) -> tuple[BatchHeader, bytes] | None:
        """The first batch at or past offset ``after`` (and the log start) that may hold a
        record at or after ``timestamp``: its header and a copy of its bytes, whose records
        the caller walks (:func:`~pykraft.storage.segment.first_record_at`), anywhere, since
        the copy does not change with the log. None: no such batch."""
        self._check_open()
        after = max(after, self.log_start_offset)
        number = max(0, bisect.bisect_right(self._bases, after) - 1)
        for segment in self._segments[number:]:
            if segment.largest_timestamp() >= timestamp:
                found = segment.batch_by_timestamp(timestamp, after)
                if found is not None:
                    return found
        return None

    # ------------------------------------------------------------------ lifecycle

    def close(self) -> None:
        """Close the segments, trimming their indexes (call :meth:`flush` first)."""
        if self._closed:
            return
        self._closed = True
        for segment in self._segments:
            segment.close()

    def __enter__(self) -> PartitionLog:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def _check_open(self) -> None:
        if self._closed:
            raise StorageError(f"the log in {self.directory} is closed")


def _clean_directory(directory: Path) -> list[int]:
    """Remove leftovers of interrupted operations and orphan indexes, as Kafka's loader
    does; returns the segments' base offsets in order."""
    bases: set[int] = set()
    indexes: list[tuple[int, Path]] = []
    swaps: list[Path] = []
    for entry in directory.iterdir():
        name = entry.name
        if name.endswith(_TEMP_SUFFIXES):
            log.info("%s: deleting the leftover %s", directory, name)
            entry.unlink()
        elif name.endswith(_SWAP_SUFFIX):
            swaps.append(entry)
        elif (match := _SEGMENT_FILE.fullmatch(name)) is not None:
            base = int(match.group(1))
            if match.group(2) == LOG_SUFFIX:
                bases.add(base)
            else:
                indexes.append((base, entry))
        elif name.endswith(LOG_SUFFIX):  # Kafka's loader fails on it too
            raise StateFileError(entry, _SEGMENT_NAME_HINT)
    for swap in swaps:
        replaced = _complete_swap(swap, bases)
        bases.difference_update(replaced)
        indexes = [(base, path) for base, path in indexes if base not in replaced]
        if replaced:
            bases.add(replaced[0])
    for base, path in indexes:
        if base not in bases:
            log.warning("Found an orphaned index file %s, with no corresponding log file.", path)
            path.unlink()
    return sorted(bases)


def _complete_swap(swap: Path, bases: set[int]) -> list[int]:
    """Finish a segment swap a crash interrupted, as Kafka's loader does: the
    ``<base>.log.swap`` replaces every segment whose base offset lies in its offset range
    (their files and indexes are deleted; the indexes are rebuilt on open); an index
    ``.swap`` is deleted. Returns the base offsets replaced, the swap's first."""
    match = _SEGMENT_FILE.fullmatch(swap.name[:-len(_SWAP_SUFFIX)])
    if match is None or match.group(2) != LOG_SUFFIX:
        log.info("%s: deleting the leftover %s", swap.parent, swap.name)
        swap.unlink()
        return []
    base = int(match.group(1))
    end = _next_offset(swap.read_bytes(), base)
    replaced = [base, *sorted(other for other in bases if base < other < end)]
    log.info("%s: completing the interrupted swap of %s over the segments %s", swap.parent,
             swap.name, replaced)
    for doomed in replaced:
        for suffix in (INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX, LOG_SUFFIX):
            segment_file(swap.parent, doomed, suffix).unlink(missing_ok=True)
    os.rename(swap, segment_file(swap.parent, base, LOG_SUFFIX))
    fsync_dir(swap.parent)
    return replaced


def _next_offset(data: bytes, base: int) -> int:
    """The offset after the last whole batch of ``data`` (``base`` when there is none)."""
    headers, _ = complete_batches(data)
    return headers[-1].next_offset if headers else base


def _check_or_rebuild_indexes(segment: LogSegment) -> None:
    try:
        segment.sanity_check()
    except CorruptIndexError as problem:
        log.warning("%s, recovering segment and rebuilding index files...", problem)
        segment.recover()


def _load_epochs(directory: Path) -> LeaderEpochCache:
    path = directory / LEADER_EPOCH_CHECKPOINT
    return LeaderEpochCache(read_epoch_checkpoint(path) if path.exists() else ())


def _cut_torn_tail(torn: TornTail | None) -> None:
    if torn is None:
        return
    log.warning("truncating the damaged tail of %s at byte position %d (%d bytes dropped): %s",
                torn.path, torn.position, torn.size, torn.reason)
    os.truncate(torn.path, torn.position)
    fd = os.open(torn.path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _recover_from(segments: list[LogSegment], first: int, epochs: LeaderEpochCache,
                  recovery_point: int) -> None:
    """Rescan the segments from number ``first`` on (the one holding ``recovery_point``:
    from the last indexed batch below it, when its indexes allow, see
    :meth:`LogSegment.recovery_start`); at the first invalid batch truncate there and delete
    every later segment (Kafka's ``recoverLog``, which rescans the first one whole)."""
    for number in range(first, len(segments)):
        segment = segments[number]
        start = segment.recovery_start(recovery_point) if number == first else None
        epochs.truncate_from_end(segment.base_offset if start is None else start.first_offset)
        truncated = segment.recover(epochs, start)
        if truncated:
            log.warning("%s: truncated %d invalid bytes during recovery", segment.path,
                        truncated)
            for later in segments[number + 1:]:
                log.warning("deleting %s, which follows a truncated segment", later.path)
                later.delete()
            del segments[number + 1:]
            fsync_dir(segment.path.parent)
            return
