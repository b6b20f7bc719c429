"""Partition reassignment on the controller (KIP-455, as Kafka's ReplicationControlManager):
the first record adds the target replicas (``adding``/``removing``), the leader's
AlterPartition that puts them all in the ISR completes it (a new leader if the old one
left: NEW_LEADER_ELECTED), a cancel reverts it, ListPartitionReassignments shows it."""

from __future__ import annotations

from controller_harness import Cluster, create_topic  # type: ignore[import-not-found]
from test_controller_lifecycle import UNCLEAN, beat, partition  # type: ignore[import-not-found]

from pykraft.messages.kafka.alter_partition_reassignments_request import (
    AlterPartitionReassignmentsRequest,
    ReassignablePartition,
    ReassignableTopic,
)
from pykraft.messages.kafka.alter_partition_reassignments_response import (
    AlterPartitionReassignmentsResponse,
)
from pykraft.messages.kafka.alter_partition_request import (
    AlterPartitionRequest,
    BrokerState,
    PartitionData,
    TopicData,
)
from pykraft.messages.kafka.alter_partition_response import AlterPartitionResponse
from pykraft.messages.kafka.list_partition_reassignments_request import (
    ListPartitionReassignmentsRequest,
    ListPartitionReassignmentsTopics,
)
from pykraft.messages.kafka.list_partition_reassignments_response import (
    ListPartitionReassignmentsResponse,
)
from pykraft.protocol.errors import ErrorCode

NO_REBALANCE = {"auto.leader.rebalance.enable": "false"}


def started(brokers: int = 4, properties: dict[str, str] | None = None) -> Cluster:
    """Brokers 1..n; topic t with one partition on [1, 2, 3]."""
    cluster = Cluster(properties={**NO_REBALANCE, **(properties or {})})
    cluster.elect()
    cluster.start_brokers([None] * brokers)
    cluster.call(create_topic("t", -1, -1, assignments=[[1, 2, 3]]))
    return cluster


def reassign(cluster: Cluster, *targets: tuple[int, tuple[int, ...] | None], topic: str = "t",
             allow_rf_change: bool = True) -> list[tuple[int, str, str | None]]:
    answer = cluster.call(AlterPartitionReassignmentsRequest(
        allow_replication_factor_change=allow_rf_change,
        topics=(ReassignableTopic(name=topic, partitions=tuple(
            ReassignablePartition(partition_index=i, replicas=r) for i, r in targets)),)))
    assert isinstance(answer, AlterPartitionReassignmentsResponse)
    assert answer.error_code == ErrorCode.NONE
    return [(p.partition_index, ErrorCode(p.error_code).name, p.error_message)
            for t in answer.responses for p in t.partitions]


def listed(cluster: Cluster, topics: dict[str, list[int]] | None = None
           ) -> list[tuple[str, int, tuple[int, ...], tuple[int, ...], tuple[int, ...]]]:
    request = ListPartitionReassignmentsRequest(topics=None if topics is None else tuple(
        ListPartitionReassignmentsTopics(name=n, partition_indexes=tuple(ids))
        for n, ids in topics.items()))
    answer = cluster.call(request)
    assert isinstance(answer, ListPartitionReassignmentsResponse)
    return [(t.name, p.partition_index, p.replicas, p.adding_replicas, p.removing_replicas)
            for t in answer.topics for p in t.partitions]


def test_a_reassignment_adds_the_target_replicas_then_completes_when_they_are_in_sync() -> None:
    cluster = started()
    assert reassign(cluster, (0, (2, 3, 4))) == [(0, "NONE", None)]
    state = partition(cluster)
    assert (state.replicas, state.adding_replicas, state.removing_replicas, state.leader,
            state.isr) == ((2, 3, 4, 1), (4,), (1,), 1, (1, 2, 3))
    assert listed(cluster) == [("t", 0, (2, 3, 4, 1), (4,), (1,))]
    assert listed(cluster, {"t": [0, 5], "nope": [0]}) == [("t", 0, (2, 3, 4, 1), (4,), (1,))]

    epoch = state.leader_epoch
    cluster.commit()
    answer = cluster.call(rejoin_request(cluster, 4))
    assert isinstance(answer, AlterPartitionResponse)
    assert answer.topics[0].partitions[0].error_code == ErrorCode.NEW_LEADER_ELECTED
    state = partition(cluster)
    assert (state.replicas, state.adding_replicas, state.removing_replicas, state.leader,
            state.isr) == ((2, 3, 4), (), (), 2, (2, 3, 4))
    assert state.leader_epoch == epoch + 1
    assert listed(cluster) == []
    assert cluster.replayed_image() == cluster.controller.image


def rejoin_request(cluster: Cluster, broker_id: int, topic: str = "t") -> AlterPartitionRequest:
    """The AlterPartition partition 0's leader sends to add ``broker_id`` to its ISR."""
    image = cluster.controller.image
    state = image.topics.by_name[topic].partitions[0]
    leader = image.cluster.brokers[state.leader]
    return AlterPartitionRequest(
        broker_id=leader.broker_id, broker_epoch=leader.epoch,
        topics=(TopicData(topic_id=image.topics.by_name[topic].topic_id,
                          partitions=(PartitionData(
                              partition_index=0, leader_epoch=state.leader_epoch,
                              new_isr_with_epochs=tuple(BrokerState(broker_id=b, broker_epoch=-1)
                                                        for b in (*state.isr, broker_id)),
                              partition_epoch=state.partition_epoch),)),))


