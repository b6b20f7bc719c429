"""``__consumer_offsets`` waits for ``offsets.topic.replication.factor`` brokers, as in Kafka.

A cluster configured with factor 3 and one broker up: the first FindCoordinator asks the
controller for 3 replicas, the controller refuses (INVALID_REPLICATION_FACTOR), no offsets
topic appears and FindCoordinator answers COORDINATOR_NOT_AVAILABLE; once the second and third
brokers are unfenced, a later FindCoordinator creates it with 3 replicas (pykraft used to cap
the factor by the live brokers and made it with 1 replica, forever)."""

from __future__ import annotations

from pathlib import Path

from broker_harness import PROPERTIES, broker_call, fenced_brokers, wait_for, wait_for_brokers

from pykraft.ids import OFFSETS_TOPIC_NAME
from pykraft.messages.kafka.find_coordinator_request import FindCoordinatorRequest
from pykraft.messages.kafka.metadata_request import MetadataRequest, MetadataRequestTopic
from pykraft.protocol.errors import ErrorCode
from pykraft.tools.local_cluster import LocalCluster

GROUP = "waits-for-brokers"


def find_coordinator(cluster: LocalCluster, broker_id: int) -> ErrorCode:
    answer = broker_call(cluster, broker_id, FindCoordinatorRequest(
        coordinator_keys=(GROUP,)))
    (coordinator,) = answer.coordinators
    return ErrorCode(coordinator.error_code)


def offsets_topic(cluster: LocalCluster, broker_id: int) -> tuple[ErrorCode, list[int]]:
    """The offsets topic's Metadata error and each partition's replica count."""
    answer = broker_call(cluster, broker_id, MetadataRequest(
        topics=(MetadataRequestTopic(name=OFFSETS_TOPIC_NAME),),
        allow_auto_topic_creation=False, include_topic_authorized_operations=False))
    (topic,) = answer.topics
    return ErrorCode(topic.error_code), [len(p.replica_nodes) for p in topic.partitions]


def test_the_offsets_topic_waits_for_its_replication_factor(tmp_path: Path) -> None:
    cluster = LocalCluster.create(tmp_path / "cluster", 1, {
        **PROPERTIES, "offsets.topic.replication.factor": "3",
        "offsets.topic.num.partitions": "3"}, brokers=3)
    first, *others = cluster.brokers
    try:
        for node_id in (*cluster.controllers, first):
            cluster.start(node_id)
        wait_for("the first broker unfenced",
                 lambda: True if fenced_brokers(cluster, first) == {first: False} else None)

        assert find_coordinator(cluster, first) == ErrorCode.COORDINATOR_NOT_AVAILABLE
        wait_for("the controller's answer", lambda: True if (
            "internal_topic_creation_failed" in cluster.nodes[first].log.read_text()
            or offsets_topic(cluster, first)[0] == ErrorCode.NONE) else None)
        assert offsets_topic(cluster, first) == (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, [])
        log = cluster.nodes[first].log.read_text()
        assert "invalid_replication_factor" in log.lower(), log[-2000:]
        assert find_coordinator(cluster, first) == ErrorCode.COORDINATOR_NOT_AVAILABLE

        for node_id in others:
            cluster.start(node_id)
        wait_for_brokers(cluster, 3)
        wait_for("a coordinator", lambda: True if find_coordinator(
            cluster, first) == ErrorCode.NONE else None)
        assert offsets_topic(cluster, first) == (ErrorCode.NONE, [3, 3, 3])
    finally:
        for node_id in cluster.nodes:
            cluster.kill(node_id)
