"""OffsetCommit and TxnOffsetCommit of partitions that do not exist: Kafka's
``handleOffsetCommitRequest`` and ``handleTxnOffsetCommitRequest`` answer
UNKNOWN_TOPIC_OR_PARTITION for each partition the broker's metadata lacks (a topic it does
not know, or a partition past its count) without asking the group coordinator, which
stores only the others. Runs after the authorization checks, as in Kafka."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from typing import TypeVar

from pykraft.broker.authorization import GroupHandler, handled_in_part
from pykraft.broker.group_versions import Topic
from pykraft.group.messages import ShardRequest, ShardResponse
from pykraft.image.image import MetadataImage
from pykraft.messages.kafka.offset_commit_request import (
    OffsetCommitRequest,
    OffsetCommitRequestTopic,
)
from pykraft.messages.kafka.txn_offset_commit_request import (
    TxnOffsetCommitRequest,
    TxnOffsetCommitRequestTopic,
)
from pykraft.protocol.errors import ErrorCode
from pykraft.runtime.codec_thread import off_loop_if_large


def existing_partitions_only(api_key: int, image: MetadataImage,
                             handle: GroupHandler) -> GroupHandler:
    """``handle`` for a latest-version OffsetCommit or TxnOffsetCommit (``api_key``), given
    only the partitions ``image`` holds; the others answered UNKNOWN_TOPIC_OR_PARTITION."""
    async def commit(request: ShardRequest) -> ShardResponse:
        kept: Sequence[Topic]
        missing: Sequence[Topic]
        if isinstance(request, OffsetCommitRequest):
            commits = request.topics
            kept, missing = await off_loop_if_large(lambda: _existing(commits, image))
        else:
            assert isinstance(request, TxnOffsetCommitRequest)
            txn_commits = request.topics
            kept, missing = await off_loop_if_large(lambda: _existing(txn_commits, image))
        return await handled_in_part(api_key, request, kept, (
            missing, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION), handle)
    return commit


_Topic = TypeVar("_Topic", OffsetCommitRequestTopic, TxnOffsetCommitRequestTopic)


def _existing(topics: Iterable[_Topic], image: MetadataImage
              ) -> tuple[tuple[_Topic, ...], tuple[_Topic, ...]]:
    """The request's topics with the partitions ``image`` holds, and with the others
    (pure: a large request's are sorted off the loop)."""
    kept: list[_Topic] = []
    missing: list[_Topic] = []
    for topic in topics:
        found = image.topics.by_name.get(str(topic.name))
        known = set() if found is None else found.partitions.keys()
        present = tuple(p for p in topic.partitions if int(p.partition_index) in known)
        absent = tuple(p for p in topic.partitions if int(p.partition_index) not in known)
        if present:
            kept.append(dataclasses.replace(topic, partitions=present))
        if absent:
            missing.append(dataclasses.replace(topic, partitions=absent))
    return tuple(kept), tuple(missing)
