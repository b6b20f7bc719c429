"""The metadata log ``__cluster_metadata-0/``: segment files of v2 record batches.

Each segment ``%020d.log`` is named after the base offset of its first batch and holds whole
batches back to back, exactly as Kafka writes them, so Kafka and pykraft can read each
other's logs. The hot path moves whole batch bytes: appends check headers and CRCs but never
decode records, and reads slice files using an in-memory (offset, position) index per
segment that is rebuilt by scanning every segment at open.

Durability is explicit: :meth:`MetadataLog.append` only writes; :meth:`MetadataLog.flush`
fsyncs everything appended so far (one fsync for many appends) and persists the
leader-epoch checkpoint. Truncations are made durable immediately.

The log start offset is not persisted here. For the metadata log Kafka derives it from the
snapshots (it follows the latest snapshot once segments behind it are deleted), so the
snapshot layer owns it and sets :attr:`MetadataLog.log_start_offset` after opening.
Not thread-safe: one raft event loop drives it.
"""

from __future__ import annotations

import bisect
import logging
import mmap
import os
import re
from array import array
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

from pykraft.errors import (
    CorruptLogError,
    CorruptRecordError,
    OffsetOutOfRangeError,
    StorageError,
)
from pykraft.ids import METADATA_TOPIC_ID, uuid_to_str
from pykraft.records.batch import MAGIC, BatchHeader, read_header
from pykraft.storage.batch_check import BatchProblemError as _BatchProblemError
from pykraft.storage.batch_check import check_framing as _check_framing
from pykraft.storage.file_error import StateFileError
from pykraft.storage.fsutil import fsync_dir, write_all_at
from pykraft.storage.leader_epoch import (
    LEADER_EPOCH_CHECKPOINT,
    LeaderEpochCache,
    encode_epoch_checkpoint,
    write_epoch_checkpoint,
)
from pykraft.storage.partition_metadata import (
    PARTITION_METADATA,
    read_partition_metadata,
    write_partition_metadata,
)

DEFAULT_SEGMENT_BYTES = 1024 * 1024 * 1024  # metadata.log.segment.bytes
SEGMENT_SUFFIX = ".log"
_SEGMENT_NAME = re.compile(r"[0-9]{20}\.log")
_MAGIC_POSITION = 16
_MAGIC_BYTE = bytes([MAGIC])
# Files Kafka keeps next to segments that pykraft neither needs nor removes: offset and time
# indexes (Kafka rebuilds them when they do not match the segment), transaction indexes and
# producer-state snapshots.
_TOLERATED_SUFFIXES = (".index", ".timeindex", ".txnindex", ".snapshot")
# Leftovers of Kafka operations interrupted by a crash. Kafka deletes ``*.deleted`` files
# (segments already scheduled for deletion) and ``*.cleaned`` files (an unfinished
# compaction output) at startup, and completes an interrupted swap by renaming ``*.swap`` over
# the original segment. The metadata log is never compacted, so only ``.deleted`` can really
# occur; pykraft ignores all of them and leaves them for Kafka.
_LEFTOVER_SUFFIXES = (".deleted", ".cleaned", ".swap")

log = logging.getLogger(__name__)


def segment_name(base_offset: int) -> str:
    return f"{base_offset:020d}{SEGMENT_SUFFIX}"


@dataclass(eq=False)
class _Segment:
    """One open segment file and the offset -> position index of its batches."""

    base_offset: int
    path: Path
    fd: int
    size: int = 0
    next_offset: int = 0
    offsets: array[int] = field(default_factory=lambda: array("q"))
    positions: array[int] = field(default_factory=lambda: array("q"))

    def boundary(self, index: int) -> int:
        """Start of batch ``index``, or the segment size past the last batch."""
        return self.positions[index] if index < len(self.positions) else self.size

    def batch_index(self, offset: int) -> int:
        """Index of the batch holding ``offset`` (which must lie in this segment)."""
        return bisect.bisect_right(self.offsets, offset) - 1


class _EpochRegressionError(_BatchProblemError):
    """An intact batch whose epoch is below its predecessor's.

    Unlike a torn write this is ambiguous: the previous batch's epoch (outside the CRC) may
    be the damaged one, so recovery must not "repair" it by dropping this batch.
    """


