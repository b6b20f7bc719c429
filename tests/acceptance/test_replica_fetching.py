"""Followers copy their leaders: 1 controller and 3 brokers, a topic with RF=3 produced to
with acks=1 by kafka-python, and every replica's partition directory ends up holding the
same batches, byte for byte; a follower killed meanwhile (a crash) recovers its log when
restarted and catches up to the same bytes; when the leader crashes, the remaining follower
fetches from the new leader and the old one follows it once back."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from broker_harness import (
    PROPERTIES,
    create_topic,
    partition_leaders,
    wait_for,
    wait_for_brokers,
)

from pykraft.tools.local_cluster import LocalCluster

TOPIC = "replicated"
CATCH_UP_S = 30.0


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    made = LocalCluster.create(tmp_path_factory.mktemp("replicas") / "cluster", 1,
                               PROPERTIES, brokers=3)
    made.start_all()
    try:
        wait_for_brokers(made, 3)
        create_topic(made.bootstrap_servers, TOPIC, 1, 3)
        yield made
    finally:
        for node_id in made.nodes:
            made.kill(node_id)


def produce(cluster: LocalCluster, first: int, count: int) -> None:
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap_servers, acks=1,
                             linger_ms=5, retries=10)
    try:
        futures = [producer.send(TOPIC, key=b"k%d" % i, value=b"value-%d-" % i + b"x" * (i % 50))
                   for i in range(first, first + count)]
        producer.flush(30)
        assert all(f.get(timeout=5).offset >= 0 for f in futures)
    finally:
        producer.close(timeout=5)


def replica_bytes(cluster: LocalCluster, broker_id: int) -> bytes:
    directory: Path = cluster.nodes[broker_id].data / f"{TOPIC}-0"
    return b"".join(path.read_bytes() for path in sorted(directory.glob("*.log")))


def record_count(data: bytes) -> int:
    from kafka.record.memory_records import MemoryRecords

    records, count = MemoryRecords(data), 0
    while (batch := records.next_batch()) is not None:
        count += sum(1 for _ in batch)
    return count


def identical_replicas(cluster: LocalCluster, records: int) -> bool | None:
    """True once every broker's replica holds the same bytes with ``records`` records."""
    copies = {replica_bytes(cluster, broker_id) for broker_id in cluster.brokers}
    if len(copies) != 1:
        return None
    return True if record_count(copies.pop()) == records else None


def test_every_replica_holds_the_leaders_batches(cluster: LocalCluster) -> None:
    produce(cluster, 0, 1000)
    wait_for("3 identical replicas of 1000 records",
             lambda: identical_replicas(cluster, 1000), CATCH_UP_S)


def test_a_crashed_follower_catches_up_after_restart(cluster: LocalCluster) -> None:
    [leader] = partition_leaders(cluster, cluster.brokers[0], TOPIC)
    follower = next(b for b in cluster.brokers if b != leader)
    cluster.kill(follower)
    produce(cluster, 1000, 500)
    assert record_count(replica_bytes(cluster, follower)) == 1000
    cluster.start(follower)
    wait_for_brokers(cluster, 3)
    wait_for("the restarted follower's copy of 1500 records",
             lambda: identical_replicas(cluster, 1500), CATCH_UP_S)


def test_followers_move_to_a_new_leader_and_the_old_one_follows_it(
        cluster: LocalCluster) -> None:
    wait_for("replicas in step", lambda: identical_replicas(cluster, 1500), CATCH_UP_S)
    [leader] = partition_leaders(cluster, cluster.brokers[0], TOPIC)
    others = [b for b in cluster.brokers if b != leader]
    cluster.kill(leader)
    wait_for("a new leader", lambda: next(
        (new for new in partition_leaders(cluster, others[0], TOPIC) if new in others), None),
        CATCH_UP_S)
    produce(cluster, 1500, 500)
    cluster.start(leader)
    wait_for_brokers(cluster, 3)
    wait_for("the old leader's copy of 2000 records from the new leader",
             lambda: identical_replicas(cluster, 2000), CATCH_UP_S)
