"""JBOD on the broker (KIP-858): where a new replica goes, when it is reported with
AssignReplicasToDirs and how that is sent, and what a failed directory that can be reported
does (its replicas answer KAFKA_STORAGE_ERROR, the broker does not halt)."""

from __future__ import annotations

import asyncio
import errno
import functools
import uuid
from pathlib import Path

import pytest
from replica_fixtures import topic, with_records

from pykraft.broker.dir_assignments import AssignmentsManager
from pykraft.broker.replica_manager import PartitionError, ReplicaManager
from pykraft.errors import NetworkError
from pykraft.features import METADATA_VERSION_FEATURE
from pykraft.ids import TopicPartition
from pykraft.image.image import MetadataImage
from pykraft.image.versions import MV_3_7_IV2
from pykraft.log.log_dir_failure import LogDirFailures
from pykraft.log.log_manager import LogManager
from pykraft.messages.kafka import assign_replicas_to_dirs_response as res
from pykraft.protocol.errors import ErrorCode
from pykraft.records.metadata import FeatureLevelRecord, PartitionChangeRecord
from pykraft.storage.log_config import LogConfig

T1 = uuid.UUID(int=71)
DIR_A, DIR_B = uuid.UUID(int=8), uuid.UUID(int=9)
UNASSIGNED = uuid.UUID(int=1)


def _broker(tmp_path: Path, halts: list[int]) -> tuple[ReplicaManager, list[tuple[object, ...]]]:
    """Broker 1 with log dirs a (the metadata log's) and b, at metadata.version 3.7-IV2,
    telling its assignments to the returned list."""
    dirs = [tmp_path / "a", tmp_path / "b"]
    logs = LogManager(dirs, LogConfig(), dir_ids={dirs[0]: DIR_A, dirs[1]: DIR_B},
                      failures=LogDirFailures(dirs, dirs[0], halt=halts.append))
    logs.startup(1_000)
    manager = ReplicaManager(1, logs, {})
    told: list[tuple[object, ...]] = []
    manager.assign_dir = lambda *assignment: told.append(assignment)
    manager.apply_image(with_records(MetadataImage(), FeatureLevelRecord(
        name=METADATA_VERSION_FEATURE, feature_level=MV_3_7_IV2)), 1_000)
    return manager, told


def _with_topic(manager: ReplicaManager, partitions: int, directory: uuid.UUID) -> None:
    records = [*topic("t", T1, *[(1,)] * partitions)]
    records += [PartitionChangeRecord(partition_id=p, topic_id=T1, directories=(directory,))
                for p in range(partitions)]
    manager.apply_image(with_records(manager.image, *records), 1_000)


def test_unassigned_replicas_spread_over_the_dirs_and_are_reported(tmp_path: Path) -> None:
    """Kafka's nextLogDirs: the directory with the fewest partitions, log.dirs order on a
    tie; each replica then reported in its real directory."""
    manager, told = _broker(tmp_path, [])
    _with_topic(manager, 4, UNASSIGNED)
    where = {tp.partition: hosted.log.directory.parent.name
             for tp, hosted in manager.partitions.items()}
    assert where == {0: "a", 1: "b", 2: "a", 3: "b"}
    assert sorted(told) == [(T1, 0, DIR_A), (T1, 1, DIR_B), (T1, 2, DIR_A), (T1, 3, DIR_B)]


def test_an_assigned_directory_is_honoured_and_not_reported_again(tmp_path: Path) -> None:
    manager, told = _broker(tmp_path, [])
    _with_topic(manager, 3, DIR_B)
    assert {h.log.directory.parent.name for h in manager.partitions.values()} == {"b"}
    assert told == []


def test_a_reported_dir_failure_stops_only_its_replicas(tmp_path: Path) -> None:
    """The failed directory's replicas answer KAFKA_STORAGE_ERROR, the other one's serve;
    the broker does not halt; the metadata log's directory still halts it."""
    halts: list[int] = []
    manager, _ = _broker(tmp_path, halts)
    _with_topic(manager, 2, UNASSIGNED)
    failures = manager.logs.failures
    failures.report = lambda directory: bool(manager.take_dir_offline(directory)) or True
    failures.fail(tmp_path / "b", "Error while appending", OSError(errno.EIO, "I/O error"))
    assert halts == []
    assert manager.partition_for("t", 0).tp == TopicPartition("t", 0)
    with pytest.raises(PartitionError) as refused:
        manager.partition_for("t", 1)
    assert refused.value.error_code == ErrorCode.KAFKA_STORAGE_ERROR
    assert manager.offline_count == 1  # Kafka's OfflineReplicaCount
    manager.checkpoint(2_000)  # the failed directory is no longer written
    failures.fail(tmp_path / "a", "Error while reading", OSError(errno.EIO, "I/O error"))
    assert halts == [1]


class _Controller:
    """Answers AssignReplicasToDirs: first unreachable, then each partition as ``codes``."""

    def __init__(self, codes: dict[int, ErrorCode]) -> None:
        self.codes = codes
        self.requests: list[object] = []

    async def send(self, body: object) -> object:
        self.requests.append(body)
        if len(self.requests) == 1:
            raise NetworkError("controller unreachable")
        return res.AssignReplicasToDirsResponse(error_code=0, directories=tuple(
            res.DirectoryData(id=d.id, topics=tuple(res.TopicData(topic_id=t.topic_id,
                partitions=tuple(res.PartitionData(
                    partition_index=p.partition_index,
                    error_code=self.codes.get(p.partition_index, ErrorCode.NONE))
                    for p in t.partitions)) for t in d.topics))
            for d in body.directories))  # type: ignore[attr-defined]


def test_assignments_are_batched_retried_and_dropped_when_invalid() -> None:
    """A network failure resends the batch; a partition answered with an error is queued
    again; one no longer in the image is never sent."""
    image = with_records(MetadataImage(), *topic("t", T1, (1,), (1,)))
    controller = _Controller({1: ErrorCode.NOT_LEADER_OR_FOLLOWER})
    manager = AssignmentsManager(controller, broker_id=1, broker_epoch=lambda: 5,
                                 image=lambda: image)
    done: list[int] = []
    for partition in (0, 1, 7):
        manager.assign(T1, partition, DIR_B, functools.partial(done.append, partition))

    async def run() -> list[bool]:
        return [await manager.send_once() for _ in range(3)]

    assert asyncio.run(run()) == [False, False, False]
    sent = [sorted(p.partition_index for d in r.directories for t in d.topics  # type: ignore[attr-defined]
                   for p in t.partitions) for r in controller.requests]
    assert sent == [[0, 1], [0, 1], [1]]
    assert manager.pending == 1
    assert done == [0]  # accepted: its move may swap; the refused one waits
