"""process.roles=broker,controller: one process is a voter, the active controller and a
broker; clients on its PLAINTEXT listener create topics it then serves."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from broker_harness import broker_call, partition_leaders, wait_for_brokers
from kio.schema.create_topics.v7.request import CreatableTopic, CreateTopicsRequest
from kio.schema.types import TopicName
from kio.static.primitive import i16, i32

from pykraft.config.server import ServerConfig
from pykraft.ids import random_uuid, uuid_to_str
from pykraft.protocol.errors import ErrorCode
from pykraft.tools.cluster import BROKER, HOST, LocalCluster, NodeFiles, free_ports
from pykraft.tools.storage_tool import FormatRequest, QuorumMode, format_storage


@pytest.fixture
def combined(tmp_path: Path) -> Iterator[LocalCluster]:
    controller_port, client_port = free_ports(2)
    node = NodeFiles(1, client_port, tmp_path / "node-1", BROKER)
    node.directory.mkdir()
    node.config.write_text("".join(f"{k}={v}\n" for k, v in {
        "process.roles": "broker,controller",
        "node.id": "1",
        "listeners": f"CONTROLLER://{HOST}:{controller_port},PLAINTEXT://{node.address}",
        "controller.listener.names": "CONTROLLER",
        "controller.quorum.voters": f"1@{HOST}:{controller_port}",
        "log.dirs": str(node.data),
        "broker.heartbeat.interval.ms": "500",
    }.items()))
    cluster_id = uuid_to_str(random_uuid())
    format_storage(FormatRequest(config=ServerConfig.load(node.config), cluster_id=cluster_id,
                                 mode=QuorumMode.STATIC))
    cluster = LocalCluster(tmp_path, cluster_id, [node])
    cluster.start(1)
    try:
        yield cluster
    finally:
        cluster.kill(1)


def test_combined_node_registers_itself_and_serves_topics(combined: LocalCluster) -> None:
    wait_for_brokers(combined, 1)
    created = broker_call(combined, 1, CreateTopicsRequest(topics=(CreatableTopic(
        name=TopicName("solo"), num_partitions=i32(3), replication_factor=i16(1),
        assignments=(), configs=()),)))
    assert created.topics[0].error_code == ErrorCode.none
    # One process: its broker image got the records in the same commit that released the
    # answer, so the topic is served at once.
    assert partition_leaders(combined, 1, "solo") == [1, 1, 1]