def _check_batch(
    buf: memoryview, pos: int, end: int, expected_offset: int, min_epoch: int
) -> BatchHeader:
    """An intact batch that also continues the log: next offset, epoch not going back.

    The CRC does not cover baseOffset and partitionLeaderEpoch, so these two checks are
    what catches damage there. The expected offset is trustworthy (the previous batch's
    lastOffsetDelta is CRC-covered), so an offset mismatch blames this batch; an epoch
    going backwards may be either batch's fault.
    """
    header = _check_framing(buf, pos, end)
    problem = continuity_problem(header, expected_offset, min_epoch)
    if problem is not None:
        if header.base_offset != expected_offset:
            raise _BatchProblemError(problem)
        raise _EpochRegressionError(problem)
    return header


def continuity_problem(
    header: BatchHeader, expected_offset: int, min_epoch: int | None
) -> str | None:
    """Why a batch does not continue the log (its offset, or with ``min_epoch`` given, its
    leader epoch going back); None when it does. Tools report damage with these words too."""
    if header.base_offset != expected_offset:
        return f"base offset {header.base_offset} does not continue the log at {expected_offset}"
    if min_epoch is not None and header.partition_leader_epoch < min_epoch:
        return (f"leader epoch {header.partition_leader_epoch} is below the previous epoch "
                f"{min_epoch}")
    return None


def _valid_batch_follows(mapped: mmap.mmap | bytes, pos: int, end: int,
                         min_offset: int) -> bool:
    """Whether an intact batch at or past ``min_offset`` starts anywhere after ``pos``.

    This separates a damaged *tail* (a torn or corrupt last batch: nothing valid after it,
    safe to drop) from damage in the *middle* (good batches follow: dropping them would lose
    acknowledged data, so recovery must stop instead).
    """
    search = pos + 1 + _MAGIC_POSITION
    with memoryview(mapped) as buf:
        while (found := mapped.find(_MAGIC_BYTE, search, end)) >= 0:
            search = found + 1
            try:
                header = _check_framing(buf, found - _MAGIC_POSITION, end)
            except _BatchProblemError:
                continue
            if header.base_offset >= min_offset:
                return True
    return False


