"""AssignReplicasToDirs on the controller: Kafka's ReplicationControlManager rules."""

from __future__ import annotations

import uuid

from controller_harness import Cluster, create_topic  # type: ignore[import-not-found]

from pykraft.controller.directories import dir_is_online
from pykraft.image.versions import MV_3_7_IV2
from pykraft.messages.kafka.assign_replicas_to_dirs_request import (
    AssignReplicasToDirsRequest,
    DirectoryData,
    PartitionData,
    TopicData,
)
from pykraft.messages.kafka.assign_replicas_to_dirs_response import AssignReplicasToDirsResponse
from pykraft.messages.kafka.broker_heartbeat_request import BrokerHeartbeatRequest
from pykraft.protocol.errors import ErrorCode
from pykraft.records.metadata import PartitionChangeRecord

DIR_A, DIR_B, OFFLINE = uuid.UUID(int=8), uuid.UUID(int=9), uuid.UUID(int=10)
UNASSIGNED = uuid.UUID(int=1)


def _cluster(mv: int = MV_3_7_IV2) -> Cluster:
    """Brokers 1 and 2 with two directories each (none before 3.7-IV2, which has no
    directory ids), topic "t" with 2 partitions on both."""
    cluster = Cluster(mv=mv)
    cluster.elect()
    for broker_id in (1, 2):
        cluster.register(broker_id, log_dirs=(DIR_A, DIR_B) if mv >= MV_3_7_IV2 else ())
        cluster.heartbeat(broker_id)
    cluster.call(create_topic("t", partitions=-1, rf=-1, assignments=[(1, 2), (2, 1)]))
    return cluster


def _assign(cluster: Cluster, broker_id: int, dirs: dict[uuid.UUID, dict[uuid.UUID, list[int]]],
            *, epoch: int | None = None) -> AssignReplicasToDirsResponse:
    broker = cluster.controller.image.cluster.brokers[broker_id]
    response = cluster.call(AssignReplicasToDirsRequest(
        broker_id=broker_id, broker_epoch=broker.epoch if epoch is None else epoch,
        directories=tuple(DirectoryData(id=dir_id, topics=tuple(
            TopicData(topic_id=topic_id, partitions=tuple(
                PartitionData(partition_index=p) for p in parts))
            for topic_id, parts in topics.items()))
            for dir_id, topics in dirs.items())))
    assert isinstance(response, AssignReplicasToDirsResponse)
    return response


def _codes(response: AssignReplicasToDirsResponse) -> list[list[list[int]]]:
    return [[[p.error_code for p in t.partitions] for t in d.topics]
            for d in response.directories]


def test_assigned_directories_land_in_the_image_per_replica() -> None:
    cluster = _cluster()
    topic = cluster.controller.image.topics.by_name["t"]
    assert topic.partitions[0].directories == (UNASSIGNED, UNASSIGNED)
    response = _assign(cluster, 1, {DIR_A: {topic.topic_id: [0]}, DIR_B: {topic.topic_id: [1]}})
    assert response.error_code == ErrorCode.NONE
    assert _codes(response) == [[[ErrorCode.NONE]], [[ErrorCode.NONE]]]
    partitions = cluster.controller.image.topics.by_name["t"].partitions
    assert partitions[0].directories == (DIR_A, UNASSIGNED)  # broker 1 is replica 0 of p0
    assert partitions[1].directories == (UNASSIGNED, DIR_B)  # and replica 1 of p1
    assert partitions[0].isr == (1, 2) and partitions[0].leader == 1
    before = len(cluster.raft.metadata_records())
    _assign(cluster, 1, {DIR_A: {topic.topic_id: [0]}})  # already there: no record
    assert len(cluster.raft.metadata_records()) == before
    assert cluster.replayed_image() == cluster.controller.image


def test_partition_errors_and_refusals() -> None:
    cluster = _cluster()
    topic = cluster.controller.image.topics.by_name["t"]
    cluster.register(3, log_dirs=(DIR_A,))
    cluster.heartbeat(3)
    response = _assign(cluster, 3, {DIR_A: {topic.topic_id: [0, 7], uuid.UUID(int=99): [0]}})
    assert _codes(response) == [[[ErrorCode.NOT_LEADER_OR_FOLLOWER,
                                  ErrorCode.UNKNOWN_TOPIC_OR_PARTITION],
                                 [ErrorCode.UNKNOWN_TOPIC_ID]]]
    stale = _assign(cluster, 1, {DIR_A: {topic.topic_id: [0]}}, epoch=12345)
    assert (stale.error_code, stale.directories) == (ErrorCode.STALE_BROKER_EPOCH, ())
    old = _cluster(mv=MV_3_7_IV2 - 1)
    refused = _assign(old, 1, {DIR_A: {topic.topic_id: [0]}})
    assert refused.error_code == ErrorCode.UNSUPPORTED_VERSION


