"""Consumer groups through kafka-python (JoinGroup up to v7, OffsetCommit/OffsetFetch up to
v8) and aiokafka, which speaks the versions before batching (FindCoordinator v0-1, one
group per OffsetFetch, one member_id per LeaveGroup), on a 1-controller + 1-broker cluster:
consume, commit, read the commits back; kafka-python's admin lists, describes and deletes
the group. Also: the ranges ApiVersions advertises."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
from broker_harness import PROPERTIES, broker_call, create_topic, running_cluster

from group_member import subscribe_with_metadata
from pykraft.tools.local_cluster import LocalCluster

TOPIC = "old-versions"
COUNT = 10
PROPS = {**PROPERTIES, "group.initial.rebalance.delay.ms": "0",
         "offsets.topic.replication.factor": "1", "offsets.topic.num.partitions": "3"}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with running_cluster(tmp_path_factory.mktemp("groups") / "cluster", PROPS) as made:
        from kafka import KafkaProducer

        create_topic(made.bootstrap_servers, TOPIC, 2)
        producer = KafkaProducer(bootstrap_servers=made.bootstrap_servers)
        for i in range(COUNT):
            producer.send(TOPIC, f"v{i}".encode(), partition=i % 2)
        producer.flush(30)
        producer.close()
        yield made


def test_kafka_python_group_commit_and_admin(cluster: LocalCluster) -> None:
    from kafka import KafkaAdminClient, KafkaConsumer, TopicPartition

    bootstrap = cluster.bootstrap_servers
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id="kp",
                             auto_offset_reset="earliest", enable_auto_commit=False,
                             consumer_timeout_ms=10_000)
    try:
        subscribe_with_metadata(consumer, TOPIC)
        got = set()
        for message in consumer:
            got.add(message.value)
            if len(got) == COUNT:
                break
        consumer.commit()
        assert got == {f"v{i}".encode() for i in range(COUNT)}
        assert [consumer.committed(TopicPartition(TOPIC, p)) for p in (0, 1)] == [5, 5]
    finally:
        consumer.close()
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        assert [(g["group_id"], g["group_state"]) for g in admin.list_groups()] == [
            ("kp", "Empty")]
        assert admin.describe_groups(["kp"])["kp"]["group_state"] == "Empty"
        offsets = admin.list_group_offsets("kp")["kp"]
        assert {tp.partition: o.offset for tp, o in offsets.items()} == {0: 5, 1: 5}
        assert admin.delete_groups(["kp"]) == {"kp": "OK"}
        assert admin.list_groups() == []
    finally:
        admin.close()


def test_aiokafka_group_commit(cluster: LocalCluster) -> None:
    import aiokafka

    async def run() -> tuple[set[bytes], list[int | None]]:
        consumer = aiokafka.AIOKafkaConsumer(
            TOPIC, bootstrap_servers=cluster.bootstrap_servers, group_id="aio",
            auto_offset_reset="earliest", enable_auto_commit=False)
        await consumer.start()
        got: set[bytes] = set()
        try:
            async with asyncio.timeout(30):
                while len(got) < COUNT:
                    batches = await consumer.getmany(timeout_ms=500)
                    got |= {m.value for messages in batches.values() for m in messages}
            await consumer.commit()
            return got, [await consumer.committed(aiokafka.TopicPartition(TOPIC, p))
                         for p in (0, 1)]
        finally:
            await consumer.stop()

    got, committed = asyncio.run(run())
    assert got == {f"v{i}".encode() for i in range(COUNT)}
    assert committed == [5, 5]


def test_the_group_apis_are_advertised_at_kafkas_ranges(cluster: LocalCluster) -> None:
    from pykraft.protocol.api_versions import ApiVersionsRequest

    answer = broker_call(cluster, cluster.brokers[0], ApiVersionsRequest(
        client_software_name="acceptance", client_software_version="1"))
    ranges = {int(k.api_key): (int(k.min_version), int(k.max_version)) for k in answer.api_keys}
    keys = (8, 9, 10, 11, 12, 13, 14, 15, 16, 42, 47, 68, 69)
    assert {key: ranges.get(key) for key in keys} == {
        8: (2, 10), 9: (1, 10), 10: (0, 6), 11: (0, 9), 12: (0, 4), 13: (0, 5), 14: (0, 5),
        15: (0, 6), 16: (0, 5), 42: (0, 3), 47: (0, 0), 68: (0, 1), 69: (0, 1)}
