"""OffsetCommit of partitions that do not exist: Kafka's ``handleOffsetCommitRequest``
answers UNKNOWN_TOPIC_OR_PARTITION for each partition the broker's metadata lacks (a topic
it does not know, or a partition past its count) without asking the group coordinator,
which stores only the others. Runs after the authorization checks, as in Kafka."""

from __future__ import annotations

import dataclasses

from pykraft.broker.authorization import GroupHandler, handled_in_part
from pykraft.group.messages import ShardRequest, ShardResponse
from pykraft.image.image import MetadataImage
from pykraft.messages.kafka.offset_commit_request import (
    OffsetCommitRequest,
    OffsetCommitRequestTopic,
)
from pykraft.protocol.apis import ApiKey
from pykraft.protocol.errors import ErrorCode
from pykraft.runtime.codec_thread import off_loop_if_large


def existing_partitions_only(image: MetadataImage, handle: GroupHandler) -> GroupHandler:
    """``handle`` for a latest-version OffsetCommit, given only the partitions ``image``
    holds; the others answered UNKNOWN_TOPIC_OR_PARTITION."""
    async def commit(request: ShardRequest) -> ShardResponse:
        assert isinstance(request, OffsetCommitRequest)
        kept, missing = await off_loop_if_large(lambda: _existing(request, image))
        return await handled_in_part(ApiKey.OFFSET_COMMIT, request, kept, (
            missing, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION), handle)
    return commit


Topics = tuple[OffsetCommitRequestTopic, ...]


def _existing(request: OffsetCommitRequest, image: MetadataImage) -> tuple[Topics, Topics]:
    """The request's topics with the partitions ``image`` holds, and with the others
    (pure: a large request's are sorted off the loop)."""
    kept: list[OffsetCommitRequestTopic] = []
    missing: list[OffsetCommitRequestTopic] = []
    for topic in request.topics:
        found = image.topics.by_name.get(str(topic.name))
        known = set() if found is None else found.partitions.keys()
        present = tuple(p for p in topic.partitions if int(p.partition_index) in known)
        absent = tuple(p for p in topic.partitions if int(p.partition_index) not in known)
        if present:
            kept.append(dataclasses.replace(topic, partitions=present))
        if absent:
            missing.append(dataclasses.replace(topic, partitions=absent))
    return tuple(kept), tuple(missing)
