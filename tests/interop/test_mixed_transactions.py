"""Transactions across both kinds of broker (issue 30), on pykraft's controllers.

Kafka's broker 1000 and pykraft's 1001. ``__transaction_state`` is made by hand with two
partitions, 0 led by Kafka's broker and 1 by pykraft's, so one transactional id is
coordinated by each kind; topic ``txn`` has partition 0 led by Kafka's broker and 1 by
pykraft's. Each coordinator commits one transaction and aborts one over both partitions:
its markers reach both kinds, and a read_committed consumer sees the committed records
only. Then pykraft's broker stops: Kafka's takes over ``__transaction_state`` partition 1,
reads the records pykraft's coordinator wrote, and a new producer with that id fences the
old one and commits.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from brokers_harness import create_topic, leader_is
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient
from kafka_brokers_harness import wait_until
from oracle_cluster import KAFKA, PYKRAFT, ClusterSpec, KafkaInstall, OracleCluster, running

from pykraft.group.partitioning import partition_for
from pykraft.ids import TRANSACTION_STATE_TOPIC_NAME
from pykraft.tools.kafka_runtime import MIXED_RELEASE_VERSION

K0, P1 = 1000, 1001
TOPIC = "txn"
ASSIGNMENT = {0: [K0, P1], 1: [P1, K0]}
PROPERTIES = {
    "broker.session.timeout.ms": "4000", "broker.heartbeat.interval.ms": "500",
    "auto.leader.rebalance.enable": "false", "offsets.topic.replication.factor": "2",
    "transaction.state.log.replication.factor": "2", "transaction.state.log.min.isr": "1",
    # Kafka's coordinator hashes ids over this count, read when it starts (before the topic
    # exists), so it must be the topic's
    "transaction.state.log.num.partitions": "2",
}
TIMEOUT_S = 60


def transactional_id(partition: int) -> str:
    """An id whose ``__transaction_state`` partition (of 2) is ``partition``."""
    return next(f"mixed-{i}" for i in range(1000) if partition_for(f"mixed-{i}", 2) == partition)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory,
            kafka: KafkaInstall) -> Iterator[OracleCluster]:
    spec = ClusterSpec(controllers=(PYKRAFT,), brokers=(KAFKA, PYKRAFT),
                       release_version=MIXED_RELEASE_VERSION, properties=PROPERTIES)
    with running(tmp_path_factory.mktemp("mixed-txn"), kafka, spec) as (started,):
        address = started.nodes[K0].listener("broker")
        create_topic(address, TRANSACTION_STATE_TOPIC_NAME, ASSIGNMENT, {
            "cleanup.policy": "compact", "min.insync.replicas": "1",
            "compression.type": "uncompressed", "unclean.leader.election.enable": "false"})
        create_topic(address, TOPIC, ASSIGNMENT, {})
        admin = AdminClient({"bootstrap.servers": started.bootstrap_servers})
        for topic in (TRANSACTION_STATE_TOPIC_NAME, TOPIC):
            for partition, replicas in ASSIGNMENT.items():
                wait_until(f"{topic}-{partition} led by {replicas[0]}",
                           lambda t=topic, p=partition, b=replicas[0]: leader_is(admin, t, p, b))
        yield started


def producer(cluster: OracleCluster, tid: str) -> Any:
    made = Producer({"bootstrap.servers": cluster.bootstrap_servers, "transactional.id": tid,
                     "log_level": 0})
    made.init_transactions(TIMEOUT_S)
    return made


def write(made: Any, tag: str, *, commit: bool, partitions: tuple[int, ...] = (0, 1)) -> None:
    made.begin_transaction()
    for partition in partitions:
        made.produce(TOPIC, f"{tag}-{partition}".encode(), partition=partition)
    made.flush(TIMEOUT_S)
    if commit:
        made.commit_transaction(TIMEOUT_S)
    else:
        made.abort_transaction(TIMEOUT_S)


def committed(cluster: OracleCluster, partitions: tuple[int, ...] = (0, 1)) -> list[str]:
    """Every value a read_committed consumer reads, up to each partition's stable end."""
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers,
                         "group.id": "mixed-reader", "isolation.level": "read_committed",
                         "enable.auto.commit": False, "enable.partition.eof": True,
                         "log_level": 0})
    consumer.assign([TopicPartition(TOPIC, p, 0) for p in partitions])
    values: list[str] = []
    at_end: set[int] = set()
    try:
        for _ in range(600):  # bounded: each poll waits at most 0.1 s
            message = consumer.poll(0.1)
            if message is None:
                continue
            error, partition, value = message.error(), message.partition(), message.value()
            if error is not None:
                assert error.code() == KafkaError._PARTITION_EOF, error
                assert partition is not None
                at_end.add(partition)
                if at_end == set(partitions):
                    break
                continue
            assert value is not None
            values.append(value.decode())
    finally:
        consumer.close()
    assert at_end == set(partitions), "the consumer never reached the end"
    return sorted(values)


def test_each_kind_coordinates_markers_to_both_kinds(cluster: OracleCluster) -> None:
    by_kafka, by_pykraft = producer(cluster, transactional_id(0)), producer(
        cluster, transactional_id(1))
    write(by_kafka, "kafka-commit", commit=True)
    write(by_kafka, "kafka-abort", commit=False)
    write(by_pykraft, "pykraft-commit", commit=True)
    write(by_pykraft, "pykraft-abort", commit=False)
    assert committed(cluster) == ["kafka-commit-0", "kafka-commit-1",
                                  "pykraft-commit-0", "pykraft-commit-1"]


def test_kafka_takes_over_a_pykraft_coordinators_transactions(cluster: OracleCluster) -> None:
    tid = transactional_id(1)
    zombie = producer(cluster, tid)  # coordinated by pykraft's broker
    write(zombie, "before", commit=True, partitions=(0,))
    cluster.stop(cluster.nodes[P1])
    admin = AdminClient({"bootstrap.servers": cluster.nodes[K0].listener("broker")})
    wait_until("Kafka leads the pykraft coordinator's partition",
               lambda: leader_is(admin, TRANSACTION_STATE_TOPIC_NAME, 1, K0))
    successor = producer(cluster, tid)  # Kafka's coordinator, from pykraft's records
    write(successor, "after", commit=True, partitions=(0,))
    with pytest.raises(KafkaException):
        write(zombie, "zombie", commit=True, partitions=(0,))
    assert {"before-0", "after-0"} <= set(committed(cluster, (0,)))
    assert "zombie-0" not in committed(cluster, (0,))
