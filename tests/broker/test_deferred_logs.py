"""New partitions' logs created outside ``apply_image`` (issue 24, defect 5): with a driver
(``defer_logs``), a partition the image adds is not hosted until its log exists; Produce and
Fetch for it meanwhile answer NOT_LEADER_OR_FOLLOWER with the leader the image names, as
Kafka's do before the partition is made leader. A partition deleted or recreated while its
log was being created ends up as the image says."""

from __future__ import annotations

import asyncio
import concurrent.futures
import uuid
from pathlib import Path

import pytest
from replica_fixtures import topic, with_records

from pykraft.broker.log_creator import CHUNK, INLINE_LOGS, LogCreator
from pykraft.broker.replica_manager import PartitionError, ReplicaManager
from pykraft.ids import TopicPartition
from pykraft.image.image import MetadataImage
from pykraft.log import log_manager
from pykraft.log.log_manager import LogManager, create_logs
from pykraft.protocol.errors import ErrorCode
from pykraft.records.metadata import RemoveTopicRecord
from pykraft.runtime.waits import wait_set
from pykraft.storage.log_config import LogConfig
from pykraft.storage.partition_metadata import read_partition_metadata

ME = 1
T1 = uuid.UUID(int=7)
T2 = uuid.UUID(int=8)
NOW = 1_000


def deferred(directory: Path, inline: int = 0) -> tuple[ReplicaManager, list[int]]:
    """A replica manager whose driver only counts its wake-ups."""
    logs = LogManager([directory], LogConfig())
    logs.startup(NOW)
    manager = ReplicaManager(ME, logs, {})
    wakes: list[int] = []
    manager.defer_logs = lambda: wakes.append(len(wakes))
    manager.inline_logs = inline
    return manager, wakes


def refusal(manager: ReplicaManager, partition: int) -> PartitionError:
    with pytest.raises(PartitionError) as refused:
        manager.partition_for("t", partition)
    return refused.value


def test_a_new_partition_is_served_once_its_log_exists(tmp_path: Path) -> None:
    manager, wakes = deferred(tmp_path)
    manager.apply_image(with_records(MetadataImage(), *topic("t", T1, (ME,), (ME,))), NOW)
    assert wakes == [0] and not manager.partitions
    refused = refusal(manager, 0)
    assert (refused.error_code, refused.leader_id) == (ErrorCode.NOT_LEADER_OR_FOLLOWER, ME)
    assert not (tmp_path / "t-0").exists()
    planned = manager.logs_to_create(1)
    assert [p.tp for p in planned] == [TopicPartition("t", 0)]
    assert manager.logs_to_create(5)[0].tp == TopicPartition("t", 1)  # t-0 is claimed
    manager.logs_created(create_logs(planned, NOW), NOW)
    assert manager.partition_for("t", 0).is_leader
    assert read_partition_metadata(tmp_path / "t-0" / "partition.metadata") == T1
    assert refusal(manager, 1).error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER


def test_the_first_inline_logs_are_hosted_with_the_image(tmp_path: Path) -> None:
    manager, wakes = deferred(tmp_path, inline=2)
    manager.apply_image(with_records(MetadataImage(), *topic("t", T1, (ME,), (ME,), (ME,))),
                        NOW)
    assert sorted(tp.partition for tp in manager.partitions) == [0, 1]
    assert manager.inline_logs == 0 and wakes == [0]
    assert [p.tp.partition for p in manager.logs_to_create(10)] == [2]


def test_a_partition_deleted_while_its_log_was_created_is_not_hosted(tmp_path: Path) -> None:
    manager, _ = deferred(tmp_path)
    image = with_records(MetadataImage(), *topic("t", T1, (ME,)))
    manager.apply_image(image, NOW)
    planned = manager.logs_to_create(1)
    manager.apply_image(with_records(image, RemoveTopicRecord(topic_id=T1)), NOW)
    manager.logs_created(create_logs(planned, NOW), NOW)
    assert not manager.partitions and manager.logs.get(TopicPartition("t", 0)) is None
    assert not manager.logs_to_create(1)
    assert not [d for d in tmp_path.iterdir() if d.name.startswith("t-0")]