class MetadataLog:
    """The segmented metadata log of one node; open it with :meth:`open`."""

    def __init__(
        self, directory: Path, segments: list[_Segment], segment_bytes: int
    ) -> None:
        self._directory = directory
        self._segments = segments
        self._bases = [segment.base_offset for segment in segments]
        self._segment_bytes = segment_bytes
        self._epochs = LeaderEpochCache()
        self._log_start = segments[0].base_offset
        self._flushed = segments[-1].next_offset
        self._unflushed: list[_Segment] = []
        self._dir_dirty = False
        self._epochs_dirty = False
        self._closed = False

    # ------------------------------------------------------------------ opening / recovery

    @classmethod
    def open(
        cls, directory: Path, *, segment_bytes: int = DEFAULT_SEGMENT_BYTES
    ) -> MetadataLog:
        """Open (creating if needed) and recover the log in ``directory``.

        Every batch of every segment is checked. A torn or corrupt batch at the tail of the
        last segment is truncated away with a warning; any other corruption raises
        :class:`CorruptLogError` before a single byte is changed. Like Kafka, a missing
        ``partition.metadata`` is written with the metadata topic id.
        """
        if segment_bytes <= 0:
            raise ValueError(f"segment_bytes must be positive, not {segment_bytes}")
        directory.mkdir(parents=False, exist_ok=True)
        _check_partition_metadata(directory)
        paths = _segment_paths(directory)
        if not paths:
            paths = [directory / segment_name(0)]
            paths[0].touch(exist_ok=False)
            fsync_dir(directory)
        segments: list[_Segment] = []
        try:
            for path in paths:
                segments.append(
                    _Segment(int(path.name[:20]), path, os.open(path, os.O_RDWR))
                )
            metadata_log = cls(directory, segments, segment_bytes)
            metadata_log._recover()
        except BaseException:
            for segment in segments:
                os.close(segment.fd)
            raise
        if not (directory / PARTITION_METADATA).exists():
            write_partition_metadata(directory / PARTITION_METADATA, METADATA_TOPIC_ID)
        return metadata_log

    def _recover(self) -> None:
        expected = self._segments[0].base_offset
        last_epoch = 0
        truncate_at: tuple[_Segment, int, int, str] | None = None
        for number, segment in enumerate(self._segments):
            if segment.base_offset != expected:
                raise _segment_gap(segment.path, segment.base_offset, expected)
            segment.next_offset = expected
            is_last = number == len(self._segments) - 1
            truncate_at = self._scan(segment, last_epoch, is_last)
            expected = segment.next_offset
            last_epoch = self._epochs.latest_epoch or 0
        if truncate_at is not None:
            segment, position, old_size, reason = truncate_at
            log.warning("truncating the damaged tail of %s at byte position %d (%d bytes "
                        "dropped): %s", segment.path, position, old_size - position, reason)
            os.ftruncate(segment.fd, position)
            os.fsync(segment.fd)
        # The cache is rebuilt from the batches; the checkpoint is rewritten if it differs.
        try:
            stored = self._checkpoint_path().read_bytes()
        except FileNotFoundError:
            stored = None
        self._epochs_dirty = stored != encode_epoch_checkpoint(self._epochs.entries)
        self._flushed = self.log_end_offset

    def _scan(
        self, segment: _Segment, min_epoch: int, is_last: bool
    ) -> tuple[_Segment, int, int, str] | None:
        """Index ``segment``; returns a tail truncation to make, or raises on corruption."""
        file_size = os.fstat(segment.fd).st_size
        if file_size == 0:
            return None
        with mmap.mmap(segment.fd, file_size, access=mmap.ACCESS_READ) as mapped, \
                memoryview(mapped) as buf:
            pos = 0
            while pos < file_size:
                try:
                    header = _check_batch(buf, pos, file_size, segment.next_offset, min_epoch)
                except _BatchProblemError as problem:
                    tail = is_last and not isinstance(problem, _EpochRegressionError)
                    if tail and not _valid_batch_follows(
                        mapped, pos, file_size, segment.next_offset
                    ):
                        segment.size = pos
                        return segment, pos, file_size, str(problem)
                    raise CorruptLogError(str(segment.path), pos, str(problem)) from None
                self._index_batch(segment, pos, header)
                min_epoch = header.partition_leader_epoch
                pos += header.size
        return None

    def _index_batch(self, segment: _Segment, position: int, header: BatchHeader) -> None:
        segment.offsets.append(header.base_offset)
        segment.positions.append(position)
        segment.size = position + header.size
        segment.next_offset = header.next_offset
        if self._epochs.assign(header.partition_leader_epoch, header.base_offset):
            self._epochs_dirty = True

    # ------------------------------------------------------------------ properties

    @property
    def directory(self) -> Path:
        return self._directory

    @property
    def log_start_offset(self) -> int:
        return self._log_start

    @log_start_offset.setter
    def log_start_offset(self, offset: int) -> None:
        """Advance the log start (the snapshot layer does, to its latest snapshot).

        The epoch cache keeps only what the log still holds: the epoch in force at the new
        start moves to it, and a log left empty has no epochs (the last epoch is then the
        snapshot's, which the raft layer knows), the same state a reopen rebuilds.
        """
        self._check_open()
        if offset < self._log_start or offset > self.log_end_offset:
            raise StorageError(
                f"log start offset {offset} must lie between the current log start "
                f"{self._log_start} and the log end offset {self.log_end_offset}"
            )
        self._log_start = offset
        changed = self._epochs.truncate_from_start(offset)
        if offset == self.log_end_offset and self._epochs.latest_epoch is not None:
            self._epochs.clear()
            changed = True
        self._epochs_dirty = self._epochs_dirty or changed

    @property
    def log_end_offset(self) -> int:
        return self._segments[-1].next_offset

    @property
    def flushed_offset(self) -> int:
        return self._flushed

    @property
    def last_epoch(self) -> int | None:
        """Epoch of the last batch (None when the log holds no batch since its start)."""
        return self._epochs.latest_epoch

    @property
    def epoch_entries(self) -> list[tuple[int, int]]:
        return self._epochs.entries

    @property
    def segment_base_offsets(self) -> list[int]:
        return list(self._bases)

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int]:
        """(epoch, end offset) per the leader-epoch cache; (-1, -1) when unknown.

        The override by the earliest snapshot id (an epoch older than the log) is the
        raft layer's business, since it knows the snapshots.
        """
        return self._epochs.end_offset_for(epoch, self.log_end_offset)

    # ------------------------------------------------------------------ writing

    def append(self, data: bytes) -> int:
        """Append one or more encoded v2 batches continuing the log end offset.

        All batches are validated (header, CRC, contiguous offsets, non-decreasing epochs)
        before anything is written, so a bad batch leaves the log unchanged. Returns the new
        log end offset. Not durable until :meth:`flush`.
        """
        self._check_open()
        expected = self.log_end_offset
        min_epoch = self._epochs.latest_epoch or 0
        headers: list[tuple[int, BatchHeader]] = []
        with memoryview(data) as buf:
            pos = 0
            while pos < len(data):
                try:
                    header = _check_batch(buf, pos, len(data), expected, min_epoch)
                except _BatchProblemError as problem:
                    raise CorruptRecordError(
                        f"cannot append: {problem}", position=pos
                    ) from None
                headers.append((pos, header))
                expected = header.next_offset
                min_epoch = header.partition_leader_epoch
                pos += header.size
        if not headers:
            return self.log_end_offset
        active = self._segments[-1]
        if active.size and active.size + len(data) > self._segment_bytes:
            active = self._roll()
        start = active.size
        write_all_at(active.fd, active.path, data, start)
        for pos, header in headers:
            self._index_batch(active, start + pos, header)
        if not self._unflushed or self._unflushed[-1] is not active:
            self._unflushed.append(active)
        return self.log_end_offset

    def flush(self) -> int:
        """Fsync everything appended so far (group commit); returns the flushed offset."""
        self._check_open()
        for segment in self._unflushed:
            os.fsync(segment.fd)
        self._unflushed.clear()
        if self._dir_dirty:
            fsync_dir(self._directory)
            self._dir_dirty = False
        self._write_checkpoint_if_changed()
        self._flushed = self.log_end_offset
        return self._flushed

    def roll(self) -> None:
        """Start a new segment at the log end offset (no-op if the active one is empty).

        Appends roll by themselves once the active segment would exceed ``segment_bytes``.
        """
        self._check_open()
        if self._segments[-1].size:
            self._roll()

    def _roll(self) -> _Segment:
        # The old segment is made durable before a newer one can exist, so after a crash
        # only the last segment can have a torn tail (which recovery then repairs).
        old = self._segments[-1]
        if old in self._unflushed:
            os.fsync(old.fd)
            self._unflushed.remove(old)
        base = self.log_end_offset
        path = self._directory / segment_name(base)
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            raise StorageError(f"cannot roll the log: {path} already exists") from None
        segment = _Segment(base, path, fd, next_offset=base)
        self._segments.append(segment)
        self._bases.append(base)
        self._dir_dirty = True
        return segment

    def truncate_to(self, offset: int) -> int:
        """Drop every batch at and after ``offset``; returns the new log end offset.

        Truncation is batch aligned: an offset inside a batch truncates to that batch's base.
        The result is fsynced at once, and the epoch cache forgets the dropped epochs.
        """
        self._check_open()
        if offset >= self.log_end_offset:
            return self.log_end_offset
        if offset < self._log_start:
            raise StorageError(
                f"cannot truncate to {offset}, below the log start offset {self._log_start}"
            )
        number = bisect.bisect_right(self._bases, offset) - 1
        segment = self._segments[number]
        index = segment.batch_index(offset)
        point = segment.offsets[index]
        if point < self._log_start:
            raise StorageError(
                f"offset {offset} lies in the batch starting at {point}, below the log start "
                f"offset {self._log_start}; truncate fully instead"
            )
        self._remove_segments(self._segments[number + 1 :])
        position = segment.positions[index]
        os.ftruncate(segment.fd, position)
        os.fsync(segment.fd)
        del segment.offsets[index:], segment.positions[index:]
        segment.size = position
        segment.next_offset = point
        self._flushed = min(self._flushed, point)
        if self._epochs.truncate_from_end(point):
            self._epochs_dirty = True
        self._write_checkpoint_if_changed()
        return point

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """Drop every segment and restart empty at ``offset`` (after installing a snapshot)."""
        self._check_open()
        if offset < 0:
            raise ValueError(f"offset must be non-negative, not {offset}")
        old = list(self._segments)
        for segment in old:
            os.close(segment.fd)
            segment.path.unlink()
        path = self._directory / segment_name(offset)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
        self._segments[:] = [_Segment(offset, path, fd, next_offset=offset)]
        self._bases[:] = [offset]
        self._unflushed.clear()
        fsync_dir(self._directory)
        self._dir_dirty = False
        self._log_start = offset
        self._flushed = offset
        self._epochs.clear()
        self._epochs_dirty = True
        self._write_checkpoint_if_changed()

    def delete_before(self, log_start_offset: int) -> int:
        """Advance the log start and delete the segments entirely below it.

        The segment holding the new log start, and always the active segment, are kept.
        Returns the number of segments deleted.
        """
        self._check_open()
        if log_start_offset > self._log_start:
            self.log_start_offset = log_start_offset
        keep_from = max(0, bisect.bisect_right(self._bases, self._log_start) - 1)
        doomed = self._segments[:keep_from]
        self._remove_segments(doomed)
        self._write_checkpoint_if_changed()
        return len(doomed)

    def _remove_segments(self, doomed: list[_Segment]) -> None:
        if not doomed:
            return
        for segment in doomed:
            os.close(segment.fd)
            segment.path.unlink()
        gone = set(doomed)
        self._segments[:] = [s for s in self._segments if s not in gone]
        self._unflushed[:] = [s for s in self._unflushed if s not in gone]
        self._bases[:] = [segment.base_offset for segment in self._segments]
        fsync_dir(self._directory)

    def _checkpoint_path(self) -> Path:
        return self._directory / LEADER_EPOCH_CHECKPOINT

    def _write_checkpoint_if_changed(self) -> None:
        if self._epochs_dirty:
            write_epoch_checkpoint(self._checkpoint_path(), self._epochs.entries)
            self._epochs_dirty = False

    # ------------------------------------------------------------------ reading

    def read(self, offset: int, max_bytes: int) -> bytes:
        """Whole batches from the one holding ``offset``, up to ``max_bytes`` in total.

        At least one batch is returned even if it is larger than ``max_bytes`` (as Kafka
        does, so a consumer can always make progress); reads continue across segments.
        Reading at the log end offset returns ``b""``.
        """
        self._check_open()
        end_offset = self.log_end_offset
        if offset == end_offset:
            return b""
        if offset < self._log_start or offset > end_offset:
            raise OffsetOutOfRangeError(
                f"offset {offset} is outside the log [{self._log_start}, {end_offset})"
            )
        number = bisect.bisect_right(self._bases, offset) - 1
        chunks: list[bytes] = []
        budget = max(0, max_bytes)
        index = self._segments[number].batch_index(offset)
        for segment in self._segments[number:]:
            start = segment.boundary(index)
            stop = _read_stop(segment, index, start + budget, at_least_one=not chunks)
            if stop > start:
                chunks.append(_read_exact(segment, start, stop - start))
                budget -= stop - start
            if stop < segment.size or budget <= 0:
                break
            index = 0
        return b"".join(chunks)

    # ------------------------------------------------------------------ lifecycle

    def close(self) -> None:
        """Close the segment files (without flushing: call :meth:`flush` first)."""
        if self._closed:
            return
        self._closed = True
        for segment in self._segments:
            os.close(segment.fd)

    def __enter__(self) -> MetadataLog:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def _check_open(self) -> None:
        if self._closed:
            raise StorageError(f"the metadata log in {self._directory} is closed")


