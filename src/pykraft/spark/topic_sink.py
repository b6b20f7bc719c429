"""The writers of ``format("pykraft")``, as Spark's Kafka sink: a ``value`` column (string
or binary), optional ``key`` (string or binary), ``topic`` (string; the ``topic`` option
wins over it), ``partition`` (int) and ``headers`` (array<struct<key string, value
binary>>); other columns are ignored.

Each task produces its rows with an idempotent producer (``acks=all``), flushes and fails on
the first delivery error, so a committed task's rows are in the log exactly once; a retried
task or micro-batch writes its rows again (at least once, as Spark's Kafka sink).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSourceArrowWriter,
    DataSourceStreamArrowWriter,
    WriterCommitMessage,
)
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    DataType,
    IntegerType,
    StringType,
    StructField,
    StructType,
)

from pykraft.errors import ConfigError
from pykraft.spark.topic_client import OutRecord, produce_all
from pykraft.spark.topic_options import WriteOptions

_TEXT_OR_BYTES = (StringType, BinaryType)
_HEADERS = ArrayType(StructType([StructField("key", StringType()),
                                 StructField("value", BinaryType())]))


@dataclass(frozen=True, slots=True)
class SinkPlan:
    """What each task needs: the client properties and which columns to read."""

    client: dict[str, str]
    topic: str | None
    columns: frozenset[str]


@dataclass(frozen=True, slots=True)
class Written(WriterCommitMessage):
    records: int


def plan(options: WriteOptions, schema: StructType) -> SinkPlan:
    """Spark's Kafka sink's checks of the input's columns."""
    types: dict[str, DataType] = {f.name: f.dataType for f in schema.fields}
    if options.topic is None and "topic" not in types:
        raise ConfigError("topic option required when no 'topic' attribute is present. Use "
                          "the topic option for setting a topic.")
    if "value" not in types:
        raise ConfigError("Required attribute 'value' not found")
    _check(types, "topic", (StringType,), "Topic type must be a StringType")
    _check(types, "key", _TEXT_OR_BYTES, "Key attribute type must be a StringType or "
           "BinaryType")
    _check(types, "value", _TEXT_OR_BYTES, "Value attribute type must be a StringType or "
           "BinaryType")
    _check(types, "partition", (IntegerType,), "Partition type must be IntegerType")
    if "headers" in types and not _headers_type(types["headers"]):
        raise ConfigError(f"Headers attribute type must be {_HEADERS.simpleString()}")
    wanted = {"key", "value", "partition", "headers"} | (
        {"topic"} if options.topic is None else set())
    return SinkPlan(options.client, options.topic, frozenset(wanted.intersection(types)))


def _check(types: dict[str, DataType], name: str, allowed: tuple[type[DataType], ...],
           message: str) -> None:
    if name in types and not isinstance(types[name], allowed):
        raise ConfigError(f"{message}, not {types[name].simpleString()}")


def _headers_type(given: DataType) -> bool:
    """array<struct<key string, value binary>>, whatever the nullability."""
    if not isinstance(given, ArrayType) or not isinstance(given.elementType, StructType):
        return False
    fields = [(f.name, type(f.dataType)) for f in given.elementType.fields]
    return fields == [("key", StringType), ("value", BinaryType)]


def records(sink: SinkPlan, batches: Iterator[pa.RecordBatch]) -> Iterator[OutRecord]:
    for batch in batches:
        columns = {name: batch.column(name).to_pylist() for name in sink.columns}
        for row in range(batch.num_rows):
            topic = sink.topic or columns["topic"][row]
            if topic is None:
                raise ConfigError("null topic present in the data. Use the topic option for "
                                  "setting a topic.")
            headers = columns["headers"][row] if "headers" in columns else None
            yield (topic, _bytes(columns, "key", row), _bytes(columns, "value", row),
                   columns["partition"][row] if "partition" in columns else None,
                   [(h["key"], h["value"]) for h in headers] if headers else None)


def _bytes(columns: dict[str, list[object]], name: str, row: int) -> bytes | None:
    value = columns[name][row] if name in columns else None
    if value is None or isinstance(value, bytes):
        return value
    return str(value).encode()


class _ProduceTask:
    """A write task of either writer: produce the task's rows, flushed."""

    def __init__(self, sink: SinkPlan) -> None:
        self.sink = sink

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriterCommitMessage:
        return Written(produce_all(self.sink.client, records(self.sink, iterator)))


class TopicBatchWriter(_ProduceTask, DataSourceArrowWriter):
    """``df.write.format("pykraft")``."""


class TopicStreamWriter(_ProduceTask, DataSourceStreamArrowWriter):
    """``df.writeStream.format("pykraft")``: each micro-batch's tasks as the batch writer's;
    nothing to do at the batch's commit (the records are acknowledged already)."""

    def commit(self, messages: list[WriterCommitMessage | None],
               batchId: int) -> None:  # noqa: N803 - Spark's name
        """The tasks flushed their records before reporting."""

    def abort(self, messages: list[WriterCommitMessage | None],
              batchId: int) -> None:  # noqa: N803 - Spark's name
        """Records of a failed batch stay in the log (a Kafka sink cannot take them back);
        the retried batch writes them again."""
