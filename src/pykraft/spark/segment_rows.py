"""User topics' segments as the rows of Spark's Kafka source: the reading half of the
``kafka-segments`` data source (:mod:`pykraft.spark.segment_source`), free of Spark; what to
read is planned by :mod:`pykraft.spark.segment_plan`.

Spark's ``format("kafka")`` gives one row per record with exactly these columns::

    key BINARY, value BINARY, topic STRING, partition INT, offset BIGINT,
    timestamp TIMESTAMP, timestampType INT[, headers ARRAY<STRUCT<key: STRING, value: BINARY>>]

(``headers`` only with ``includeHeaders=true``, null for a record without headers), and so
does this reader. As a consumer sees them: compressed batches are decompressed, control
batches (transaction markers) are skipped, a LogAppendTime batch's records carry the batch's
timestamp (type 1). Like ``read_uncommitted`` consumers, aborted transactional records are
included.

A segment is read one batch at a time (memory bounded by the batch size, not the segment's)
and checked as strictly as a replica's log: every batch read must be intact (framing, CRC)
and continue the offsets before it, and a rolled segment must end where the next one begins.
Only the last (active) segment may end with a torn write (a crash the broker truncates at
start-up). Any other damage is lost data: :class:`~pykraft.errors.CorruptLogError` naming the
file and byte position, or with ``failOnDataLoss=false`` a logged warning and the rest of the
segment skipped (no row says so).

Interface::

    rows = read_segment(segment, include_headers=True)    # tuples in schema order
    batches = read_arrow(segment, ReadOptions(...), arrow_schema)   # pyarrow.RecordBatch
"""

from __future__ import annotations

import logging
import mmap
import os
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import IO, Any

import pyarrow as pa
import pyarrow.compute

from pykraft.errors import CorruptLogError, CorruptRecordError
from pykraft.log.batch_records import (
    MIN_RECORD_OVERHEAD,
    batch_records,
    record_timestamp,
    timestamp_type,
)
from pykraft.records.batch import (
    HEADER_SIZE,
    LOG_OVERHEAD,
    BatchHeader,
    Record,
    RecordBatch,
    read_header,
)
from pykraft.records.compression import CodecError
from pykraft.spark.segment_plan import DataLossError, SegmentFile
from pykraft.storage.batch_check import BatchProblemError, check_framing, continuity_problem
from pykraft.storage.log_verify import is_torn_tail
from pykraft.storage.offset_index import INDEX_SUFFIX, indexed_position

SCHEMA_DDL = ("key BINARY, value BINARY, topic STRING, partition INT, offset BIGINT, "
              "timestamp TIMESTAMP, timestampType INT")
HEADERS_DDL = "headers ARRAY<STRUCT<key: STRING, value: BINARY>>"
ARROW_BATCH_ROWS = 8192
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_LOG = logging.getLogger(__name__)

def schema_ddl(include_headers: bool) -> str:
    return f"{SCHEMA_DDL}, {HEADERS_DDL}" if include_headers else SCHEMA_DDL


@dataclass(frozen=True, slots=True)
class ReadOptions:
    """How a task reads: the headers column, what lost data does, and the lowest timestamp
    a query wants (batches whose max timestamp is below it are skipped undecoded)."""

    include_headers: bool = False
    fail_on_data_loss: bool = True
    min_timestamp: int | None = None


def read_segment(segment: SegmentFile, *, include_headers: bool,
                 fail_on_data_loss: bool = True) -> Iterator[tuple[Any, ...]]:
    """The rows of one segment read as tuples in schema order (tests and small reads)."""
    options = ReadOptions(include_headers, fail_on_data_loss)
    for header, decoded in _decoded(segment, options):
        kind = timestamp_type(header)
        for record in decoded:
            row: tuple[Any, ...] = (
                record.key, record.value, segment.topic, segment.partition, record.offset,
                _EPOCH + timedelta(milliseconds=record_timestamp(header, record)), kind)
            yield (*row, list(record.headers) or None) if include_headers else row


def read_arrow(segment: SegmentFile, options: ReadOptions, schema: pa.Schema,
               rows_per_batch: int = ARROW_BATCH_ROWS) -> Iterator[pa.RecordBatch]:
    """The rows of one segment as Arrow record batches of ``schema`` (Spark's, from
    ``to_arrow_schema``), about ``rows_per_batch`` rows each (whole Kafka batches)."""
    columns = _Columns(segment, schema, options.include_headers)
    for header, decoded in _decoded(segment, options):
        columns.add(header, decoded)
        if columns.count >= rows_per_batch:
            yield columns.flush()
    if columns.count:
        yield columns.flush()


