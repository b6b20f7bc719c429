"""KIP-848 consumer groups (``group.protocol=consumer``) with real clients on a 1-controller +
1-broker cluster: librdkafka's consumers share a topic through ConsumerGroupHeartbeat and
ConsumerGroupDescribe shows them; Kafka's Java consumer (3.9) joins, commits with member
epochs (OffsetCommit v9) and a second run resumes from its commits."""

from __future__ import annotations

import subprocess
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
    running_cluster,
    wait_for,
)
from java_clients import run_probe
from kio.schema.consumer_group_describe.v1.request import ConsumerGroupDescribeRequest
from kio.schema.types import GroupId

from pykraft.tools.local_cluster import LocalCluster

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]
PROBE_SOURCE = Path(__file__).parent / "java" / "GroupProtocolProbe.java"
DEADLINE_S = 45.0
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


def describe_group(cluster: LocalCluster, group: str) -> Any:
    (broker,) = cluster.brokers
    response = broker_call(cluster, broker, ConsumerGroupDescribeRequest(
        group_ids=(GroupId(group),), include_authorized_operations=False))
    (described,) = response.groups
    return described


def test_librdkafka_consumers_share_a_topic_with_the_consumer_protocol(
        cluster: LocalCluster) -> None:
    import confluent_kafka

    bootstrap, topic, group = cluster.bootstrap_servers, "kip848-rdkafka", "rd"
    create_topic(bootstrap, topic, 4)
    produce(bootstrap, topic, 0, 40)
    consumers = [confluent_kafka.Consumer({
        "bootstrap.servers": bootstrap, "group.id": group, "group.protocol": "consumer",
        "auto.offset.reset": "earliest", "enable.auto.commit": False,
        "fetch.wait.max.ms": 100}) for _ in range(2)]
    try:
        for member in consumers:
            member.subscribe([topic])
        seen: set[bytes] = set()
        deadline = time.monotonic() + DEADLINE_S
        while time.monotonic() < deadline:
            for member in consumers:
                message = member.poll(0.1)
                if message is not None and message.error() is None:
                    seen.add(bytes(message.value() or b""))
            if len(seen) == 40 and all(member.assignment() for member in consumers):
                break
        assert seen == {f"v{i}".encode() for i in range(40)}
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
        for member in consumers:
            member.commit(asynchronous=False)
    finally:
        for member in consumers:
            member.close()
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
