"""CreateTopics, DeleteTopics, CreatePartitions and AlterPartition."""

from __future__ import annotations

import dataclasses
import uuid

import pytest
from controller_harness import Cluster, create_topic  # type: ignore[import-not-found]

from pykraft.controller import replication_control
from pykraft.messages.kafka.alter_partition_request import (
    AlterPartitionRequest,
    BrokerState,
    PartitionData,
    TopicData,
)
from pykraft.messages.kafka.alter_partition_response import AlterPartitionResponse
from pykraft.messages.kafka.create_partitions_request import (
    CreatePartitionsAssignment,
    CreatePartitionsRequest,
    CreatePartitionsTopic,
)
from pykraft.messages.kafka.create_partitions_response import CreatePartitionsResponse
from pykraft.messages.kafka.create_topics_request import CreateTopicsRequest
from pykraft.messages.kafka.create_topics_response import CreateTopicsResponse
from pykraft.messages.kafka.delete_topics_request import DeleteTopicsRequest, DeleteTopicState
from pykraft.messages.kafka.delete_topics_response import DeleteTopicsResponse
from pykraft.protocol.apis import ApiKey
from pykraft.protocol.codec import decode_request, encode_request
from pykraft.protocol.errors import ErrorCode
from pykraft.protocol.header import RequestHeader
from pykraft.records.metadata import decode_metadata_record


@pytest.fixture
def cluster() -> Cluster:
    c = Cluster(seed=7)
    c.elect()
    c.start_brokers(["a", "a", "b", "b", "c"])
    return c


def created(cluster: Cluster, request: object) -> tuple[ErrorCode, str | None]:
    response = cluster.call(request)
    assert isinstance(response, CreateTopicsResponse)
    return ErrorCode(response.topics[0].error_code), response.topics[0].error_message


def test_create_topic_records_and_placement(cluster: Cluster) -> None:
    response = cluster.call(create_topic("orders", 10, 3, configs={"cleanup.policy": "compact"}))
    assert isinstance(response, CreateTopicsResponse)
    result = response.topics[0]
    assert result.error_code == ErrorCode.NONE
    assert (result.num_partitions, result.replication_factor) == (10, 3)
    topic = cluster.controller.image.topics.by_name["orders"]
    assert topic.topic_id == result.topic_id
    racks = {b: r.rack for b, r in cluster.controller.image.cluster.brokers.items()}
    for partition in topic.partitions.values():
        assert len(set(partition.replicas)) == 3
        assert len({racks[r] for r in partition.replicas}) == 3
        assert partition.leader == partition.replicas[0] and partition.isr == partition.replicas
    assert cluster.controller.image.configs.get((2, "orders")) == {"cleanup.policy": "compact"}
    assert cluster.replayed_image() == cluster.controller.image


@pytest.mark.parametrize(("request_", "code"), [
    (create_topic("bad/name"), ErrorCode.INVALID_TOPIC_EXCEPTION),
    (create_topic(".."), ErrorCode.INVALID_TOPIC_EXCEPTION),
    (create_topic("x" * 250), ErrorCode.INVALID_TOPIC_EXCEPTION),
    (create_topic("t", 0), ErrorCode.INVALID_PARTITIONS),
    (create_topic("t", -2), ErrorCode.INVALID_PARTITIONS),
    (create_topic("t", 1, 0), ErrorCode.INVALID_REPLICATION_FACTOR),
    (create_topic("t", 1, 6), ErrorCode.INVALID_REPLICATION_FACTOR),
    (create_topic("t", 2**31 - 1), ErrorCode.POLICY_VIOLATION),
    (create_topic("t", configs={"retention.ms": "soon"}), ErrorCode.INVALID_CONFIG),
    (create_topic("t", configs={"no.such.key": "1"}), ErrorCode.INVALID_CONFIG),
    (create_topic("t", configs={"min.insync.replicas": "0"}), ErrorCode.INVALID_CONFIG),
    (create_topic("t", assignments=[[1, 1]], partitions=-1, rf=-1),
     ErrorCode.INVALID_REPLICA_ASSIGNMENT),
    (create_topic("t", assignments=[[1, 99]], partitions=-1, rf=-1),
     ErrorCode.INVALID_REPLICA_ASSIGNMENT),
    (create_topic("t", assignments=[[1, 2], [3]], partitions=-1, rf=-1),
     ErrorCode.INVALID_REPLICA_ASSIGNMENT),
    (create_topic("t", assignments=[[1]], partitions=1, rf=1), ErrorCode.INVALID_REQUEST),
])
def test_create_topic_errors(cluster: Cluster, request_: object, code: ErrorCode) -> None:
    before = len(cluster.raft.batches)
    assert created(cluster, request_)[0] == code
    assert len(cluster.raft.batches) == before