def _segment_paths(directory: Path) -> list[Path]:
    """The segment files in base-offset order; unknown ``*.log`` names are an error."""
    paths: list[Path] = []
    for entry in directory.iterdir():
        name = entry.name
        if name.endswith(_TOLERATED_SUFFIXES + _LEFTOVER_SUFFIXES):
            continue
        if name.endswith(SEGMENT_SUFFIX):
            if not _SEGMENT_NAME.fullmatch(name):
                raise StateFileError(entry, "not a segment name (expected 20 digits and .log)")
            paths.append(entry)
    return sorted(paths, key=lambda path: path.name)


def _segment_gap(path: Path, base_offset: int, expected: int) -> CorruptLogError:
    return CorruptLogError(str(path), 0, f"segment base offset {base_offset} does not "
                           f"continue the previous segment, which ends at offset {expected}")


@dataclass(frozen=True, slots=True)
class TornTail:
    """Bytes at the end of the last segment that are no valid batch and that no valid batch
    follows: a write cut short by a crash, or one a running node is making right now. The
    server truncates them at start-up; read-only tools read up to them and warn."""

    path: Path
    position: int
    size: int  # from ``position`` to the end of the file
    reason: str

    def cut(self, path: Path, data: bytes) -> bytes:
        """``data`` (the content of ``path``) without this tail."""
        return data[: self.position] if path == self.path else data


