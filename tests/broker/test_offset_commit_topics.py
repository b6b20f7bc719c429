"""OffsetCommit of partitions the broker's metadata lacks: UNKNOWN_TOPIC_OR_PARTITION for
each, without the group coordinator storing them (Kafka's handleOffsetCommitRequest)."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from replica_fixtures import topic, with_records

from pykraft.broker.offset_commit_topics import existing_partitions_only
from pykraft.image.image import MetadataImage
from pykraft.messages.kafka import offset_commit_request as req
from pykraft.messages.kafka import offset_commit_response as res
from pykraft.protocol.apis import ApiKey
from pykraft.protocol.errors import ErrorCode

IMAGE = with_records(MetadataImage(), *topic("t", uuid.UUID(int=1), (1,), (1,)))


def commit(partitions: dict[str, list[int]]) -> req.OffsetCommitRequest:
    return req.OffsetCommitRequest(
        group_id="g", generation_id_or_member_epoch=-1, member_id="",
        group_instance_id=None, topics=tuple(req.OffsetCommitRequestTopic(
            name=name, partitions=tuple(req.OffsetCommitRequestPartition(
                partition_index=index, committed_offset=5,
                committed_leader_epoch=-1, committed_metadata="")
                for index in indexes)) for name, indexes in partitions.items()))


def answer(partitions: dict[str, list[int]]) -> tuple[list[Any], dict[str, list[tuple[int, str]]]]:
    """What the coordinator was asked to store, and each topic's partition answers."""
    stored: list[Any] = []

    async def coordinator(request: Any) -> Any:
        stored.append({str(t.name): [int(p.partition_index) for p in t.partitions]
                       for t in request.topics})
        return res.OffsetCommitResponse(topics=tuple(
            res.OffsetCommitResponseTopic(name=t.name, partitions=tuple(
                res.OffsetCommitResponsePartition(partition_index=p.partition_index,
                                                  error_code=ErrorCode.NONE)
                for p in t.partitions)) for t in request.topics))

    async def run() -> Any:
        handle = existing_partitions_only(ApiKey.OFFSET_COMMIT, IMAGE, coordinator)
        return await handle(commit(partitions))

    response = asyncio.run(run())
    return stored, {str(t.name): [(int(p.partition_index), ErrorCode(p.error_code).name)
                                  for p in t.partitions] for t in response.topics}


def test_a_topic_that_does_not_exist_is_never_stored() -> None:
    assert answer({"missing": [0, 1]}) == ([], {"missing": [
        (0, "UNKNOWN_TOPIC_OR_PARTITION"), (1, "UNKNOWN_TOPIC_OR_PARTITION")]})


def test_existing_partitions_are_stored_the_others_refused() -> None:
    stored, answered = answer({"t": [0, 1, 2], "missing": [0]})
    assert stored == [{"t": [0, 1]}]
    # Kafka 4's builder holds the refused partitions, then merges the coordinator's answer
    assert answered == {"t": [(2, "UNKNOWN_TOPIC_OR_PARTITION"), (0, "NONE"), (1, "NONE")],
                        "missing": [(0, "UNKNOWN_TOPIC_OR_PARTITION")]}