def test_existing_and_colliding_names(cluster: Cluster) -> None:
    assert created(cluster, create_topic("a.b"))[0] == ErrorCode.NONE
    code, message = created(cluster, create_topic("a.b"))
    assert code == ErrorCode.TOPIC_ALREADY_EXISTS and message == "Topic 'a.b' already exists."
    assert created(cluster, create_topic("a_b"))[0] == ErrorCode.INVALID_TOPIC_EXCEPTION


def test_manual_assignment_and_defaults(cluster: Cluster) -> None:
    code, _ = created(cluster, create_topic("m", -1, -1, assignments=[[3, 1], [2, 4]]))
    assert code == ErrorCode.NONE
    partitions = cluster.controller.image.topics.by_name["m"].partitions
    assert [partitions[0].replicas, partitions[1].replicas] == [(3, 1), (2, 4)]
    assert created(cluster, create_topic("d", -1, -1))[0] == ErrorCode.NONE
    assert len(cluster.controller.image.topics.by_name["d"].partitions) == 1


def many_topics(count: int, partitions: int = 1, *,
                validate_only: bool = False) -> CreateTopicsRequest:
    one: CreateTopicsRequest = create_topic("x", partitions, validate_only=validate_only)
    return dataclasses.replace(one, topics=tuple(
        dataclasses.replace(one.topics[0], name=f"t-{i}") for i in range(count)))


@pytest.mark.parametrize("validate_only", [False, True])
def test_more_records_than_one_operation_takes_refuse_the_whole_request(
        cluster: Cluster, validate_only: bool) -> None:
    """Kafka's MAX_RECORDS_PER_USER_OP (10,000): its bounded record list throws, and every
    topic gets POLICY_VIOLATION, the valid ones and those that came before included."""
    before = len(cluster.raft.batches)
    response = cluster.call(dataclasses.replace(many_topics(5001, validate_only=validate_only),
                                                topics=(*many_topics(5001).topics,
                                                        *create_topic("bad/name").topics)))
    assert isinstance(response, CreateTopicsResponse)
    assert {(t.error_code, t.error_message) for t in response.topics} == {
        (ErrorCode.POLICY_VIOLATION, "Unable to perform excessively large batch operation.")}
    assert len(response.topics) == 5002
    assert len(cluster.raft.batches) == before and not cluster.controller.image.topics.by_name


def test_ten_thousand_records_are_one_operation(cluster: Cluster) -> None:
    """5,000 topics of one partition: 10,000 records, the most one operation may write."""
    response = cluster.call(many_topics(5000))
    assert isinstance(response, CreateTopicsResponse)
    assert {t.error_code for t in response.topics} == {ErrorCode.NONE}
    assert len(cluster.controller.image.topics.by_name) == 5000


def test_names_that_collide_within_one_request(cluster: Cluster) -> None:
    response = cluster.call(dataclasses.replace(create_topic("a.b"), topics=(
        *create_topic("a.b").topics, *create_topic("a_b").topics, *create_topic("c").topics,
        *create_topic("c").topics)))
    assert isinstance(response, CreateTopicsResponse)
    assert [(t.error_code, t.error_message) for t in response.topics] == [
        (ErrorCode.NONE, None),
        (ErrorCode.INVALID_TOPIC_EXCEPTION, "Topic 'a_b' collides with existing topic: a.b"),
        (ErrorCode.INVALID_REQUEST, "Duplicate topic name."),
        (ErrorCode.INVALID_REQUEST, "Duplicate topic name.")]