def test_a_replica_in_an_offline_directory_leaves_isr_and_leadership() -> None:
    cluster = _cluster()
    topic = cluster.controller.image.topics.by_name["t"]
    _assign(cluster, 1, {OFFLINE: {topic.topic_id: [0]}})
    partition = cluster.controller.image.topics.by_name["t"].partitions[0]
    assert partition.directories == (OFFLINE, UNASSIGNED)
    assert partition.isr == (2,) and partition.leader == 2
    changes = [r.message for r in cluster.raft.metadata_records()
               if isinstance(r.message, PartitionChangeRecord)]
    assert len(changes) == 2  # the directory, then the offline-dir-assignment update


def test_which_directories_count_as_online() -> None:
    """Kafka's DirectoryId.isOnline."""
    assert dir_is_online(UNASSIGNED, (DIR_A,)) and dir_is_online(uuid.UUID(int=0), (DIR_A,))
    assert not dir_is_online(uuid.UUID(int=2), ())  # LOST
    assert dir_is_online(DIR_A, (DIR_A, DIR_B)) and not dir_is_online(OFFLINE, (DIR_A,))
    assert dir_is_online(OFFLINE, ())  # registered before 3.7-IV2: no list to check


def _report_offline(cluster: Cluster, broker_id: int, *dirs: uuid.UUID) -> None:
    broker = cluster.controller.image.cluster.brokers[broker_id]
    cluster.call(BrokerHeartbeatRequest(
        broker_id=broker_id, broker_epoch=broker.epoch,
        current_metadata_offset=cluster.controller.committed_offset, offline_log_dirs=dirs))


def test_a_heartbeats_offline_dir_moves_its_replicas_leaderships_away() -> None:
    """Kafka's handleDirectoriesOffline: broker 1's replica in DIR_A (partition 0, which it
    leads) leaves the ISR and the leadership; its DIR_B replica (partition 1) stays; the
    registration keeps DIR_B only, and a second report changes nothing."""
    cluster = _cluster()
    topic = cluster.controller.image.topics.by_name["t"]
    _assign(cluster, 1, {DIR_A: {topic.topic_id: [0]}, DIR_B: {topic.topic_id: [1]}})
    _report_offline(cluster, 1, DIR_A)
    image = cluster.controller.image
    zero, one = image.topics.by_name["t"].partitions[0], image.topics.by_name["t"].partitions[1]
    assert (zero.leader, zero.isr) == (2, (2,))
    assert 1 in one.isr
    assert image.cluster.brokers[1].log_dirs == (DIR_B,)
    offset = cluster.controller.committed_offset
    _report_offline(cluster, 1, DIR_A)
    assert cluster.controller.image.topics.by_name["t"].partitions[0] == zero
    assert cluster.controller.committed_offset == offset  # no record written


def test_offline_dirs_are_ignored_below_directory_assignment() -> None:
    """Before metadata.version 3.7-IV2 Kafka's controller ignores OfflineLogDirs."""
    cluster = _cluster(mv=MV_3_7_IV2 - 1)
    before = cluster.controller.image.topics.by_name["t"].partitions
    _report_offline(cluster, 1, DIR_A)
    assert cluster.controller.image.topics.by_name["t"].partitions == before


def test_a_broker_back_without_a_directory_does_not_lead_its_replicas_there() -> None:
    """Kafka's LeaderAcceptor (hasOnlineDir): broker 1 comes back registered without
    DIR_A (it failed at start-up); unfenced, it leads its single-replica partition in DIR_B
    again, not the one in DIR_A, which stays leaderless as Kafka 4.4 left it."""
    cluster = _cluster()
    cluster.call(create_topic("solo", partitions=-1, rf=-1, assignments=[(1,), (1,)]))
    topic = cluster.controller.image.topics.by_name["solo"]
    _assign(cluster, 1, {DIR_A: {topic.topic_id: [0]}, DIR_B: {topic.topic_id: [1]}})
    cluster.heartbeat(1, want_fence=True)
    fenced = cluster.controller.image.topics.by_name["solo"].partitions
    assert [(p.leader, p.isr) for p in fenced.values()] == [(-1, (1,)), (-1, (1,))]
    cluster.register(1, incarnation=uuid.UUID(int=2001), log_dirs=(DIR_B,))
    cluster.heartbeat(1)
    cluster.heartbeat(1)
    image = cluster.controller.image
    assert not image.cluster.brokers[1].fenced
    back = image.topics.by_name["solo"].partitions
    assert [(p.leader, p.isr) for p in back.values()] == [(-1, (1,)), (1, (1,))]
