"""Controller processes run the QuorumController: broker and admin RPCs on the controller
listener are answered by the active controller after their records commit."""

from __future__ import annotations

import asyncio
import dataclasses
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from pykraft.errors import PyKraftError
from pykraft.features import METADATA_VERSION_FEATURE, METADATA_VERSIONS
from pykraft.messages.kafka.broker_registration_request import (
    BrokerRegistrationRequest,
    Feature,
    Listener,
)
from pykraft.messages.kafka.create_topics_request import CreatableTopic, CreateTopicsRequest
from pykraft.protocol.api_versions import ApiVersionsRequest, listener_ranges
from pykraft.protocol.apis import Listener as ListenerKind
from pykraft.protocol.errors import ErrorCode
from pykraft.runtime.kafka_client import ClientConnection
from pykraft.tools.local_cluster import LocalCluster
from pykraft.tools.quorum_tool import parse_host_port

sys.path.insert(0, str(Path(__file__).parent.parent / "integration"))
from process_harness import describe, leader_info, wait_for

PROPERTIES = {"pykraft.shutdown.timeout.ms": "3000"}


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[LocalCluster]:
    made = LocalCluster.create(tmp_path / "cluster", 3, PROPERTIES)
    made.start_all()
    yield made
    for node_id in made.nodes:
        made.kill(node_id)


def call(cluster: LocalCluster, node_id: int, body: Any) -> Any:
    async def run() -> Any:
        host, port = parse_host_port(cluster.nodes[node_id].address)
        conn = await ClientConnection.open(host, port, client_id="test",
                                           ours=listener_ranges(ListenerKind.CONTROLLER))
        try:
            return await asyncio.wait_for(conn.request(body), 20)
        finally:
            conn.close()
    return asyncio.run(run())


def registration(cluster: LocalCluster, broker_id: int) -> BrokerRegistrationRequest:
    return BrokerRegistrationRequest(
        broker_id=broker_id, cluster_id=cluster.cluster_id, incarnation_id=uuid.uuid4(),
        listeners=(Listener(name="PLAINTEXT", host="127.0.0.1", port=9092),),
        features=(Feature(METADATA_VERSION_FEATURE, 1, METADATA_VERSIONS[-1].level),),
        rack=None)


def create(name: str) -> CreateTopicsRequest:
    return CreateTopicsRequest(topics=(CreatableTopic(
        name=name, num_partitions=2, replication_factor=1,
        assignments=(), configs=()),))


def test_active_controller_registers_brokers_and_creates_topics(
    cluster: LocalCluster,
) -> None:
    leader = leader_info(cluster).leader_id
    follower = next(n for n in cluster.nodes if n != leader)
    registered = call(cluster, leader, registration(cluster, 100))
    assert registered.error_code == ErrorCode.NONE
    assert registered.broker_epoch > 0
    refused = call(cluster, follower, create("t1"))
    assert refused.topics[0].error_code == ErrorCode.NOT_CONTROLLER
    # The fenced broker 100 is the only one: no usable broker for a replica yet.
    created = call(cluster, leader, create("t1"))
    assert created.topics[0].error_code != ErrorCode.NONE


def test_records_commit_before_the_answer_and_survive_failover(cluster: LocalCluster) -> None:
    first = leader_info(cluster)
    request = registration(cluster, 100)
    registered = call(cluster, first.leader_id, request)
    assert registered.error_code == ErrorCode.NONE
    cluster.kill(first.leader_id)
    second = leader_info(cluster, min_epoch=first.leader_epoch + 1, exclude=first.leader_id)
    # The committed registration survived the failover: the new active controller knows
    # this incarnation, so its retry keeps the epoch it was given (Kafka's rule).
    answer = call(cluster, second.leader_id, request)
    assert (answer.error_code, answer.broker_epoch) == (ErrorCode.NONE,
                                                        registered.broker_epoch)


def test_idle_active_controller_appends_noop_records(cluster: LocalCluster) -> None:
    """metadata.max.idle.interval.ms (500 ms by default) on the process clock: with no
    request at all, the high watermark keeps moving."""
    start = leader_info(cluster).high_watermark

    def grown() -> int | None:
        info = describe(cluster)
        return info.high_watermark if info is not None and info.high_watermark >= start + 3 \
            else None
    assert wait_for("three NoOpRecords committed", grown) >= start + 3


def test_a_migrating_controller_says_so_and_refuses_admin_writes(tmp_path: Path) -> None:
    """``zookeeper.metadata.migration.enable`` (KIP-866): the controller answers ApiVersions
    with ZkMigrationReady, and until the ZooKeeper load commits (pre-migration) refuses an
    admin write NOT_CONTROLLER with Kafka's message, while a ZooKeeper broker registers."""
    made = LocalCluster.create(tmp_path / "migrating", 1, {
        **PROPERTIES, "zookeeper.metadata.migration.enable": "true",
        "zookeeper.connect": "127.0.0.1:2181"})
    made.start_all()
    try:
        node_id = made.controllers[0]
        versions = wait_for("ApiVersions", lambda: _try(lambda: call(
            made, node_id, ApiVersionsRequest(client_software_name="test",
                                              client_software_version="1"))))
        assert versions.zk_migration_ready
        refused = wait_for("the active controller's refusal", lambda: (
            answer if (answer := call(made, node_id, create("t"))).topics[0].error_message
            else None))
        assert (refused.topics[0].error_code, refused.topics[0].error_message) == (
            ErrorCode.NOT_CONTROLLER, "The controller is in pre-migration mode.")
        zk_broker = dataclasses.replace(registration(made, 1), is_migrating_zk_broker=True,
                                        log_dirs=(uuid.uuid4(),))
        assert call(made, node_id, zk_broker).error_code == ErrorCode.NONE
    finally:
        made.kill(made.controllers[0])


def _try(action: Callable[[], Any]) -> Any | None:
    """``action()``, or None while the node does not answer yet."""
    try:
        return action()
    except (OSError, PyKraftError, TimeoutError):
        return None
