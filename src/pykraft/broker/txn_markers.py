"""WriteTxnMarkers (API 27, v1-v2) on partition leaders: the transaction coordinator's
COMMIT and ABORT markers, one per producer and partition (Kafka's
``KafkaApis.handleWriteTxnMarkersRequest``).

Interface::

    response = await write_txn_markers(body, replicas, now_ms=clock, timeout_ms=...)

The answer is keyed by producer id, as Kafka's (markers naming the same producer share
one entry, a partition named twice is written once, the later marker's outcome kept).
Each partition is answered alone: a partition this broker
does not host UNKNOWN_TOPIC_OR_PARTITION; one it follows NOT_LEADER_OR_FOLLOWER; a stale
producer epoch INVALID_PRODUCER_EPOCH and an older coordinator epoch
TRANSACTION_COORDINATOR_FENCED (the producer state's checks, nothing written); an I/O error
KAFKA_STORAGE_ERROR. A marker for ``__consumer_offsets`` goes through the group
coordinator (:attr:`ReplicaManager.marker_writers`), which ends the producer's pending
offsets with it; a partition whose coordinator is not loaded answers
NOT_LEADER_OR_FOLLOWER, and the sender retries. A marker written waits for acks=all
(``request.timeout.ms``, then REQUEST_TIMED_OUT), as Kafka appends markers with acks=-1.
The caller authorizes (CLUSTER_ACTION, or ALTER on the cluster). v2 carries the
coordinator's transaction version: at 2 a marker must bump the producer epoch.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from pykraft.broker.acks_all import await_acks_all
from pykraft.broker.replica_manager import HostedPartition, PartitionError, ReplicaManager
from pykraft.errors import StorageError
from pykraft.ids import TopicPartition
from pykraft.log.producer_state import ProducerStateError
from pykraft.messages.kafka.write_txn_markers_request import (
    WritableTxnMarker,
    WriteTxnMarkersRequest,
)
from pykraft.messages.kafka.write_txn_markers_response import (
    WritableTxnMarkerPartitionResult,
    WritableTxnMarkerResult,
    WritableTxnMarkerTopicResult,
    WriteTxnMarkersResponse,
)
from pykraft.protocol.errors import ErrorCode
from pykraft.runtime.turns import Turns


@dataclass(slots=True)
class _Outcome:
    """One partition's answer while it is being built (see :mod:`.acks_all`)."""

    index: int
    error: ErrorCode = ErrorCode.NONE
    waiting: tuple[HostedPartition, int] | None = None
    leader: tuple[int, int] | None = None


async def write_txn_markers(body: WriteTxnMarkersRequest, replicas: ReplicaManager, *,
                            now_ms: Callable[[], int],
                            timeout_ms: int) -> WriteTxnMarkersResponse:
    """Write every marker, then answer once each is replicated (or failed): one answer per
    producer id, each of its partitions once (the last marker naming it decides)."""
    turns = Turns()
    answers: dict[int, dict[tuple[str, int], _Outcome]] = {}
    for marker in body.markers:
        outcomes = answers.setdefault(marker.producer_id, {})
        for topic in marker.topics:
            for index in dict.fromkeys(topic.partition_indexes):
                await turns.pause()
                outcomes[(topic.name, index)] = _write(replicas, marker, topic.name, index,
                                                       now_ms())
    await await_acks_all(replicas, [o for outcomes in answers.values()
                                    for o in outcomes.values()], timeout_ms)
    return WriteTxnMarkersResponse(markers=tuple(
        WritableTxnMarkerResult(producer_id=producer_id, topics=tuple(
            WritableTxnMarkerTopicResult(name=name, partitions=tuple(
                WritableTxnMarkerPartitionResult(partition_index=index, error_code=o.error)
                for (topic, index), o in outcomes.items() if topic == name))
            for name in dict.fromkeys(topic for topic, _ in outcomes)))
        for producer_id, outcomes in answers.items()))


def _write(replicas: ReplicaManager, marker: WritableTxnMarker, topic: str, index: int,
           now_ms: int) -> _Outcome:
    outcome = _Outcome(index)
    if TopicPartition(topic, index) not in replicas.partitions:
        outcome.error = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION  # Kafka's onlinePartition
        return outcome
    try:
        hosted = replicas.partition_for(topic, index)
        writer = replicas.marker_writers.get(topic)
        if writer is not None:  # __consumer_offsets: through its group coordinator
            result = writer(index, producer_id=marker.producer_id,
                            producer_epoch=marker.producer_epoch,
                            committed=marker.transaction_result,
                            coordinator_epoch=marker.coordinator_epoch,
                            transaction_version=marker.transaction_version, now_ms=now_ms)
        else:
            result = replicas.append_marker(
                hosted, producer_id=marker.producer_id, producer_epoch=marker.producer_epoch,
                aborted=not marker.transaction_result,
                coordinator_epoch=marker.coordinator_epoch,
                transaction_version=marker.transaction_version, now_ms=now_ms)
    except (PartitionError, ProducerStateError) as exc:
        outcome.error = exc.error_code
        return outcome
    except StorageError:
        outcome.error = ErrorCode.KAFKA_STORAGE_ERROR
        return outcome
    outcome.waiting = (hosted, result.last_offset + 1)
    return outcome
