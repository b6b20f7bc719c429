"""The read path on a real 1-controller + 1-broker cluster: what kafka-python's producer
wrote comes back byte-equal to kafka-python's KafkaConsumer and to confluent-kafka's
Consumer (both with assign(), no group); ListOffsets by timestamp, earliest and latest agree
with what was produced; DeleteRecords moves the start; DescribeLogDirs lists the topic."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from broker_harness import PROPERTIES, one_broker_cluster

from pykraft.tools.local_cluster import LocalCluster

TOPIC = "reads"
PARTITIONS = 3
COUNT = 300
BASE_TS = 1_700_000_000_000
DEADLINE_S = 60.0

#: (partition, offset) -> (key, value, headers, timestamp), as each client types them
Produced = dict[tuple[Any, Any], tuple[Any, ...]]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with one_broker_cluster(tmp_path_factory.mktemp("consume") / "cluster", PROPERTIES) as made:
        yield made


@pytest.fixture(scope="module")
def produced(cluster: LocalCluster) -> Produced:
    """COUNT keyed messages with headers and increasing timestamps, by kafka-python."""
    from kafka import KafkaProducer
    from kafka.admin import KafkaAdminClient, NewTopic

    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
    try:
        admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1)])
    finally:
        admin.close()
    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap_servers, linger_ms=5)
    sent = [(f"key-{i}".encode(), bytes(range(256)) * (i % 5) + f"value-{i}".encode(),
             (("seq", str(i).encode()),), BASE_TS + 10 * i) for i in range(COUNT)]
    try:
        futures = [producer.send(TOPIC, key=k, value=v, headers=list(h), timestamp_ms=ts)
                   for k, v, h, ts in sent]
        producer.flush(60)
        metadata = [future.get(timeout=5) for future in futures]
    finally:
        producer.close(timeout=5)
    return {(m.partition, m.offset): message for m, message in zip(metadata, sent, strict=True)}


def test_kafka_python_consumer_reads_every_message(cluster: LocalCluster,
                                                   produced: Produced) -> None:
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=cluster.bootstrap_servers, group_id=None,
                             enable_auto_commit=False, fetch_max_wait_ms=100)
    got: Produced = {}
    try:
        consumer.assign([TopicPartition(TOPIC, p) for p in range(PARTITIONS)])
        consumer.seek_to_beginning()
        deadline = time.monotonic() + DEADLINE_S
        while len(got) < COUNT and time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=200).values():
                for r in records:
                    got[(r.partition, r.offset)] = (
                        r.key, r.value, tuple((k, bytes(v)) for k, v in r.headers), r.timestamp)
    finally:
        consumer.close()
    assert got == produced


def test_confluent_kafka_consumer_reads_every_message(cluster: LocalCluster,
                                                      produced: Produced) -> None:
    import confluent_kafka

    consumer = confluent_kafka.Consumer({
        "bootstrap.servers": cluster.bootstrap_servers, "group.id": "unused-with-assign",
        "enable.auto.commit": False, "fetch.wait.max.ms": 100})
    got: Produced = {}
    try:
        consumer.assign([confluent_kafka.TopicPartition(TOPIC, p, 0)
                         for p in range(PARTITIONS)])
        deadline = time.monotonic() + DEADLINE_S
        while len(got) < COUNT and time.monotonic() < deadline:
            message = consumer.poll(0.2)
            if message is None:
                continue
            assert message.error() is None, message.error()
            headers: Any = tuple(tuple(h) for h in message.headers() or ())
            got[(message.partition(), message.offset())] = (
                message.key(), message.value(), headers, message.timestamp()[1])
    finally:
        consumer.close()
    assert got == produced


def test_list_offsets_agree_with_what_was_produced(cluster: LocalCluster,
                                                   produced: Produced) -> None:
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=cluster.bootstrap_servers, group_id=None,
                             enable_auto_commit=False)
    parts = [TopicPartition(TOPIC, p) for p in range(PARTITIONS)]
    try:
        ends = consumer.end_offsets(parts)
        assert consumer.beginning_offsets(parts) == dict.fromkeys(parts, 0)
        assert ends == {tp: sum(1 for p, _ in produced if p == tp.partition) for tp in parts}
        for (partition, offset), (*_, timestamp) in list(produced.items())[::37]:
            tp = TopicPartition(TOPIC, partition)
            found = consumer.offsets_for_times({tp: timestamp - 1})[tp]
            assert (found.offset, found.timestamp) == (offset, timestamp)
        after = consumer.offsets_for_times({tp: BASE_TS + 10 * COUNT for tp in parts})
        assert after == dict.fromkeys(parts)  # nothing that late: no offset
    finally:
        consumer.close()


def test_delete_records_and_describe_log_dirs(cluster: LocalCluster,
                                              produced: Produced) -> None:
    from kafka import KafkaConsumer, TopicPartition
    from kafka.admin import KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
    tp = TopicPartition(TOPIC, 0)
    try:
        (per_broker,) = admin.describe_log_dirs()
        deleted = admin.delete_records({tp: 5})
    finally:
        admin.close()
    assert deleted[tp]["low_watermark"] == 5
    (log_dir,) = per_broker["log_dirs"]
    assert log_dir["error_code"] == 0 and log_dir["usable_bytes"] > 0
    sizes = {p["partition_index"]: p["partition_size"] for topic in log_dir["topics"]
             if topic["name"] == TOPIC for p in topic["partitions"]}
    assert sorted(sizes) == list(range(PARTITIONS)) and all(sizes.values())
    consumer = KafkaConsumer(bootstrap_servers=cluster.bootstrap_servers, group_id=None,
                             enable_auto_commit=False)
    try:
        assert consumer.beginning_offsets([tp]) == {tp: 5}
    finally:
        consumer.close()
