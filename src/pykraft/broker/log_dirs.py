"""DescribeLogDirs (API 35, v1-5) on the broker listener: this broker's log directories,
the partitions in each, their sizes and the room left on the volume (``kafka-log-dirs.sh``,
``Admin.describeLogDirs``).

Interface::

    response = describe_log_dirs(request_body, replicas)   # any version

As Kafka's ``ReplicaManager.describeLogDirs``: a null topic list means every partition; a
directory lists only the requested partitions it holds, current replicas and future ones
(AlterReplicaLogDirs copying them: ``is_future_key`` true), by topic then partition;
``offset_lag`` is how far a current log's end is behind the high watermark (0 for a current
log), a future log's behind the current log's end; total and usable bytes are the volume's
(v4+); ``is_cordoned``
(v5, KIP-1066) false: pykraft cordons no directory (``cordoned.log.dirs`` is refused).
A failed (offline) directory is answered KAFKA_STORAGE_ERROR with nothing else.
The fields newer versions add are ignorable: an older version's writer leaves them out.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from pykraft.broker.replica_manager import ReplicaManager
from pykraft.ids import TopicPartition
from pykraft.messages.kafka.describe_log_dirs_request import DescribeLogDirsRequest
from pykraft.messages.kafka.describe_log_dirs_response import (
    DescribeLogDirsPartition,
    DescribeLogDirsResponse,
    DescribeLogDirsResult,
    DescribeLogDirsTopic,
)
from pykraft.protocol.errors import ErrorCode


def describe_log_dirs(body: DescribeLogDirsRequest,
                      replicas: ReplicaManager) -> DescribeLogDirsResponse:
    wanted = (None if body.topics is None
              else {(t.topic, p) for t in body.topics for p in t.partitions})
    results = []
    for directory in replicas.logs.log_dirs:
        if directory in replicas.logs.failures.offline:
            results.append(DescribeLogDirsResult(error_code=ErrorCode.KAFKA_STORAGE_ERROR,
                                                 log_dir=str(directory.absolute())))
            continue
        by_topic: dict[str, list[DescribeLogDirsPartition]] = {}
        for tp, partition in _replicas_in(directory, replicas):
            if wanted is None or tp in wanted:
                by_topic.setdefault(tp.topic, []).append(partition)
        usage = shutil.disk_usage(directory)
        results.append(DescribeLogDirsResult(
            error_code=ErrorCode.NONE, log_dir=str(directory.absolute()),
            topics=tuple(DescribeLogDirsTopic(name=topic, partitions=tuple(partitions))
                         for topic, partitions in by_topic.items()),
            total_bytes=usage.total, usable_bytes=usage.free, is_cordoned=False))
    return DescribeLogDirsResponse(error_code=ErrorCode.NONE, results=tuple(results))


def _replicas_in(directory: Path, replicas: ReplicaManager
                 ) -> list[tuple[TopicPartition, DescribeLogDirsPartition]]:
    """Each replica whose log (current or future) is in ``directory``, in order."""
    found = []
    for tp, hosted in replicas.partitions.items():
        if hosted.log.directory.parent == directory:
            found.append((tp, DescribeLogDirsPartition(
                partition_index=tp.partition, partition_size=hosted.log.size,
                offset_lag=max(0, hosted.high_watermark - hosted.log_end_offset),
                is_future_key=False)))
        future = replicas.logs.future(tp)
        if future is not None and future.directory.parent == directory:
            found.append((tp, DescribeLogDirsPartition(
                partition_index=tp.partition, partition_size=future.size,
                offset_lag=hosted.log_end_offset - future.log_end_offset,
                is_future_key=True)))
    return sorted(found, key=lambda item: item[0])
