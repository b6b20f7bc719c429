"""DescribeTopicPartitions (API 75, KIP-966): topics' partitions from the broker's image, a
page at a time (Kafka's ``DescribeTopicPartitionsRequestHandler`` and
``KRaftMetadataCache.describeTopicResponse``).

Interface::

    response = describe_topic_partitions(image, body, access, listener="PLAINTEXT",
                                         partition_cap=2000)  # max.request.partition.size.limit

Kafka's rules, kept here:

- No topics named means every topic. Names sort below the cursor's topic are left out; a
  cursor naming a topic the request does not name, or a negative cursor partition, makes
  the whole request INVALID_REQUEST (every named topic with that error, Kafka's
  ``getErrorResponse``).
- Topics are answered in name order; one the session may not DESCRIBE is left out of "every
  topic", and when named, answered TOPIC_AUTHORIZATION_FAILED after the others, with the
  zero id and not internal. A named topic the image lacks is UNKNOWN_TOPIC_OR_PARTITION
  (INVALID_TOPIC_EXCEPTION for a name ``Topic.validate`` refuses).
- At most ``max(min(partition_cap, ResponsePartitionLimit), 1)`` partitions, the cursor's
  topic from the cursor's partition (a partition beyond its last: the topic with none). A
  topic cut short sets NextCursor to its next partition; when the limit is spent exactly at
  a topic's end, NextCursor names the next topic at partition 0 (which may not exist).
- A partition's leader is -1 when its broker is not registered or lacks this listener;
  offline replicas are those whose broker is unregistered, fenced, without the listener, or
  whose directory is offline. Replicas and ISR are the image's, unfiltered; ELR and last
  known ELR are the image's (a record without them: empty lists, as Kafka's
  ``PartitionRegistration`` holds them).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from pykraft.broker.responses import missing_topic_error
from pykraft.controller.directories import dir_is_online, replica_directory
from pykraft.ids import INTERNAL_TOPICS, ZERO_UUID
from pykraft.image.acls import AclOperation, ResourceType
from pykraft.image.image import MetadataImage
from pykraft.image.topics import PartitionRegistration, TopicImage
from pykraft.messages.kafka.describe_topic_partitions_request import (
    DescribeTopicPartitionsRequest,
)
from pykraft.messages.kafka.describe_topic_partitions_response import (
    Cursor,
    DescribeTopicPartitionsResponse,
    DescribeTopicPartitionsResponsePartition,
    DescribeTopicPartitionsResponseTopic,
)
from pykraft.protocol.errors import ErrorCode
from pykraft.runtime.error_answer import topic_partitions_error
from pykraft.security.api_rules import Access

_NO_LEADER = -1


def describe_topic_partitions(image: MetadataImage, request: DescribeTopicPartitionsRequest,
                              access: Access, *, listener: str,
                              partition_cap: int) -> DescribeTopicPartitionsResponse:
    cursor = request.cursor
    after = "" if cursor is None else cursor.topic_name
    every = not request.topics
    names = {name for name in (image.topics.by_name if every
                               else (t.name for t in request.topics)) if name >= after}
    if cursor is not None and ((not every and cursor.topic_name not in names)
                               or cursor.partition_index < 0):
        return topic_partitions_error(request, ErrorCode.INVALID_REQUEST)
    allowed = access.allowed(AclOperation.DESCRIBE, ResourceType.TOPIC, names)
    limit = max(min(partition_cap, request.response_partition_limit), 1)
    first = (after, 0 if cursor is None else cursor.partition_index)
    answer = _page(image, sorted(allowed), listener, first, limit, every=every)
    topics = tuple(_with_operations(t, access) for t in answer.topics)
    refused = () if every else tuple(
        DescribeTopicPartitionsResponseTopic(
            error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED, name=name, topic_id=ZERO_UUID,
            is_internal=False, partitions=())
        for name in sorted(names - allowed))
    return DescribeTopicPartitionsResponse(topics=topics + refused,
                                           next_cursor=answer.next_cursor)


def _with_operations(topic: DescribeTopicPartitionsResponseTopic,
                     access: Access) -> DescribeTopicPartitionsResponseTopic:
    """Every answered topic carries the session's operations on it (the request has no
    flag to leave them out)."""
    return dataclasses.replace(topic, topic_authorized_operations=access.operations(
        ResourceType.TOPIC, str(topic.name)))


def _page(image: MetadataImage, names: Iterable[str], listener: str, first: tuple[str, int],
          limit: int, *, every: bool) -> DescribeTopicPartitionsResponse:
    """The topics of ``names`` (sorted, all authorized) up to ``limit`` partitions, the
    ``first`` topic (the cursor's) from its partition."""
    remaining = limit
    answered: list[DescribeTopicPartitionsResponseTopic] = []
    for name in names:
        if remaining == 0:
            return DescribeTopicPartitionsResponse(
                topics=tuple(answered), next_cursor=Cursor(topic_name=name, partition_index=0))
        topic = image.topics.by_name.get(name)
        if topic is None:
            if not every:
                answered.append(DescribeTopicPartitionsResponseTopic(
                    error_code=missing_topic_error(name), name=name, topic_id=ZERO_UUID,
                    is_internal=name in INTERNAL_TOPICS, partitions=()))
            continue
        start = first[1] if name == first[0] else 0
        count = len(topic.partitions)
        upper = min(count, start + remaining)
        partitions = tuple(_partition(image, topic.partitions[index], index, listener)
                           for index in range(start, upper) if index in topic.partitions)
        answered.append(_topic(topic, partitions))
        if upper < count:
            return DescribeTopicPartitionsResponse(
                topics=tuple(answered), next_cursor=Cursor(topic_name=name,
                                                           partition_index=upper))
        remaining -= len(partitions)
    return DescribeTopicPartitionsResponse(topics=tuple(answered))


def _topic(topic: TopicImage, partitions: tuple[DescribeTopicPartitionsResponsePartition, ...]
           ) -> DescribeTopicPartitionsResponseTopic:
    return DescribeTopicPartitionsResponseTopic(
        error_code=ErrorCode.NONE, name=topic.name, topic_id=topic.topic_id,
        is_internal=topic.name in INTERNAL_TOPICS, partitions=partitions)


def _partition(image: MetadataImage, part: PartitionRegistration, index: int,
               listener: str) -> DescribeTopicPartitionsResponsePartition:
    return DescribeTopicPartitionsResponsePartition(
        error_code=ErrorCode.NONE, partition_index=index,
        leader_id=part.leader if _has_listener(image, part.leader, listener) else _NO_LEADER,
        leader_epoch=part.leader_epoch, replica_nodes=part.replicas, isr_nodes=part.isr,
        eligible_leader_replicas=part.eligible_leader_replicas or (),
        last_known_elr=part.last_known_elr or (),
        offline_replicas=tuple(r for r in part.replicas
                               if _is_offline(image, part, r, listener)))


def _has_listener(image: MetadataImage, broker_id: int, listener: str) -> bool:
    """Kafka's ``getAliveEndpoint``: registered (fenced or not) with this listener."""
    broker = image.cluster.brokers.get(broker_id)
    return broker is not None and any(e.name == listener for e in broker.listeners)


def _is_offline(image: MetadataImage, part: PartitionRegistration, replica: int,
                listener: str) -> bool:
    """Kafka's ``isReplicaOffline``."""
    broker = image.cluster.brokers.get(replica)
    return (broker is None or broker.fenced or not _has_listener(image, replica, listener)
            or not dir_is_online(replica_directory(part, replica), broker.log_dirs))
