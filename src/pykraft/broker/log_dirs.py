"""DescribeLogDirs (API 35, v1-5) on the broker listener: this broker's log directories,
the partitions in each, their sizes and the room left on the volume (``kafka-log-dirs.sh``,
``Admin.describeLogDirs``).

Interface::

    response = describe_log_dirs(request_body, replicas)   # any version

As Kafka's ``ReplicaManager.describeLogDirs``: a null topic list means every partition; a
directory lists only the requested partitions it holds; ``offset_lag`` is how far the log
end is behind the high watermark (0 for a current log), ``is_future_key`` false (no
AlterReplicaLogDirs moves); total and usable bytes are the volume's (v4+); ``is_cordoned``
(v5, KIP-1066) false: pykraft cordons no directory (``cordoned.log.dirs`` is refused).
A failed (offline) directory is answered KAFKA_STORAGE_ERROR with nothing else.
The fields newer versions add are ignorable: an older version's writer leaves them out.
"""

from __future__ import annotations

import shutil

from pykraft.broker.replica_manager import HostedPartition, ReplicaManager
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
        by_topic: dict[str, list[HostedPartition]] = {}
        for tp, hosted in sorted(replicas.partitions.items()):
            if hosted.log.directory.parent == directory and (wanted is None or tp in wanted):
                by_topic.setdefault(tp.topic, []).append(hosted)
        usage = shutil.disk_usage(directory)
        results.append(DescribeLogDirsResult(
            error_code=ErrorCode.NONE, log_dir=str(directory.absolute()),
            topics=tuple(DescribeLogDirsTopic(name=topic, partitions=tuple(
                DescribeLogDirsPartition(
                    partition_index=hosted.index, partition_size=hosted.log.size,
                    offset_lag=max(0, hosted.high_watermark - hosted.log_end_offset),
                    is_future_key=False)
                for hosted in hosted_list)) for topic, hosted_list in by_topic.items()),
            total_bytes=usage.total, usable_bytes=usage.free, is_cordoned=False))
    return DescribeLogDirsResponse(error_code=ErrorCode.NONE, results=tuple(results))