class _Columns:
    """Records gathered column by column (transposed per Kafka batch, in C by ``zip``)."""

    def __init__(self, segment: SegmentFile, schema: pa.Schema, include_headers: bool) -> None:
        self.segment = segment
        self.schema = schema
        self.include_headers = include_headers
        self._reset()

    def _reset(self) -> None:
        self.count = 0
        self.offsets: list[int] = []
        self.stamps: list[int] = []
        self.kinds: list[int] = []
        self.keys: list[bytes | None] = []
        self.values: list[bytes | None] = []
        self.headers: list[tuple[tuple[str, bytes | None], ...]] = []

    def add(self, header: BatchHeader, decoded: list[Record]) -> None:
        offsets, stamps, keys, values, headers, _ = zip(*decoded, strict=True)
        kind = timestamp_type(header)
        self.offsets += offsets
        self.stamps += [header.max_timestamp] * len(decoded) if kind else stamps
        self.kinds += [kind] * len(decoded)
        self.keys += keys
        self.values += values
        if self.include_headers:
            self.headers += headers
        self.count += len(decoded)

    def flush(self) -> pa.RecordBatch:
        count, fields = self.count, self.schema
        columns = [
            pa.array(self.keys, pa.binary()), pa.array(self.values, pa.binary()),
            pa.array([self.segment.topic] * count, pa.string()),
            pa.array([self.segment.partition] * count, pa.int32()),
            pa.array(self.offsets, pa.int64()),
            pa.compute.multiply(pa.array(self.stamps, pa.int64()), 1000).cast(
                fields.field(5).type),
            pa.array(self.kinds, pa.int32()),
        ]
        if self.include_headers:
            columns.append(pa.array([list(h) or None for h in self.headers],
                                    fields.field(7).type))
        self._reset()
        return pa.RecordBatch.from_arrays(columns, schema=fields)


def _decoded(segment: SegmentFile, options: ReadOptions
             ) -> Iterator[tuple[BatchHeader, list[Record]]]:
    """Each data batch's consumer-visible records within ``[start, end)``, in offset order
    (a ``read_committed`` task's aborted transactions left out)."""
    aborted: dict[int, list[tuple[int, int]]] = {}
    for producer_id, first, last in segment.aborted:
        aborted.setdefault(producer_id, []).append((first, last))
    for batch in _batches(segment, options):
        if batch.is_control or (aborted and _aborted(batch.header, aborted)):
            continue
        try:
            decoded = batch_records(batch)
        except (CorruptRecordError, CodecError) as exc:
            _lost(segment, options, batch.position, str(exc))
            return
        header = batch.header
        if header.base_offset < segment.start or (
                segment.end is not None and header.last_offset >= segment.end):
            decoded = [r for r in decoded if segment.start <= r.offset and (
                segment.end is None or r.offset < segment.end)]
        if decoded:
            yield header, decoded


def _aborted(header: BatchHeader, aborted: dict[int, list[tuple[int, int]]]) -> bool:
    """Whether the batch belongs to an aborted transaction (its producer's, around it)."""
    return header.is_transactional and any(
        first <= header.base_offset <= last
        for first, last in aborted.get(header.producer_id, ()))


def _batches(segment: SegmentFile, options: ReadOptions) -> Iterator[RecordBatch]:
    """The intact batches overlapping ``[start, end)``, read one at a time and checked."""
    try:
        handle = open(segment.path, "rb")  # noqa: SIM115 - closed below, a generator
    except FileNotFoundError:
        _lost(segment, options, None, "the segment was deleted after the read was planned "
              "(retention or a partition reassignment)")
        return
    with handle:
        size = os.fstat(handle.fileno()).st_size
        scan = _Scan(segment, options, handle, size)
        while scan.position < size and not scan.past_end():
            batch = scan.next_batch()
            if batch is None:
                return
            if batch.data:
                yield batch
        if scan.position >= size:
            scan.check_rolled_end()


