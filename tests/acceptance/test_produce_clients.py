"""Produce on a real 1-controller + 1-broker cluster: kafka-python's KafkaProducer (its
idempotent, acks=all defaults) and confluent-kafka's Producer with every codec send 1000
keyed messages with headers; every delivery succeeds and the partition files, read back with
kafka-python's MemoryRecords, hold exactly those keys, values and headers."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from broker_harness import (
    PROPERTIES,
    Message,
    batches_on_disk,
    codecs_on_disk,
    confluent_produce,
    create_topic,
    one_broker_cluster,
    wait_for,
)

from pykraft.tools.local_cluster import LocalCluster

COUNT = 1000
PARTITIONS = 3
CODECS = ("none", "gzip", "snappy", "lz4", "zstd")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with one_broker_cluster(tmp_path_factory.mktemp("produce") / "cluster", PROPERTIES) as made:
        yield made


def messages(tag: str) -> list[Message]:
    # values compress well, or librdkafka sends a batch uncompressed
    return [(f"{tag}-key-{i}".encode(), f"{tag}-value-{i}-".encode() + b"x" * (50 * (i % 7)),
             (("seq", str(i).encode()), ("tag", tag.encode()))) for i in range(COUNT)]


def on_disk(cluster: LocalCluster, topic: str) -> list[Message]:
    return [(r.key, r.value, tuple((k, bytes(v)) for k, v in r.headers))
            for batch in batches_on_disk(cluster, topic) for r in batch]


def test_kafka_python_idempotent_producer(cluster: LocalCluster) -> None:
    from kafka import KafkaProducer

    create_topic(cluster.bootstrap_servers, "kafka-python", PARTITIONS)
    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap_servers, linger_ms=5)
    sent = messages("kp")
    try:
        assert producer._transaction_manager is not None  # idempotent by default
        futures = [producer.send("kafka-python", key=k, value=v, headers=list(h))
                   for k, v, h in sent]
        producer.flush(60)
        metadata = [future.get(timeout=5) for future in futures]
    finally:
        producer.close(timeout=5)
    assert all(m.offset >= 0 for m in metadata)
    per_partition = {p: [m.offset for m in metadata if m.partition == p]
                     for p in range(PARTITIONS)}
    assert all(offsets == list(range(len(offsets))) for offsets in per_partition.values())
    assert sorted(on_disk(cluster, "kafka-python")) == sorted(sent)
    assert all(batch.producer_id >= 0 for batch in batches_on_disk(cluster, "kafka-python"))


@pytest.mark.parametrize("codec", CODECS)
def test_confluent_kafka_producer(cluster: LocalCluster, codec: str) -> None:

    topic = f"confluent-{codec}"
    create_topic(cluster.bootstrap_servers, topic, PARTITIONS)
    sent = messages(codec)
    confluent_produce({
        "bootstrap.servers": cluster.bootstrap_servers, "compression.type": codec,
        "enable.idempotence": True, "linger.ms": 5}, topic, sent)
    assert sorted(on_disk(cluster, topic)) == sorted(sent)
    # stored as sent (librdkafka compresses with lz4 only where FindCoordinator is served,
    # its sign of a broker from Kafka 0.8.2 on: pykraft serves it with consumer groups)
    assert codecs_on_disk(cluster, topic) == {CODECS.index(codec)}


def test_acks_0_gets_no_response_and_the_records_land(cluster: LocalCluster) -> None:
    from kafka import KafkaProducer

    create_topic(cluster.bootstrap_servers, "fire-and-forget", PARTITIONS)
    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap_servers, acks=0,
                             enable_idempotence=False, linger_ms=5)
    sent = messages("acks0")
    try:
        futures = [producer.send("fire-and-forget", key=k, value=v, headers=list(h))
                   for k, v, h in sent]
        producer.flush(60)
        assert all(future.succeeded() for future in futures)
    finally:
        producer.close(timeout=5)
    # nothing tells the client when the broker appended: wait until every record is there
    wait_for("1000 records on disk", lambda: (
        True if len(on_disk(cluster, "fire-and-forget")) >= COUNT else None))
    assert sorted(on_disk(cluster, "fire-and-forget")) == sorted(sent)