def test_validate_only_writes_nothing(cluster: Cluster) -> None:
    before = len(cluster.raft.batches)
    response = cluster.call(create_topic("v", 3, 2, validate_only=True))
    assert isinstance(response, CreateTopicsResponse)
    assert response.topics[0].error_code == ErrorCode.NONE
    assert response.topics[0].num_partitions == 3
    assert len(cluster.raft.batches) == before
    assert "v" not in cluster.controller.image.topics.by_name


def test_fenced_brokers_never_get_new_partitions(cluster: Cluster) -> None:
    cluster.heartbeat(5, want_fence=True)
    cluster.call(create_topic("f", 20, 4))
    for partition in cluster.controller.image.topics.by_name["f"].partitions.values():
        assert 5 not in partition.replicas
    assert created(cluster, create_topic("g", 1, 5))[0] == ErrorCode.INVALID_REPLICATION_FACTOR


def test_a_new_topic_is_written_in_kafkas_order(cluster: Cluster) -> None:
    """Kafka's createTopic: the TopicRecord, its ConfigRecords (in the order of the
    request's configs in a Java HashMap), then its PartitionRecords; a metadata log must
    read alike whichever controller wrote it (the migration's log comparison found it)."""
    configs = {"segment.ms": "600000", "retention.ms": "60000", "cleanup.policy": "compact",
               "max.message.bytes": "2048"}
    before = len(cluster.raft.batches)
    cluster.call(create_topic("ordered", 2, 3, configs=configs))
    (_, _, values, _), = cluster.raft.batches[before:]
    records = [decode_metadata_record(value) for value in values]
    assert [r.type_name for r in records] == [
        "TOPIC_RECORD", "CONFIG_RECORD", "CONFIG_RECORD", "CONFIG_RECORD", "CONFIG_RECORD",
        "PARTITION_RECORD", "PARTITION_RECORD"]
    # java.util.HashMap's iteration of these four keys put in this order (Java 17)
    assert [r.to_json_dict()["data"]["name"] for r in records[1:5]] == [
        "cleanup.policy", "max.message.bytes", "segment.ms", "retention.ms"]


def delete(cluster: Cluster, *states: DeleteTopicState) -> DeleteTopicsResponse:
    response = cluster.call(DeleteTopicsRequest(
        topics=states, timeout_ms=1000))
    assert isinstance(response, DeleteTopicsResponse)
    return response


def test_delete_topics_by_name_and_id(cluster: Cluster) -> None:
    cluster.call(create_topic("x", configs={"retention.ms": "10"}))
    cluster.call(create_topic("y"))
    y_id = cluster.controller.image.topics.by_name["y"].topic_id
    response = delete(cluster, DeleteTopicState(name="x"),
                      DeleteTopicState(name=None, topic_id=y_id),
                      DeleteTopicState(name="zz"),
                      DeleteTopicState(name=None, topic_id=uuid.UUID(int=5)))
    codes = [r.error_code for r in response.responses]
    assert codes == [ErrorCode.NONE, ErrorCode.NONE, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                     ErrorCode.UNKNOWN_TOPIC_ID]
    assert response.responses[1].name == "y"
    image = cluster.controller.image
    assert image.topics.by_name == {} and image.configs.get((2, "x")) == {}
    assert cluster.replayed_image() == image


