"""DescribeProducers (API 61, v0): the producers a partition replica knows, leader or
follower (Kafka's ``KafkaApis.handleDescribeProducersRequest`` and
``Partition.activeProducerState``), for ``kafka-transactions.sh describe-producers`` and
finding hanging transactions.

Interface::

    response = describe_producers(body, replicas, denied)   # denied: topics without READ

Per topic: an invalid name INVALID_TOPIC_EXCEPTION (with ``Topic.validate``'s message), a
denied one TOPIC_AUTHORIZATION_FAILED, one the image lacks UNKNOWN_TOPIC_OR_PARTITION, for
every partition asked, each with the error's message (Kafka's ``ApiError``); a partition's
own error has none. Per partition: not hosted here NOT_LEADER_OR_FOLLOWER (UNKNOWN_TOPIC_OR_
PARTITION when the image lacks it), else every producer id with state: epoch, last sequence
and timestamp, coordinator epoch and the open transaction's first offset (-1: none).
"""

from __future__ import annotations

from pykraft.broker.replica_manager import HostedPartition, ReplicaManager
from pykraft.controller.topic_names import topic_name_problem
from pykraft.ids import TopicPartition
from pykraft.messages.kafka.describe_producers_request import DescribeProducersRequest
from pykraft.messages.kafka.describe_producers_response import (
    DescribeProducersResponse,
    PartitionResponse,
    ProducerState,
    TopicResponse,
)
from pykraft.protocol.errors import ErrorCode


def describe_producers(body: DescribeProducersRequest, replicas: ReplicaManager,
                       denied: frozenset[object]) -> DescribeProducersResponse:
    """Each partition asked is answered, a partition named again with the same answer
    object (a frame of duplicates costs references, not answers)."""
    refusals = {name: _topic_refusal(name, replicas, denied)
                for name in dict.fromkeys(t.name for t in body.topics)}
    answers: dict[tuple[str, int], PartitionResponse] = {}
    topics = []
    for topic in body.topics:
        refusal = refusals[topic.name]
        for index in dict.fromkeys(topic.partition_indexes):
            if (topic.name, index) not in answers:
                answers[(topic.name, index)] = (
                    PartitionResponse(partition_index=index, error_code=refusal[0],
                                      error_message=refusal[1]) if refusal is not None
                    else _partition(replicas, topic.name, index))
        topics.append(TopicResponse(name=topic.name, partitions=tuple(
            answers[(topic.name, index)] for index in topic.partition_indexes)))
    return DescribeProducersResponse(topics=tuple(topics))


def _topic_refusal(name: str, replicas: ReplicaManager,
                   denied: frozenset[object]) -> tuple[ErrorCode, str | None] | None:
    problem = topic_name_problem(name)
    if problem is not None:
        return ErrorCode.INVALID_TOPIC_EXCEPTION, problem
    if name in denied:
        return ErrorCode.TOPIC_AUTHORIZATION_FAILED, "Topic authorization failed."
    if name not in replicas.image.topics.by_name:
        return (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                "This server does not host this topic-partition.")
    return None


def _partition(replicas: ReplicaManager, topic: str, index: int) -> PartitionResponse:
    hosted = replicas.partitions.get(TopicPartition(topic, index))
    if hosted is None:
        known = index in replicas.image.topics.by_name[topic].partitions
        return PartitionResponse(
            partition_index=index,
            error_code=(ErrorCode.NOT_LEADER_OR_FOLLOWER if known
                        else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
    return PartitionResponse(partition_index=index, error_code=ErrorCode.NONE,
                             active_producers=_producers(hosted))


def _producers(hosted: HostedPartition) -> tuple[ProducerState, ...]:
    """Kafka's ``UnifiedLog.activeProducers``."""
    return tuple(
        ProducerState(producer_id=producer_id, producer_epoch=entry.producer_epoch,
                      last_sequence=entry.last_seq, last_timestamp=entry.last_timestamp,
                      coordinator_epoch=entry.coordinator_epoch,
                      current_txn_start_offset=(-1 if entry.current_txn_first_offset is None
                                                else entry.current_txn_first_offset))
        for producer_id, entry in hosted.producer_state.producers.items())