def test_a_completion_keeping_the_leader_answers_the_new_state_and_bumps_the_epoch() -> None:
    cluster = started()
    assert reassign(cluster, (0, (1, 2, 4))) == [(0, "NONE", None)]
    epoch = partition(cluster).leader_epoch
    answer = cluster.call(rejoin_request(cluster, 4))
    assert isinstance(answer, AlterPartitionResponse)
    (data,) = answer.topics[0].partitions
    state = partition(cluster)
    assert (state.replicas, state.isr, state.leader) == ((1, 2, 4), (1, 2, 4), 1)
    assert (data.error_code, data.isr, data.leader_epoch) == (0, (1, 2, 4), epoch + 1)
    assert state.leader_epoch == epoch + 1  # replica 3 left: its epoch must not serve again


def test_reordering_replicas_completes_at_once_without_an_epoch_bump() -> None:
    cluster = started()
    epoch = partition(cluster).leader_epoch
    assert reassign(cluster, (0, (3, 2, 1))) == [(0, "NONE", None)]
    state = partition(cluster)
    assert (state.replicas, state.adding_replicas, state.removing_replicas, state.leader,
            state.leader_epoch) == ((3, 2, 1), (), (), 1, epoch)
    assert listed(cluster) == []


def test_a_cancel_reverts_to_the_original_replicas() -> None:
    cluster = started()
    reassign(cluster, (0, (2, 3, 4)))
    assert reassign(cluster, (0, None)) == [(0, "NONE", None)]
    state = partition(cluster)
    # Kafka's originalReplicas: the replica list without the adding ones, in its order
    assert (state.replicas, state.adding_replicas, state.removing_replicas, state.isr) == (
        (2, 3, 1), (), (), (1, 2, 3))
    assert reassign(cluster, (0, None)) == [(0, "NO_REASSIGNMENT_IN_PROGRESS", None)]


def test_a_cancel_that_would_empty_the_isr_needs_unclean_elections() -> None:
    """u on [1, 2] reassigned to [3, 4]; 3 joins the ISR, then 1 and 2 are fenced: the ISR
    holds only an adding replica, which a revert takes out."""
    for unclean, expected in (("false", "INVALID_REPLICA_ASSIGNMENT"), ("true", "NONE")):
        cluster = started(properties={UNCLEAN: unclean})
        cluster.call(create_topic("u", -1, -1, assignments=[[1, 2]]))
        reassign(cluster, (0, (3, 4)), topic="u")
        cluster.call(rejoin_request(cluster, 3, "u"))
        beat(cluster, 1, want_fence=True)
        beat(cluster, 2, want_fence=True)
        assert cluster.controller.image.topics.by_name["u"].partitions[0].isr == (3,)
        answer = reassign(cluster, (0, None), topic="u")
        assert [code for _, code, _ in answer] == [expected], unclean
        if expected == "NONE":
            reverted = cluster.controller.image.topics.by_name["u"].partitions[0]
            assert (reverted.replicas, reverted.isr) == ((1, 2), (1,))


def test_refusals_name_the_partition_and_the_reason() -> None:
    cluster = started()
    assert reassign(cluster, (0, (1, 9)), (0, (1, 1)), (0, ()), (7, (1,))) == [
        (0, "INVALID_REPLICA_ASSIGNMENT", "The manual partition assignment includes broker 9, "
                                          "but no such broker is registered."),
        (0, "INVALID_REPLICA_ASSIGNMENT", "The manual partition assignment includes the broker "
                                          "1 more than once."),
        (0, "INVALID_REPLICA_ASSIGNMENT", "The manual partition assignment includes an empty "
                                          "replica list."),
        (7, "UNKNOWN_TOPIC_OR_PARTITION", "Unable to find partition t:7."),
    ]
    assert reassign(cluster, (0, (1,)), topic="nope") == [
        (0, "UNKNOWN_TOPIC_OR_PARTITION", "Unable to find a topic named nope.")]
    assert reassign(cluster, (0, (1, 2)), allow_rf_change=False) == [
        (0, "INVALID_REPLICATION_FACTOR", "The replication factor is changed from 3 to 2")]
    assert partition(cluster).replicas == (1, 2, 3)


def test_after_a_reassignment_its_first_replica_is_the_preferred_leader() -> None:
    cluster = Cluster(properties={"leader.imbalance.check.interval.seconds": "1"})
    cluster.elect()
    cluster.start_brokers([None] * 3)
    cluster.call(create_topic("t", -1, -1, assignments=[[1, 2, 3]]))
    reassign(cluster, (0, (2, 1, 3)))
    assert partition(cluster).leader == 1
    cluster.tick(1000)
    cluster.commit()
    assert partition(cluster).leader == 2