def test_deleting_more_topics_than_one_operation_takes_refuses_them_all(
        cluster: Cluster, monkeypatch: pytest.MonkeyPatch) -> None:
    """Kafka's bounded record list (MAX_RECORDS_PER_USER_OP, here 2): one RemoveTopicRecord
    past it and every topic named gets POLICY_VIOLATION, nothing is deleted."""
    monkeypatch.setattr(replication_control, "MAX_RECORDS_PER_USER_OP", 2)
    for name in ("a", "b", "c"):
        cluster.call(create_topic(name))
    before = len(cluster.raft.batches)
    named = [DeleteTopicState(name=n) for n in ("a", "zz", "b", "c")]
    response = delete(cluster, *named)
    assert [(r.name, r.error_code, r.error_message) for r in response.responses] == [
        (n.name, ErrorCode.POLICY_VIOLATION,
         "Unable to perform excessively large batch operation.") for n in named]
    assert len(cluster.raft.batches) == before
    assert delete(cluster, *named[:3]).responses[0].error_code == ErrorCode.NONE


def add_partitions(cluster: Cluster, name: str, count: int,
                   assignments: list[list[int]] | None = None) -> ErrorCode:
    response = cluster.call(CreatePartitionsRequest(
        topics=(CreatePartitionsTopic(
            name=name, count=count,
            assignments=None if assignments is None else tuple(
                CreatePartitionsAssignment(broker_ids=tuple(a))
                for a in assignments)),),
        timeout_ms=1000,
        validate_only=False))
    assert isinstance(response, CreatePartitionsResponse)
    return ErrorCode(response.results[0].error_code)


def test_create_partitions(cluster: Cluster) -> None:
    cluster.call(create_topic("p", 2, 2))
    assert add_partitions(cluster, "p", 5) == ErrorCode.NONE
    partitions = cluster.controller.image.topics.by_name["p"].partitions
    assert sorted(partitions) == [0, 1, 2, 3, 4]
    assert all(len(p.replicas) == 2 for p in partitions.values())
    assert add_partitions(cluster, "p", 5) == ErrorCode.INVALID_PARTITIONS
    assert add_partitions(cluster, "p", 3) == ErrorCode.INVALID_PARTITIONS
    assert add_partitions(cluster, "nope", 3) == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert add_partitions(cluster, "p", 6, [[1, 2, 3]]) == ErrorCode.INVALID_REPLICA_ASSIGNMENT
    assert add_partitions(cluster, "p", 7, [[1, 2]]) == ErrorCode.INVALID_REPLICA_ASSIGNMENT
    assert add_partitions(cluster, "p", 6, [[4, 5]]) == ErrorCode.NONE
    assert cluster.controller.image.topics.by_name["p"].partitions[5].replicas == (4, 5)
    assert add_partitions(cluster, "p", 2**31 - 1) == ErrorCode.POLICY_VIOLATION
    assert add_partitions(cluster, "p", 10_006) == ErrorCode.NONE  # 10,000 new partitions
    assert add_partitions(cluster, "p", 20_007) == ErrorCode.POLICY_VIOLATION
    assert cluster.replayed_image() == cluster.controller.image


def alter(cluster: Cluster, leader: int, isr: list[int], *, leader_epoch: int = 0,
          partition_epoch: int = 0, broker_epoch: int | None = None,
          recovery: int = 0) -> AlterPartitionResponse:
    topic = cluster.controller.image.topics.by_name["ap"]
    epoch = cluster.controller.image.cluster.brokers[leader].epoch
    response = cluster.call(AlterPartitionRequest(
        broker_id=leader, broker_epoch=epoch if broker_epoch is None else broker_epoch,
        topics=(TopicData(topic_id=topic.topic_id, partitions=(PartitionData(
            partition_index=0, leader_epoch=leader_epoch,
            new_isr_with_epochs=tuple(BrokerState(broker_id=b, broker_epoch=-1) for b in isr),
            leader_recovery_state=recovery, partition_epoch=partition_epoch),)),)))
    assert isinstance(response, AlterPartitionResponse)
    return response