def is_last_segment(path: Path) -> bool:
    """No segment with a higher base offset sits next to ``path``: its end is the log's."""
    return not any(other.name > path.name for other in path.parent.glob("*" + SEGMENT_SUFFIX)
                   if _SEGMENT_NAME.fullmatch(other.name))


def is_torn_tail(data: bytes, position: int, expected_offset: int) -> bool:
    """Whether damage at ``position`` only ends the data (nothing valid from
    ``expected_offset`` on follows), which the server drops rather than refuses."""
    return not _valid_batch_follows(data, position, len(data), expected_offset)


def verify_segments(paths: Sequence[Path]) -> TornTail | None:
    """Check segment files in order without changing them, as :meth:`MetadataLog.open`
    checks them: returns the torn tail of the last segment that it would truncate, and
    raises :class:`CorruptLogError` naming the file and byte position for any other damage
    (a CRC mismatch with valid batches after it, an offset gap, an epoch going back)."""
    expected: int | None = None
    min_epoch = 0
    for path in paths:
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise StateFileError(path, f"cannot read: {exc.strerror or exc}") from None
        if _SEGMENT_NAME.fullmatch(path.name):
            named = int(path.name[:20])
            if expected is not None and named != expected:
                raise _segment_gap(path, named, expected)
            expected = named
        with memoryview(data) as buf:
            pos = 0
            while pos < len(data):
                try:
                    if expected is None:  # an unconventional name: the first batch anchors
                        expected = read_header(buf, pos).base_offset
                    header = _check_batch(buf, pos, len(data), expected, min_epoch)
                except (_BatchProblemError, CorruptRecordError) as problem:
                    if (not isinstance(problem, _EpochRegressionError) and expected is not None
                            and is_last_segment(path) and is_torn_tail(data, pos, expected)):
                        return TornTail(path, pos, len(data) - pos, str(problem))
                    raise CorruptLogError(str(path), pos, str(problem)) from None
                expected = header.next_offset
                min_epoch = header.partition_leader_epoch
                pos += header.size
    return None


