"""process.roles=broker,controller: one process is a voter, the active controller and a
broker; clients on its PLAINTEXT listener create topics it then serves."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from broker_harness import broker_call, combined_node, partition_leaders, wait_for_brokers

from pykraft.messages.kafka.create_topics_request import CreatableTopic, CreateTopicsRequest
from pykraft.protocol.errors import ErrorCode
from pykraft.tools.local_cluster import LocalCluster


@pytest.fixture
def combined(tmp_path: Path) -> Iterator[LocalCluster]:
    cluster = combined_node(tmp_path, {"broker.heartbeat.interval.ms": "500"})
    cluster.start(1)
    try:
        yield cluster
    finally:
        cluster.kill(1)


def test_combined_node_registers_itself_and_serves_topics(combined: LocalCluster) -> None:
    wait_for_brokers(combined, 1)
    created = broker_call(combined, 1, CreateTopicsRequest(topics=(CreatableTopic(
        name="solo", num_partitions=3, replication_factor=1,
        assignments=(), configs=()),)))
    assert created.topics[0].error_code == ErrorCode.NONE
    # One process: its broker image got the records in the same commit that released the
    # answer, so the topic is served at once.
    assert partition_leaders(combined, 1, "solo") == [1, 1, 1]
