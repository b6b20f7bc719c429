"""OffsetCommit and OffsetFetch v10 name topics by id (Kafka 4.1); the group shards speak
v9, by name, so the ids are resolved here, at the broker's edge, from its metadata image,
as Kafka's ``KafkaApis`` resolves them from its metadata cache before its coordinator sees
the request (``handleOffsetCommitRequest``, ``fetchOffsetsForGroup``):

* a topic whose id the image lacks (or the zero id) is not passed on: each of its partitions
  is answered UNKNOWN_TOPIC_ID, a commit's before the others (Kafka's
  ``OffsetCommitResponse.TopicIdBuilder`` adds its errors first, then merges the
  coordinator's answer into them by id), a fetch's after its group's other topics;
* the answer names each topic by its id; an all-topics fetch leaves out a topic the image
  no longer holds (``fetchAllOffsetsForGroup`` drops a topic whose id is zero);
* an OffsetCommit whose group the session may not READ is refused on every topic it names,
  by the ids it sent (``OffsetCommitRequest.getErrorResponse``: one entry per topic).
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Awaitable, Callable, Iterable
from typing import TypeVar

from pykraft.broker.group_versions import error_response
from pykraft.group.messages import ShardRequest, ShardResponse
from pykraft.ids import ZERO_UUID
from pykraft.image.acls import AclOperation, ResourceType
from pykraft.image.topics import TopicsImage
from pykraft.messages.kafka.offset_commit_request import (
    OffsetCommitRequest,
    OffsetCommitRequestTopic,
)
from pykraft.messages.kafka.offset_commit_response import (
    OffsetCommitResponse,
    OffsetCommitResponsePartition,
    OffsetCommitResponseTopic,
)
from pykraft.messages.kafka.offset_fetch_request import (
    OffsetFetchRequest,
    OffsetFetchRequestTopics,
)
from pykraft.messages.kafka.offset_fetch_response import (
    OffsetFetchResponse,
    OffsetFetchResponsePartitions,
    OffsetFetchResponseTopics,
)
from pykraft.protocol.apis import ApiKey
from pykraft.protocol.errors import ErrorCode
from pykraft.runtime.codec_thread import off_loop_if_large
from pykraft.security.api_rules import BROKER_RULES, Access

#: The first version of OffsetCommit and OffsetFetch naming topics by id.
FIRST_TOPIC_ID_VERSION = 10
#: The version the group shards answer instead (the same meaning, topics by name).
SHARD_VERSION = 9
TOPIC_ID_APIS = frozenset({ApiKey.OFFSET_COMMIT, ApiKey.OFFSET_FETCH})
OffsetRequest = OffsetCommitRequest | OffsetFetchRequest
OffsetResponse = OffsetCommitResponse | OffsetFetchResponse
#: A request with its topics named -> its answer by name.
ByName = Callable[[ShardRequest], Awaitable[ShardResponse]]
_Topic = TypeVar("_Topic", OffsetCommitRequestTopic, OffsetFetchRequestTopics)


def by_topic_id(api_key: int, version: int) -> bool:
    """Whether ``api_key`` at ``version`` names its topics by id."""
    return api_key in TOPIC_ID_APIS and version >= FIRST_TOPIC_ID_VERSION


@dataclasses.dataclass(frozen=True)
class Resolved:
    """A v10 OffsetFetch with the topics the image knows named, as the shards answer it,
    and the others of each group, in request order."""

    request: OffsetFetchRequest
    unknown: tuple[tuple[OffsetFetchRequestTopics, ...], ...]


def resolved(request: OffsetFetchRequest, topics: TopicsImage) -> Resolved:
    """``request`` (v10) with each topic the image knows named, the others set apart."""
    groups, unknowns = [], []
    for group in request.groups:
        kept: tuple[OffsetFetchRequestTopics, ...] | None = None  # all topics
        unnamed: tuple[OffsetFetchRequestTopics, ...] = ()
        if group.topics is not None:
            kept, unnamed = _named(group.topics, topics)
        groups.append(dataclasses.replace(group, topics=kept))
        unknowns.append(unnamed)
    return Resolved(dataclasses.replace(request, groups=tuple(groups)), tuple(unknowns))


def _named(entries: Iterable[_Topic], topics: TopicsImage) -> tuple[tuple[_Topic, ...],
                                                                   tuple[_Topic, ...]]:
    """Each entry whose id ``topics`` holds with its name, and the others."""
    named, unknown = [], []
    for entry in entries:
        found = topics.by_id.get(entry.topic_id)
        if found is None:
            unknown.append(entry)
        else:
            named.append(dataclasses.replace(entry, name=found.name))
    return tuple(named), tuple(unknown)
async def answered_by_id(api_key: int, request: OffsetRequest, topics: TopicsImage,
                         access: Access, by_name: ByName) -> OffsetResponse:
    """The v10 answer to the v10 ``request``: its known topics answered by ``by_name``
    (the v9 path: authorization, existence, the shards), the unknown ones here."""
    if isinstance(request, OffsetCommitRequest) and not access.allows(
            _group_operation(api_key), ResourceType.GROUP, request.group_id):
        return refused(api_key, request, ErrorCode.GROUP_AUTHORIZATION_FAILED)
    if isinstance(request, OffsetCommitRequest):
        named, unknown = await off_loop_if_large(_named, request.topics, topics)
        committed = await by_name(dataclasses.replace(request, topics=named))
        assert isinstance(committed, OffsetCommitResponse)
        return await off_loop_if_large(_commit_answer, committed, unknown, topics)
    found = await off_loop_if_large(resolved, request, topics)
    fetched = await by_name(found.request)
    assert isinstance(fetched, OffsetFetchResponse)
    return await off_loop_if_large(_fetch_answer, fetched, found, topics)


def _group_operation(api_key: int) -> AclOperation:
    operation = BROKER_RULES[api_key].operation
    assert operation is not None
    return operation


def refused(api_key: int, request: OffsetRequest, code: ErrorCode) -> OffsetResponse:
    """The v10 answer refusing the v10 ``request`` with ``code``: on each partition of
    each topic of a commit, on each group of a fetch."""
    if isinstance(request, OffsetFetchRequest):
        answer = error_response(api_key, request, code)
        assert isinstance(answer, OffsetFetchResponse)
        return answer
    return OffsetCommitResponse(topics=tuple(OffsetCommitResponseTopic(
        topic_id=t.topic_id, partitions=tuple(
            OffsetCommitResponsePartition(partition_index=p.partition_index, error_code=code)
            for p in t.partitions)) for t in request.topics))


def _id_of(name: str, topics: TopicsImage) -> uuid.UUID:
    """The id of the topic named ``name`` (the zero id: the image no longer holds it)."""
    found = topics.by_name.get(name)
    return ZERO_UUID if found is None else found.topic_id


def _commit_answer(answer: OffsetCommitResponse, unknown: tuple[OffsetCommitRequestTopic, ...],
                   topics: TopicsImage) -> OffsetCommitResponse:
    """The by-name ``answer`` by id, after the ``unknown`` topics' errors, one entry per id."""
    by_id: dict[uuid.UUID, list[OffsetCommitResponsePartition]] = {}
    for entry in unknown:
        by_id.setdefault(entry.topic_id, []).extend(
            OffsetCommitResponsePartition(partition_index=p.partition_index,
                                          error_code=ErrorCode.UNKNOWN_TOPIC_ID)
            for p in entry.partitions)
    for topic in answer.topics:
        by_id.setdefault(_id_of(topic.name, topics), []).extend(topic.partitions)
    return OffsetCommitResponse(throttle_time_ms=answer.throttle_time_ms, topics=tuple(
        OffsetCommitResponseTopic(topic_id=topic_id, partitions=tuple(partitions))
        for topic_id, partitions in by_id.items()))


def _fetch_answer(answer: OffsetFetchResponse, found: Resolved,
                  image: TopicsImage) -> OffsetFetchResponse:
    """The by-name ``answer`` (its groups in request order) by id: a group without error
    gets its unknown topics' errors after its others; all topics: those the image holds."""
    groups = []
    for group, asked, unknown in zip(answer.groups, found.request.groups, found.unknown,
                                     strict=True):
        topics = tuple(OffsetFetchResponseTopics(topic_id=_id_of(t.name, image),
                                                 partitions=t.partitions)
                       for t in group.topics
                       if asked.topics is not None or t.name in image.by_name)
        if group.error_code == ErrorCode.NONE:
            topics += tuple(OffsetFetchResponseTopics(topic_id=t.topic_id, partitions=tuple(
                OffsetFetchResponsePartitions(partition_index=p, committed_offset=-1,
                                              metadata="", error_code=ErrorCode.UNKNOWN_TOPIC_ID)
                for p in t.partition_indexes)) for t in unknown)
        groups.append(dataclasses.replace(group, topics=topics))
    return OffsetFetchResponse(throttle_time_ms=answer.throttle_time_ms, groups=tuple(groups))
