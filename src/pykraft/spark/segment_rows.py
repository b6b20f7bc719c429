"""User topics' segments as the rows of Spark's Kafka source: the logic of the
``kafka-segments`` data source (:mod:`pykraft.spark.segment_source`), free of Spark.

Spark's ``format("kafka")`` gives one row per record with exactly these columns::

    key BINARY, value BINARY, topic STRING, partition INT, offset BIGINT,
    timestamp TIMESTAMP, timestampType INT[, headers ARRAY<STRUCT<key: STRING, value: BINARY>>]

(``headers`` only with ``includeHeaders=true``, null for a record without headers), and so
does this reader, over the ``<topic>-<partition>/<offset>.log`` files of broker log
directories instead of a running cluster. As a consumer sees them: compressed batches are
decompressed, control batches (transaction markers) are skipped, a LogAppendTime batch's
records carry the batch's timestamp (type 1). Like ``read_uncommitted`` consumers, aborted
transactional records are included; unlike them, records past the high watermark that the
broker has not yet committed are too (the segments do not say where it is).

Interface::

    segments = discover(["/var/lib/kafka/data"], TopicFilter(subscribe=("orders",)))
    rows = read_segment(segments[0], include_headers=True)   # tuples in schema order
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from pykraft.errors import CorruptLogError, CorruptRecordError, StorageError
from pykraft.log.batch_records import (
    batch_records,
    complete_batches_end,
    record_timestamp,
    timestamp_type,
)
from pykraft.records.batch import iter_batches
from pykraft.storage.bootstrap import METADATA_LOG_DIR_NAME
from pykraft.storage.file_error import StateFileError
from pykraft.storage.partition_log import parse_partition_dir_name, partition_dir_name
from pykraft.storage.segment import LOG_SUFFIX

SCHEMA_DDL = ("key BINARY, value BINARY, topic STRING, partition INT, offset BIGINT, "
              "timestamp TIMESTAMP, timestampType INT")
HEADERS_DDL = "headers ARRAY<STRUCT<key: STRING, value: BINARY>>"
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_SEGMENT_NAME = re.compile(r"\d{20}" + re.escape(LOG_SUFFIX))


def schema_ddl(include_headers: bool) -> str:
    return f"{SCHEMA_DDL}, {HEADERS_DDL}" if include_headers else SCHEMA_DDL


@dataclass(frozen=True, slots=True)
class TopicFilter:
    """Spark's ``subscribe`` (topic names) or ``subscribePattern`` (a regex the whole name
    must match, as Java's ``Matcher.matches``); neither keeps every topic."""

    subscribe: tuple[str, ...] = ()
    pattern: str | None = None

    def keeps(self, topic: str) -> bool:
        if self.subscribe:
            return topic in self.subscribe
        return self.pattern is None or re.fullmatch(self.pattern, topic) is not None


@dataclass(frozen=True, slots=True)
class SegmentFile:
    """One ``.log`` segment of a topic partition: plain data, one Spark input partition."""

    path: str
    topic: str
    partition: int
    base_offset: int


def _partition_of(directory: Path) -> tuple[str, int] | None:
    """(topic, partition) of a live ``<topic>-<partition>`` directory; None for the metadata
    log and for ``-delete``/``-future``/``-stray`` directories."""
    if directory.name == METADATA_LOG_DIR_NAME:
        return None
    try:
        tp = parse_partition_dir_name(directory.name)
    except StateFileError:
        return None
    return (tp.topic, tp.partition) if partition_dir_name(tp) == directory.name else None


def discover(paths: Sequence[str], topics: TopicFilter) -> list[SegmentFile]:
    """The segments under each path (a log directory, or one partition directory), ordered
    by topic, partition and base offset so the plan and the output order are stable."""
    found: list[SegmentFile] = []
    for path in map(Path, paths):
        if not path.is_dir():
            raise StorageError(f"no such log directory: {path}")
        directories = [path] if _partition_of(path) else sorted(path.iterdir())
        for directory in directories:
            owner = _partition_of(directory) if directory.is_dir() else None
            if owner is None or not topics.keeps(owner[0]):
                continue
            found += [SegmentFile(str(f), owner[0], owner[1], int(f.name[:20]))
                      for f in directory.iterdir() if _SEGMENT_NAME.fullmatch(f.name)]
    return sorted(found, key=lambda s: (s.topic, s.partition, s.base_offset, s.path))


def read_segment(segment: SegmentFile, *, include_headers: bool) -> Iterator[tuple[Any, ...]]:
    """The consumer-visible records of one segment in offset order. A partial batch at the
    end (a write in progress, or a crash the broker will truncate) ends the segment; a
    damaged batch fails the read, as a consumer fails on a corrupt record."""
    data = Path(segment.path).read_bytes()
    end = complete_batches_end(data)
    try:
        for batch in iter_batches(data[:end], verify_crc=False):
            if not batch.crc_valid():
                batch.verify()  # raises with the CRCs
            if batch.is_control:
                continue
            kind = timestamp_type(batch.header)
            for record in batch_records(batch):
                row: tuple[Any, ...] = (
                    record.key, record.value, segment.topic, segment.partition, record.offset,
                    _EPOCH + timedelta(milliseconds=record_timestamp(batch.header, record)),
                    kind)
                if include_headers:
                    row += ([(k, v) for k, v in record.headers] or None,)
                yield row
    except CorruptRecordError as exc:
        raise CorruptLogError(segment.path, exc.position or 0, str(exc)) from None
