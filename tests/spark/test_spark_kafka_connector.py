"""Apache Spark's own Kafka connector (``format("kafka")``, spark-sql-kafka-0-10) against a
real pykraft cluster: batch and Structured Streaming, read and write, with Spark's options.

Records are produced by confluent-kafka (librdkafka) with explicit keys, headers and
timestamps, so every row Spark returns is checked against what was produced: topic,
partition, offset, key, value, timestamp and headers. One single-broker cluster serves the
module (and one secure cluster the SASL_SSL test); each test uses its own topics.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import pytest
from confluent_kafka import Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kafka_connector import require_connector
from py4j.protocol import Py4JJavaError
from pyspark.errors import StreamingQueryException
from pyspark.errors.exceptions.captured import CapturedException
from pyspark.sql import DataFrame, SparkSession

from pykraft.tools.local_cluster import LocalCluster

sys.path.insert(0, str(Path(__file__).parent.parent / "acceptance"))
from broker_harness import PROPERTIES, create_topic, running_cluster
from secure_harness import SaslSsl, sasl_ssl_cluster

pytestmark = [pytest.mark.spark, pytest.mark.integration]
BASE_MS = 1_700_000_000_000  # the first record's timestamp; each next one is 1 s later
#: the group a subscribing consumer joins (offset fetching by consumer) forms at once
NO_REBALANCE_DELAY = {"group.initial.rebalance.delay.ms": "0"}


class Record(NamedTuple):
    """One record as the connector's columns show it (timestamp in ms)."""

    topic: str
    partition: int
    offset: int
    key: str
    value: str
    timestamp: int
    headers: tuple[tuple[str, bytes], ...]


@pytest.fixture(scope="module", autouse=True)
def connector() -> None:
    require_connector()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with running_cluster(tmp_path_factory.mktemp("connector") / "c",
                         {**PROPERTIES, **NO_REBALANCE_DELAY}) as made:
        yield made


def produce(bootstrap: str, topic: str, partitions: int, count: int, *, first: int = 0,
            extra: dict[str, str] | None = None) -> list[Record]:
    """``count`` records round-robin over the partitions (record ``i``: key ``k<i>``, value
    ``v<i>``, timestamp BASE_MS + i s, one header), as the broker stored them."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, **(extra or {})})
    acked: list[Record] = []

    def on_ack(err: object, msg: object) -> None:
        assert err is None, err
        i = int(msg.key()[1:])  # type: ignore[attr-defined]
        acked.append(Record(topic, msg.partition(), msg.offset(), f"k{i}", f"v{i}",  # type: ignore[attr-defined]
                            BASE_MS + i * 1000, (("n", str(i).encode()),)))
    for i in range(first, first + count):
        producer.produce(topic, key=f"k{i}", value=f"v{i}", partition=i % partitions,
                         timestamp=BASE_MS + i * 1000, headers=[("n", str(i).encode())],
                         on_delivery=on_ack)
    assert producer.flush(30) == 0
    assert len(acked) == count
    return sorted(acked)


def records(frame: DataFrame) -> list[Record]:
    """The connector's rows as :class:`Record` (headers read when the frame has them)."""
    headers = "headers" if "headers" in frame.columns else "array()"
    rows = frame.selectExpr("topic", "partition", "offset", "CAST(key AS STRING) AS key",
                            "CAST(value AS STRING) AS value", "unix_millis(timestamp) AS ts",
                            f"{headers} AS headers").collect()
    return sorted(Record(r.topic, r.partition, r.offset, r.key, r.value, r.ts,
                         tuple((h.key, bytes(h.value)) for h in r.headers or ()))
                  for r in rows)


def without_headers(produced: list[Record]) -> list[Record]:
    return [r._replace(headers=()) for r in produced]


def reader(spark: SparkSession, bootstrap: str, **options: str) -> DataFrame:
    return (spark.read.format("kafka").option("kafka.bootstrap.servers", bootstrap)
            .options(**options).load())


