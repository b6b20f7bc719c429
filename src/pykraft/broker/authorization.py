"""The broker listener's authorization of each request (KafkaApis' checks).

With an authorizer configured, a request whose rule (:data:`BROKER_RULES`) the session's
principal fails is refused as Kafka refuses it: per topic (Produce, Fetch, ListOffsets,
OffsetForLeaderEpoch, DeleteRecords: the handlers answer TOPIC_AUTHORIZATION_FAILED for
the topics given here), per group, or filtered (Metadata's all-topics list, ListGroups,
OffsetFetch's all-topics answer). Without one everything is allowed and the
authorized-operations fields list every operation, as Kafka does.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import TypeVar

from pykraft.broker.fetch import replica_id_of
from pykraft.broker.group_versions import (
    Topic,
    error_response,
    fetch_partition_errors,
    group_ids,
    merge,
    offset_delete_errors,
    split,
)
from pykraft.group.messages import ShardRequest, ShardResponse
from pykraft.ids import ZERO_UUID
from pykraft.image.acls import AclOperation, ResourceType
from pykraft.image.image import MetadataImage
from pykraft.messages.kafka.consumer_group_describe_request import ConsumerGroupDescribeRequest
from pykraft.messages.kafka.consumer_group_describe_response import (
    ConsumerGroupDescribeResponse,
)
from pykraft.messages.kafka.delete_records_request import DeleteRecordsRequest
from pykraft.messages.kafka.describe_groups_request import DescribeGroupsRequest
from pykraft.messages.kafka.describe_groups_response import DescribeGroupsResponse
from pykraft.messages.kafka.describe_producers_request import DescribeProducersRequest
from pykraft.messages.kafka.fetch_request import FetchRequest
from pykraft.messages.kafka.find_coordinator_request import FindCoordinatorRequest
from pykraft.messages.kafka.find_coordinator_response import FindCoordinatorResponse
from pykraft.messages.kafka.init_producer_id_request import InitProducerIdRequest
from pykraft.messages.kafka.init_producer_id_response import InitProducerIdResponse
from pykraft.messages.kafka.list_groups_request import ListGroupsRequest
from pykraft.messages.kafka.list_groups_response import ListGroupsResponse
from pykraft.messages.kafka.list_offsets_request import ListOffsetsRequest
from pykraft.messages.kafka.metadata_request import MetadataRequest
from pykraft.messages.kafka.metadata_response import MetadataResponse
from pykraft.messages.kafka.offset_commit_request import OffsetCommitRequest
from pykraft.messages.kafka.offset_commit_response import (
    OffsetCommitResponse,
    OffsetCommitResponseTopic,
)
from pykraft.messages.kafka.offset_delete_request import OffsetDeleteRequest
from pykraft.messages.kafka.offset_delete_response import (
    OffsetDeleteResponse,
    OffsetDeleteResponseTopic,
)
from pykraft.messages.kafka.offset_fetch_request import OffsetFetchRequest
from pykraft.messages.kafka.offset_fetch_response import OffsetFetchResponse
from pykraft.messages.kafka.offset_for_leader_epoch_request import OffsetForLeaderEpochRequest
from pykraft.messages.kafka.produce_request import ProduceRequest
from pykraft.messages.kafka.txn_offset_commit_request import TxnOffsetCommitRequest
from pykraft.messages.kafka.txn_offset_commit_response import (
    TxnOffsetCommitResponse,
    TxnOffsetCommitResponseTopic,
)
from pykraft.messages.replace import replaced
from pykraft.protocol.apis import ApiKey
from pykraft.protocol.errors import ErrorCode
from pykraft.runtime.error_answer import error_answer, topic_error
from pykraft.security.api_rules import BROKER_RULES, Access

_O, _R = AclOperation, ResourceType
_FIRST_TOPIC_ID: dict[int, int] = {ApiKey.PRODUCE: 13, ApiKey.FETCH: 13}
#: The per-topic APIs: (the request's list of topics, a topic's name field).
TOPIC_FIELDS: dict[int, tuple[str, str]] = {
    ApiKey.PRODUCE: ("topic_data", "name"), ApiKey.FETCH: ("topics", "topic"),
    ApiKey.LIST_OFFSETS: ("topics", "name"), ApiKey.OFFSET_FOR_LEADER_EPOCH: ("topics", "topic"),
    ApiKey.DELETE_RECORDS: ("topics", "name"), ApiKey.DESCRIBE_PRODUCERS: ("topics", "name"),
}
_TOPIC_REFUSED = ErrorCode.TOPIC_AUTHORIZATION_FAILED
_GROUP_REFUSED = ErrorCode.GROUP_AUTHORIZATION_FAILED
_T = TypeVar("_T", OffsetCommitResponseTopic, OffsetDeleteResponseTopic,
             TxnOffsetCommitResponseTopic)
#: The answers of :data:`TopicsRequest`.
CommitAnswer = OffsetCommitResponse | OffsetDeleteResponse | TxnOffsetCommitResponse
#: Answers a latest-version group request (a shard's, or the service's for all of them).
GroupHandler = Callable[[ShardRequest], Awaitable[ShardResponse]]
#: The requests checked per topic (:data:`TOPIC_FIELDS`).
TopicRequest = (ProduceRequest | FetchRequest | ListOffsetsRequest
                | OffsetForLeaderEpochRequest | DeleteRecordsRequest | DescribeProducersRequest)
#: The group APIs checked per topic too.
TopicsRequest = OffsetCommitRequest | OffsetDeleteRequest | TxnOffsetCommitRequest


def denied_topics(api_key: int, body: TopicRequest, version: int, access: Access,
                  image: MetadataImage) -> frozenset[object]:
    """The topics of a per-topic request (as it names them: by name, or by id from
    Produce/Fetch v13) the session may not use; an unknown id is left to the handler."""
    if not access.enabled:
        return frozenset()
    cluster_action = access.allows(_O.CLUSTER_ACTION, _R.CLUSTER)
    if api_key == ApiKey.OFFSET_FOR_LEADER_EPOCH and cluster_action:
        return frozenset()  # a follower's check: every topic
    field, name_field = TOPIC_FIELDS[api_key]
    by_id = version >= _FIRST_TOPIC_ID.get(api_key, 1 << 16)
    keys: dict[object, str] = {}
    for topic in getattr(body, field):
        if by_id:
            found = image.topics.by_id.get(topic.topic_id)
            if found is not None:
                keys[topic.topic_id] = found.name
        else:
            keys[str(getattr(topic, name_field))] = str(getattr(topic, name_field))
    if isinstance(body, FetchRequest) and replica_id_of(body) >= 0:  # a follower's fetch
        return frozenset() if cluster_action else frozenset(keys)
    operation = BROKER_RULES[api_key].operation
    assert operation is not None
    allowed = access.allowed(operation, _R.TOPIC, keys.values())
    return frozenset(key for key, name in keys.items() if name not in allowed)


def init_producer_refusal(body: InitProducerIdRequest, access: Access,
                          image: MetadataImage) -> InitProducerIdResponse | None:
    """InitProducerId: WRITE on its transactional id; an idempotent producer needs
    IDEMPOTENT_WRITE on the cluster or WRITE on some topic."""
    transactional_id = body.transactional_id
    if transactional_id is not None:
        if access.allows(_O.WRITE, _R.TRANSACTIONAL_ID, str(transactional_id)):
            return None
        code = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    elif (access.allows(_O.IDEMPOTENT_WRITE, _R.CLUSTER)
          or access.allows_any(_O.WRITE, _R.TOPIC, image.topics.by_name)):
        return None
    else:
        code = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    refusal = error_answer(ApiKey.INIT_PRODUCER_ID, body, code)
    assert isinstance(refusal, InitProducerIdResponse)
    return refusal


def authorized_metadata(response: MetadataResponse, request: MetadataRequest, version: int,
                        access: Access) -> MetadataResponse:
    """The Metadata ``response`` to ``request`` with the topics the session may not
    DESCRIBE left out of an all-topics answer and refused when named (a topic named by id
    keeps its id, one named by name its name), and the topics' authorized operations when
    asked for."""
    named = request.topics or ()
    every = request.topics is None or (version == 0 and not named)
    by_id = not every and any(t.topic_id != ZERO_UUID for t in named)
    with_operations = bool(request.include_topic_authorized_operations)
    topics = []
    for topic in response.topics:
        name = None if topic.name is None else str(topic.name)
        if name is not None and not access.allows(_O.DESCRIBE, _R.TOPIC, name):
            if not every:
                topics.append(topic_error(None if by_id else name,
                                          topic.topic_id if by_id else None, _TOPIC_REFUSED))
            continue
        topics.append(topic if not with_operations or name is None else dataclasses.replace(
            topic, topic_authorized_operations=access.operations(_R.TOPIC, name)))
    return dataclasses.replace(response, topics=tuple(topics))


def creatable_topics(names: list[str], access: Access) -> frozenset[str]:
    """Those of ``names`` the session may have auto-created: CREATE on the cluster or on
    the topic (KafkaApis' Metadata check; the others get TOPIC_AUTHORIZATION_FAILED)."""
    if access.allows(_O.CREATE, _R.CLUSTER):
        return frozenset(names)
    return access.allowed(_O.CREATE, _R.TOPIC, names)


async def authorized_group_answer(api_key: int, request: ShardRequest, access: Access,
                                  handle: GroupHandler) -> ShardResponse:
    """A group API's latest-version answer to its latest-version ``request`` once its
    groups (and topics) are checked; ``handle`` answers what is allowed."""
    if not access.enabled:
        return _with_group_operations(request, await handle(request), access)
    if isinstance(request, ListGroupsRequest):
        answer = await handle(request)
        assert isinstance(answer, ListGroupsResponse)
        if access.allows(_O.DESCRIBE, _R.CLUSTER):
            return answer
        return dataclasses.replace(answer, groups=tuple(
            g for g in answer.groups if access.allows(_O.DESCRIBE, _R.GROUP, str(g.group_id))))
    if isinstance(request, TxnOffsetCommitRequest) and not access.allows(
            _O.WRITE, _R.TRANSACTIONAL_ID, str(request.transactional_id)):
        return error_response(api_key, request, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    operation = BROKER_RULES[api_key].operation
    assert operation is not None
    allowed = access.allowed(operation, _R.GROUP, group_ids(api_key, request))
    if isinstance(request, TopicsRequest):
        if not allowed:
            return error_response(api_key, request, _GROUP_REFUSED)
        return await _topics_checked(api_key, request, access, handle)
    parts = split(api_key, request, lambda group: 0 if group in allowed else 1)
    answers: dict[int, ShardResponse] = {}
    if 0 in parts:
        allowed_part = parts[0]
        answered = (await _offset_fetch(allowed_part, access, handle)
                    if isinstance(allowed_part, OffsetFetchRequest)
                    else await handle(allowed_part))
        answers[0] = _with_group_operations(request, answered, access)
    if 1 in parts:
        answers[1] = error_response(api_key, parts[1], _GROUP_REFUSED)
    return merge(api_key, request, answers)


def authorized_coordinators(request: FindCoordinatorRequest, answer: FindCoordinatorResponse,
                            access: Access) -> FindCoordinatorResponse:
    """FindCoordinator: DESCRIBE on each group (key type 0) or transactional id (1)."""
    if not access.enabled:
        return answer
    resource, code = ((_R.TRANSACTIONAL_ID, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
                      if int(request.key_type) == 1 else (_R.GROUP, _GROUP_REFUSED))
    return dataclasses.replace(answer, coordinators=tuple(
        c if access.allows(_O.DESCRIBE, resource, str(c.key)) else dataclasses.replace(
            c, node_id=-1, host="", port=-1, error_code=code, error_message=None)
        for c in answer.coordinators))


async def _topics_checked(api_key: int, request: TopicsRequest, access: Access,
                          handle: GroupHandler) -> ShardResponse:
    """OffsetCommit, TxnOffsetCommit and OffsetDelete: READ on each topic; the refused
    ones answered with
    TOPIC_AUTHORIZATION_FAILED on each partition, the rest handled."""
    readable = access.allowed(_O.READ, _R.TOPIC, (str(t.name) for t in request.topics))
    kept = tuple(t for t in request.topics if str(t.name) in readable)
    refused = tuple(t for t in request.topics if str(t.name) not in readable)
    return await handled_in_part(api_key, request, kept, (refused, _TOPIC_REFUSED), handle)


async def handled_in_part(api_key: int, request: TopicsRequest, kept: Sequence[Topic],
                          refused: tuple[Sequence[Topic], ErrorCode],
                          handle: GroupHandler) -> ShardResponse:
    """OffsetCommit, TxnOffsetCommit or OffsetDelete with only the ``kept`` topics handled
    (none: the service is not asked) and the partitions of the ``refused`` topics answered
    with its error code, one entry per topic: the commits' first (Kafka 4's
    ``OffsetCommitResponse.Builder`` and ``TxnOffsetCommitResponse.Builder`` hold them,
    then merge the coordinator's answer), OffsetDelete's after the handled ones."""
    topics, code = refused
    refusal: CommitAnswer
    if isinstance(request, OffsetDeleteRequest):  # its error_response refuses the group
        refusal = OffsetDeleteResponse(topics=offset_delete_errors(topics, code))
    else:
        answered = error_response(api_key, replaced(request, topics=tuple(topics)), code)
        assert isinstance(answered, OffsetCommitResponse | TxnOffsetCommitResponse)
        refusal = answered
    if not kept:
        return refusal
    answer = await handle(replaced(request, topics=tuple(kept)))
    assert isinstance(answer, type(refusal))
    joined = ((*refusal.topics, *answer.topics) if not isinstance(answer, OffsetDeleteResponse)
              else (*answer.topics, *refusal.topics))
    return replaced(answer, topics=_joined(joined))


def _joined(topics: Iterable[_T]) -> tuple[_T, ...]:
    """``topics`` with each named once: the partitions of a name met again appended to
    its first entry's."""
    joined: dict[str, _T] = {}
    for topic in topics:
        seen: _T | None = joined.get(topic.name)
        joined[topic.name] = topic if seen is None else replaced(
            seen, partitions=tuple(seen.partitions) + tuple(topic.partitions))
    return tuple(joined.values())


async def _offset_fetch(request: OffsetFetchRequest, access: Access,
                        handle: GroupHandler) -> OffsetFetchResponse:
    """OffsetFetch for groups the session may DESCRIBE: topics it may not DESCRIBE are
    left out of an all-topics answer, and refused per partition when named."""
    named = {t.name for g in request.groups for t in g.topics or ()}
    visible = access.allowed(_O.DESCRIBE, _R.TOPIC, (str(n) for n in named))
    answer = await handle(dataclasses.replace(request, groups=tuple(
        g if g.topics is None else dataclasses.replace(
            g, topics=tuple(t for t in g.topics if str(t.name) in visible))
        for g in request.groups)))
    assert isinstance(answer, OffsetFetchResponse)
    asked = {str(g.group_id): g for g in request.groups}
    groups = []
    for group in answer.groups:
        wanted = asked[str(group.group_id)].topics
        if wanted is None:
            topics = tuple(t for t in group.topics
                           if access.allows(_O.DESCRIBE, _R.TOPIC, str(t.name)))
        else:
            topics = tuple(group.topics) + fetch_partition_errors(
                (t for t in wanted if str(t.name) not in visible), _TOPIC_REFUSED)
        groups.append(dataclasses.replace(group, topics=topics))
    return dataclasses.replace(answer, groups=tuple(groups))


def _with_group_operations(request: ShardRequest, answer: ShardResponse,
                           access: Access) -> ShardResponse:
    """DescribeGroups and ConsumerGroupDescribe: each group's authorized operations,
    when asked for."""
    if not isinstance(request, (DescribeGroupsRequest, ConsumerGroupDescribeRequest)) or (
            not request.include_authorized_operations):
        return answer
    assert isinstance(answer, (DescribeGroupsResponse, ConsumerGroupDescribeResponse))
    return replaced(answer, groups=tuple(
        replaced(g, authorized_operations=access.operations(_R.GROUP, str(g.group_id)))
        for g in answer.groups))

