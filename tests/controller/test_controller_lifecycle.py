"""Broker lifecycle on the controller: controlled shutdown (leaderships move, the answer
waits for the active brokers to see them), fencing, and elections, clean and unclean
(KIP-704's RECOVERING leader, turned RECOVERED by its AlterPartition)."""

from __future__ import annotations

from controller_harness import Cluster, create_topic  # type: ignore[import-not-found]

from pykraft.image.topics import NO_LEADER, PartitionRegistration
from pykraft.messages.kafka.alter_partition_request import (
    AlterPartitionRequest,
    BrokerState,
    PartitionData,
    TopicData,
)
from pykraft.messages.kafka.alter_partition_response import AlterPartitionResponse
from pykraft.messages.kafka.broker_heartbeat_response import BrokerHeartbeatResponse
from pykraft.messages.kafka.incremental_alter_configs_request import (
    AlterableConfig,
    AlterConfigsResource,
    IncrementalAlterConfigsRequest,
)
from pykraft.protocol.errors import ErrorCode
from pykraft.records.metadata import BrokerRegistrationChangeRecord, PartitionChangeRecord
from pykraft.replica.leader import RECOVERED, RECOVERING

UNCLEAN = "unclean.leader.election.enable"
TOPIC_RESOURCE, BROKER_RESOURCE = 2, 4
INTERVAL_MS = 1000


def partition(cluster: Cluster, index: int = 0) -> PartitionRegistration:
    registration: PartitionRegistration = (
        cluster.controller.image.topics.by_name["t"].partitions[index])
    return registration


def beat(cluster: Cluster, broker_id: int, **flags: bool) -> BrokerHeartbeatResponse:
    response = cluster.heartbeat(broker_id, **flags)
    assert isinstance(response, BrokerHeartbeatResponse)
    assert response.error_code == ErrorCode.NONE
    return response


def shrink_to_leader(cluster: Cluster) -> None:
    """Partition 0's leader takes every other replica out of its ISR (AlterPartition)."""
    state = partition(cluster)
    leader = cluster.controller.image.cluster.brokers[state.leader]
    topic_id = cluster.controller.image.topics.by_name["t"].topic_id
    response = cluster.call(AlterPartitionRequest(
        broker_id=leader.broker_id, broker_epoch=leader.epoch,
        topics=(TopicData(topic_id=topic_id, partitions=(PartitionData(
            partition_index=0, leader_epoch=state.leader_epoch,
            new_isr_with_epochs=(BrokerState(broker_id=leader.broker_id,
                                             broker_epoch=-1),),
            partition_epoch=state.partition_epoch),)),)))
    assert isinstance(response, AlterPartitionResponse)
    assert response.topics[0].partitions[0].error_code == ErrorCode.NONE


def set_config(cluster: Cluster, key: str, value: str, *, resource_type: int = TOPIC_RESOURCE,
               name: str = "t") -> None:
    cluster.call(IncrementalAlterConfigsRequest(resources=(AlterConfigsResource(
        resource_type=resource_type, resource_name=name,
        configs=(AlterableConfig(name=key, config_operation=0, value=value),)),),
        validate_only=False))


def test_controlled_shutdown_of_a_broker_leading_nothing_is_immediate() -> None:
    cluster = Cluster()
    cluster.elect()
    cluster.start_brokers(["a", "b", "c"])
    cluster.call(create_topic("t", -1, -1, assignments=[[2, 3, 1]]))
    answer = beat(cluster, 1, want_shut_down=True)
    assert answer.should_shut_down and answer.is_fenced
    assert partition(cluster).isr == (2, 3)


