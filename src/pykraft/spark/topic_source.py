"""``format("pykraft")``: Spark's Kafka source and sink on PySpark's Python Data Source API,
for Spark Connect clients and clusters where the JVM connector cannot be added.

Rows have the columns of ``format("kafka")`` (see :mod:`pykraft.spark.segment_rows`);
options and offsets are :mod:`pykraft.spark.topic_options`'s, the clients
:mod:`pykraft.spark.topic_client`'s, the writers :mod:`pykraft.spark.topic_sink`'s.

A stream's offsets are ``{topic: {partition: next offset}}``, checkpointed by Spark: a
restarted query plans the batch after its last committed offsets, each task reads exactly
``[start, end)`` of one partition, so a deterministic sink (Spark's file sink) gets every
record once. One Spark task per topic-partition range.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
    InputPartition,
)
from pyspark.sql.streaming.datasource import ReadAllAvailable as ReadAll
from pyspark.sql.streaming.datasource import (
    ReadLimit,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import StructType

from pykraft.errors import ConfigError
from pykraft.ids import TopicPartition as Partition
from pykraft.spark import topic_sink
from pykraft.spark.segment_plan import EARLIEST, LATEST
from pykraft.spark.segment_rows import schema_ddl
from pykraft.spark.source import flag_option
from pykraft.spark.topic_client import OffsetLookup, consume_range, data_loss
from pykraft.spark.topic_options import (
    SOURCE_NAME,
    OffsetsJson,
    OffsetSpec,
    ReadOptions,
    from_json,
    rate_limit,
    read_options,
    to_json,
    write_options,
)

if TYPE_CHECKING:
    from confluent_kafka import Message

_HEADER = pa.struct([("key", pa.string()), ("value", pa.binary())])
_FIELDS = [("key", pa.binary()), ("value", pa.binary()), ("topic", pa.string()),
           ("partition", pa.int32()), ("offset", pa.int64()),
           ("timestamp", pa.timestamp("us", tz="UTC")), ("timestampType", pa.int32())]
#: librdkafka's timestamp types -> Kafka's TimestampType ids (what Spark's column holds)
_TIMESTAMP_TYPES = {1: 0, 2: 1}  # CREATE_TIME, LOG_APPEND_TIME; NOT_AVAILABLE -> -1


class PykraftDataSource(DataSource):
    """Topics of a running Kafka (or pykraft) cluster, read and written as Spark's Kafka
    source does."""

    @classmethod
    def name(cls) -> str:
        return SOURCE_NAME

    def schema(self) -> str:
        return schema_ddl(flag_option(self.options, "includeHeaders"))

    def reader(self, schema: StructType) -> DataSourceReader:
        return TopicBatchReader(read_options(self.options, streaming=False))

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:  # noqa: N802
        return TopicStreamReader(read_options(self.options, streaming=True))

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        if overwrite:
            raise ConfigError("Save mode Overwrite not allowed for Kafka: use "
                              "mode('append') (a topic is appended to, never replaced)")
        return topic_sink.TopicBatchWriter(topic_sink.plan(write_options(self.options), schema))

    def streamWriter(  # noqa: N802 - Spark's names, as all below
            self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        return topic_sink.TopicStreamWriter(topic_sink.plan(write_options(self.options),
                                                            schema))


@dataclass(frozen=True, slots=True)
class TopicRange:
    """One Spark task: offsets ``[start, end)`` of one partition."""

    topic: str
    partition: int
    start: int
    end: int


class RangePartition(InputPartition):
    def __init__(self, value: TopicRange) -> None:
        super().__init__(value)
        self.range = value


def resolve(lookup: OffsetLookup, spec: OffsetSpec, partitions: list[Partition],
            what: str) -> dict[Partition, int]:
    """Offsets of ``spec`` for ``partitions``: -2/-1 become the log start/end; JSON must
    name every partition, as Spark's Kafka source requires."""
    if isinstance(spec, int):
        return lookup.offsets(partitions, spec)
    given = dict(spec)
    if set(given) != set(partitions):
        raise ConfigError(f"If {what} contains specific offsets, you must specify all "
                          "TopicPartitions. Use -1 for latest, -2 for earliest. Specified: "
                          f"{sorted(given)} Assigned: {sorted(partitions)}")
    for word in (EARLIEST, LATEST):
        asked = [tp for tp, offset in given.items() if offset == word]
        given.update(lookup.offsets(asked, word))
    return given


def plan(start: dict[Partition, int], end: dict[Partition, int],
         fail_on_data_loss: bool) -> list[InputPartition]:
    """One input partition per partition with records in ``[start, end)``; an end below
    its start (a truncated or recreated partition) is data loss."""
    ranges: list[InputPartition] = []
    for (topic, number), stop in sorted(end.items()):
        begin = start[Partition(topic, number)]
        if stop < begin and fail_on_data_loss:
            raise data_loss(f"Partition {topic}-{number}'s offset was changed from {begin} "
                            f"to {stop}")
        if begin < stop:
            ranges.append(RangePartition(TopicRange(topic, number, begin, stop)))
    return ranges


