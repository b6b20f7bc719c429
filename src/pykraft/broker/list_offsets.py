"""ListOffsets (API 2, v1-11) and OffsetForLeaderEpoch (API 23, v2-4) on the broker
listener: where a consumer starts or resumes reading a partition.

Interface::

    response = await list_offsets(request_body, replicas, api_version=v)  # any version
    response = await offset_for_leader_epoch(request_body, replicas)  # any version

Both let the event loop run between partitions once a turn has lasted its budget
(:mod:`pykraft.runtime.turns`): a request may name a partition hundreds of thousands of
times. A search by timestamp that must read a compressed or large batch's records does so on
its own worker thread (a gzip batch of 1 MiB may expand to a gigabyte), on a copy of the
batch's bytes, and judges the record it found by the partition's state once back.

ListOffsets follows ``KafkaApis.handleListOffsetRequest`` and
``Partition.fetchOffsetForTimestamp`` (rules in :func:`~pykraft.log.partition_reads.
list_offset`): a consumer (replica id -1) asks the leader and sees up to the high watermark
(the last stable offset under READ_COMMITTED, the same while there are no transactions); a
replica (id >= 0) asks the leader and sees up to the log end; the debug id -2 may ask any
replica. A partition named twice gets INVALID_REQUEST, once: Kafka's
``ReplicaManager.fetchOffset`` keys its answers by partition and groups them by topic (in
its map's order; here, in the order the request first names them). v0 was removed in
Kafka 4.0 and is not served. v11's earliest pending upload (-6, KIP-1023) is offset -1, as
Kafka answers without tiered storage. OffsetForLeaderEpoch answers from the leader's epoch cache
(``LeaderEpochFileCache.endOffsetFor``): the largest epoch at or below the requested one
and where it ends (the log end for the current one), -1/-1 when unknown.
"""

from __future__ import annotations

from collections import Counter

from pykraft.broker.replica_manager import PartitionError, ReplicaManager
from pykraft.log.partition_reads import (
    CONSUMER_REPLICA_ID,
    DEBUGGING_REPLICA_ID,
    NO_EPOCH,
    FetchIsolation,
    ListedOffset,
    ReadablePartition,
    ReadFailed,
    TimestampWalk,
    fetch_isolation,
    list_offset,
    walked_offset,
)
from pykraft.messages.kafka.list_offsets_request import ListOffsetsRequest
from pykraft.messages.kafka.list_offsets_response import (
    ListOffsetsPartitionResponse,
    ListOffsetsResponse,
    ListOffsetsTopicResponse,
)
from pykraft.messages.kafka.offset_for_leader_epoch_request import OffsetForLeaderEpochRequest
from pykraft.messages.kafka.offset_for_leader_epoch_response import (
    EpochEndOffset,
    OffsetForLeaderEpochResponse,
    OffsetForLeaderTopicResult,
)
from pykraft.protocol.errors import ErrorCode
from pykraft.runtime.codec_thread import TIMESTAMP_SEARCH
from pykraft.runtime.turns import Turns

LATEST_VERSION = 11
FIRST_LEADER_EPOCH_VERSION = 4  # ListOffsetsResponse's LeaderEpoch: "versions": "4+"