class _Scan:
    """The position and the next expected offset of one segment's read."""

    def __init__(self, segment: SegmentFile, options: ReadOptions, handle: IO[bytes],
                 size: int) -> None:
        self.segment = segment
        self.options = options
        self.handle = handle
        self.size = size
        self.position = 0
        self.expected = segment.base_offset
        if segment.start > segment.base_offset:
            self._seek_start()

    def _seek_start(self) -> None:
        """Start at the offset index's entry for ``start`` when the batch there is intact
        and not past it (else from the file's start): a late start skips the bytes before."""
        path = Path(self.segment.path).with_suffix(INDEX_SUFFIX)
        position = indexed_position(path, self.segment.base_offset, self.segment.start)
        if position <= 0 or position >= self.size:
            return
        self.handle.seek(position)
        try:
            header = read_header(self.handle.read(HEADER_SIZE))
        except CorruptRecordError:
            return
        if self.segment.base_offset <= header.base_offset <= self.segment.start:
            self.position, self.expected = position, header.base_offset

    def past_end(self) -> bool:
        return self.segment.end is not None and self.expected >= self.segment.end

    def next_batch(self) -> RecordBatch | None:
        """The batch at the position (empty ``data`` when it is skipped undecoded), or None
        when the read stops here (damage, reported or tolerated)."""
        pos = self.position
        self.handle.seek(pos)
        head = self.handle.read(HEADER_SIZE)
        try:
            header = read_header(head)
        except CorruptRecordError as exc:
            self._damage(pos, str(exc), torn=len(head) < HEADER_SIZE)
            return None
        if header.size > self.size - pos:
            self._damage(pos, f"truncated batch: {header.size} bytes declared, "
                         f"{self.size - pos} present", torn=True)
            return None
        problem = self._continuity(header)
        if problem is not None:
            self._damage(pos, problem, torn=False)
            return None
        self.position = pos + header.size
        self.expected = header.next_offset
        if header.last_offset < self.segment.start or (
                self.options.min_timestamp is not None
                and header.max_timestamp < self.options.min_timestamp):
            return RecordBatch(header, b"", pos)
        data = head + self.handle.read(header.size - HEADER_SIZE)
        try:
            check_framing(memoryview(data), 0, len(data))
        except BatchProblemError as exc:
            self._damage(pos, str(exc), torn=True)
            return None
        return RecordBatch(header, data, pos)

    def _continuity(self, header: BatchHeader) -> str | None:
        """Offsets go on without a gap, except below the cleaner's first dirty offset."""
        if header.base_offset > self.expected and header.base_offset <= self.segment.cleaned_end:
            return None
        return continuity_problem(header, self.expected, None)

    def check_rolled_end(self) -> None:
        """A rolled segment must end where the next one starts (or before it, when the
        offsets between were compacted away)."""
        following = self.segment.next_base
        if following is None or following == self.expected or (
                self.expected < following <= self.segment.cleaned_end):
            return
        self._damage(self.size, f"the segment ends at offset {self.expected} but the next "
                     f"segment starts at {following}", torn=False)

    def _damage(self, pos: int, reason: str, *, torn: bool) -> None:
        """A torn tail of the last segment ends it quietly; anything else is lost data."""
        if self.segment.next_base is None and self._torn_tail(pos, torn):
            return
        _lost(self.segment, self.options, pos, reason)

    def _torn_tail(self, pos: int, torn: bool) -> bool:
        """A write cut short (a truncated or CRC-failing last batch, or zeros a crash left)
        that no intact batch follows."""
        self.handle.seek(pos)
        if not torn:
            prefix = self.handle.read(LOG_OVERHEAD)
            length = int.from_bytes(prefix[8:], "big", signed=True) if len(prefix) == 12 else 0
            if length >= MIN_RECORD_OVERHEAD or any(prefix):
                return False
        with mmap.mmap(self.handle.fileno(), self.size, access=mmap.ACCESS_READ) as data:
            return is_torn_tail(data, pos, self.expected)


def _lost(segment: SegmentFile, options: ReadOptions, pos: int | None, reason: str) -> None:
    """Fail (``failOnDataLoss``, the default) or warn and skip the rest of the segment."""
    if options.fail_on_data_loss:
        if pos is None:
            raise DataLossError(f"{segment.path}: {reason}; set failOnDataLoss=false to "
                                "skip it")
        raise CorruptLogError(segment.path, pos, f"{reason} (failOnDataLoss=false skips the "
                              "rest of the segment)")
    _LOG.warning("%s%s: %s: skipped", segment.path,
                 "" if pos is None else f" at byte position {pos}", reason)
