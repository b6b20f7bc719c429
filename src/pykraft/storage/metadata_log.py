"""The metadata log ``__cluster_metadata-0/``: a partition log in strict mode.

As Kafka's ``KafkaMetadataLog`` wraps a ``UnifiedLog``, :class:`MetadataLog` wraps a
:class:`~pykraft.storage.partition_log.PartitionLog` (the same segments, ``.index`` and
``.timeindex`` files and ``leader-epoch-checkpoint`` as any user partition) and adds what
the raft layer needs:

- it always recovers from offset 0 as after an unclean shutdown (Kafka passes
  ``recoveryPoint = 0, lastShutdownClean = false``), in strict mode: offsets continue
  exactly, epochs never go back, and only a torn tail is cut, so a damaged middle refuses to
  start instead of silently dropping committed records;
- reads cross segment boundaries and return whole batches only;
- the log start offset is not persisted: the snapshot layer derives it from the snapshots
  and sets :attr:`MetadataLog.log_start_offset` after opening;
- ``partition.metadata`` must name the metadata topic.

Durability is explicit: :meth:`append` only writes; :meth:`flush` fsyncs. Not thread-safe:
one raft event loop drives it. Time (for ``metadata.log.segment.ms`` and the delayed
deletion of segments) comes from an injected clock.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from types import TracebackType

from pykraft.errors import OffsetOutOfRangeError, StorageError
from pykraft.ids import METADATA_TOPIC_ID, uuid_to_str
from pykraft.records.batch import HEADER_SIZE, complete_batches, runs_within, unpack_header
from pykraft.storage.file_error import StateFileError
from pykraft.storage.log_config import DEFAULT_SEGMENT_MS, LogConfig
from pykraft.storage.partition_log import PartitionLog
from pykraft.storage.partition_metadata import (
    PARTITION_METADATA,
    read_partition_metadata,
    write_partition_metadata,
)

DEFAULT_SEGMENT_BYTES = 1024 * 1024 * 1024  # metadata.log.segment.bytes
_NO_RETENTION = -1  # the raft layer deletes by snapshot, never by time or size

Clock = Callable[[], int]
"""Milliseconds since the epoch; called once per batch, as Kafka stamps each batch."""


def wall_clock_ms() -> int:
    """Kafka stamps batches and DescribeQuorum timestamps with wall-clock milliseconds."""
    return time.time_ns() // 1_000_000


class MetadataLog:
    """The segmented metadata log of one node; open it with :meth:`open`."""

    def __init__(self, partition_log: PartitionLog, clock: Clock) -> None:
        self._log = partition_log
        self._clock = clock

    @classmethod
    def open(cls, directory: Path, *, segment_bytes: int = DEFAULT_SEGMENT_BYTES,
             segment_ms: int = DEFAULT_SEGMENT_MS, clock: Clock = wall_clock_ms
             ) -> MetadataLog:
        """Open (creating if needed) and recover the log in ``directory``.

        A torn or corrupt batch at the tail of the last segment is truncated away with a
        warning; any other corruption raises :class:`~pykraft.errors.CorruptLogError`
        before a byte of the log is cut. Like Kafka, a missing ``partition.metadata`` is
        written with the metadata topic id.
        """
        if segment_bytes <= 0:
            raise ValueError(f"segment_bytes must be positive, not {segment_bytes}")
        config = LogConfig(segment_bytes=max(segment_bytes, 14), segment_ms=segment_ms,
                           retention_ms=_NO_RETENTION, retention_bytes=_NO_RETENTION)
        directory.mkdir(parents=False, exist_ok=True)
        _check_partition_metadata(directory)
        partition_log = PartitionLog.open(directory, config, now_ms=clock(), strict=True)
        partition_log.flush()  # what recovery kept is durable: the raft layer builds on it
        if not (directory / PARTITION_METADATA).exists():
            write_partition_metadata(directory / PARTITION_METADATA, METADATA_TOPIC_ID)
        return cls(partition_log, clock)

    # ------------------------------------------------------------------ properties

    @property
    def directory(self) -> Path:
        return self._log.directory

    @property
    def partition_log(self) -> PartitionLog:
        return self._log

    @property
    def log_start_offset(self) -> int:
        return self._log.log_start_offset

    @log_start_offset.setter
    def log_start_offset(self, offset: int) -> None:
        """Advance the log start (the snapshot layer does, to its latest snapshot)."""
        self._check_open()
        if offset < self._log.log_start_offset or offset > self.log_end_offset:
            raise StorageError(
                f"log start offset {offset} must lie between the current log start "
                f"{self._log.log_start_offset} and the log end offset {self.log_end_offset}"
            )
        self._log.increment_log_start_offset(offset, self.log_end_offset)
        if offset == self.log_end_offset:
            self._log.clear_leader_epochs()

    @property
    def log_end_offset(self) -> int:
        return self._log.log_end_offset

    @property
    def flushed_offset(self) -> int:
        return self._log.recovery_point

    @property
    def last_epoch(self) -> int | None:
        """Epoch in force at the log end (None when the cache knows no epoch)."""
        return self._log.leader_epochs.latest_epoch

    @property
    def epoch_entries(self) -> list[tuple[int, int]]:
        return self._log.leader_epochs.entries

    @property
    def segment_base_offsets(self) -> list[int]:
        return [stats.base_offset for stats in self._log.segment_stats()]

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int]:
        """(epoch, end offset) per the leader-epoch cache; (-1, -1) when unknown.

        The override by the earliest snapshot id (an epoch older than the log) is the
        raft layer's business, since it knows the snapshots.
        """
        return self._log.leader_epochs.end_offset_for(epoch, self.log_end_offset)

    # ------------------------------------------------------------------ writing

    def append(self, data: bytes) -> int:
        """Append encoded v2 batches continuing the log end offset; returns the new end.

        Every batch is validated (framing, CRC, contiguous offsets, epochs not going back)
        before anything is written, so a bad batch leaves the log unchanged. Batches are
        appended in runs that fit a segment (a follower appends whole fetch responses); a
        single batch larger than ``segment.bytes`` gets a segment of its own (Kafka refuses
        it, but also refuses a ``metadata.log.segment.bytes`` below 8 MiB, the largest
        batch; pykraft allows small segments). Not durable until :meth:`flush`.
        """
        self._check_open()
        if not data:
            return self.log_end_offset
        limit = self._log.config.segment_bytes
        if len(data) <= limit:
            self._log.append(data, self._clock())
            return self.log_end_offset
        self._log.check_appendable(data)  # all or nothing across the runs
        headers, _ = complete_batches(data)
        now_ms = self._clock()
        for start, end, _ in runs_within(headers, limit):
            self._log.append(data[start:end], now_ms)
        return self.log_end_offset

    def flush(self) -> int:
        """Fsync everything appended so far (group commit); returns the flushed offset."""
        self._check_open()
        return self._log.flush()

    def roll(self) -> None:
        """Start a new segment at the log end offset (no-op if the active one is empty)."""
        self._log.roll(self._clock())

    def truncate_to(self, offset: int) -> int:
        """Drop every batch at and after ``offset``; returns the new log end offset.

        Truncation is batch aligned: an offset inside a batch truncates to that batch's base.
        The result is fsynced at once, and the epoch cache forgets the dropped epochs.
        """
        self._check_open()
        if offset >= self.log_end_offset:
            return self.log_end_offset
        start = self._log.log_start_offset
        if offset < start:
            raise StorageError(
                f"cannot truncate to {offset}, below the log start offset {start}")
        held = self._log.read(offset, HEADER_SIZE, min_one_batch=False)
        point = unpack_header(held, 0).base_offset if len(held) >= HEADER_SIZE else offset
        if point < start:
            raise StorageError(
                f"offset {offset} lies in the batch starting at {point}, below the log start "
                f"offset {start}; truncate fully instead")
        end = self._log.truncate_to(offset, self._clock())
        self._log.flush()
        return end

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """Drop every segment and restart empty at ``offset`` (after installing a snapshot)."""
        self._check_open()
        self._log.truncate_fully_and_start_at(offset, self._clock())
        self._log.flush()

    def delete_before(self, log_start_offset: int) -> int:
        """Advance the log start and delete the segments entirely below it.

        The segment holding the new log start, and always the active segment, are kept.
        Returns the number of segments deleted (their files go after
        ``file.delete.delay.ms``, renamed ``.deleted`` meanwhile, as in Kafka).
        """
        self._check_open()
        if log_start_offset > self._log.log_start_offset:
            self.log_start_offset = log_start_offset
        now_ms = self._clock()
        stats = self._log.segment_stats()
        doomed = [s.base_offset for s in stats[:-1] if s.end_offset <= self._log.log_start_offset]
        deleted = self._log.delete_segments(doomed, now_ms) if doomed else 0
        self._log.remove_deleted_segments(now_ms)
        return deleted

    # ------------------------------------------------------------------ reading

    def read(self, offset: int, max_bytes: int) -> bytes:
        """Whole batches from the one holding ``offset``, up to ``max_bytes`` in total.

        At least one batch is returned even if it is larger than ``max_bytes`` (as Kafka
        does, so a reader can always make progress); reads continue across segments.
        Reading at the log end offset returns ``b""``.
        """
        self._check_open()
        end_offset = self.log_end_offset
        if offset == end_offset:
            return b""
        if offset < self._log.log_start_offset or offset > end_offset:
            raise OffsetOutOfRangeError(
                f"offset {offset} is outside the log [{self._log.log_start_offset}, "
                f"{end_offset})")
        chunks: list[bytes] = []
        budget = max(0, max_bytes)
        while offset < end_offset:
            data = self._log.read(offset, budget, min_one_batch=not chunks)
            headers, whole = complete_batches(data)  # a segment read may end mid-batch
            if not headers:
                break
            chunks.append(data[:whole])
            offset = headers[-1].next_offset
            budget -= whole
            if budget <= 0:
                break
        return b"".join(chunks)

    # ------------------------------------------------------------------ lifecycle

    def close(self) -> None:
        """Close the segment files (without flushing: call :meth:`flush` first)."""
        self._log.close()

    def __enter__(self) -> MetadataLog:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def _check_open(self) -> None:
        if self._log.closed:
            raise StorageError(f"the metadata log in {self.directory} is closed")


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