def test_batch_read_subscribe_pattern_assign_and_headers(spark: SparkSession,
                                                         cluster: LocalCluster) -> None:
    bootstrap = cluster.bootstrap_servers
    create_topic(bootstrap, "read-a", 3)
    create_topic(bootstrap, "read-b", 1)
    a = produce(bootstrap, "read-a", 3, 60)
    b = produce(bootstrap, "read-b", 1, 10)
    assert records(reader(spark, bootstrap, subscribe="read-a", includeHeaders="true")) == a
    assert records(reader(spark, bootstrap, subscribe="read-a")) == without_headers(a)
    assert records(reader(spark, bootstrap, subscribePattern="read-.*",
                          includeHeaders="true")) == sorted(a + b)
    assigned = reader(spark, bootstrap, includeHeaders="true",
                      assign=json.dumps({"read-a": [0, 2], "read-b": [0]}))
    assert records(assigned) == sorted([r for r in a if r.partition != 1] + b)
    create_topic(bootstrap, "read-appended", 1, configs={"message.timestamp.type": "LogAppendTime"})
    before_ms = int(time.time() * 1000) - 1000  # the broker's clock stamps the records
    produce(bootstrap, "read-appended", 1, 5)
    appended = reader(spark, bootstrap, subscribe="read-appended").selectExpr(
        "timestampType", "unix_millis(timestamp) AS ts").collect()
    assert [r.timestampType for r in appended] == [1] * 5  # LogAppendTime
    assert all(r.ts >= before_ms for r in appended)
    split = reader(spark, bootstrap, subscribe="read-a", minPartitions="6")
    assert split.rdd.getNumPartitions() == 6
    assert records(split) == without_headers(a)


def test_batch_read_offset_ranges_by_offset_and_by_time(spark: SparkSession,
                                                        cluster: LocalCluster) -> None:
    bootstrap = cluster.bootstrap_servers
    create_topic(bootstrap, "ranges", 2)
    produced = produce(bootstrap, "ranges", 2, 40)  # partition p holds i = p, p + 2, ...

    def read(**options: str) -> list[Record]:
        return records(reader(spark, bootstrap, subscribe="ranges", **options))
    every = without_headers(produced)
    assert read(startingOffsets="earliest", endingOffsets="latest") == every
    with pytest.raises(CapturedException, match="can't be latest for batch"):
        read(startingOffsets="latest")  # Spark refuses it for batch queries
    window = {"ranges": {"0": 5, "1": 10}}
    assert read(startingOffsets=json.dumps(window),
                endingOffsets=json.dumps({"ranges": {"0": 8, "1": -1}})) == [
        r for r in every if ((5 <= r.offset < 8) if r.partition == 0 else r.offset >= 10)]
    # Record i has timestamp BASE_MS + i s: from i = 20 on, up to (not incl.) i = 30.
    assert read(startingTimestamp=str(BASE_MS + 20_000)) == [
        r for r in every if r.timestamp >= BASE_MS + 20_000]
    after_all = str(BASE_MS + 60_000)  # no record this late: ListOffsets by time says -1
    with pytest.raises(CapturedException, match="No offset matched"):
        read(startingTimestamp=after_all)
    assert read(startingTimestamp=after_all, startingOffsetsByTimestampStrategy="latest") == []
    by_time = {"ranges": {"0": BASE_MS + 20_000, "1": BASE_MS + 20_000}}
    assert read(startingOffsetsByTimestamp=json.dumps(by_time),
                endingOffsetsByTimestamp=json.dumps(
                    {"ranges": {"0": BASE_MS + 30_000, "1": BASE_MS + 30_000}})) == [
        r for r in every if BASE_MS + 20_000 <= r.timestamp < BASE_MS + 30_000]


def test_batch_write_with_topic_partition_and_headers_columns(spark: SparkSession,
                                                              cluster: LocalCluster) -> None:
    bootstrap = cluster.bootstrap_servers
    create_topic(bootstrap, "written", 2)
    frame = spark.createDataFrame(
        [("written", i % 2, f"k{i}", f"v{i}", [("n", str(i).encode())]) for i in range(30)],
        "topic STRING, partition INT, key STRING, value STRING, "
        "headers ARRAY<STRUCT<key: STRING, value: BINARY>>")
    frame.write.format("kafka").option("kafka.bootstrap.servers", bootstrap).save()
    got = records(reader(spark, bootstrap, subscribe="written", includeHeaders="true"))
    assert sorted((r.partition, int(r.key[1:])) for r in got) == sorted(
        (i % 2, i) for i in range(30))
    assert all(r.value == f"v{r.key[1:]}" and r.headers == (("n", r.key[1:].encode()),)
               for r in got)
    for partition in (0, 1):
        assert [r.offset for r in got if r.partition == partition] == list(range(15))


def stream_to_parquet(spark: SparkSession, bootstrap: str, checkpoint: Path, out: Path,
                      **options: str) -> list[int]:
    """One ``availableNow`` run into a Parquet sink; the rows of each micro-batch."""
    query = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", bootstrap)
             .options(**options).load()
             .writeStream.format("parquet").option("path", str(out))
             .option("checkpointLocation", str(checkpoint)).trigger(availableNow=True).start())
    assert query.awaitTermination(120)
    assert query.exception() is None
    return [p["numInputRows"] for p in query.recentProgress if p["numInputRows"] > 0]


