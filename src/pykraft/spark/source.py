"""``spark.read.format("kraft")``: a PySpark 4 Python data source over KRaft files.

Planning (``partitions``) runs in a Python worker on the driver host and reading (``read``)
on executors, so both only handle plain, picklable data and the paths must be visible to
every executor. The record logic lives in :mod:`pykraft.spark.rows`.

Options (all strings, case-insensitive): ``path`` (what ``load`` gets), ``cluster`` (a label
copied into every row), ``rawBytes`` (``true`` fills ``key``/``value``), ``mode``
(``PERMISSIVE`` default, or ``FAILFAST``), ``maxPartitionBytes`` (split larger files at
batch boundaries), ``minOffset``/``maxOffset`` (inclusive bounds, always safe), ``pushdown``
(``true`` takes ``WHERE offset ...`` comparisons into the scan; needs
``spark.sql.python.filterPushdown.enabled``, which :func:`register` sets).

Pushdown is opt-in because PySpark 4.3 keeps the pushed reader in the DataFrame's relation:
a later query on the *same* DataFrame without any filter reuses it and silently sees only
the previously pushed offsets (``tests/spark/test_source.py`` pins this). Build a fresh
``spark.read...load()`` per filtered query, or use ``minOffset``/``maxOffset``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    EqualTo,
    Filter,
    GreaterThan,
    GreaterThanOrEqual,
    InputPartition,
    LessThan,
    LessThanOrEqual,
)
from pyspark.sql.types import StructType

from pykraft.errors import ConfigError
from pykraft.spark import files, rows

SOURCE_NAME = "kraft"
PUSHDOWN_CONF = "spark.sql.python.filterPushdown.enabled"


class RangePartition(InputPartition):
    """One Spark task: a batch-aligned byte range of one file."""

    def __init__(self, value: files.FileRange) -> None:
        super().__init__(value)
        self.range = value


class KRaftDataSource(DataSource):
    """Segments, snapshots and bootstrap.checkpoint files as one row per record."""

    @classmethod
    def name(cls) -> str:
        return SOURCE_NAME

    def schema(self) -> str:
        return rows.SCHEMA_DDL

    def reader(self, schema: StructType) -> DataSourceReader:
        options = _parse_options(self.options)
        if flag_option(self.options, "pushdown"):
            return PushdownReader(options)
        return KRaftReader(options)


class KRaftReader(DataSourceReader):
    """Plans one partition per file range and reads it through :func:`rows.read_range`."""

    def __init__(self, options: _Options) -> None:
        self.options = options
        self.bounds = options.bounds

    def partitions(self) -> Sequence[InputPartition]:
        ranges = files.plan(files.discover(self.options.path), self.options.max_bytes)
        kept = [r for r in ranges if self.bounds.overlaps(r.first_offset, r.next_offset)]
        return [RangePartition(r) for r in kept]

    def read(self, partition: InputPartition) -> Iterator[tuple[Any, ...]]:
        assert isinstance(partition, RangePartition)
        read_options = rows.ReadOptions(
            cluster=self.options.cluster, raw_bytes=self.options.raw_bytes,
            mode=self.options.mode, bounds=self.bounds)
        return rows.read_range(partition.range, read_options)


class PushdownReader(KRaftReader):
    """Takes comparisons of ``offset`` with a constant; applies them exactly in ``read``."""

    def pushFilters(self, filters: list[Filter]) -> Iterable[Filter]:  # noqa: N802 - Spark's name
        for pushed in filters:
            bounds = int_bounds(pushed, "offset")
            if bounds is None:
                yield pushed
            else:
                self.bounds = self.bounds.narrowed(*bounds)


def int_bounds(pushed: Filter, column: str) -> tuple[int | None, int | None] | None:
    """(low, high) inclusive for a comparison of ``column`` with an integer, else None
    (also used by the ``kafka-segments`` source).

    ``isinstance`` first: a ``Not`` filter has no ``attribute``.
    """
    comparisons = (EqualTo, GreaterThan, GreaterThanOrEqual, LessThan, LessThanOrEqual)
    if not isinstance(pushed, comparisons) or pushed.attribute != (column,):
        return None
    value = pushed.value
    if not isinstance(value, int) or isinstance(value, bool):
        return None
    if isinstance(pushed, EqualTo):
        return value, value
    if isinstance(pushed, GreaterThan):
        return value + 1, None
    if isinstance(pushed, GreaterThanOrEqual):
        return value, None
    if isinstance(pushed, LessThan):
        return None, value - 1
    return None, value


class _Options:
    """The parsed reader options; plain attributes so the reader pickles."""

    def __init__(self, path: str, cluster: str | None, raw_bytes: bool, mode: str,
                 max_bytes: int, bounds: rows.OffsetBounds) -> None:
        self.path = path
        self.cluster = cluster
        self.raw_bytes = raw_bytes
        self.mode = mode
        self.max_bytes = max_bytes
        self.bounds = bounds


def _parse_options(options: Any) -> _Options:
    path = options.get("path")
    if not path:
        raise ConfigError("the kraft data source needs a path: spark.read.format('kraft')"
                          ".load(PATH)")
    mode = str(options.get("mode", rows.PERMISSIVE)).upper()
    if mode not in rows.MODES:
        raise ConfigError(f"option mode must be one of {', '.join(rows.MODES)}, not {mode!r}")
    bounds = rows.OffsetBounds(int_option(options, "minOffset"),
                               int_option(options, "maxOffset"))
    max_bytes = int_option(options, "maxPartitionBytes") or files.DEFAULT_MAX_BYTES
    return _Options(str(path), options.get("cluster"), flag_option(options, "rawBytes"), mode,
                    max_bytes, bounds)


def int_option(options: Any, key: str) -> int | None:
    text = options.get(key)
    if text is None:
        return None
    try:
        return int(text)
    except ValueError:
        raise ConfigError(f"option {key} must be an integer, not {text!r}") from None


def flag_option(options: Any, key: str, *, default: bool = False) -> bool:
    text = options.get(key)
    if text is None:
        return default
    lowered = str(text).strip().lower()
    if lowered not in ("true", "false"):
        raise ConfigError(f"option {key} must be true or false, not {text!r}")
    return lowered == "true"


def register(spark: SparkSession) -> None:
    """Make ``format("kraft")`` available in this application (once per Connect session),
    with the pushdown switch its reader needs."""
    spark.conf.set(PUSHDOWN_CONF, "true")
    spark.dataSource.register(KRaftDataSource)
