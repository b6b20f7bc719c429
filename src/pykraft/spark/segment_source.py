"""``spark.read.format("kafka-segments")``: Spark's Kafka source, read from log directories.

A separate format rather than an option of ``kraft``: a Spark user reading topic data
expects the rows of ``format("kafka")`` (key, value, topic, partition, offset, timestamp,
timestampType[, headers]) and its options, while ``kraft`` reads the metadata log with
its own columns; one schema per format keeps both predictable. What to read is planned by
:mod:`pykraft.spark.segment_plan` (one Spark input partition per segment file), the rows
are read by :mod:`pykraft.spark.segment_rows` as Arrow batches.

Options (strings, case-insensitive; any other is refused): ``load(path)`` or
``load([path, ...])`` with broker log directories (or ``<topic>-<partition>`` directories);
``subscribe`` (comma separated topics), ``subscribePattern`` (a regex on the whole name) or
``assign`` (JSON), else every topic; ``startingOffsets``, ``endingOffsets`` and
``failOnDataLoss`` as Spark's Kafka source; ``includeHeaders``; ``committedOnly`` (default
``true``: up to the high watermark); ``isolationLevel`` (``read_uncommitted``, the default,
or ``read_committed``: up to the last stable offset, aborted transactions left out);
``pushdown`` (``true`` takes ``WHERE`` comparisons of ``partition``, ``offset`` and
``timestamp`` into the scan; opt-in for the reason :mod:`pykraft.spark.source` gives).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime

import pyarrow as pa
from pyspark.sql import datasource as sds
from pyspark.sql.datasource import DataSource, DataSourceReader, Filter, InputPartition
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import StructType

from pykraft.errors import ConfigError
from pykraft.spark import segment_plan, segment_rows
from pykraft.spark.source import flag_option, int_bounds

SOURCE_NAME = "kafka-segments"
KNOWN_OPTIONS = ("path", "paths", "subscribe", "subscribePattern", "assign",
                 "startingOffsets", "endingOffsets", "failOnDataLoss", "includeHeaders",
                 "committedOnly", "isolationLevel", "pushdown")
_LOWER_BOUNDS = (sds.EqualTo, sds.GreaterThan, sds.GreaterThanOrEqual)


READ_UNCOMMITTED, READ_COMMITTED = "read_uncommitted", "read_committed"


def _isolation(text: str) -> bool:
    """Whether ``isolationLevel`` asks for committed transactions only."""
    level = text.strip().lower()
    if level not in (READ_UNCOMMITTED, READ_COMMITTED):
        raise ConfigError(f"isolationLevel must be {READ_UNCOMMITTED} or {READ_COMMITTED}, "
                          f"not {text!r}")
    return level == READ_COMMITTED


class SegmentPartition(InputPartition):
    """One Spark task: offsets of one segment file."""

    def __init__(self, value: segment_plan.SegmentFile) -> None:
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
        spec = parse_options(self.options)
        options = segment_rows.ReadOptions(flag_option(self.options, "includeHeaders"),
                                           spec.fail_on_data_loss)
        arrow = to_arrow_schema(schema, timezone="UTC")
        if flag_option(self.options, "pushdown"):
            return PushdownReader(spec, options, arrow)
        return KafkaSegmentsReader(spec, options, arrow)


class KafkaSegmentsReader(DataSourceReader):
    def __init__(self, spec: segment_plan.ReadSpec, options: segment_rows.ReadOptions,
                 arrow: pa.Schema) -> None:
        self.spec = spec
        self.options = options
        self.arrow = arrow
        self.bounds = segment_plan.OffsetBounds()

    def partitions(self) -> Sequence[InputPartition]:
        return [SegmentPartition(s) for s in segment_plan.plan(self.spec, self.bounds)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, SegmentPartition)
        options = replace(self.options, min_timestamp=self.bounds.min_timestamp)
        return segment_rows.read_arrow(partition.segment, options, self.arrow)


class PushdownReader(KafkaSegmentsReader):
    """Takes ``partition`` and ``offset`` comparisons (applied exactly: partitions and
    segments are not planned, batches are skipped by header); a lower bound on
    ``timestamp`` skips batches by their max timestamp, and Spark still applies it."""

    def pushFilters(self, filters: list[Filter]) -> Iterable[Filter]:  # noqa: N802 - Spark's name
        for pushed in filters:
            offsets = int_bounds(pushed, "offset")
            partitions = int_bounds(pushed, "partition")
            if offsets is not None:
                self.bounds = self.bounds.narrowed(*offsets)
            elif isinstance(pushed, sds.In) and pushed.attribute == ("partition",):
                self.bounds = self.bounds.only(v for v in pushed.value if isinstance(v, int))
            elif partitions is not None:
                low, high = partitions
                self.bounds = self.bounds.only(range(max(low or 0, 0), (
                    2**31 if high is None else high + 1)))
            else:
                if isinstance(pushed, _LOWER_BOUNDS) and pushed.attribute == ("timestamp",):
                    self._min_timestamp(pushed.value)
                yield pushed

    def _min_timestamp(self, value: object) -> None:
        if isinstance(value, datetime):
            # PySpark hands a TIMESTAMP filter value over as a UTC datetime (a Variant);
            # a naive one (TIMESTAMP_NTZ) means UTC too
            aware = value if value.tzinfo else value.replace(tzinfo=UTC)
            self.bounds = self.bounds.since(int(aware.timestamp() * 1000))


def parse_options(given: Mapping[str, str]) -> segment_plan.ReadSpec:
    """The read's options, names case-insensitive as Spark's; unknown ones refused (they
    would be silently ignored)."""
    known = {name.lower(): name for name in KNOWN_OPTIONS}
    unknown = sorted(key for key in given if key.lower() not in known)
    options = {known[key.lower()]: value for key, value in given.items()
               if key.lower() in known}
    if unknown:
        raise ConfigError(f"unknown option(s) of the {SOURCE_NAME} source: "
                          f"{', '.join(unknown)}; the known ones are {', '.join(KNOWN_OPTIONS)}")
    flag_option(options, "includeHeaders")
    flag_option(options, "pushdown")
    committed_only = flag_option(options, "committedOnly", default=True)
    read_committed = _isolation(options.get("isolationLevel", READ_UNCOMMITTED))
    if read_committed and not committed_only:
        raise ConfigError("isolationLevel=read_committed reads committed data only; it "
                          "cannot be combined with committedOnly=false")
    return segment_plan.ReadSpec(
        paths=_paths(options), topics=_topics(options),
        starting=segment_plan.parse_offsets(options.get("startingOffsets"), "startingOffsets",
                                            segment_plan.EARLIEST, ("earliest",)),
        ending=segment_plan.parse_offsets(options.get("endingOffsets"), "endingOffsets",
                                          segment_plan.LATEST, ("latest",)),
        fail_on_data_loss=flag_option(options, "failOnDataLoss", default=True),
        committed_only=committed_only, read_committed=read_committed)


def _paths(options: Mapping[str, str]) -> tuple[str, ...]:
    """``load(path)`` sets ``path``; ``load([p1, p2])`` sets ``paths`` to a JSON array."""
    if options.get("paths"):
        paths = json.loads(options["paths"])
    elif options.get("path"):
        paths = [options["path"]]
    else:
        raise ConfigError(f"the {SOURCE_NAME} data source needs log directories: "
                          f"spark.read.format('{SOURCE_NAME}').load(PATH or [PATH, ...])")
    return tuple(str(p) for p in paths)


def _topics(options: Mapping[str, str]) -> segment_plan.TopicFilter:
    subscribe, pattern = options.get("subscribe"), options.get("subscribePattern")
    assign = options.get("assign")
    if sum(1 for o in (subscribe, pattern, assign) if o) > 1:
        raise ConfigError("Only one of assign, subscribe and subscribePattern can be "
                          f"specified for the {SOURCE_NAME} source")
    if assign:
        return segment_plan.TopicFilter(assign=segment_plan.parse_assign(assign))
    names = tuple(t.strip() for t in subscribe.split(",") if t.strip()) if subscribe else ()
    return segment_plan.TopicFilter(names, pattern or None)
