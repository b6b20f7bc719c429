"""Consumer groups with confluent-kafka on real clusters: two consumers of one group share a
topic's partitions, commit, and a new member resumes from the committed offsets (with the
classic protocol and with KIP-848's); committed offsets survive a broker restart; on three
brokers the group survives a SIGKILL of its coordinator and no committed offset goes back."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from broker_harness import (
    PROPERTIES,
    confluent_produce,
    create_topic,
    partition_leaders,
    running_cluster,
    wait_for,
)

from pykraft.group.partitioning import partition_for
from pykraft.tools.local_cluster import LocalCluster

TOPIC = "events"
PARTITIONS = 4
OFFSETS_PARTITIONS = 5
DEADLINE_S = 45.0
GROUP_PROPERTIES = {**PROPERTIES, "group.initial.rebalance.delay.ms": "0",
                    "offsets.topic.num.partitions": str(OFFSETS_PARTITIONS)}


def consumer(bootstrap: str, group: str, protocol: str = "classic") -> Any:
    """A subscribed member: the classic protocol, or KIP-848's (``consumer``), whose
    session and heartbeat the broker sets."""
    import confluent_kafka

    settings: dict[str, Any] = {
        "bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
        "enable.auto.commit": False, "fetch.wait.max.ms": 100, "group.protocol": protocol}
    if protocol == "classic":
        settings.update({"session.timeout.ms": 6000, "heartbeat.interval.ms": 500})
    made = confluent_kafka.Consumer(settings)
    made.subscribe([TOPIC])
    return made


def produce(bootstrap: str, start: int, count: int) -> None:
    confluent_produce({"bootstrap.servers": bootstrap}, TOPIC, [
        (f"k{i}".encode(), f"v{i}".encode(), ()) for i in range(start, start + count)])


def consume_until(consumers: list[Any], want: int) -> dict[int, list[bytes]]:
    """Poll every consumer in turn until ``want`` distinct messages arrived and each holds
    a non-empty assignment read to its end; values by consumer index (a partition that
    moved before a commit is read again by its new owner)."""
    got: dict[int, list[bytes]] = {i: [] for i in range(len(consumers))}
    deadline = time.monotonic() + DEADLINE_S
    while time.monotonic() < deadline:
        for index, member in enumerate(consumers):
            message = member.poll(0.1)
            if message is not None and message.error() is None:
                got[index].append(message.value())
        done = len({v for values in got.values() for v in values}) >= want
        if done and all(c.assignment() and read_to_the_end(c) for c in consumers):
            return got
    raise AssertionError(f"consumed {sum(map(len, got.values()))} of {want} in {DEADLINE_S} s")


def read_to_the_end(member: Any) -> bool:
    """Whether ``member`` has read every partition it owns to its end: a partition that
    moved to it after the others read everything (KIP-848 hands partitions over one
    heartbeat at a time) must be read, so that its offset is there to commit."""
    for position in member.position(member.assignment()):
        _, end = member.get_watermark_offsets(position, timeout=5)
        offset = position.offset
        if offset < 0:  # nothing read yet: where it would start
            (start,) = member.committed([position], timeout=5)
            offset = max(start.offset, 0)
        if offset < end:
            return False
    return True


def committed(member: Any) -> dict[int, int]:
    from confluent_kafka import TopicPartition

    found = member.committed([TopicPartition(TOPIC, p) for p in range(PARTITIONS)], timeout=10)
    return {tp.partition: tp.offset for tp in found}


@pytest.fixture
def one_broker(tmp_path: Path) -> Iterator[LocalCluster]:
    with running_cluster(tmp_path / "cluster", {
            **GROUP_PROPERTIES, "offsets.topic.replication.factor": "1"}) as made:
        yield made


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_two_consumers_share_the_partitions_and_a_new_one_resumes(
        one_broker: LocalCluster, protocol: str) -> None:
    bootstrap = one_broker.bootstrap_servers
    create_topic(bootstrap, TOPIC, PARTITIONS)
    produce(bootstrap, 0, 40)
    first, second = consumer(bootstrap, "g", protocol), consumer(bootstrap, "g", protocol)
    try:
        got = consume_until([first, second], 40)
        owned = [{tp.partition for tp in c.assignment()} for c in (first, second)]
        assert owned[0].isdisjoint(owned[1]) and owned[0] | owned[1] == set(range(PARTITIONS))
        assert {v for values in got.values() for v in values} == {
            f"v{i}".encode() for i in range(40)}
        for member in (first, second):
            member.commit(asynchronous=False)
        assert sum(committed(first).values()) == 40
    finally:
        first.close()
        second.close()
    produce(bootstrap, 40, 8)
    resumed = consumer(bootstrap, "g", protocol)
    try:
        got = consume_until([resumed], 8)
        assert sorted(got[0]) == sorted(f"v{i}".encode() for i in range(40, 48))
        assert sum(committed(resumed).values()) == 40  # nothing committed since
    finally:
        resumed.close()


@pytest.fixture
def three_brokers(tmp_path: Path) -> Iterator[LocalCluster]:
    with running_cluster(tmp_path / "cluster", {
            **GROUP_PROPERTIES, "offsets.topic.replication.factor": "3",
            "min.insync.replicas": "2"}, brokers=3) as made:
        yield made


def test_the_group_moves_when_its_coordinator_is_killed(three_brokers: LocalCluster) -> None:
    cluster = three_brokers
    bootstrap = cluster.bootstrap_servers
    create_topic(bootstrap, TOPIC, PARTITIONS, replication=3)
    produce(bootstrap, 0, 40)
    member = consumer(bootstrap, "moving")
    try:
        consume_until([member], 40)
        member.commit(asynchronous=False)
        before = committed(member)
        assert sum(before.values()) == 40
        via = cluster.brokers[0]
        coordinator = partition_leaders(cluster, via, "__consumer_offsets")[
            partition_for("moving", OFFSETS_PARTITIONS)]
        cluster.kill(coordinator)
        alive = next(b for b in cluster.brokers if b != coordinator)
        wait_for("a new coordinator", lambda: partition_leaders(
            cluster, alive, "__consumer_offsets")[partition_for("moving", OFFSETS_PARTITIONS)]
            not in (coordinator, -1) or None)
        produce(",".join(cluster.nodes[b].address for b in cluster.brokers if b != coordinator),
                40, 8)
        got = consume_until([member], 8)
        assert sorted(got[0]) == sorted(f"v{i}".encode() for i in range(40, 48))
        member.commit(asynchronous=False)
        after = committed(member)
        assert all(after[p] >= before[p] for p in before) and sum(after.values()) == 48
    finally:
        member.close()


def test_committed_offsets_survive_a_broker_restart(one_broker: LocalCluster) -> None:
    bootstrap = one_broker.bootstrap_servers
    create_topic(bootstrap, TOPIC, PARTITIONS)
    produce(bootstrap, 0, 20)
    member = consumer(bootstrap, "restart")
    try:
        consume_until([member], 20)
        member.commit(asynchronous=False)
        before = committed(member)
    finally:
        member.close()
    (broker_id,) = one_broker.brokers
    assert one_broker.stop(broker_id) == 0  # graceful: the shards unload on the way out
    one_broker.start(broker_id)
    one_broker.wait_listening([broker_id])
    resumed = consumer(bootstrap, "restart")
    try:
        assert wait_for("offsets loaded", lambda: committed(resumed) == before or None)
    finally:
        resumed.close()
