"""DeleteRecords (API 21, v0-2) on the broker listener: move partitions' log start offsets
forward (``kafka-delete-records.sh``, ``Admin.deleteRecords``).

Interface::

    response = await delete_records(request_body, replicas)   # every version

As Kafka's ``Partition.deleteRecordsOnLeader``: leader only; offset -1 means the high
watermark; a negative offset or one past the high watermark is OFFSET_OUT_OF_RANGE; a topic
whose ``cleanup.policy`` lacks ``delete`` is POLICY_VIOLATION; the log start offset never
moves back, and the segments wholly below it go at the next retention pass. The answer's
``low_watermark`` is the leader's new log start offset (-1 on error): Kafka waits until
every replica's log start reached it, which followers report in their fetches (issue 15),
so with more than one replica this answers before the followers have deleted anything.
Partitions are handled independently, as Kafka does, the event loop running between them
once a turn has lasted its budget (:mod:`pykraft.runtime.turns`).
"""

from __future__ import annotations

from pykraft.broker.replica_manager import HostedPartition, PartitionError, ReplicaManager
from pykraft.log.partition_reads import delete_records_target
from pykraft.messages.kafka.delete_records_request import DeleteRecordsRequest
from pykraft.messages.kafka.delete_records_response import (
    DeleteRecordsPartitionResult,
    DeleteRecordsResponse,
    DeleteRecordsTopicResult,
)
from pykraft.protocol.errors import ErrorCode
from pykraft.runtime.turns import Turns

INVALID_LOW_WATERMARK = -1


async def delete_records(body: DeleteRecordsRequest, replicas: ReplicaManager,
                         denied: frozenset[object] = frozenset()) -> DeleteRecordsResponse:
    """Each partition's new log start offset; TOPIC_AUTHORIZATION_FAILED for ``denied``
    (every version has the same fields: one class, no per-version rule)."""
    turns = Turns()
    topics = []
    for topic in body.topics:
        partitions = []
        for part in topic.partitions:
            await turns.pause()
            try:
                if topic.name in denied:
                    raise PartitionError(ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                                         "Topic authorization failed.")
                hosted = replicas.partition_for(topic.name, part.partition_index)
            except PartitionError as refused:
                error, low = refused.error_code, INVALID_LOW_WATERMARK
            else:
                error, low = _delete_on_leader(hosted, part.offset)
            partitions.append(DeleteRecordsPartitionResult(
                partition_index=part.partition_index, low_watermark=low, error_code=error))
        topics.append(DeleteRecordsTopicResult(name=topic.name, partitions=tuple(partitions)))
    return DeleteRecordsResponse(topics=tuple(topics))


def _delete_on_leader(hosted: HostedPartition, offset: int) -> tuple[ErrorCode, int]:
    if not hosted.log.config.delete:
        return ErrorCode.POLICY_VIOLATION, INVALID_LOW_WATERMARK
    target = delete_records_target(hosted, offset)
    if isinstance(target, ErrorCode):
        return target, INVALID_LOW_WATERMARK
    if hosted.log.increment_log_start_offset(target, hosted.high_watermark):
        hosted.notify()
    return ErrorCode.NONE, hosted.log_start_offset
