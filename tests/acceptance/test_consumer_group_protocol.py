"""KIP-848 consumer groups (``group.protocol=consumer``) with real clients on a 1-controller +
1-broker cluster: librdkafka's consumers share a topic through ConsumerGroupHeartbeat and
ConsumerGroupDescribe shows them; Kafka's Java consumer (3.9) joins, commits with member
epochs (OffsetCommit v9) and a second run resumes from its commits. On three brokers the
group outlives a SIGKILL of its coordinator: the next one loads it from its records."""

from __future__ import annotations

import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from broker_harness import (
    PROPERTIES,
    broker_call,
    confluent_produce,
    create_topic,
    partition_leaders,
    running_cluster,
    wait_for,
)
from java_clients import run_probe

from pykraft.group.partitioning import partition_for
from pykraft.messages.kafka.consumer_group_describe_request import ConsumerGroupDescribeRequest
from pykraft.tools.local_cluster import LocalCluster

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]
PROBE_SOURCE = Path(__file__).parent / "java" / "GroupProtocolProbe.java"
DEADLINE_S = 45.0
CLOSE_S = 20.0
PROPS = {**PROPERTIES, "offsets.topic.replication.factor": "1",
         "offsets.topic.num.partitions": "3", "group.consumer.heartbeat.interval.ms": "500"}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with running_cluster(tmp_path_factory.mktemp("kip848") / "cluster", PROPS) as made:
        yield made


