"""``format("pykraft")`` against one real pykraft broker: batch and streaming reads with
Spark's Kafka options, micro-batches capped by ``maxOffsetsPerTrigger``, a Parquet file
sink restarted from its checkpoint (no loss, no duplicates), batch and streaming writes
(headers included) read back, and the options refused."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewPartitions
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.connect.session import SparkSession as ConnectSession
from pyspark.sql.streaming.query import StreamingQuery

from pykraft.tools.local_cluster import LocalCluster

sys.path.insert(0, str(Path(__file__).parent.parent / "acceptance"))
from broker_harness import create_topic, running_cluster, wait_for

pytestmark = [pytest.mark.spark, pytest.mark.integration]
PARTITIONS = 3
PER_PARTITION = 40
#: a query's bounded wait (a loaded 2-core machine)
QUERY_TIMEOUT_S = 120


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with running_cluster(tmp_path_factory.mktemp("pyksource") / "c") as made:
        create_topic(made.bootstrap_servers, "events", PARTITIONS)
        create_topic(made.bootstrap_servers, "other", 1)
        produce(made, "events", [(p, f"e{p}-{i}") for i in range(PER_PARTITION)
                                 for p in range(PARTITIONS)])
        produce(made, "other", [(0, f"o-{i}") for i in range(10)])
        yield made


def produce(cluster: LocalCluster, topic: str, records: list[tuple[int, str]]) -> None:
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers,
                         "enable.idempotence": True})
    for partition, text in records:
        producer.produce(topic, key=text.encode(), value=text.encode(), partition=partition)
    assert producer.flush(60) == 0


def source(spark: SparkSession, cluster: LocalCluster, **options: str) -> DataFrame:
    reader = spark.read.format("pykraft").option("kafka.bootstrap.servers",
                                                   cluster.bootstrap_servers)
    return reader.options(**options).load()


def values(frame: DataFrame) -> list[str]:
    return sorted(bytes(r["value"]).decode() for r in frame.select("value").collect())


def test_batch_reads_offsets_assign_and_pattern(spark: SparkSession,
                                                cluster: LocalCluster) -> None:
    everything = source(spark, cluster, subscribe="events")
    assert everything.count() == PARTITIONS * PER_PARTITION
    row = everything.filter("partition = 1 AND offset = 5").collect()[0]
    assert (bytes(row["key"]), bytes(row["value"]), row["topic"], row["timestampType"]) == (
        b"e1-5", b"e1-5", "events", 0)
    ranged = source(spark, cluster, subscribe="events",
                    startingOffsets=json.dumps({"events": {"0": 10, "1": -2, "2": 39}}),
                    endingOffsets=json.dumps({"events": {"0": 12, "1": 1, "2": -1}}))
    assert values(ranged) == ["e0-10", "e0-11", "e1-0", "e2-39"]
    assigned = source(spark, cluster, assign=json.dumps({"events": [2], "other": [0]}),
                      endingOffsets=json.dumps({"events": {"2": 2}, "other": {"0": 1}}))
    assert values(assigned) == ["e2-0", "e2-1", "o-0"]
    assert source(spark, cluster, subscribePattern="oth.*").count() == 10
    assert source(spark, cluster, subscribePattern="ev").count() == 0  # whole name matches


def stream(spark: SparkSession, cluster: LocalCluster, **options: str) -> DataFrame:
    reader = spark.readStream.format("pykraft").option("kafka.bootstrap.servers",
                                                         cluster.bootstrap_servers)
    return reader.options(**options).load()


def run_available_now(frame: DataFrame, output: Path, checkpoint: Path) -> StreamingQuery:
    query = (frame.selectExpr("CAST(value AS STRING) AS value", "partition", "offset")
             .writeStream.format("parquet").option("path", str(output))
             .option("checkpointLocation", str(checkpoint))
             .trigger(availableNow=True).start())
    assert query.awaitTermination(QUERY_TIMEOUT_S)
    assert query.exception() is None
    return query


def test_stream_caps_micro_batches_and_restarts_from_its_checkpoint(
        spark: SparkSession, cluster: LocalCluster, tmp_path: Path) -> None:
    create_topic(cluster.bootstrap_servers, "growing", PARTITIONS)
    produce(cluster, "growing", [(p, f"g{p}-{i}") for i in range(PER_PARTITION)
                                 for p in range(PARTITIONS)])
    output, checkpoint = tmp_path / "out", tmp_path / "checkpoint"
    frame = stream(spark, cluster, subscribe="growing", startingOffsets="earliest",
                   maxOffsetsPerTrigger="45")
    query = run_available_now(frame, output, checkpoint)
    rows = [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]]
    assert rows == [45, 45, 30]  # 15 of each partition per trigger, as Spark spreads them
    # More records, and a partition added while the query is down: read from its start.
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    (added,) = admin.create_partitions([NewPartitions("growing", PARTITIONS + 1)]).values()
    added.result(60)
    wait_for("the new partition's leader", lambda: led(admin, "growing", PARTITIONS + 1))
    produce(cluster, "growing", [(p, f"late{p}-{i}") for i in range(5)
                                 for p in range(PARTITIONS + 1)])
    query = run_available_now(frame, output, checkpoint)
    assert [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]] == [20]
    written = spark.read.parquet(str(output))
    got = sorted((r["partition"], r["offset"]) for r in written.collect())
    assert got == ([(p, o) for p in range(PARTITIONS) for o in range(PER_PARTITION + 5)]
                   + [(PARTITIONS, o) for o in range(5)])  # each once: no loss, no duplicate


def led(admin: AdminClient, topic: str, partitions: int) -> bool | None:
    described = admin.list_topics(topic, timeout=10).topics[topic].partitions
    return (len(described) == partitions and all(
        p.leader >= 0 for p in described.values())) or None


def test_batch_and_stream_writes_read_back_with_headers(spark: SparkSession,
                                                       cluster: LocalCluster,
                                                       tmp_path: Path) -> None:
    create_topic(cluster.bootstrap_servers, "written", 2)
    rows = [(f"k{i}", f"v{i}", i % 2, [("h", f"{i}".encode()), ("n", None)])
            for i in range(20)]
    frame = spark.createDataFrame(
        rows, "key STRING, value STRING, partition INT, "
              "headers ARRAY<STRUCT<key: STRING, value: BINARY>>")
    (frame.write.format("pykraft").option("kafka.bootstrap.servers", cluster.bootstrap_servers)
     .option("topic", "written").mode("append").save())
    copied = (stream(spark, cluster, subscribe="other", startingOffsets="earliest",
                     includeHeaders="true")
              .selectExpr("'written' AS topic", "key", "value", "headers"))
    query = (copied.writeStream.format("pykraft")
             .option("kafka.bootstrap.servers", cluster.bootstrap_servers)
             .option("checkpointLocation", str(tmp_path / "checkpoint"))
             .trigger(availableNow=True).start())
    assert query.awaitTermination(QUERY_TIMEOUT_S) and query.exception() is None
    back = source(spark, cluster, subscribe="written", includeHeaders="true").collect()
    by_value = {bytes(r["value"]).decode(): r for r in back}
    assert sorted(by_value) == sorted([f"v{i}" for i in range(20)] +
                                      [f"o-{i}" for i in range(10)])
    assert len(back) == 30  # idempotent producers: no record twice
    first = by_value["v3"]
    assert (bytes(first["key"]), first["partition"]) == (b"k3", 1)
    assert [(h["key"], h["value"]) for h in first["headers"]] == [("h", b"3"), ("n", None)]
    assert by_value["o-4"]["headers"] is None  # none given: null, as Spark's source


def test_offsets_below_the_log_start_are_data_loss(spark: SparkSession,
                                                  cluster: LocalCluster) -> None:
    create_topic(cluster.bootstrap_servers, "trimmed", 1)
    produce(cluster, "trimmed", [(0, f"t-{i}") for i in range(10)])
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    (deleted,) = admin.delete_records([TopicPartition("trimmed", 0, 4)]).values()
    assert deleted.result(60).low_watermark == 4
    from_zero = json.dumps({"trimmed": {"0": 0}})
    with pytest.raises(Exception, match="Cannot fetch offset 0 of trimmed-0"):
        source(spark, cluster, subscribe="trimmed", startingOffsets=from_zero).count()
    kept = source(spark, cluster, subscribe="trimmed", startingOffsets=from_zero,
                  failOnDataLoss="false")
    assert values(kept) == [f"t-{i}" for i in range(4, 10)]


def test_a_spark_connect_client_reads_and_streams(remote: ConnectSession,
                                                 cluster: LocalCluster,
                                                 tmp_path: Path) -> None:
    options = {"kafka.bootstrap.servers": cluster.bootstrap_servers, "subscribe": "other"}
    assert remote.read.format("pykraft").options(**options).load().count() == 10
    query = (remote.readStream.format("pykraft").options(**options)
             .option("startingOffsets", "earliest").load()
             .selectExpr("CAST(value AS STRING) AS value")
             .writeStream.format("parquet").option("path", str(tmp_path / "out"))
             .option("checkpointLocation", str(tmp_path / "checkpoint"))
             .trigger(availableNow=True).start())
    assert query.awaitTermination(QUERY_TIMEOUT_S) and query.exception() is None
    written = remote.read.parquet(str(tmp_path / "out")).collect()
    assert sorted(r["value"] for r in written) == sorted(f"o-{i}" for i in range(10))


@pytest.mark.parametrize(("options", "message"), [
    ({"subscribe": "events", "startingOffset": "earliest"}, "unknown or unsupported option"),
    ({"subscribe": "events", "kafka.group.id": "g"}, "kafka.group.id"),
    ({}, "One of the following options must be specified"),
    ({"subscribe": "events", "assign": '{"events":[0]}'}, "Only one of"),
    ({"subscribe": "events", "startingOffsets": '{"events":{"0":1}}'},
     "you must specify all TopicPartitions"),
])
def test_refuses_options_spark_would_refuse(spark: SparkSession, cluster: LocalCluster,
                                            options: dict[str, str], message: str) -> None:
    with pytest.raises(Exception, match=message):
        source(spark, cluster, **options).count()


def test_refuses_a_missing_bootstrap(spark: SparkSession) -> None:
    with pytest.raises(Exception, match=r"kafka\.bootstrap\.servers. must be specified"):
        spark.read.format("pykraft").option("subscribe", "events").load().count()