def test_controlled_shutdown_waits_until_active_brokers_see_the_moves() -> None:
    cluster = Cluster()
    cluster.elect()
    cluster.start_brokers(["a", "b", "c"])
    cluster.call(create_topic("t", -1, -1, assignments=[[1, 2, 3], [1, 3, 2], [2, 1, 3]]))
    before = cluster.controller.committed_offset
    first = beat(cluster, 1, want_shut_down=True)
    assert not first.should_shut_down and not first.is_fenced
    assert [partition(cluster, i).leader for i in range(3)] == [2, 3, 2]
    assert all(1 not in partition(cluster, i).isr for i in range(3))
    moved = cluster.controller.committed_offset
    cluster.heartbeat(2, offset=before)  # broker 2 still behind the moves
    cluster.heartbeat(3, offset=moved)
    assert not beat(cluster, 1, want_shut_down=True).should_shut_down
    # a heartbeat without WantShutDown does not leave the controlled shutdown
    assert not beat(cluster, 1).should_shut_down
    assert not cluster.controller.image.cluster.brokers[1].fenced
    cluster.heartbeat(2, offset=moved)
    granted = beat(cluster, 1, want_shut_down=True)
    assert granted.should_shut_down and granted.is_fenced


def test_controlled_shutdown_of_the_last_isr_member_leaves_the_partition_leaderless() -> None:
    cluster = Cluster()
    cluster.elect()
    cluster.start_brokers(["a", "b"])
    cluster.call(create_topic("t", -1, -1, assignments=[[1, 2]]))
    shrink_to_leader(cluster)
    beat(cluster, 1, want_shut_down=True)
    assert (partition(cluster).leader, partition(cluster).isr) == (NO_LEADER, (1,))
    cluster.heartbeat(2)
    assert beat(cluster, 1, want_shut_down=True).should_shut_down


def test_session_expiry_moves_leadership_before_the_fence_record() -> None:
    cluster = Cluster(session_timeout_ms=3000)
    cluster.elect()
    cluster.start_brokers(["a", "b", "c"])
    cluster.call(create_topic("t", -1, -1, assignments=[[1, 2, 3]]))
    start = len(cluster.raft.metadata_records())
    cluster.tick(2000)
    cluster.heartbeat(2)
    cluster.heartbeat(3)
    cluster.tick(1500)  # broker 1: 3500 ms without a heartbeat
    written = [r.message for r in cluster.raft.metadata_records()[start:]]
    changes = (PartitionChangeRecord, BrokerRegistrationChangeRecord)
    kinds = [type(m) for m in written if isinstance(m, changes)]
    assert kinds == [PartitionChangeRecord, BrokerRegistrationChangeRecord]
    assert (partition(cluster).leader, partition(cluster).isr) == (2, (2, 3))
    assert partition(cluster).leader_epoch == 1


def lose_every_isr_member(cluster: Cluster) -> None:
    """Replicas 1, 2, 3; the ISR shrinks to 1, then 1 is fenced: 2 and 3 are live but out
    of the ISR."""
    cluster.call(create_topic("t", -1, -1, assignments=[[1, 2, 3]]))
    shrink_to_leader(cluster)
    beat(cluster, 1, want_fence=True)


def test_without_unclean_election_a_partition_whose_isr_is_gone_stays_offline() -> None:
    cluster = Cluster()
    cluster.elect()
    cluster.start_brokers(["a", "b", "c"])
    lose_every_isr_member(cluster)
    cluster.tick(10 * 300_000)
    assert (partition(cluster).leader, partition(cluster).isr) == (NO_LEADER, (1,))


def test_fencing_the_last_isr_member_elects_unclean_when_the_topic_allows_it() -> None:
    cluster = Cluster()
    cluster.elect()
    cluster.start_brokers(["a", "b", "c"])
    cluster.call(create_topic("t", -1, -1, assignments=[[1, 2, 3]], configs={UNCLEAN: "true"}))
    shrink_to_leader(cluster)
    beat(cluster, 1, want_fence=True)
    state = partition(cluster)
    assert (state.leader, state.isr, state.leader_recovery_state) == (2, (2,), RECOVERING)
    assert state.leader_epoch == 1


def test_enabling_unclean_election_elects_at_the_next_periodic_check() -> None:
    cluster = Cluster(properties={"unclean.leader.election.interval.ms": str(INTERVAL_MS)})
    cluster.elect()
    cluster.start_brokers(["a", "b", "c"])
    lose_every_isr_member(cluster)
    cluster.tick(INTERVAL_MS)
    assert partition(cluster).leader == NO_LEADER
    set_config(cluster, UNCLEAN, "true")
    cluster.tick(INTERVAL_MS)
    cluster.commit()
    state = partition(cluster)
    assert (state.leader, state.isr, state.leader_recovery_state) == (2, (2,), RECOVERING)
    assert cluster.replayed_image() == cluster.controller.image