def test_stream_read_resumes_from_its_checkpoint(spark: SparkSession, cluster: LocalCluster,
                                                 tmp_path: Path) -> None:
    bootstrap = cluster.bootstrap_servers
    create_topic(bootstrap, "streamed", 2)
    first = produce(bootstrap, "streamed", 2, 40)
    checkpoint, out = tmp_path / "checkpoint", tmp_path / "out"
    options = {"subscribe": "streamed", "startingOffsets": "earliest", "includeHeaders": "true",
               "maxOffsetsPerTrigger": "15"}
    batches = stream_to_parquet(spark, bootstrap, checkpoint, out, **options)
    assert sum(batches) == 40 and len(batches) >= 3 and max(batches) <= 15
    assert records(spark.read.parquet(str(out))) == first
    second = produce(bootstrap, "streamed", 2, 20, first=40)
    batches = stream_to_parquet(spark, bootstrap, checkpoint, out, **options)
    assert sum(batches) == 20 and len(batches) >= 2 and max(batches) <= 15
    assert records(spark.read.parquet(str(out))) == sorted(first + second)


def test_stream_write_from_a_stream_resumes_from_its_checkpoint(
        spark: SparkSession, cluster: LocalCluster, tmp_path: Path) -> None:
    bootstrap = cluster.bootstrap_servers
    create_topic(bootstrap, "copy-in", 1)
    create_topic(bootstrap, "copy-out", 1)

    def copy() -> None:
        query = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", bootstrap)
                 .option("subscribe", "copy-in").option("startingOffsets", "earliest")
                 .option("includeHeaders", "true").load()
                 .selectExpr("key", "CONCAT(CAST(value AS STRING), '!') AS value", "headers")
                 .writeStream.format("kafka").option("kafka.bootstrap.servers", bootstrap)
                 .option("topic", "copy-out")
                 .option("checkpointLocation", str(tmp_path / "checkpoint"))
                 .trigger(availableNow=True).start())
        assert query.awaitTermination(120)
        assert query.exception() is None

    def copied() -> list[tuple[int, str, str, tuple[tuple[str, bytes], ...]]]:
        got = records(reader(spark, bootstrap, subscribe="copy-out", includeHeaders="true"))
        return [(r.offset, r.key, r.value, r.headers) for r in got]
    produce(bootstrap, "copy-in", 1, 10)
    copy()
    assert copied() == [(i, f"k{i}", f"v{i}!", (("n", str(i).encode()),)) for i in range(10)]
    produce(bootstrap, "copy-in", 1, 5, first=10)
    copy()
    assert copied() == [(i, f"k{i}", f"v{i}!", (("n", str(i).encode()),)) for i in range(15)]