def read_range(options: ReadOptions, part: InputPartition) -> Iterator[pa.RecordBatch]:
    """One Arrow batch per poll (Arrow rather than tuples: fewer Python objects per row).
    An empty plan reaches here as one ``InputPartition(None)`` (PySpark's): no rows."""
    if not isinstance(part, RangePartition):
        return
    span = part.range
    schema = pa.schema(_FIELDS + ([("headers", pa.list_(_HEADER))]
                                  if options.include_headers else []))
    for chunk in consume_range(options, Partition(span.topic, span.partition), span.start,
                               span.end):
        if chunk:
            yield _batch(chunk, schema, options.include_headers)


def _batch(chunk: list[Message], schema: pa.Schema, include_headers: bool) -> pa.RecordBatch:
    stamps = [m.timestamp() for m in chunk]
    columns = [[m.key() for m in chunk], [m.value() for m in chunk],
               [m.topic() for m in chunk], [m.partition() for m in chunk],
               [m.offset() for m in chunk], [ms * 1000 for _, ms in stamps],
               [_TIMESTAMP_TYPES.get(kind, -1) for kind, _ in stamps]]
    if include_headers:
        columns.append([_headers(m) for m in chunk])
    return pa.RecordBatch.from_arrays(
        [pa.array(values, type=f.type) for values, f in zip(columns, schema, strict=True)],
        schema=schema)


def _headers(message: Message) -> list[dict[str, object]] | None:
    """A record's headers as Arrow structs; null when it has none, as Spark's source."""
    headers = message.headers()
    if not headers:
        return None
    pairs = headers.items() if isinstance(headers, dict) else headers
    return [{"key": key, "value": value} for key, value in pairs]


class TopicBatchReader(DataSourceReader):
    """``spark.read``: ``startingOffsets`` (default earliest) to ``endingOffsets`` (default
    latest), resolved when the query is planned."""

    def __init__(self, options: ReadOptions) -> None:
        self.options = options

    def partitions(self) -> Sequence[InputPartition]:
        lookup = OffsetLookup(self.options)
        partitions = lookup.partitions()
        start = resolve(lookup, self.options.starting, partitions, "startingOffsets")
        end = resolve(lookup, self.options.ending, partitions, "endingOffsets")
        return plan(start, end, self.options.fail_on_data_loss)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return read_range(self.options, partition)


class TopicStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """``spark.readStream``: micro-batches between the partitions' offsets, capped by
    ``maxOffsetsPerTrigger``; partitions that appear later start at their log start."""

    def __init__(self, options: ReadOptions) -> None:
        self.options = options
        self._lookup: OffsetLookup | None = None
        #: the ends ``Trigger.AvailableNow`` stops at, fixed when the query starts
        self._target: dict[Partition, int] | None = None

    def __getstate__(self) -> dict[str, object]:
        """Executors get the options only: the driver's admin client does not pickle."""
        return {"options": self.options, "_lookup": None, "_target": None}

    def __setstate__(self, state: dict[str, object]) -> None:
        self.__dict__.update(state)

    @property
    def lookup(self) -> OffsetLookup:
        if self._lookup is None:
            self._lookup = OffsetLookup(self.options)
        return self._lookup

    def initialOffset(self) -> OffsetsJson:  # noqa: N802
        return to_json(resolve(self.lookup, self.options.starting, self.lookup.partitions(),
                               "startingOffsets"))

    def getDefaultReadLimit(self) -> ReadLimit:  # noqa: N802
        limit = self.options.max_offsets_per_trigger
        return ReadAll() if limit is None else ReadMaxRows(limit)

    def prepareForTriggerAvailableNow(self) -> None:  # noqa: N802
        self._target = self._latest()

    def latestOffset(self, start: OffsetsJson, limit: ReadLimit) -> OffsetsJson:  # noqa: N802
        latest = self._target if self._target is not None else self._latest()
        begin = self._begin(from_json(start), latest)
        if isinstance(limit, ReadMaxRows):
            latest = rate_limit(limit.max_rows, begin, latest)
        return to_json(latest)

    def partitions(self, start: OffsetsJson, end: OffsetsJson) -> Sequence[InputPartition]:
        stop = from_json(end)
        return plan(self._begin(from_json(start), stop), stop, self.options.fail_on_data_loss)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return read_range(self.options, partition)

    def commit(self, end: OffsetsJson) -> None:
        """Nothing to do: Spark checkpoints the offsets; no consumer group is used."""

    def stop(self) -> None:
        self._lookup = None

    def _latest(self) -> dict[Partition, int]:
        return self.lookup.offsets(self.lookup.partitions(), LATEST)

    def _begin(self, start: dict[Partition, int],
               end: dict[Partition, int]) -> dict[Partition, int]:
        """``start`` for the partitions of ``end``, new ones at their log start; a
        partition of ``start`` gone from ``end`` was deleted (data loss)."""
        gone = sorted(set(start) - set(end))
        if gone and self.options.fail_on_data_loss:
            raise data_loss(f"Partitions {gone} are gone")
        new = [tp for tp in end if tp not in start]
        return {**{tp: start[tp] for tp in end if tp in start},
                **self.lookup.offsets(new, EARLIEST)}
