"""AlterReplicaLogDirs (API 34, v1-2) on the broker listener: move replicas between this
broker's log directories (``kafka-reassign-partitions.sh`` with ``log_dirs``,
``Admin.alterReplicaLogDirs``).

Interface::

    response = alter_replica_log_dirs(request_body, mover)   # any version

As Kafka's ``AlterReplicaLogDirsRequest.partitionDirs``, a partition named under several
directories takes the last one; each partition is answered once, with what
:meth:`pykraft.broker.log_dir_mover.LogDirMover.alter` says, grouped by topic (Kafka groups
in hash order, pykraft in the request's). A refused request (no ALTER on the cluster) is
answered by :func:`pykraft.runtime.error_answer.error_answer`.
"""

from __future__ import annotations

from pykraft.broker.log_dir_mover import LogDirMover
from pykraft.ids import TopicPartition
from pykraft.messages.kafka.alter_replica_log_dirs_request import AlterReplicaLogDirsRequest
from pykraft.messages.kafka.alter_replica_log_dirs_response import (
    AlterReplicaLogDirPartitionResult,
    AlterReplicaLogDirsResponse,
    AlterReplicaLogDirTopicResult,
)


def alter_replica_log_dirs(body: AlterReplicaLogDirsRequest,
                           mover: LogDirMover) -> AlterReplicaLogDirsResponse:
    wanted: dict[TopicPartition, str] = {}
    for directory in body.dirs:
        for topic in directory.topics:
            for index in topic.partitions:
                wanted[TopicPartition(topic.name, index)] = directory.path
    by_topic: dict[str, list[AlterReplicaLogDirPartitionResult]] = {}
    for tp, path in wanted.items():
        by_topic.setdefault(tp.topic, []).append(AlterReplicaLogDirPartitionResult(
            partition_index=tp.partition, error_code=mover.alter(tp, path)))
    return AlterReplicaLogDirsResponse(results=tuple(
        AlterReplicaLogDirTopicResult(topic_name=topic, partitions=tuple(results))
        for topic, results in by_topic.items()))

