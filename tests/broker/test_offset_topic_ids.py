"""OffsetCommit and OffsetFetch v10 at the broker's edge: topic ids resolved to names from
the image before the group shards (which speak v9) see the request, names back to ids in
the answer, UNKNOWN_TOPIC_ID for an id the image lacks (Kafka's KafkaApis)."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from replica_fixtures import topic, with_records

from pykraft.broker.offset_topic_ids import answered_by_id
from pykraft.config.authorizer import AuthorizerConfig
from pykraft.image.acls import AclsImage
from pykraft.image.image import MetadataImage
from pykraft.messages.kafka import offset_commit_request as commit
from pykraft.messages.kafka import offset_commit_response as committed
from pykraft.messages.kafka import offset_fetch_request as fetch
from pykraft.messages.kafka import offset_fetch_response as fetched
from pykraft.protocol.apis import ApiKey
from pykraft.protocol.errors import ErrorCode
from pykraft.security.api_rules import AuthorizerCache
from pykraft.security.session import KafkaPrincipal, Session

KNOWN, UNKNOWN, ZERO = uuid.UUID(int=7), uuid.UUID(int=8), uuid.UUID(int=0)
IMAGE = with_records(MetadataImage(), *topic("t", KNOWN, (1,), (1,)))
SESSION = Session(KafkaPrincipal("User", "alice"), "127.0.0.1:5000")
ANYONE = AuthorizerCache(None).access(AclsImage, SESSION)
NOBODY = AuthorizerCache(AuthorizerConfig()).access(AclsImage, SESSION)  # no ACL: denied


def commit_request(*ids: uuid.UUID) -> commit.OffsetCommitRequest:
    return commit.OffsetCommitRequest(
        group_id="g", generation_id_or_member_epoch=-1, member_id="",
        group_instance_id=None, topics=tuple(commit.OffsetCommitRequestTopic(
            topic_id=topic_id, partitions=(commit.OffsetCommitRequestPartition(
                partition_index=0, committed_offset=5,
                committed_leader_epoch=-1, committed_metadata=""),))
            for topic_id in ids))


async def shard_commit(request: Any) -> Any:
    """The v9 path: each named partition stored."""
    assert {str(t.name) for t in request.topics} <= {"t"}, request
    return committed.OffsetCommitResponse(topics=tuple(
        committed.OffsetCommitResponseTopic(name=t.name, partitions=tuple(
            committed.OffsetCommitResponsePartition(partition_index=p.partition_index,
                                                    error_code=ErrorCode.NONE)
            for p in t.partitions)) for t in request.topics))


def commit_answer(request: Any, access: Any = ANYONE) -> list[tuple[uuid.UUID, list[str]]]:
    answer = asyncio.run(answered_by_id(ApiKey.OFFSET_COMMIT, request, IMAGE.topics, access,
                                        shard_commit))
    assert isinstance(answer, committed.OffsetCommitResponse)
    return [(t.topic_id, [ErrorCode(p.error_code).name for p in t.partitions])
            for t in answer.topics]


def test_a_commit_s_known_id_is_stored_by_name_its_unknown_ids_answered_first() -> None:
    assert commit_answer(commit_request(KNOWN, UNKNOWN, ZERO)) == [
        (UNKNOWN, ["UNKNOWN_TOPIC_ID"]), (ZERO, ["UNKNOWN_TOPIC_ID"]), (KNOWN, ["NONE"])]


def test_a_commit_naming_an_unknown_id_twice_gets_one_entry_for_it() -> None:
    assert commit_answer(commit_request(UNKNOWN, UNKNOWN)) == [
        (UNKNOWN, ["UNKNOWN_TOPIC_ID", "UNKNOWN_TOPIC_ID"])]


def test_a_commit_to_a_refused_group_is_refused_on_every_id_sent() -> None:
    assert commit_answer(commit_request(KNOWN, UNKNOWN), NOBODY) == [
        (KNOWN, ["GROUP_AUTHORIZATION_FAILED"]), (UNKNOWN, ["GROUP_AUTHORIZATION_FAILED"])]


def fetch_group(group: str, *ids: uuid.UUID) -> fetch.OffsetFetchRequestGroup:
    return fetch.OffsetFetchRequestGroup(
        group_id=group, member_id=None, member_epoch=-1,
        topics=None if not ids else tuple(fetch.OffsetFetchRequestTopics(
            topic_id=topic_id, partition_indexes=(0,)) for topic_id in ids))


async def shard_fetch(request: Any) -> Any:
    """The v9 path: offset 5 for each asked partition; all topics: "t" and "gone" (a
    topic the image no longer holds)."""
    def topics(group: Any) -> tuple[Any, ...]:
        asked = group.topics or (fetched.OffsetFetchResponseTopics(name="t",
                                                                     partitions=()),
                                 fetched.OffsetFetchResponseTopics(name="gone",
                                                                    partitions=()))
        return tuple(fetched.OffsetFetchResponseTopics(name=t.name, partitions=(
            fetched.OffsetFetchResponsePartitions(
                partition_index=0, committed_offset=5, committed_leader_epoch=-1,
                metadata="", error_code=ErrorCode.NONE),)) for t in asked)
    return fetched.OffsetFetchResponse(groups=tuple(
        fetched.OffsetFetchResponseGroup(group_id=g.group_id, topics=topics(g),
                                          error_code=ErrorCode.NONE)
        for g in request.groups))


def test_a_fetch_answers_by_id_its_unknown_ids_after_the_others() -> None:
    request = fetch.OffsetFetchRequest(groups=(fetch_group("a", UNKNOWN, KNOWN),
                                               fetch_group("b")), require_stable=False)
    answer = asyncio.run(answered_by_id(ApiKey.OFFSET_FETCH, request, IMAGE.topics, ANYONE,
                                        shard_fetch))
    assert isinstance(answer, fetched.OffsetFetchResponse)
    assert [[(t.topic_id, [(ErrorCode(p.error_code).name, p.committed_offset)
                           for p in t.partitions]) for t in g.topics]
            for g in answer.groups] == [
        [(KNOWN, [("NONE", 5)]), (UNKNOWN, [("UNKNOWN_TOPIC_ID", -1)])],
        [(KNOWN, [("NONE", 5)])],  # all topics: "gone" has no id any more, left out
    ]
