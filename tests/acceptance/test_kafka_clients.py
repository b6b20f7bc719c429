"""Real Kafka clients against 3 controllers + 3 brokers: kcat, confluent-kafka,
kafka-python and aiokafka see one consistent cluster and administer it through brokers."""

from __future__ import annotations

import asyncio
import shutil
import subprocess

import pytest
from broker_harness import broker_call, wait_for

from pykraft.tools.local_cluster import LocalCluster

TIMEOUT_S = 30


def _kcat_metadata(cluster: LocalCluster) -> str:
    done = subprocess.run(["kcat", "-L", "-b", cluster.bootstrap_servers, "-m", "10"],
                          capture_output=True, text=True, timeout=TIMEOUT_S, check=True)
    return done.stdout


def test_confluent_admin_creates_lists_describes_and_configures(cluster: LocalCluster) -> None:
    from confluent_kafka.admin import (
        AdminClient,
        AlterConfigOpType,
        ConfigEntry,
        ConfigResource,
        NewTopic,
    )

    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    futures = admin.create_topics([NewTopic("orders", num_partitions=6, replication_factor=3)])
    futures["orders"].result(TIMEOUT_S)

    def listed() -> object | None:
        topic = admin.list_topics(timeout=10).topics.get("orders")
        return topic if topic is not None and len(topic.partitions) == 6 else None
    topic = wait_for("orders in every broker's metadata", listed)
    for partition in topic.partitions.values():
        assert len(partition.replicas) == 3
        assert partition.leader in cluster.brokers

    described = admin.describe_cluster().result(TIMEOUT_S)
    assert sorted(node.id for node in described.nodes) == sorted(cluster.brokers)
    assert described.controller.id in cluster.brokers

    resource = ConfigResource(ConfigResource.Type.TOPIC, "orders", incremental_configs=[
        ConfigEntry("retention.ms", "3600000",
                    incremental_operation=AlterConfigOpType.SET)])
    admin.incremental_alter_configs([resource])[resource].result(TIMEOUT_S)

    def retention() -> str | None:
        query = ConfigResource(ConfigResource.Type.TOPIC, "orders")
        configs = admin.describe_configs([query])[query].result(TIMEOUT_S)
        entry = configs.get("retention.ms")
        return entry.value if entry is not None and entry.value == "3600000" else None
    assert wait_for("retention.ms=3600000 described", retention) == "3600000"


def test_kcat_lists_three_brokers_and_the_topics(cluster: LocalCluster) -> None:
    if shutil.which("kcat") is None:
        pytest.skip("kcat could not be installed (needs root and apt-get)")
    from kafka.admin import KafkaAdminClient, NewTopic

    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
    try:
        admin.create_topics([NewTopic("kcat-seen", 2, 1)])
    finally:
        admin.close()

    def listing() -> str | None:
        text = _kcat_metadata(cluster)
        return text if "kcat-seen" in text else None
    text = wait_for("kcat to list kcat-seen", listing)
    assert " 3 brokers:" in text
    for broker_id in cluster.brokers:
        assert f"broker {broker_id} at {cluster.nodes[broker_id].address}" in text
    assert 'topic "kcat-seen" with 2 partitions' in text


def test_kafka_python_admin_topics_partitions_and_quorum(cluster: LocalCluster) -> None:
    from kafka.admin import KafkaAdminClient, NewPartitions, NewTopic

    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
    try:
        admin.create_topics([NewTopic("kp-a", 1, 2), NewTopic("kp-b", 1, 1)])
        admin.create_partitions({"kp-a": NewPartitions(4)})
        admin.delete_topics(["kp-b"])

        def settled() -> set[str] | None:
            names = set(admin.list_topics())
            return names if "kp-a" in names and "kp-b" not in names else None
        wait_for("kp-a listed and kp-b gone", settled)
        meta = admin.describe_topics(["kp-a"])
        assert len(meta[0]["partitions"]) == 4

        quorum = admin.describe_metadata_quorum()
        partition = quorum["topics"][0]["partitions"][0]
        voters = {v["replica_id"] for v in partition["current_voters"]}
        observers = {o["replica_id"] for o in partition["observers"]}
        assert voters == set(cluster.controllers)
        assert set(cluster.brokers) <= observers
        assert partition["leader_id"] in voters
    finally:
        admin.close()


def test_aiokafka_admin_lists_topics(cluster: LocalCluster) -> None:
    from aiokafka.admin import AIOKafkaAdminClient, NewTopic

    async def run() -> set[str]:
        admin = AIOKafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
        await admin.start()
        try:
            await admin.create_topics([NewTopic("aio-topic", 3, 1)])
            for _ in range(100):
                names = set(await admin.list_topics())
                if "aio-topic" in names:
                    return names
            return names
        finally:
            await admin.close()
    assert "aio-topic" in asyncio.run(run())


def test_every_broker_advertises_the_same_api_versions(cluster: LocalCluster) -> None:
    from pykraft.protocol.api_versions import ApiVersionsRequest

    def advertised(broker_id: int) -> dict[int, tuple[int, int]]:
        answer = broker_call(cluster, broker_id, ApiVersionsRequest(
            client_software_name="acceptance", client_software_version="1"))
        return {int(k.api_key): (int(k.min_version), int(k.max_version))
                for k in answer.api_keys}
    seen = [advertised(b) for b in cluster.brokers]
    assert all(ranges == seen[0] for ranges in seen)
    assert seen[0][3] == (0, 13)  # Metadata v0-13
    assert 52 not in seen[0]  # Vote is a controller-only RPC
