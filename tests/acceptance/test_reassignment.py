"""Partition reassignment on real processes: 1 controller and 4 brokers, a topic with RF=3
on brokers [1, 2, 3] holding acknowledged records, moved to [2, 3, 4] under acks=all
production by AlterPartitionReassignments (what kafka-reassign-partitions.sh sends).

The new replica catches up from the leader, joins the ISR, and the reassignment completes:
ListPartitionReassignments lists it while it runs and no more after, the old leader hands
over (its replica is removed), its log directory goes, and every acknowledged record is
read back once, in order, from the new replicas.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from broker_harness import PROPERTIES, broker_call, running_cluster, wait_for
from test_broker_lifecycle import (  # type: ignore[import-not-found]
    TOPIC,
    Sends,
    consumed,
    create_topic,
    leader_and_isr,
)

from pykraft.messages.kafka.alter_partition_reassignments_request import (
    AlterPartitionReassignmentsRequest,
    ReassignablePartition,
    ReassignableTopic,
)
from pykraft.messages.kafka.list_partition_reassignments_request import (
    ListPartitionReassignmentsRequest,
)
from pykraft.protocol.errors import ErrorCode
from pykraft.tools.local_cluster import LocalCluster


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[LocalCluster]:
    with running_cluster(tmp_path, {**PROPERTIES, "auto.leader.rebalance.enable": "false"},
                         brokers=4) as made:
        yield made


def reassign(cluster: LocalCluster, via: int, replicas: tuple[int, ...] | None) -> None:
    answer = broker_call(cluster, via, AlterPartitionReassignmentsRequest(topics=(
        ReassignableTopic(name=TOPIC, partitions=(
            ReassignablePartition(partition_index=0, replicas=replicas),)),)))
    assert answer.error_code == ErrorCode.NONE
    assert answer.responses[0].partitions[0].error_code == ErrorCode.NONE, answer


def ongoing(cluster: LocalCluster, via: int) -> list[tuple[int, ...]]:
    answer = broker_call(cluster, via, ListPartitionReassignmentsRequest(topics=None))
    return [p.replicas for t in answer.topics if t.name == TOPIC for p in t.partitions]


def partition_dirs(cluster: LocalCluster, broker_id: int) -> list[Path]:
    return [p for p in cluster.nodes[broker_id].data.glob(f"{TOPIC}-0")
            if p.is_dir()]


def test_a_partition_moves_to_a_new_broker_under_acks_all_production(
        cluster: LocalCluster) -> None:
    first, second, third, fourth = cluster.brokers
    create_topic(cluster, [first, second, third])
    wait_for("all three in the ISR", lambda: (
        leader_and_isr(cluster, second) == (first, {first, second, third})) or None)
    sends = Sends(cluster, "all")
    for _ in range(200):
        sends.send()
    sends.flush()
    assert partition_dirs(cluster, fourth) == []

    reassign(cluster, fourth, (second, third, fourth))
    for _ in range(100):  # while the new replica catches up (or once it has)
        sends.send()
    sends.flush()
    wait_for("the reassignment completed", lambda: (not ongoing(cluster, second)) or None)
    wait_for("the new replicas lead and are in sync", lambda: (
        leader_and_isr(cluster, second) == (second, {second, third, fourth})) or None)
    wait_for("the old replica's log removed", lambda: (not partition_dirs(cluster, first))
             or None)
    assert partition_dirs(cluster, fourth) != []
    for _ in range(100):
        sends.send()
    sends.flush()
    assert sends.failed == []
    assert consumed(cluster, len(sends.sent)) == sends.sent
