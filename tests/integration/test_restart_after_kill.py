"""A broker killed with -9 and started again at once (issue 29) registers a new incarnation
on the same log directories: the controller takes it at once, where Kafka (and pykraft
before) refuse it with DUPLICATE_BROKER_REGISTRATION until the old session lapses. It then
leads its partitions again with every acknowledged record recovered."""

from __future__ import annotations

from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, Message, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from process_harness import TEST_PROPERTIES

from pykraft.tools.local_cluster import LocalCluster

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

#: longer than the produce below may wait: waiting the session out would fail the test
SESSION_MS = 240_000
PRODUCE_TIMEOUT_MS = 90_000
RECORDS = 200


def _produce(bootstrap: str, count: int) -> list[KafkaError | None]:
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all",
                         "message.timeout.ms": PRODUCE_TIMEOUT_MS,
                         "reconnect.backoff.max.ms": 100, "retry.backoff.max.ms": 100})
    outcomes: list[KafkaError | None] = []

    def delivered(error: KafkaError | None, _message: Message) -> None:
        outcomes.append(error)

    for number in range(count):
        producer.produce("t", b"v%d" % number, partition=0, on_delivery=delivered)
    producer.flush(PRODUCE_TIMEOUT_MS / 1000 + 10)
    return outcomes


def test_a_broker_killed_with_9_serves_again_without_waiting_out_its_session(
        tmp_path: Path) -> None:
    properties = {k: v for k, v in TEST_PROPERTIES.items()
                  if k != "pykraft.server.extension.class"}
    properties["broker.session.timeout.ms"] = str(SESSION_MS)
    cluster = LocalCluster.create(tmp_path / "c", 1, properties, brokers=1)
    try:
        cluster.start_all()
        cluster.wait_listening(cluster.brokers)
        bootstrap = cluster.bootstrap_servers
        admin = AdminClient({"bootstrap.servers": bootstrap})
        admin.create_topics([NewTopic("t", 1, 1)])["t"].result(60)
        assert _produce(bootstrap, RECORDS) == [None] * RECORDS
        (broker,) = cluster.brokers
        cluster.kill(broker)
        cluster.start(broker)
        cluster.wait_listening([broker])
        assert _produce(bootstrap, 1) == [None]
        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "check"})
        try:
            assert consumer.get_watermark_offsets(TopicPartition("t", 0), timeout=30) == (
                0, RECORDS + 1)
        finally:
            consumer.close()
    finally:
        for node_id in cluster.nodes:
            cluster.kill(node_id)
