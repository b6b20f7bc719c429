"""OffsetCommit and OffsetFetch v10 (Kafka 4.1) and TxnOffsetCommit v6 (KIP-1319) name
topics by id; the group shards speak the versions before, by name, so the ids are resolved
here, at the broker's edge, from its metadata image,
as Kafka's ``KafkaApis`` resolves them from its metadata cache before its coordinator sees
the request (``handleOffsetCommitRequest``, ``fetchOffsetsForGroup``):

* a topic whose id the image lacks (or the zero id) is not passed on: each of its partitions
  is answered UNKNOWN_TOPIC_ID, a commit's before the others (Kafka's
  ``OffsetCommitResponse.TopicIdBuilder`` adds its errors first, then merges the
  coordinator's answer into them by id), a fetch's after its group's other topics;
* the answer names each topic by its id; an all-topics fetch leaves out a topic the image
  no longer holds (``fetchAllOffsetsForGroup`` drops a topic whose id is zero);
* an OffsetCommit whose group the session may not READ is refused on every topic it names,
  by the ids it sent (``OffsetCommitRequest.getErrorResponse``: one entry per topic), and
  so is a TxnOffsetCommit whose transactional id it may not WRITE, or group READ.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import TypeVar

from pykraft.broker.group_versions import error_response, latest_response, nested
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
from pykraft.messages.kafka.txn_offset_commit_request import (
    TxnOffsetCommitRequest,
    TxnOffsetCommitRequestTopic,
)
from pykraft.messages.kafka.txn_offset_commit_response import TxnOffsetCommitResponse
from pykraft.messages.replace import replaced
from pykraft.protocol.apis import ApiKey
from pykraft.protocol.errors import ErrorCode
from pykraft.runtime.codec_thread import off_loop_if_large
from pykraft.security.api_rules import BROKER_RULES, Access

#: Per API: its first version naming topics by id, and the version the group shards
#: answer instead (the same meaning, topics by name; TxnOffsetCommit's shard is told v6,
#: which answers an unknown group GROUP_ID_NOT_FOUND).
TOPIC_ID_VERSIONS: Mapping[int, tuple[int, int]] = {
    ApiKey.OFFSET_COMMIT: (10, 9), ApiKey.OFFSET_FETCH: (10, 9),
    ApiKey.TXN_OFFSET_COMMIT: (6, 6)}
OffsetRequest = OffsetCommitRequest | OffsetFetchRequest | TxnOffsetCommitRequest
OffsetResponse = OffsetCommitResponse | OffsetFetchResponse | TxnOffsetCommitResponse
CommitRequest = OffsetCommitRequest | TxnOffsetCommitRequest
CommitResponse = OffsetCommitResponse | TxnOffsetCommitResponse
#: A request with its topics named -> its answer by name.
ByName = Callable[[ShardRequest], Awaitable[ShardResponse]]
_Commit = TypeVar("_Commit", OffsetCommitResponse, TxnOffsetCommitResponse)
_Topic = TypeVar("_Topic", OffsetCommitRequestTopic, OffsetFetchRequestTopics,
                  TxnOffsetCommitRequestTopic)


def by_topic_id(api_key: int, version: int) -> bool:
    """Whether ``api_key`` at ``version`` names its topics by id."""
    versions = TOPIC_ID_VERSIONS.get(api_key)
    return versions is not None and version >= versions[0]


def shard_version(api_key: int) -> int:
    """The version the shards answer for ``api_key``'s versions naming topics by id."""
    return TOPIC_ID_VERSIONS[api_key][1]


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
    if isinstance(request, TxnOffsetCommitRequest) and not access.allows(
            AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, request.transactional_id):
        return refused(api_key, request, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    if isinstance(request, CommitRequest) and not access.allows(
            _group_operation(api_key), ResourceType.GROUP, request.group_id):
        return refused(api_key, request, ErrorCode.GROUP_AUTHORIZATION_FAILED)
    if isinstance(request, CommitRequest):
        named, unknown = await off_loop_if_large(_named, request.topics, topics)
        committed = await by_name(replaced(request, topics=named))
        assert isinstance(committed, CommitResponse)
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
    response = latest_response(api_key)
    topic_cls = nested(response, "topics")
    partition_cls = nested(topic_cls, "partitions")
    refusal = response(topics=tuple(topic_cls(topic_id=t.topic_id, partitions=tuple(
        partition_cls(partition_index=p.partition_index, error_code=code)
        for p in t.partitions)) for t in request.topics))
    assert isinstance(refusal, CommitResponse)
    return refusal


def _id_of(name: str, topics: TopicsImage) -> uuid.UUID:
    """The id of the topic named ``name`` (the zero id: the image no longer holds it)."""
    found = topics.by_name.get(name)
    return ZERO_UUID if found is None else found.topic_id


def _commit_answer(answer: _Commit,
                   unknown: Sequence[OffsetCommitRequestTopic | TxnOffsetCommitRequestTopic],
                   topics: TopicsImage) -> _Commit:
    """The by-name ``answer`` by id, after the ``unknown`` topics' errors, one entry per id."""
    topic_cls = nested(type(answer), "topics")
    partition_cls = nested(topic_cls, "partitions")
    by_id: dict[uuid.UUID, list[object]] = {}
    for entry in unknown:
        by_id.setdefault(entry.topic_id, []).extend(
            partition_cls(partition_index=p.partition_index,
                          error_code=ErrorCode.UNKNOWN_TOPIC_ID)
            for p in entry.partitions)
    for topic in answer.topics:
        by_id.setdefault(_id_of(topic.name, topics), []).extend(topic.partitions)
    return dataclasses.replace(answer, topics=tuple(
        topic_cls(topic_id=topic_id, partitions=tuple(partitions))
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
