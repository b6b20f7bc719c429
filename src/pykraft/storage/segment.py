"""One segment of a partition log: ``%020d.log`` with its ``.index``, ``.timeindex`` and,
once it holds an aborted transaction's marker, ``.txnindex``.

The ``.log`` file holds whole v2 batches back to back, exactly as Kafka writes them; the
segment never decodes records except to answer a lookup by timestamp. Semantics follow
Kafka's ``LogSegment``:

- :meth:`LogSegment.append` writes batch bytes whose offsets are already assigned and adds an
  offset-index entry (and maybe a time-index entry) once more than ``index.interval.bytes``
  were appended since the last entry: the index is sparse, the first append never indexed.
- :meth:`LogSegment.translate_offset` finds the batch holding an offset: the index gives a
  position at or before it, then batch headers are read forward from there.
- :meth:`LogSegment.recover` rebuilds both indexes from the file, checking every batch's
  framing and CRC, and truncates the file at the first invalid batch (a torn tail). Beyond
  Kafka (which rescans the whole segment holding the recovery point), it may resume at a
  :meth:`LogSegment.recovery_start` below the recovery point, all before it being flushed.
  The ``.txnindex`` entries it cannot vouch for are dropped
  (:attr:`LogSegment.txn_index_reset_from`): their stable offsets come from the producer
  state, which the log layer replays (:mod:`pykraft.log.producer_snapshot_files`).
- :meth:`LogSegment.should_roll` is Kafka's roll rule with the time passed in.

Not thread-safe; the owner (:class:`pykraft.storage.partition_log.PartitionLog`) serializes.
"""

from __future__ import annotations

import io
import logging
import mmap
import os
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import NamedTuple

from pykraft.errors import (
    CorruptLogError,
    CorruptRecordError,
    StorageError,
    UnsupportedCompressionError,
)
from pykraft.messages.splice import Splice
from pykraft.records.batch import (
    ATTR_COMPRESSION_MASK,
    HEADER_SIZE,
    NO_TIMESTAMP,
    BatchHeader,
    read_header,
)
from pykraft.records.record_stream import record_times
from pykraft.storage.batch_check import BatchProblemError, check_framing
from pykraft.storage.fsutil import write_all_at
from pykraft.storage.index_file import CorruptIndexError
from pykraft.storage.leader_epoch import LeaderEpochCache
from pykraft.storage.log_config import LogConfig
from pykraft.storage.offset_index import INDEX_SUFFIX, OffsetIndex
from pykraft.storage.time_index import TIME_INDEX_SUFFIX, TimeIndex, TimestampOffset
from pykraft.storage.txn_index import TransactionIndex

#: each record's (offset, timestamp) of one batch (header, the whole batch's bytes)
RecordTimes = Callable[[BatchHeader, bytes], Iterable[tuple[int, int]]]

LOG_SUFFIX = ".log"
TXN_INDEX_SUFFIX = ".txnindex"
DELETED_SUFFIX = ".deleted"  # a deleted segment's files until file.delete.delay.ms passes

log = logging.getLogger(__name__)


def segment_name(base_offset: int) -> str:
    """``<base offset as 20 digits>.log``, Kafka's segment file name."""
    return f"{base_offset:020d}{LOG_SUFFIX}"


def is_segment_name(name: str) -> bool:
    """Whether ``name`` is a segment's: 20 ASCII digits and ``.log``."""
    return (len(name) == 20 + len(LOG_SUFFIX) and name.endswith(LOG_SUFFIX)
            and name.isascii() and name[:20].isdigit())


def segment_file(directory: Path, base_offset: int, suffix: str) -> Path:
    """``<directory>/<base offset as 20 digits><suffix>``, Kafka's file naming."""
    return directory / f"{base_offset:020d}{suffix}"


class BatchPosition(NamedTuple):
    """A batch's header and where it starts in its segment file."""

    position: int
    header: BatchHeader


class TimestampAndOffset(NamedTuple):
    """The first record at or after a timestamp: its timestamp, offset and leader epoch."""

    timestamp: int
    offset: int
    leader_epoch: int


