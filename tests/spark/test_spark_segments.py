"""``spark.read.format("kafka-segments")``: Spark's Kafka source schema over log directories."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from pyspark.errors import PythonException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from user_segments import SparkRow, checkpoint_high_watermarks, expected_rows, write_partition

pytestmark = pytest.mark.spark

# Spark's KafkaRecordToRowConverter schema (includeHeaders adds the last column)
KAFKA_SCHEMA = StructType([
    StructField("key", BinaryType()),
    StructField("value", BinaryType()),
    StructField("topic", StringType()),
    StructField("partition", IntegerType()),
    StructField("offset", LongType()),
    StructField("timestamp", TimestampType()),
    StructField("timestampType", IntegerType()),
])
HEADERS = StructField("headers", ArrayType(StructType([
    StructField("key", StringType()), StructField("value", BinaryType())])))


@pytest.fixture(scope="module")
def log_dirs(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """Two log directories of one broker (JBOD): ``orders-0`` in one, ``orders-1`` and
    ``audit-0`` in the other, plus the metadata log the reader must pass over."""
    root = tmp_path_factory.mktemp("jbod")
    first, second = root / "d1", root / "d2"
    first.mkdir()
    second.mkdir()
    write_partition(first / "orders-0")
    shutil.copytree(first / "orders-0", second / "orders-1")
    shutil.copytree(first / "orders-0", second / "audit-0")
    shutil.copytree(first / "orders-0", first / "__cluster_metadata-0")
    checkpoint_high_watermarks(first)
    checkpoint_high_watermarks(second)
    return [first, second]


def _expected(log_dirs: list[Path], topics: set[str]) -> list[SparkRow]:
    rows: list[SparkRow] = []
    for directory in log_dirs:
        for partition_dir in sorted(directory.iterdir()):
            topic, _, number = partition_dir.name.rpartition("-")
            if topic in topics:
                rows += [row for segment in sorted(partition_dir.glob("*.log"))
                         for row in expected_rows(segment, topic, int(number))]
    return rows


def _key(row: SparkRow) -> tuple[str, int, int]:
    return row[2], row[3], row[4]


def test_rows_and_schema_equal_kafka_python(spark: SparkSession, log_dirs: list[Path]) -> None:
    frame = (spark.read.format("kafka-segments").option("includeHeaders", "true")
             .load([str(d) for d in log_dirs]))
    assert frame.schema.fields == [*KAFKA_SCHEMA.fields, HEADERS]
    got = [(r.key, r.value, r.topic, r.partition, r.offset, r.timestamp, r.timestampType,
            None if r.headers is None else [(h.key, h.value) for h in r.headers])
           for r in frame.collect()]
    expected = _expected(log_dirs, {"orders", "audit"})
    # PySpark gives timestamps as naive datetimes in the Python process's local time
    local = [(*row[:5], row[5].astimezone().replace(tzinfo=None), *row[6:]) for row in expected]
    assert sorted(got, key=_key) == sorted(local, key=_key)
    segments = sum(len(list(d.glob("*-*/*.log"))) for d in log_dirs) - len(
        list((log_dirs[0] / "__cluster_metadata-0").glob("*.log")))
    assert frame.rdd.getNumPartitions() == segments


def test_options_as_spark_kafka_source(spark: SparkSession, log_dirs: list[Path]) -> None:
    plain = spark.read.format("kafka-segments").option("subscribe", "orders").load(
        [str(d) for d in log_dirs])
    assert plain.schema == KAFKA_SCHEMA
    counts = {(r.partition, r["count"]) for r in plain.groupBy("partition").count().collect()}
    per_partition = len(_expected(log_dirs[:1], {"orders"}))
    assert counts == {(0, per_partition), (1, per_partition)}
    pattern = spark.read.format("kafka-segments").option("subscribePattern", "aud.*").load(
        str(log_dirs[1]))
    assert {r.topic for r in pattern.select("topic").distinct().collect()} == {"audit"}
    one = spark.read.format("kafka-segments").load(str(log_dirs[1] / "orders-1"))
    assert one.filter("timestampType = 1").count() == 2


def test_pushdown_plans_only_what_the_filter_keeps(spark: SparkSession,
                                                  log_dirs: list[Path]) -> None:
    paths = [str(d) for d in log_dirs]
    where = ("partition = 1 AND offset >= 13 AND offset < 17 "
             "AND timestamp >= '1970-01-01 00:00:01.5'")

    def load(pushdown: str) -> DataFrame:
        return (spark.read.format("kafka-segments").option("pushdown", pushdown)
                .option("subscribe", "orders").load(paths).filter(where))

    pushed, plain = load("true"), load("false")
    assert pushed.rdd.getNumPartitions() == 1 < plain.rdd.getNumPartitions()
    rows = sorted((r.partition, r.offset) for r in pushed.collect())
    assert rows == sorted((r.partition, r.offset) for r in plain.collect())
    assert rows == [(1, 15), (1, 16)]  # 13 and 14 are older (the ZSTD batch, 1.4 s)


def test_damage_and_unknown_options_fail_the_query(spark: SparkSession, log_dirs: list[Path],
                                                   tmp_path: Path) -> None:
    copy = tmp_path / "d2"
    shutil.copytree(log_dirs[1], copy)
    first = sorted((copy / "orders-1").glob("*.log"))[0]
    first.write_bytes(first.read_bytes()[:-10])
    frame = spark.read.format("kafka-segments").option("subscribe", "orders").load(str(copy))
    with pytest.raises(PythonException, match=f"corrupt record batch in {first}"):
        frame.collect()
    lenient = frame.sparkSession.read.format("kafka-segments").option("assign", '{"orders":[1]}')
    assert lenient.option("failOnDataLoss", "false").load(str(copy)).count() == 17
    with pytest.raises(Exception, match=r"unknown option.*maxoffsetspertrigger"):
        spark.read.format("kafka-segments").option("maxOffsetsPerTrigger", "9").load(
            str(copy)).collect()