def test_a_topic_recreated_while_its_log_was_created_gets_a_new_log(tmp_path: Path) -> None:
    manager, _ = deferred(tmp_path)
    image = with_records(MetadataImage(), *topic("t", T1, (ME,)))
    manager.apply_image(image, NOW)
    planned = manager.logs_to_create(1)
    image = with_records(image, RemoveTopicRecord(topic_id=T1))
    manager.apply_image(with_records(image, *topic("t", T2, (ME,))), NOW)
    assert not manager.logs_to_create(1)  # the old log is still being created
    manager.logs_created(create_logs(planned, NOW), NOW)
    assert not manager.partitions
    manager.logs_created(create_logs(manager.logs_to_create(1), NOW), NOW)
    assert manager.partition_for("t", 0).topic_id == T2
    assert read_partition_metadata(tmp_path / "t-0" / "partition.metadata") == T2


def test_the_log_creator_hosts_every_awaited_partition(tmp_path: Path) -> None:
    logs = LogManager([tmp_path], LogConfig())
    logs.startup(NOW)
    manager = ReplicaManager(ME, logs, {})
    count = INLINE_LOGS + 2 * CHUNK + 5  # past the inline ones: three worker chunks
    told: list[int] = []
    worker = concurrent.futures.ThreadPoolExecutor(max_workers=1)

    async def scenario() -> None:
        all_hosted = asyncio.Event()

        def hosted() -> None:
            told.append(len(manager.partitions))
            if len(manager.partitions) == count:
                all_hosted.set()

        creator = LogCreator(manager, lambda: NOW, hosted, worker)
        manager.defer_logs = creator.wake
        task = asyncio.create_task(creator.run())
        try:
            manager.apply_image(with_records(MetadataImage(),
                                             *topic("t", T1, *[(ME,)] * count)), NOW)
            assert len(manager.partitions) == INLINE_LOGS
            assert await wait_set(all_hosted, 60.0)
        finally:
            task.cancel()
            creator.close()
            worker.shutdown(wait=True)

    asyncio.run(scenario())
    assert told == [INLINE_LOGS + CHUNK, INLINE_LOGS + 2 * CHUNK, count]
    assert all(manager.partition_for("t", p).is_leader for p in range(count))


def test_deleting_many_partitions_syncs_their_log_directory_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each rename for deletion synced the log directory: 3 ms of the loop per partition."""
    logs = LogManager([tmp_path], LogConfig())
    logs.startup(NOW)
    manager = ReplicaManager(ME, logs, {})
    image = with_records(MetadataImage(), *topic("t", T1, *[(ME,)] * 20))
    manager.apply_image(image, NOW)
    synced: list[Path] = []
    monkeypatch.setattr(log_manager, "fsync_dir", synced.append)
    manager.apply_image(with_records(image, RemoveTopicRecord(topic_id=T1)), NOW)
    assert synced == [tmp_path] and not manager.partitions
    assert len([d for d in tmp_path.iterdir() if d.name.endswith("-delete")]) == 20
    logs.remove_deleted(NOW + 60_000)  # file.delete.delay.ms later: removed, synced once
    assert synced == [tmp_path, tmp_path]
    assert not [d for d in tmp_path.iterdir() if d.name.startswith("t-")]


def test_deleted_directories_due_are_handed_to_the_remover(tmp_path: Path) -> None:
    """The broker removes them on its disk worker thread: 1,000 took seconds of its loop."""
    handed: list[list[Path]] = []
    logs = LogManager([tmp_path], LogConfig(), remove_dirs=handed.append)
    logs.startup(NOW)
    manager = ReplicaManager(ME, logs, {})
    image = with_records(MetadataImage(), *topic("t", T1, (ME,), (ME,)))
    manager.apply_image(image, NOW)
    manager.apply_image(with_records(image, RemoveTopicRecord(topic_id=T1)), NOW)
    logs.remove_deleted(NOW + 59_999)
    assert handed == []
    logs.remove_deleted(NOW + 60_000)
    assert sorted(path.name.split(".")[0] for path in handed[0]) == ["t-0", "t-1"]
    assert all(path.exists() for path in handed[0])  # the remover's to remove
