"""Fetch sessions (KIP-227) on real processes: 1 controller and 3 brokers, a topic with
RF=3 and min.insync.replicas=2. The followers replicate through their incremental fetch
sessions (acks=all produces complete with all three in the ISR, before and after the
followers idled in their sessions), and kafka-python's consumer reads through an
incremental session of its own."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from broker_harness import (
    PROPERTIES,
    broker_call,
    leader_and_isr,
    produce_all,
    running_cluster,
    wait_for,
)
from kafka import KafkaConsumer
from kafka import TopicPartition as ClientPartition

from pykraft.messages.kafka.create_topics_request import (
    CreatableTopic,
    CreatableTopicConfig,
    CreateTopicsRequest,
)
from pykraft.protocol.errors import ErrorCode
from pykraft.tools.local_cluster import LocalCluster

TOPIC = "sessions"
RECORDS = 20


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[LocalCluster]:
    with running_cluster(tmp_path, PROPERTIES, brokers=3) as made:
        yield made


def test_followers_and_a_consumer_fetch_through_sessions(cluster: LocalCluster) -> None:
    brokers = cluster.brokers
    created = broker_call(cluster, brokers[0], CreateTopicsRequest(topics=(CreatableTopic(
        name=TOPIC, num_partitions=1, replication_factor=3, assignments=(),
        configs=(CreatableTopicConfig(name="min.insync.replicas", value="2"),)),)))
    assert created.topics[0].error_code == ErrorCode.NONE
    leader, _, topic_id = wait_for("three in-sync replicas", lambda: (
        (seen := leader_and_isr(cluster, brokers[0], TOPIC)) is not None
        and seen[1] == set(brokers) and seen) or None)
    for n in range(RECORDS):
        assert produce_all(cluster, leader, topic_id, b"v%d" % n) == ErrorCode.NONE

    consumer = KafkaConsumer(bootstrap_servers=cluster.bootstrap_servers,
                             enable_auto_commit=False, auto_offset_reset="earliest",
                             fetch_max_wait_ms=100)
    try:
        consumer.assign([ClientPartition(TOPIC, 0)])
        values: list[bytes] = []

        def incremental_epoch() -> int | None:
            """The consumer's next session epoch with the leader, once it consumed
            everything and went on fetching (idle) in its session."""
            values.extend(r.value for batch in consumer.poll(timeout_ms=200).values()
                          for r in batch)
            handler = consumer._fetcher._session_handlers.get(leader)
            epoch = None if handler is None else handler.next_metadata.epoch
            done = len(values) == RECORDS and epoch is not None and epoch >= 3
            return epoch if done else None

        wait_for("an incremental fetch session of the consumer's", incremental_epoch)
        assert values == [b"v%d" % n for n in range(RECORDS)]
        session = consumer._fetcher._session_handlers[leader].next_metadata
        assert session.session_id != 0
    finally:
        consumer.close()

    # the followers idled in their sessions meanwhile: still in sync, still replicating
    assert leader_and_isr(cluster, leader, TOPIC) == (leader, set(brokers), topic_id)
    assert produce_all(cluster, leader, topic_id, b"after idling") == ErrorCode.NONE