async def list_offsets(body: ListOffsetsRequest, replicas: ReplicaManager,
                       denied: frozenset[object] = frozenset(), *,
                       api_version: int = LATEST_VERSION) -> ListOffsetsResponse:
    """The ListOffsets answer, each requested partition once, by topic, in the order the
    request first names them (TOPIC_AUTHORIZATION_FAILED for the ``denied`` topics). One
    class serves every version: fields a version lacks read as the schema's defaults (no
    current leader epoch before v4, read uncommitted before v2), as Kafka's reader leaves
    them; the found offset's leader epoch is answered from v4, as ``ReplicaManager.
    fetchOffset`` sets it (older versions have no field for it)."""
    epochs = api_version >= FIRST_LEADER_EPOCH_VERSION
    replica_id = body.replica_id
    isolation = (fetch_isolation(replica_id, body.isolation_level)
                 if replica_id == CONSUMER_REPLICA_ID else None)
    named = Counter((t.name, p.partition_index) for t in body.topics for p in t.partitions)
    turns = Turns()
    answered: dict[str, dict[int, ListOffsetsPartitionResponse]] = {}
    for topic in body.topics:
        partitions = answered.setdefault(topic.name, {})
        for part in topic.partitions:
            if part.partition_index in partitions:
                continue
            await turns.pause()
            if topic.name in denied:
                answer = ListedOffset(ErrorCode.TOPIC_AUTHORIZATION_FAILED)
            elif named[(topic.name, part.partition_index)] > 1:
                answer = ListedOffset(ErrorCode.INVALID_REQUEST)
            else:
                try:
                    hosted = replicas.partition_for(
                        topic.name, part.partition_index,
                        current_leader_epoch=part.current_leader_epoch,
                        require_leader=replica_id != DEBUGGING_REPLICA_ID)
                except PartitionError as refused:
                    answer = ListedOffset(refused.error_code)
                else:
                    answer = await _listed(hosted, part.timestamp, isolation,
                                           replicas.read_failed)
            partitions[part.partition_index] = ListOffsetsPartitionResponse(
                partition_index=part.partition_index, error_code=answer.error,
                timestamp=answer.timestamp, offset=answer.offset,
                leader_epoch=answer.leader_epoch if epochs else NO_EPOCH)
    return ListOffsetsResponse(topics=tuple(
        ListOffsetsTopicResponse(name=name, partitions=tuple(partitions.values()))
        for name, partitions in answered.items()))


async def _listed(hosted: ReadablePartition, timestamp: int,
                  isolation: FetchIsolation | None, failed: ReadFailed) -> ListedOffset:
    """One partition's ListOffsets answer, the batches it must read walked on
    :data:`TIMESTAMP_SEARCH` (the partition may change meanwhile: each step reads it anew)."""
    answer = list_offset(hosted, timestamp, isolation=isolation, failed=failed)
    while isinstance(answer, TimestampWalk):
        walked = await TIMESTAMP_SEARCH.run(answer.walk)
        answer = walked_offset(hosted, answer, walked, isolation=isolation, failed=failed)
    return answer


async def offset_for_leader_epoch(body: OffsetForLeaderEpochRequest, replicas: ReplicaManager,
                                  denied: frozenset[object] = frozenset()
                                  ) -> OffsetForLeaderEpochResponse:
    """Each partition's (epoch, end offset) for the requested leader epoch, from the
    leader (Kafka answers it on the leader only, for consumers and followers alike); v2-4
    have the same fields but v3+'s replica id, which this answer does not depend on."""
    turns = Turns()
    topics = []
    for topic in body.topics:
        partitions = []
        for part in topic.partitions:
            await turns.pause()
            if topic.topic in denied:
                partitions.append(EpochEndOffset(
                    error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED, partition=part.partition))
                continue
            try:
                hosted = replicas.partition_for(
                    topic.topic, part.partition, current_leader_epoch=part.current_leader_epoch)
            except PartitionError as refused:
                partitions.append(EpochEndOffset(error_code=refused.error_code,
                                                 partition=part.partition))
                continue
            epoch, end = hosted.log.leader_epochs.end_offset_for(part.leader_epoch,
                                                                 hosted.log_end_offset)
            partitions.append(EpochEndOffset(
                error_code=ErrorCode.NONE, partition=part.partition, leader_epoch=epoch,
                end_offset=end))
        topics.append(OffsetForLeaderTopicResult(topic=topic.topic,
                                                 partitions=tuple(partitions)))
    return OffsetForLeaderEpochResponse(topics=tuple(topics))