def uncompressed_record_times(header: BatchHeader, data: bytes) -> Iterator[tuple[int, int]]:
    """The records' (offset, timestamp) of an uncompressed batch, streamed from ``data``."""
    if header.attributes & ATTR_COMPRESSION_MASK:
        raise UnsupportedCompressionError(
            f"batch at offset {header.base_offset} is compressed with {header.compression}")
    return record_times(header, io.BytesIO(memoryview(data)[HEADER_SIZE:]).read)


def first_record_at(header: BatchHeader, data: bytes, timestamp: int, starting_offset: int,
                    times: RecordTimes | None = None) -> TimestampAndOffset | None:
    """The first record of the batch (``header``, its bytes ``data``) with timestamp >=
    ``timestamp`` and offset >= ``starting_offset``; ``times`` reads its records: the default
    reads uncompressed batches only, so a user partition's reader passes one that
    decompresses (``partition/``, above this layer). Pure: it may run off the event loop."""
    for offset, at in (times or uncompressed_record_times)(header, data):
        if at >= timestamp and offset >= starting_offset:
            return TimestampAndOffset(at, offset, header.partition_leader_epoch)
    return None


class RecoveryStart(NamedTuple):
    """Where a segment's recovery may resume: an intact batch at ``position`` whose offsets
    all lie below the recovery point (so every byte before it was flushed), its base offset
    ``first_offset``."""

    position: int
    first_offset: int


