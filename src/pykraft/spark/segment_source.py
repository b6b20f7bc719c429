"""``spark.read.format("kafka-segments")``: Spark's Kafka source, read from log directories.

A separate format rather than an option of ``kraft``: a Spark user reading topic data
expects the rows of ``format("kafka")`` (key, value, topic, partition, offset, timestamp,
timestampType[, headers]) and its options, while ``kraft`` reads the metadata log with
its own columns; one schema per format keeps both predictable. Rows are built by
:mod:`pykraft.spark.segment_rows`, one Spark input partition per segment file.

Options (strings, as for ``format("kafka")``): ``load(path)`` or ``load([path, ...])`` with
broker log directories (or ``<topic>-<partition>`` directories); ``subscribe`` (comma
separated topics) or ``subscribePattern`` (a regex on the whole name), else every topic;
``includeHeaders`` (``true`` adds the ``headers`` column).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any

from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.types import StructType

from pykraft.errors import ConfigError
from pykraft.spark import segment_rows
from pykraft.spark.source import flag_option

SOURCE_NAME = "kafka-segments"


class SegmentPartition(InputPartition):
    """One Spark task: one segment file."""

    def __init__(self, value: segment_rows.SegmentFile) -> None:
        super().__init__(value)
        self.segment = value


class KafkaSegmentsDataSource(DataSource):
    """Topic partitions' segments as the rows of Spark's Kafka source."""

    @classmethod
    def name(cls) -> str:
        return SOURCE_NAME

    def schema(self) -> str:
        return segment_rows.schema_ddl(flag_option(self.options, "includeHeaders"))

    def reader(self, schema: StructType) -> DataSourceReader:
        return KafkaSegmentsReader(_paths(self.options), _topics(self.options),
                                   flag_option(self.options, "includeHeaders"))


class KafkaSegmentsReader(DataSourceReader):
    def __init__(self, paths: list[str], topics: segment_rows.TopicFilter,
                 include_headers: bool) -> None:
        self.paths = paths
        self.topics = topics
        self.include_headers = include_headers

    def partitions(self) -> Sequence[InputPartition]:
        return [SegmentPartition(s) for s in segment_rows.discover(self.paths, self.topics)]

    def read(self, partition: InputPartition) -> Iterator[tuple[Any, ...]]:
        assert isinstance(partition, SegmentPartition)
        return segment_rows.read_segment(partition.segment, include_headers=self.include_headers)


def _paths(options: Any) -> list[str]:
    """``load(path)`` sets ``path``; ``load([p1, p2])`` sets ``paths`` to a JSON array."""
    if options.get("paths"):
        paths = json.loads(options["paths"])
    elif options.get("path"):
        paths = [options["path"]]
    else:
        raise ConfigError(f"the {SOURCE_NAME} data source needs log directories: "
                          f"spark.read.format('{SOURCE_NAME}').load(PATH or [PATH, ...])")
    return [str(p) for p in paths]


def _topics(options: Any) -> segment_rows.TopicFilter:
    subscribe, pattern = options.get("subscribe"), options.get("subscribePattern")
    if subscribe and pattern:
        raise ConfigError("Only one of subscribe and subscribePattern can be specified for "
                          f"the {SOURCE_NAME} source")
    names = tuple(t.strip() for t in subscribe.split(",") if t.strip()) if subscribe else ()
    return segment_rows.TopicFilter(names, pattern or None)
