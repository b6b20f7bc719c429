"""OffsetCommit of partitions that do not exist: Kafka's ``handleOffsetCommitRequest``
answers UNKNOWN_TOPIC_OR_PARTITION for each partition the broker's metadata lacks (a topic
it does not know, or a partition past its count) without asking the group coordinator,
which stores only the others. Runs after the authorization checks, as in Kafka."""

from __future__ import annotations

import dataclasses
from typing import Any

from pykraft.broker.authorization import GroupHandler, handled_in_part
from pykraft.image.image import MetadataImage
from pykraft.protocol.apis import ApiKey
from pykraft.protocol.errors import ErrorCode
from pykraft.runtime.codec_thread import off_loop_if_large


def existing_partitions_only(image: MetadataImage, handle: GroupHandler) -> GroupHandler:
    """``handle`` for a latest-version OffsetCommit, given only the partitions ``image``
    holds; the others answered UNKNOWN_TOPIC_OR_PARTITION."""
    async def commit(request: Any) -> Any:
        kept, missing = await off_loop_if_large(lambda: _existing(request, image))
        return await handled_in_part(ApiKey.OFFSET_COMMIT, request, kept, (
            missing, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION), handle)
    return commit


def _existing(request: Any, image: MetadataImage) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    """The request's topics with the partitions ``image`` holds, and with the others
    (pure: a large request's are sorted off the loop)."""
    kept: list[Any] = []
    missing: list[Any] = []
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