class LogSegment:
    """An open segment; create or open one with :meth:`open`."""

    def __init__(self, directory: Path, base_offset: int, config: LogConfig,
                 created_ms: int, roll_jitter_ms: int = 0) -> None:
        self.base_offset = base_offset
        self.path = segment_file(directory, base_offset, LOG_SUFFIX)
        self._config = config
        self.created_ms = created_ms
        self.roll_jitter_ms = roll_jitter_ms  # segment.jitter.ms drawn for this segment
        self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            index_path = segment_file(directory, base_offset, INDEX_SUFFIX)
            self.offset_index_missing = not index_path.exists()
            time_path = segment_file(directory, base_offset, TIME_INDEX_SUFFIX)
            time_index_created = not time_path.exists()
            self.offset_index = OffsetIndex(index_path, base_offset, config.segment_index_bytes)
            self.time_index = TimeIndex(time_path, base_offset, config.segment_index_bytes)
            if time_index_created and not self.offset_index_missing:
                self.time_index.resize(0)  # as Kafka: an older segment without a time index
            self.txn_index = TransactionIndex(
                segment_file(directory, base_offset, TXN_INDEX_SUFFIX), base_offset)
        except BaseException:
            os.close(self._fd)
            self._fd = -1
            raise
        #: The first offset whose aborted-transaction entries recovery dropped (None: the
        #: ``.txnindex`` is whole); the log layer rebuilds them and clears it.
        self.txn_index_reset_from: int | None = None
        self.size = os.fstat(self._fd).st_size
        self._rolling_timestamp: int | None = None  # the first batch's max timestamp
        self._max_timestamp: TimestampOffset | None = None  # None: read the time index
        self._bytes_since_index_entry = 0
        #: Counts truncations and the close: a :class:`FileRegion` made before one is stale.
        self.generation = 0

    @classmethod
    def open(cls, directory: Path, base_offset: int, config: LogConfig,
             created_ms: int, roll_jitter_ms: int = 0) -> LogSegment:
        """Open the segment's files, creating the missing ones (new indexes preallocated)."""
        return cls(directory, base_offset, config, created_ms, roll_jitter_ms)

    # ------------------------------------------------------------------ reading headers

    def _header_at(self, position: int) -> BatchHeader | None:
        """The header of the batch at ``position``; None past the last complete header."""
        if position + HEADER_SIZE > self.size:
            return None
        return read_header(os.pread(self._fd, HEADER_SIZE, position))

    def batches_from(self, position: int) -> Iterator[BatchPosition]:
        """The batch headers from ``position`` (a batch boundary) to the end of the file."""
        while (header := self._header_at(position)) is not None:
            yield BatchPosition(position, header)
            position += header.size

    def translate_offset(self, offset: int, start_position: int = 0) -> BatchPosition | None:
        """The first batch whose last offset is >= ``offset``; None if there is none."""
        start = max(self.offset_index.lookup(offset).position, start_position)
        for found in self.batches_from(start):
            if found.header.last_offset >= offset:
                return found
        return None

    def read_next_offset(self) -> int:
        """The offset after the segment's last batch (its base offset when empty)."""
        next_offset = self.base_offset
        for found in self.batches_from(self.offset_index.lookup(self.offset_index.last_offset)
                                       .position):
            next_offset = found.header.next_offset
        return next_offset

    def read(self, offset: int, max_size: int, max_position: int | None = None,
             *, min_one_batch: bool = False) -> tuple[int, bytes] | None:
        """Whole batches from the one holding ``offset``: (file position, bytes).

        At most ``max_size`` bytes and nothing at or past ``max_position``; with
        ``min_one_batch`` the first batch is returned whole even when larger than
        ``max_size`` (KIP-74). The result may end with a partial batch, as Kafka's slices do;
        None when no batch reaches ``offset``.
        """
        found = self.locate(offset, max_size, max_position, min_one_batch=min_one_batch)
        if found is None:
            return None
        position, length = found
        return position, self.read_bytes(position, length)

    def locate(self, offset: int, max_size: int, max_position: int | None = None,
               *, min_one_batch: bool = False) -> tuple[int, int] | None:
        """Where :meth:`read` would read: (file position, length), without reading."""
        if max_size < 0:
            raise ValueError(f"invalid max size {max_size} for a read from {self.path}")
        found = self.translate_offset(offset)
        if found is None:
            return None
        limit = max(max_size, found.header.size) if min_one_batch else max_size
        end = self.size if max_position is None else min(max_position, self.size)
        return found.position, max(0, min(end - found.position, limit))

    def region(self, position: int, length: int) -> FileRegion:
        """Bytes ``position`` to ``position + length`` of the file, left where they are."""
        return FileRegion(self, position, length)

    def checked_fd(self, generation: int, end: int) -> int:
        """The file's descriptor, if nothing was truncated or closed since ``generation``
        and the file still reaches ``end``; else :class:`StorageError`."""
        if generation != self.generation or self._fd < 0 or end > self.size:
            raise StorageError(f"{self.path}: truncated or closed since it was read "
                               f"(a region up to position {end})")
        return self._fd

    def read_bytes(self, position: int, length: int) -> bytes:
        data = os.pread(self._fd, length, position)
        if len(data) != length:
            raise StorageError(f"{self.path}: short read of {len(data)} bytes at position "
                               f"{position}, expected {length}")
        return data

    def fetch_upper_bound(self, position: int, length: int) -> int | None:
        """An offset above every batch of a read of ``length`` bytes at ``position``: the
        first index entry at or past its end (None: none is, then the next segment's base
        bounds it). Aborted transactions are collected up to there, as Kafka does."""
        return self.offset_index.fetch_upper_bound(position + length)

    # ------------------------------------------------------------------ timestamps

    @property
    def max_timestamp_so_far(self) -> TimestampOffset:
        """The largest batch timestamp in the segment and the last offset of its batch."""
        if self._max_timestamp is None:
            self._max_timestamp = self.time_index.last_entry
        return self._max_timestamp

    def largest_timestamp(self) -> int:
        """Kafka's ``largestTimestamp``: the max timestamp, else the file's mtime in ms."""
        timestamp = self.max_timestamp_so_far.timestamp
        if timestamp >= 0:
            return timestamp
        return os.fstat(self._fd).st_mtime_ns // 1_000_000

    def first_batch_timestamp(self) -> int | None:
        """The max timestamp of the first batch (what ``segment.ms`` counts from)."""
        if self._rolling_timestamp is None:
            header = self._header_at(0)
            if header is not None:
                self._rolling_timestamp = header.max_timestamp
        return self._rolling_timestamp

    def batch_by_timestamp(self, timestamp: int, starting_offset: int
                           ) -> tuple[BatchHeader, bytes] | None:
        """The first batch whose max timestamp is >= ``timestamp`` and whose last offset is
        >= ``starting_offset``, header and bytes (Kafka's ``LogSegment.findOffsetByTimestamp``
        up to reading its records: see :func:`first_record_at`).

        Batches are skipped by their headers' max timestamps, from the time index's entry
        on; only the batch found is read, and its records are left to the caller, which may
        walk them elsewhere: a compressed batch of a few kilobytes may expand to gigabytes.
        """
        indexed = self.time_index.lookup(timestamp)
        start = self.offset_index.lookup(max(indexed.offset, starting_offset)).position
        for found in self.batches_from(start):
            header = found.header
            if header.max_timestamp >= timestamp and header.last_offset >= starting_offset:
                return header, self.read_bytes(found.position, header.size)
        return None

    # ------------------------------------------------------------------ writing

    def append(self, largest_offset: int, largest_timestamp: int,
               offset_of_max_timestamp: int, data: bytes) -> None:
        """Append whole batches (already validated, offsets assigned) at the end."""
        if not data:
            return
        position = self.size
        if position == 0:
            self._rolling_timestamp = largest_timestamp
        if not self.offset_index.can_append_offset(largest_offset):
            raise StorageError(f"{self.path}: offset {largest_offset} overflows the segment "
                               f"based at {self.base_offset}")
        write_all_at(self._fd, self.path, data, position)
        self.size += len(data)
        if largest_timestamp > self.max_timestamp_so_far.timestamp:
            self._max_timestamp = TimestampOffset(largest_timestamp, offset_of_max_timestamp)
        if self._bytes_since_index_entry > self._config.index_interval_bytes:
            self.offset_index.append(largest_offset, position)
            self.time_index.maybe_append(*self.max_timestamp_so_far)
            self._bytes_since_index_entry = 0
        self._bytes_since_index_entry += len(data)

    def should_roll(self, incoming_size: int, incoming_max_timestamp: int,
                    incoming_max_offset: int, now_ms: int) -> bool:
        """Kafka's ``shouldRoll``: full by bytes, old by ``segment.ms`` less this segment's
        jitter, an index full, or an offset that no longer fits the int32 relative offset."""
        first = self.first_batch_timestamp()
        if first is not None and first >= 0:
            waited = incoming_max_timestamp - first
        else:
            waited = now_ms - self.created_ms
        return (self.size > self._config.segment_bytes - incoming_size
                or (self.size > 0 and waited > self._config.segment_ms - self.roll_jitter_ms)
                or self.offset_index.is_full() or self.time_index.is_full()
                or not self.offset_index.can_append_offset(incoming_max_offset))

    def truncate_to(self, offset: int, now_ms: int) -> int:
        """Drop the batches whose last offset is >= ``offset``; returns the bytes cut."""
        found = self.translate_offset(offset)
        self.offset_index.truncate_to(offset)
        self.time_index.truncate_to(offset)
        self.txn_index.truncate_to(offset)
        self.offset_index.resize(self.offset_index.max_index_size)
        self.time_index.resize(self.time_index.max_index_size)
        cut = 0
        if found is not None:
            cut = self.size - found.position
            self.generation += 1
            os.ftruncate(self._fd, found.position)
            self.size = found.position
        if self.size == 0:
            self.created_ms = now_ms
            self._rolling_timestamp = None
        self._bytes_since_index_entry = 0
        self._max_timestamp = self._read_largest_timestamp()
        return cut

    def _read_largest_timestamp(self) -> TimestampOffset:
        """The time index's last entry, or a larger batch timestamp after it."""
        best = self.time_index.last_entry
        start = self.offset_index.lookup(best.offset).position
        for found in self.batches_from(start):
            if found.header.max_timestamp > best.timestamp:
                best = TimestampOffset(found.header.max_timestamp, found.header.last_offset)
        return best

    # ------------------------------------------------------------------ recovery

    def sanity_check(self) -> None:
        """Raise :class:`CorruptIndexError` if the indexes cannot be trusted (then recover)."""
        if self.offset_index_missing:
            raise CorruptIndexError(f"Could not find offset index file corresponding to log "
                                    f"file {self.path}")
        self.offset_index.sanity_check()
        self.time_index.sanity_check()
        self.txn_index.sanity_check()

    def recovery_start(self, recovery_point: int) -> RecoveryStart | None:
        """Where recovery after a crash may resume in this segment, which holds
        ``recovery_point`` (everything below it was fsynced, indexes included): the last
        offset-index entry below it, when that entry's batch is intact and below the
        recovery point and the time index holds the largest timestamp before it. The
        indexes keep their entries up to there (an untrimmed index fails Kafka's sanity
        check by its zeros, hence checked after). None: rescan the whole segment (its
        indexes are rebuilt by :meth:`recover` anyway)."""
        if recovery_point <= self.base_offset or self.offset_index_missing:
            return None
        if not self.offset_index.keep_entries_below(recovery_point):
            return None
        indexed = self.offset_index.entry(self.offset_index.entries - 1)
        if not self.time_index.keep_entries_up_to(indexed.offset):
            return None
        try:
            self.sanity_check()
        except CorruptIndexError:
            return None
        header = self._intact_batch_at(indexed.position)
        if (header is None or header.base_offset < self.base_offset
                or header.last_offset > indexed.offset
                or (self.time_index.entry(0) == (0, self.base_offset) and (
                    (first := self._header_at(0)) is None or first.max_timestamp != 0))):
            # the index does not describe the file (or a time index of zeros looks like
            # one entry): trust neither
            log.warning("%s: its indexes do not match the file below the recovery point %d; "
                        "rescanning the whole segment", self.path, recovery_point)
            return None
        return RecoveryStart(indexed.position, header.base_offset)

    def _intact_batch_at(self, position: int) -> BatchHeader | None:
        """The header of an intact batch (framing and CRC) at ``position``, else None."""
        try:
            header = self._header_at(position)
            if header is None or position + header.size > self.size:
                return None
            return check_framing(memoryview(self.read_bytes(position, header.size)), 0,
                                 header.size)
        except (CorruptRecordError, BatchProblemError):
            return None

    def recover(self, epochs: LeaderEpochCache | None = None,
                start: RecoveryStart | None = None) -> int:
        """Rebuild the indexes from the file (from ``start`` on, the entries before it
        kept: see :meth:`recovery_start`); truncate at the first invalid batch.

        Returns the bytes truncated. Each batch's framing and CRC are checked (its records
        are not decoded); ``epochs``, when given, learns each newer leader epoch. A batch
        whose offsets go backwards is corruption no truncation explains: it raises.
        """
        if start is None:
            self.offset_index.reset()
            self.time_index.reset()
            self.txn_index.reset()
            self._max_timestamp = TimestampOffset(NO_TIMESTAMP, self.base_offset)
            valid = 0
            self.txn_index_reset_from = self.base_offset
        else:  # room to append again, the entries up to the start kept
            self.offset_index.resize(self.offset_index.max_index_size)
            self.time_index.resize(self.time_index.max_index_size)
            self.txn_index.truncate_to(start.first_offset)
            self._max_timestamp = self.time_index.last_entry
            valid = start.position
            self.txn_index_reset_from = start.first_offset
        last_index_entry = valid
        expected = self.base_offset
        size = os.fstat(self._fd).st_size
        if size:
            with mmap.mmap(self._fd, size, access=mmap.ACCESS_READ) as mapped, \
                    memoryview(mapped) as buf:
                while valid < size:
                    try:
                        header = check_framing(buf, valid, size)
                    except BatchProblemError as problem:
                        log.warning("Found invalid messages in log segment %s at byte offset "
                                    "%d: %s", self.path, valid, problem)
                        break
                    self._check_offsets(header, expected, valid)
                    expected = header.next_offset
                    if header.max_timestamp > self.max_timestamp_so_far.timestamp:
                        self._max_timestamp = TimestampOffset(header.max_timestamp,
                                                              header.last_offset)
                    if (valid - last_index_entry > self._config.index_interval_bytes
                            and header.last_offset > self.offset_index.last_offset):
                        self.offset_index.append(header.last_offset, valid)
                        self.time_index.maybe_append(*self.max_timestamp_so_far)
                        last_index_entry = valid
                    valid += header.size
                    epoch = header.partition_leader_epoch
                    if epochs is not None and epoch >= 0 and (
                            epochs.latest_epoch is None or epoch > epochs.latest_epoch):
                        epochs.assign(epoch, header.base_offset)
        if size > valid:
            self.generation += 1
            os.ftruncate(self._fd, valid)
        self.size = valid
        self._rolling_timestamp = None
        self.offset_index.trim_to_valid_size()
        self.time_index.maybe_append(*self.max_timestamp_so_far, skip_full_check=True)
        self.time_index.trim_to_valid_size()
        return size - valid

    def _check_offsets(self, header: BatchHeader, expected: int, position: int) -> None:
        if header.base_offset < expected:
            raise CorruptLogError(str(self.path), position,
                                  f"base offset {header.base_offset} is below {expected}, "
                                  "where the previous batch ended")
        if not self.offset_index.can_append_offset(header.last_offset):
            raise CorruptLogError(str(self.path), position,
                                  f"offset {header.last_offset} overflows the segment based "
                                  f"at {self.base_offset}")

    # ------------------------------------------------------------------ lifecycle

    def on_become_inactive(self) -> None:
        """On roll: force the max timestamp into the time index and trim both indexes."""
        self.time_index.maybe_append(*self.max_timestamp_so_far, skip_full_check=True)
        self.offset_index.trim_to_valid_size()
        self.time_index.trim_to_valid_size()

    def resize_indexes(self) -> None:
        """Preallocate the indexes again (the segment became the active one)."""
        self.offset_index.resize(self.offset_index.max_index_size)
        self.time_index.resize(self.time_index.max_index_size)

    def flush(self) -> None:
        os.fsync(self._fd)
        self.offset_index.flush()
        self.time_index.flush()
        self.txn_index.flush()

    def close(self) -> None:
        """Force the max timestamp into the time index, trim the indexes and close."""
        if self._max_timestamp is not None and self._max_timestamp.timestamp >= 0:
            self.time_index.maybe_append(*self._max_timestamp, skip_full_check=True)
        self.offset_index.close()
        self.time_index.close()
        self.txn_index.close()
        self._close_fd()

    def _close_fd(self) -> None:
        if self._fd >= 0:
            self.generation += 1
            os.close(self._fd)
            self._fd = -1

    def __del__(self) -> None:
        """A segment dropped unclosed (an error path's, a test's) does not keep its file
        open: its indexes close theirs likewise."""
        if getattr(self, "_fd", -1) >= 0:
            os.close(self._fd)

    def _files(self) -> tuple[Path, ...]:
        return (self.path, self.offset_index.path, self.time_index.path, self.txn_index.path)

    def _release(self) -> None:
        self.offset_index.close_handler()
        self.time_index.close_handler()
        self.txn_index.close()
        self._close_fd()

    def delete(self) -> None:
        """Close and remove the segment's files (the ``.txnindex`` too, if any)."""
        self._release()
        for path in self._files():
            path.unlink(missing_ok=True)

    def rename_deleted(self) -> list[Path]:
        """Close and rename the segment's files ``*.deleted``, as Kafka does before removing
        them ``file.delete.delay.ms`` later (readers holding them keep working, and a new
        segment may take the name); returns the renamed paths."""
        self._release()
        renamed = []
        for path in self._files():
            target = path.with_name(path.name + DELETED_SUFFIX)
            try:
                os.rename(path, target)
            except FileNotFoundError:
                continue  # a segment without a .txnindex
            renamed.append(target)
        return renamed



class FileRegion(Splice):
    """Bytes of a segment file as a read found them, sent from the file (Kafka's
    ``FileRecords`` slice): the segment is asked before each use whether they are still
    there, unchanged; appends after them do not matter."""

    __slots__ = ("_generation", "_length", "_position", "_segment")

    def __init__(self, segment: LogSegment, position: int, length: int) -> None:
        self._segment = segment
        self._position = position
        self._length = length
        self._generation = segment.generation

    @property
    def length(self) -> int:
        return self._length

    def source(self, offset: int) -> tuple[int, int]:
        fd = self._segment.checked_fd(self._generation, self._position + self._length)
        return fd, self._position + offset

    def read(self, offset: int, size: int) -> bytes:
        _, position = self.source(offset)
        return self._segment.read_bytes(position, size)