def _check_partition_metadata(directory: Path) -> None:
    """Refuse a directory whose ``partition.metadata`` names another topic."""
    path = directory / PARTITION_METADATA
    if not path.exists():
        return
    topic_id = read_partition_metadata(path)
    if topic_id != METADATA_TOPIC_ID:
        raise StateFileError(
            path, f"topic id {uuid_to_str(topic_id)} is not the metadata topic's "
            f"{uuid_to_str(METADATA_TOPIC_ID)}"
        )


def _read_stop(segment: _Segment, index: int, limit: int, *, at_least_one: bool) -> int:
    """End position of the whole batches from ``index`` that fit before ``limit``."""
    after = bisect.bisect_right(segment.positions, limit)  # batches starting <= limit
    stop = segment.boundary(after)
    if stop > limit:
        stop = segment.boundary(after - 1)
    start = segment.boundary(index)
    if stop <= start and at_least_one:
        stop = segment.boundary(index + 1)
    return max(stop, start)


def _read_exact(segment: _Segment, position: int, length: int) -> bytes:
    data = os.pread(segment.fd, length, position)
    if len(data) != length:
        raise StorageError(
            f"{segment.path}: short read of {len(data)} bytes at position {position}, "
            f"expected {length} (was the file changed behind our back?)"
        )
    return data