def delete_below(bootstrap: str, topic: str, offset: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    (future,) = admin.delete_records([TopicPartition(topic, 0, offset)]).values()
    assert future.result(30).low_watermark == offset


def test_fail_on_data_loss_with_deleted_records(spark: SparkSession, cluster: LocalCluster,
                                                tmp_path: Path) -> None:
    bootstrap = cluster.bootstrap_servers
    create_topic(bootstrap, "trimmed", 1)
    produced = without_headers(produce(bootstrap, "trimmed", 1, 20))
    checkpoint, out = tmp_path / "checkpoint", tmp_path / "out"
    stream = {"subscribe": "trimmed", "startingOffsets": "earliest", "maxOffsetsPerTrigger": "5"}
    stream_to_parquet(spark, bootstrap, checkpoint, out, **stream)
    produced += without_headers(produce(bootstrap, "trimmed", 1, 10, first=20))
    delete_below(bootstrap, "trimmed", 25)  # offsets 20..24 are lost to the stream
    from_zero = json.dumps({"trimmed": {"0": 0}})
    with pytest.raises(Py4JJavaError, match="Some data may have been lost"):
        records(reader(spark, bootstrap, subscribe="trimmed", startingOffsets=from_zero))
    assert records(reader(spark, bootstrap, subscribe="trimmed", startingOffsets=from_zero,
                          failOnDataLoss="false")) == produced[25:]
    with pytest.raises(StreamingQueryException, match="Some data may have been lost"):
        stream_to_parquet(spark, bootstrap, checkpoint, out, **stream)
    stream_to_parquet(spark, bootstrap, checkpoint, out, **stream, failOnDataLoss="false")
    assert records(spark.read.parquet(str(out)).drop("headers")) == (
        produced[:20] + produced[25:])


def test_kafka_client_options_and_read_committed(spark: SparkSession,
                                                 cluster: LocalCluster) -> None:
    bootstrap = cluster.bootstrap_servers
    create_topic(bootstrap, "tuned", 2)
    produced = without_headers(produce(bootstrap, "tuned", 2, 50, extra={
        "enable.idempotence": "true", "compression.type": "zstd"}))
    tuned = {"kafka.client.id": "spark-tuned", "kafka.max.partition.fetch.bytes": "200",
             "kafka.fetch.max.bytes": "300", "kafka.request.timeout.ms": "20000"}
    assert records(reader(spark, bootstrap, subscribe="tuned", **tuned)) == produced
    for grouped in ({"groupIdPrefix": "mine"}, {"kafka.group.id": "fixed"}):
        assert records(reader(spark, bootstrap, subscribe="tuned", **grouped)) == produced
    # Offsets through a consumer that subscribes (joins a group with a generated id)
    # rather than through the Admin client's ListOffsets.
    spark.conf.set("spark.sql.streaming.kafka.useDeprecatedOffsetFetching", "true")
    try:
        assert records(reader(spark, bootstrap, subscribe="tuned")) == produced
    finally:
        spark.conf.unset("spark.sql.streaming.kafka.useDeprecatedOffsetFetching")
    # No transaction on this topic: read_committed reads up to the last stable offset,
    # which with no open transaction is the high watermark.
    assert records(reader(spark, bootstrap, subscribe="tuned",
                          **{"kafka.isolation.level": "read_committed"})) == produced
    frame = spark.createDataFrame([(f"k{i}", f"v{i}") for i in range(50, 60)], "key STRING, "
                                  "value STRING")
    (frame.write.format("kafka").option("kafka.bootstrap.servers", bootstrap)
     .option("topic", "tuned").option("kafka.enable.idempotence", "true")
     .option("kafka.acks", "all").option("kafka.compression.type", "lz4").save())
    got = records(reader(spark, bootstrap, subscribe="tuned"))
    assert sorted(int(r.key[1:]) for r in got) == list(range(60))


def test_read_committed_leaves_out_aborted_and_open_transactions(
        spark: SparkSession, cluster: LocalCluster) -> None:
    """Transactional data: a committed transaction is read, an aborted one is not, and
    read_committed stops before a transaction still open; read_uncommitted reads all."""
    bootstrap = cluster.bootstrap_servers
    create_topic(bootstrap, "txn-read", 1)
    writer = Producer({"bootstrap.servers": bootstrap, "transactional.id": "spark-txn"})
    writer.init_transactions(30)
    for outcome, written in (("commit", ("c0", "c1")), ("abort", ("a0", "a1")),
                             ("commit", ("c2",)), ("open", ("o0",))):
        writer.begin_transaction()
        for value in written:
            writer.produce("txn-read", value=value, partition=0)
        writer.flush(30)
        if outcome == "commit":
            writer.commit_transaction(30)
        elif outcome == "abort":
            writer.abort_transaction(30)

    def values(isolation: str) -> list[str]:
        frame = reader(spark, bootstrap, subscribe="txn-read",
                       **{"kafka.isolation.level": isolation})
        return [r.value for r in frame.selectExpr("CAST(value AS STRING) AS value")
                .orderBy("offset").collect()]

    assert values("read_committed") == ["c0", "c1", "c2"]
    assert values("read_uncommitted") == ["c0", "c1", "a0", "a1", "c2", "o0"]
    writer.abort_transaction(30)


@pytest.fixture(scope="module")
def secure(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SaslSsl]:
    with sasl_ssl_cluster(tmp_path_factory.mktemp("connector-secure") / "c", brokers=1) as made:
        yield made


def test_sasl_ssl_read_and_write(spark: SparkSession, secure: SaslSsl) -> None:
    admin = AdminClient(secure.admin_librdkafka)
    (future,) = admin.create_topics([NewTopic("secured", 2, 1)]).values()
    future.result(30)
    produced = without_headers(produce(secure.bootstrap, "secured", 2, 20,
                                       extra=secure.admin_librdkafka))
    client = {f"kafka.{k}": v for k, v in
              secure.properties("admin", secure.admin_password).items()}
    assert records(reader(spark, secure.bootstrap, subscribe="secured", **client)) == produced
    frame = spark.createDataFrame([("k20", "v20")], "key STRING, value STRING")
    (frame.write.format("kafka").option("kafka.bootstrap.servers", secure.bootstrap)
     .option("topic", "secured").options(**client).save())
    got = records(reader(spark, secure.bootstrap, subscribe="secured", **client))
    assert sorted(int(r.key[1:]) for r in got) == list(range(21))