def test_the_unclean_leader_marks_the_partition_recovered() -> None:
    cluster = Cluster(properties={UNCLEAN: "true"})  # the broker default allows it
    cluster.elect()
    cluster.start_brokers(["a", "b", "c"])
    lose_every_isr_member(cluster)
    state = partition(cluster)
    assert (state.leader, state.leader_recovery_state) == (2, RECOVERING)
    topic_id = cluster.controller.image.topics.by_name["t"].topic_id
    leader = cluster.controller.image.cluster.brokers[2]
    response = cluster.call(AlterPartitionRequest(
        broker_id=2, broker_epoch=leader.epoch,
        topics=(TopicData(topic_id=topic_id, partitions=(PartitionData(
            partition_index=0, leader_epoch=state.leader_epoch,
            new_isr_with_epochs=(BrokerState(broker_id=2, broker_epoch=-1),),
            leader_recovery_state=RECOVERED,
            partition_epoch=state.partition_epoch),)),)))
    assert isinstance(response, AlterPartitionResponse)
    assert response.topics[0].partitions[0].error_code == ErrorCode.NONE
    assert partition(cluster).leader_recovery_state == RECOVERED


def test_a_topic_config_false_overrides_the_broker_default() -> None:
    cluster = Cluster(properties={UNCLEAN: "true"})
    cluster.elect()
    cluster.start_brokers(["a", "b", "c"])
    cluster.call(create_topic("t", -1, -1, assignments=[[1, 2, 3]], configs={UNCLEAN: "false"}))
    shrink_to_leader(cluster)
    beat(cluster, 1, want_fence=True)
    assert partition(cluster).leader == NO_LEADER


def test_unfencing_an_out_of_isr_replica_elects_it_when_the_topic_allows_it() -> None:
    cluster = Cluster()
    cluster.elect()
    cluster.start_brokers(["a", "b", "c"])
    cluster.call(create_topic("t", -1, -1, assignments=[[1, 2, 3]], configs={UNCLEAN: "true"}))
    beat(cluster, 2, want_fence=True)
    beat(cluster, 3, want_fence=True)
    assert partition(cluster).isr == (1,)
    beat(cluster, 1, want_fence=True)
    assert partition(cluster).leader == NO_LEADER  # nobody usable to elect
    beat(cluster, 3)  # unfenced: out of the ISR, but the only live replica
    state = partition(cluster)
    assert (state.leader, state.isr, state.leader_recovery_state) == (3, (3,), RECOVERING)


def test_old_metadata_versions_elect_unclean_without_a_recovery_state() -> None:
    cluster = Cluster(mv=2, properties={UNCLEAN: "true"})  # 3.1-IV0: before KIP-704
    cluster.elect()
    cluster.start_brokers(["a", "b", "c"])
    lose_every_isr_member(cluster)
    state = partition(cluster)
    assert (state.leader, state.isr, state.leader_recovery_state) == (2, (2,), RECOVERED)


def test_the_dynamic_cluster_default_allows_unclean_elections() -> None:
    cluster = Cluster(properties={UNCLEAN: "false"})
    cluster.elect()
    cluster.start_brokers(["a", "b", "c"])
    set_config(cluster, UNCLEAN, "true", resource_type=BROKER_RESOURCE, name="")
    lose_every_isr_member(cluster)
    assert (partition(cluster).leader, partition(cluster).isr) == (2, (2,))


def test_brokers_whose_sessions_lapse_together_are_fenced_one_after_the_other() -> None:
    cluster = Cluster(session_timeout_ms=3000)
    cluster.elect()
    cluster.start_brokers(["a", "b", "c"])
    cluster.call(create_topic("t", -1, -1, assignments=[[1, 2, 3]]))
    cluster.tick(2000)
    cluster.heartbeat(3)
    cluster.tick(1500)  # brokers 1 and 2: 3500 ms without a heartbeat
    brokers = cluster.controller.image.cluster.brokers
    assert brokers[1].fenced and brokers[2].fenced
    assert (partition(cluster).leader, partition(cluster).isr) == (3, (3,))
    cluster.commit()
    assert cluster.replayed_image() == cluster.controller.image