@pytest.fixture(scope="module")
def group_probe(java_classpath: str, tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    classes = tmp_path_factory.mktemp("group-probe")
    subprocess.run(["javac", "-d", str(classes), "-cp", java_classpath, str(PROBE_SOURCE)],
                   check=True, timeout=300)
    return ["java", "-cp", f"{classes}:{java_classpath}", "GroupProtocolProbe"]


def produce(bootstrap: str, topic: str, start: int, count: int) -> None:
    confluent_produce({"bootstrap.servers": bootstrap}, topic, [
        (f"k{i}".encode(), f"v{i}".encode(), ()) for i in range(start, start + count)])


def committed_offsets(bootstrap: str, group: str) -> dict[int, int]:
    from kafka import KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        found = admin.list_group_offsets(group)[group]
    finally:
        admin.close()
    return {tp.partition: meta.offset for tp, meta in found.items()}


def describe_group(cluster: LocalCluster, group: str, via: int | None = None) -> Any:
    """ConsumerGroupDescribe sent to ``via`` (the only broker by default), which must be the
    group's coordinator."""
    if via is None:
        (via,) = cluster.brokers
    response = broker_call(cluster, via, ConsumerGroupDescribeRequest(
        group_ids=(group,)))
    (described,) = response.groups
    return described


def rdkafka_consumer(bootstrap: str, group: str, topic: str) -> Any:
    import confluent_kafka

    made = confluent_kafka.Consumer({
        "bootstrap.servers": bootstrap, "group.id": group, "group.protocol": "consumer",
        "auto.offset.reset": "earliest", "enable.auto.commit": False,
        "fetch.wait.max.ms": 100})
    made.subscribe([topic])
    return made


def close_all(consumers: list[Any]) -> None:
    """Close every consumer, each within CLOSE_S: librdkafka's close never returns once a
    fatal error (such as GROUP_ID_NOT_FOUND from a coordinator that lost the group) stopped
    the consumer, and a failing test must still end."""
    closers = [threading.Thread(target=member.close, daemon=True) for member in consumers]
    for closer in closers:
        closer.start()
    for closer in closers:
        closer.join(CLOSE_S)


def poll_until(consumers: list[Any], values: set[bytes]) -> None:
    """Poll each consumer in turn until ``values`` all arrived and every consumer holds
    partitions (bounded)."""
    seen: set[bytes] = set()
    deadline = time.monotonic() + DEADLINE_S
    while time.monotonic() < deadline:
        for member in consumers:
            message = member.poll(0.1)
            if message is not None and message.error() is None:
                seen.add(bytes(message.value() or b""))
        if values <= seen and all(member.assignment() for member in consumers):
            return
    raise AssertionError(f"{len(values - seen)} of {len(values)} values missing")


def read_to_the_end(consumers: list[Any], total: int) -> None:
    """Poll each consumer until their positions on the partitions each owns now add up to
    ``total`` (bounded): a partition that moved to the second member while
    :func:`poll_until` ran is read again by its new owner from the start (nothing was
    committed yet), so a commit before that would store its partial position."""
    def positions() -> int:
        return sum(max(tp.offset, 0) for member in consumers
                   for tp in member.position(member.assignment()))
    deadline = time.monotonic() + DEADLINE_S
    while positions() < total:
        if time.monotonic() > deadline:
            raise AssertionError(f"the members' positions add up to {positions()} of {total}")
        for member in consumers:
            member.poll(0.1)


def test_librdkafka_consumers_share_a_topic_with_the_consumer_protocol(
        cluster: LocalCluster) -> None:
    bootstrap, topic, group = cluster.bootstrap_servers, "kip848-rdkafka", "rd"
    create_topic(bootstrap, topic, 4)
    produce(bootstrap, topic, 0, 40)
    consumers = [rdkafka_consumer(bootstrap, group, topic) for _ in range(2)]
    try:
        poll_until(consumers, {f"v{i}".encode() for i in range(40)})
        owned = [{tp.partition for tp in member.assignment()} for member in consumers]
        assert owned[0].isdisjoint(owned[1]) and owned[0] | owned[1] == set(range(4))

        def stable() -> Any:
            described = describe_group(cluster, group)
            return described if described.group_state == "Stable" else None

        described = wait_for("a stable consumer group", stable)
        assert described.error_code == 0 and len(described.members) == 2
        partitions = sorted(p for m in described.members
                            for tp in m.assignment.topic_partitions for p in tp.partitions)
        assert partitions == [0, 1, 2, 3]
        assert {tp.topic_name for m in described.members
                for tp in m.assignment.topic_partitions} == {topic}
        read_to_the_end(consumers, 40)
        for member in consumers:
            member.commit(asynchronous=False)
    finally:
        close_all(consumers)
    offsets = committed_offsets(bootstrap, group)
    assert set(offsets) == set(range(4)) and sum(offsets.values()) == 40
    assert describe_group(cluster, group).group_state == "Empty"


def test_the_java_consumer_joins_commits_and_resumes_with_the_consumer_protocol(
        cluster: LocalCluster, group_probe: list[str]) -> None:
    bootstrap, topic, group = cluster.bootstrap_servers, "kip848-java", "jv"
    create_topic(bootstrap, topic, 2)
    produce(bootstrap, topic, 0, 20)
    lines = run_probe(group_probe, "consume", bootstrap, topic, group, "consumer", "20")
    records = {(int(p), int(o)) for kind, p, o in (w for w in lines if len(w) == 3)
               if kind == "record"}
    assert len(records) == 20
    assert sorted(int(w[1]) for w in lines if w[0] == "assigned") == [0, 1]
    # A consumer-protocol group (a classic one would be GROUP_ID_NOT_FOUND here), left empty.
    described = describe_group(cluster, group)
    assert (described.error_code, described.group_state) == (0, "Empty")
    first = committed_offsets(bootstrap, group)
    assert set(first) == {0, 1} and sum(first.values()) == 20
    produce(bootstrap, topic, 20, 6)
    again = run_probe(group_probe, "consume", bootstrap, topic, group, "consumer", "6")
    resumed = [(int(w[1]), int(w[2])) for w in again if w[0] == "record"]
    assert len(resumed) == 6 and all(offset >= first[p] for p, offset in resumed)
    assert sum(committed_offsets(bootstrap, group).values()) == 26


@pytest.fixture
def three_brokers(tmp_path: Path) -> Iterator[LocalCluster]:
    with running_cluster(tmp_path / "cluster", {
            **PROPS, "offsets.topic.replication.factor": "3", "min.insync.replicas": "2"},
            brokers=3) as made:
        yield made


def test_a_consumer_group_outlives_its_coordinator(three_brokers: LocalCluster) -> None:
    """Three members join and one leaves (group epoch 4 at least); after the coordinator's
    SIGKILL the next coordinator describes the same group at no lower epoch, and the two
    members carry on consuming. A coordinator that lost the group would rebuild it from
    the members' rejoins, from epoch 1."""
    cluster = three_brokers
    bootstrap, topic, group = cluster.bootstrap_servers, "kip848-failover", "moving"
    create_topic(bootstrap, topic, 4, replication=3)
    produce(bootstrap, topic, 0, 20)
    offsets_partition = partition_for(group, 3)
    consumers = [rdkafka_consumer(bootstrap, group, topic) for _ in range(3)]
    try:
        poll_until(consumers, {f"v{i}".encode() for i in range(20)})
        close_all([consumers.pop()])
        coordinator = partition_leaders(cluster, cluster.brokers[0], "__consumer_offsets")[
            offsets_partition]

        def stable(via: int) -> Any:
            described = describe_group(cluster, group, via)
            return described if (described.group_state == "Stable"
                                 and len(described.members) == 2) else None

        before = wait_for("two stable members", lambda: stable(coordinator))
        assert before.group_epoch >= 4
        cluster.kill(coordinator)
        alive = next(b for b in cluster.brokers if b != coordinator)

        def new_coordinator() -> int | None:
            leader = partition_leaders(cluster, alive, "__consumer_offsets")[offsets_partition]
            return leader if leader not in (coordinator, -1) else None

        successor = wait_for("a new coordinator", new_coordinator)
        # Retried while the successor loads the partition (COORDINATOR_LOAD_IN_PROGRESS).
        loaded = wait_for("the group at its new coordinator", lambda: (
            found if (found := describe_group(cluster, group, successor)).error_code == 0
            else None))
        assert loaded.group_epoch >= before.group_epoch
        assert {m.member_id for m in loaded.members} == {m.member_id for m in before.members}
        produce(",".join(cluster.nodes[b].address for b in cluster.brokers
                         if b != coordinator), topic, 20, 8)
        poll_until(consumers, {f"v{i}".encode() for i in range(20, 28)})
        assert describe_group(cluster, group, successor).group_epoch >= before.group_epoch
    finally:
        close_all(consumers)