def test_alter_partition_shrinks_and_expands_isr(cluster: Cluster) -> None:
    cluster.call(create_topic("ap", -1, -1, assignments=[[1, 2, 3]]))
    shrunk = alter(cluster, 1, [1, 2])
    part = shrunk.topics[0].partitions[0]
    assert part.error_code == ErrorCode.NONE and part.isr == (1, 2) and part.partition_epoch == 1
    assert cluster.controller.image.topics.by_name["ap"].partitions[0].isr == (1, 2)
    stale = alter(cluster, 1, [1, 2, 3])  # partition epoch 0 is stale now
    assert stale.topics[0].partitions[0].error_code == ErrorCode.INVALID_UPDATE_VERSION
    grown = alter(cluster, 1, [1, 2, 3], partition_epoch=1)
    assert grown.topics[0].partitions[0].isr == (1, 2, 3)
    assert cluster.replayed_image() == cluster.controller.image


def test_alter_partition_v2_names_the_isr_without_broker_epochs(cluster: Cluster) -> None:
    """v2 carries ``new_isr`` (v3 ``new_isr_with_epochs``): Kafka's controller reads its
    members with epoch -1, so a v2 leader's ISR change applies too."""
    cluster.call(create_topic("ap", -1, -1, assignments=[[1, 2, 3]]))
    topic = cluster.controller.image.topics.by_name["ap"]
    request = AlterPartitionRequest(
        broker_id=1, broker_epoch=cluster.controller.image.cluster.brokers[1].epoch,
        topics=(TopicData(topic_id=topic.topic_id, partitions=(
            PartitionData(partition_index=0, new_isr=(1, 2)),)),))
    header = RequestHeader(ApiKey.ALTER_PARTITION, 2, 1, "leader")
    response = cluster.call(decode_request(encode_request(header, request)).body)
    assert isinstance(response, AlterPartitionResponse)
    part = response.topics[0].partitions[0]
    assert (part.error_code, part.isr, part.partition_epoch) == (ErrorCode.NONE, (1, 2), 1)
    assert cluster.controller.image.topics.by_name["ap"].partitions[0].isr == (1, 2)


def test_alter_partition_checks(cluster: Cluster) -> None:
    cluster.call(create_topic("ap", -1, -1, assignments=[[1, 2, 3]]))
    assert alter(cluster, 2, [2, 3]).topics[0].partitions[0].error_code == \
        ErrorCode.INVALID_REQUEST  # not the leader
    assert alter(cluster, 1, [1, 2], leader_epoch=-1).topics[0].partitions[0].error_code == \
        ErrorCode.FENCED_LEADER_EPOCH
    assert alter(cluster, 1, [1, 4]).topics[0].partitions[0].error_code == \
        ErrorCode.INVALID_REQUEST  # 4 is not a replica (Kafka's Replicas.validateIsr)
    assert alter(cluster, 1, [1, 2], leader_epoch=1).topics[0].partitions[0].error_code == \
        ErrorCode.NOT_CONTROLLER  # the request is ahead of this controller
    assert alter(cluster, 1, [1, 2], partition_epoch=1).topics[0].partitions[0].error_code \
        == ErrorCode.NOT_CONTROLLER
    assert alter(cluster, 1, [1, 2], recovery=1).topics[0].partitions[0].error_code == \
        ErrorCode.INVALID_REQUEST  # RECOVERING with more than the leader
    assert alter(cluster, 1, [1], recovery=1).topics[0].partitions[0].error_code == \
        ErrorCode.INVALID_REQUEST  # RECOVERED cannot go back to RECOVERING
    assert alter(cluster, 1, [2, 3]).topics[0].partitions[0].error_code == \
        ErrorCode.INVALID_REQUEST  # the leader cannot leave its own ISR
    assert alter(cluster, 1, [1], broker_epoch=1).error_code == ErrorCode.STALE_BROKER_EPOCH
    cluster.heartbeat(3, want_fence=True)
    fenced = cluster.controller.image.topics.by_name["ap"].partitions[0]
    assert fenced.isr == (1, 2)
    assert alter(cluster, 1, [1, 2, 3], partition_epoch=fenced.partition_epoch).topics[0] \
        .partitions[0].error_code == ErrorCode.INELIGIBLE_REPLICA
