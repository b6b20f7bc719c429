"""The replica manager and log manager on real directories: hosting from images, leader
appends with producer state, errors with leader hints, restarts, checkpoints, deletion and
retention."""

from __future__ import annotations

import asyncio
import os
import threading
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest
from kafka.record.memory_records import MemoryRecords
from replica_fixtures import client_batch, topic, with_records

from pykraft.broker.purgatory import DelayedOperation
from pykraft.broker.replica_manager import HostedPartition, PartitionError, ReplicaManager
from pykraft.ids import TopicPartition
from pykraft.image.image import MetadataImage
from pykraft.log.log_manager import CLEAN_SHUTDOWN_FILE, LogManager
from pykraft.log.producer_state import ProducerStateError
from pykraft.log.validator import ProduceValidationError
from pykraft.protocol.errors import ErrorCode
from pykraft.records.batch import iter_batches
from pykraft.records.compression import GZIP
from pykraft.records.metadata import ConfigRecord, PartitionChangeRecord, RemoveTopicRecord
from pykraft.storage.log_config import LogConfig
from pykraft.storage.offset_checkpoints import (
    LOG_START_OFFSET_CHECKPOINT,
    RECOVERY_POINT_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
    read_offset_checkpoint,
)
from pykraft.storage.partition_log import PartitionLog
from pykraft.storage.partition_metadata import read_partition_metadata
from pykraft.testing.compression_bombs import NOW, MiB, batch, bomb, huge_record

ME = 1
T1 = uuid.UUID(int=7)
TP = TopicPartition("t", 0)


def replicas(directory: Path, image: MetadataImage | None = None, now_ms: int = 1_000,
             static: dict[str, str] | None = None) -> ReplicaManager:
    logs = LogManager([directory], LogConfig())
    logs.startup(now_ms)
    manager = ReplicaManager(ME, logs, static or {})
    if image is not None:
        manager.apply_image(image, now_ms)
    return manager


class _Watcher(DelayedOperation):
    """Never completes: tells ``seen`` of t-0 each time the purgatory checks it."""

    def __init__(self, part: HostedPartition, seen: Callable[[HostedPartition], None]) -> None:
        super().__init__(deadline_ms=1 << 62)
        self._part, self._seen = part, seen

    def try_complete(self) -> bool:
        self._seen(self._part)
        return False

    def on_complete(self, expired: bool) -> None:
        raise AssertionError("never completes")


def _watch(manager: ReplicaManager, seen: Callable[[HostedPartition], None]) -> None:
    part = manager.partition_for("t", 0)
    manager.purgatories.produce.try_complete_else_watch(_Watcher(part, seen), [part.tp])


def append(manager: ReplicaManager, values: list[bytes], **producer: int) -> int:
    part = manager.partition_for("t", 0)
    return manager.append_records(part, client_batch(values, **producer), acks=-1,
                                  api_version=12, now_ms=2_000).base_offset


def test_a_led_partition_takes_appends_and_its_high_watermark_follows(tmp_path: Path) -> None:
    manager = replicas(tmp_path, with_records(MetadataImage(), *topic("t", T1, (ME,))))
    seen: list[int] = []
    _watch(manager, lambda p: seen.append(p.high_watermark))
    assert [append(manager, [b"a", b"b"]), append(manager, [b"c"])] == [0, 2]
    part = manager.partition_for(T1, 0)
    assert (part.log_end_offset, part.high_watermark, part.leader_epoch) == (3, 3, 0)
    assert seen == [0, 2, 3]  # as watched, then after each append
    assert read_partition_metadata(tmp_path / "t-0" / "partition.metadata") == T1
    batches = MemoryRecords(part.log.read(0, 1 << 20))
    values = []
    while (batch := batches.next_batch()) is not None:
        values += [r.value for r in batch]
    assert values == [b"a", b"b", b"c"]


def test_a_larger_isr_holds_the_high_watermark(tmp_path: Path) -> None:
    manager = replicas(tmp_path, with_records(MetadataImage(), *topic("t", T1, (ME, 2))))
    append(manager, [b"a"])
    part = manager.partition_for("t", 0)
    assert (part.log_end_offset, part.high_watermark) == (1, 0)
    manager.apply_image(with_records(manager.image, PartitionChangeRecord(
        partition_id=0, topic_id=T1, isr=(ME,))), 3_000)
    assert part.high_watermark == 1  # the ISR shrank to the leader alone


def test_a_retry_gets_its_original_offsets_and_nothing_is_written(tmp_path: Path) -> None:
    manager = replicas(tmp_path, with_records(MetadataImage(), *topic("t", T1, (ME,))))
    first = append(manager, [b"a", b"b"], producer_id=9, epoch=0, sequence=0)
    append(manager, [b"c"], producer_id=9, epoch=0, sequence=2)
    assert append(manager, [b"a", b"b"], producer_id=9, epoch=0, sequence=0) == first
    assert manager.partition_for("t", 0).log_end_offset == 3
    with pytest.raises(ProducerStateError) as refused:
        append(manager, [b"d"], producer_id=9, epoch=0, sequence=7)
    assert refused.value.error_code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER


def test_lookups_answer_kafkas_errors_with_the_leader(tmp_path: Path) -> None:
    image = with_records(MetadataImage(), *topic("t", T1, (ME,), (2, ME), (2, 3)))
    manager = replicas(tmp_path, image)

    def refusal(topic_name: str | uuid.UUID, index: int, epoch: int = -1) -> PartitionError:
        with pytest.raises(PartitionError) as raised:
            manager.partition_for(topic_name, index, current_leader_epoch=epoch)
        return raised.value

    assert refusal("nope", 0).error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert refusal(uuid.UUID(int=99), 0).error_code == ErrorCode.UNKNOWN_TOPIC_ID
    assert refusal("t", 5).error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    follower = refusal("t", 1)
    assert (follower.error_code, follower.leader_id, follower.leader_epoch) == (
        ErrorCode.NOT_LEADER_OR_FOLLOWER, 2, 0)
    assert manager.partition_for("t", 1, require_leader=False).is_leader is False
    assert refusal("t", 2).error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER  # not hosted
    manager.apply_image(with_records(image, PartitionChangeRecord(
        partition_id=0, topic_id=T1, leader=ME)), 2_000)  # a new leader epoch
    assert refusal("t", 0, 0).error_code == ErrorCode.FENCED_LEADER_EPOCH
    assert refusal("t", 0, 2).error_code == ErrorCode.UNKNOWN_LEADER_EPOCH
    assert manager.partition_for("t", 0, current_leader_epoch=1).leader_epoch == 1


def test_acks_all_under_min_isr_is_refused_before_the_append(tmp_path: Path) -> None:
    image = with_records(MetadataImage(), *topic("t", T1, (ME, 2)),
                         PartitionChangeRecord(partition_id=0, topic_id=T1, isr=(ME,)),
                         ConfigRecord(resource_type=2, resource_name="t",
                                      name="min.insync.replicas", value="2"))
    manager = replicas(tmp_path, image)
    part = manager.partition_for("t", 0)
    with pytest.raises(PartitionError) as refused:
        append(manager, [b"a"])
    assert refused.value.error_code == ErrorCode.NOT_ENOUGH_REPLICAS
    manager.append_records(part, client_batch([b"a"]), acks=1, api_version=12, now_ms=1)
    assert (part.log_end_offset, part.high_watermark) == (1, 0)  # frozen under min ISR


def _costly_batch() -> bytes:
    """A few KiB of gzip holding a valid record of 2 MiB: validated off the loop."""
    head, tail = huge_record(2 * MiB)
    return batch(GZIP, bomb(GZIP, head, 2 * MiB, tail))


async def _produced_while(manager: ReplicaManager, meanwhile: object) -> int:
    """The base offset of a costly batch produced to t-0, ``meanwhile()`` running on the
    loop while the batch is validated on the validation thread."""
    part = manager.partition_for("t", 0)
    task = asyncio.create_task(manager.produce_records(part, _costly_batch(), acks=1,
                                                       api_version=12, now_ms=NOW))
    await asyncio.sleep(0)  # the task's first step: it waits for the validation thread
    assert callable(meanwhile)
    meanwhile()
    assert not task.done()
    return (await task).base_offset


def test_a_costly_batch_is_appended_where_the_log_ends_once_validated(tmp_path: Path) -> None:
    manager = replicas(tmp_path, with_records(MetadataImage(), *topic("t", T1, (ME,))))
    offsets: list[int] = []
    offsets.append(asyncio.run(_produced_while(
        manager, lambda: offsets.append(append(manager, [b"a", b"b"])))))
    assert offsets == [0, 2]
    part = manager.partition_for("t", 0)
    assert part.log_end_offset == 3
    assert [b.base_offset for b in iter_batches(part.log.read(2, 16 * MiB))] == [2]


def test_a_costly_batch_is_not_appended_by_a_broker_no_longer_leading(tmp_path: Path) -> None:
    image = with_records(MetadataImage(), *topic("t", T1, (ME, 2)))
    manager = replicas(tmp_path, image)
    with pytest.raises(PartitionError) as refused:
        asyncio.run(_produced_while(manager, lambda: manager.apply_image(with_records(
            image, PartitionChangeRecord(partition_id=0, topic_id=T1, leader=2)), 2_000)))
    assert (refused.value.error_code, refused.value.leader_id) == (
        ErrorCode.NOT_LEADER_OR_FOLLOWER, 2)
    assert manager.partition_for("t", 0, require_leader=False).log_end_offset == 0


def test_internal_topics_and_bad_batches_are_refused(tmp_path: Path) -> None:
    image = with_records(MetadataImage(), *topic("__consumer_offsets", T1, (ME,)),
                         *topic("t", uuid.UUID(int=8), (ME,)))
    manager = replicas(tmp_path, image)
    internal = manager.partition_for("__consumer_offsets", 0)
    with pytest.raises(PartitionError) as refused:
        manager.append_records(internal, client_batch([b"a"]), acks=1, api_version=12,
                               now_ms=1, client_id="app")
    assert refused.value.error_code == ErrorCode.INVALID_TOPIC_EXCEPTION
    with pytest.raises(ProduceValidationError) as invalid:
        manager.append_records(manager.partition_for("t", 0), b"", acks=1, api_version=12,
                               now_ms=1)
    assert invalid.value.error_code == ErrorCode.INVALID_RECORD


def test_a_clean_restart_keeps_offsets_high_watermark_and_producer_state(
        tmp_path: Path) -> None:
    image = with_records(MetadataImage(), *topic("t", T1, (ME, 2)))
    manager = replicas(tmp_path, image)
    append(manager, [b"a", b"b"], producer_id=9, epoch=0, sequence=0)
    manager.apply_image(with_records(image, PartitionChangeRecord(
        partition_id=0, topic_id=T1, isr=(ME,))), 2_000)
    manager.shutdown(broker_epoch=12)
    assert (tmp_path / CLEAN_SHUTDOWN_FILE).read_text() == '{"version":0,"brokerEpoch":12}'
    assert read_offset_checkpoint(tmp_path / RECOVERY_POINT_CHECKPOINT) == {TP: 2}
    assert read_offset_checkpoint(tmp_path / REPLICATION_OFFSET_CHECKPOINT) == {TP: 2}
    assert (tmp_path / "t-0" / "00000000000000000002.snapshot").exists()
    again = replicas(tmp_path, with_records(image))  # the HW starts from the checkpoint
    assert not (tmp_path / CLEAN_SHUTDOWN_FILE).exists()
    part = again.partition_for("t", 0)
    assert (part.log_end_offset, part.high_watermark) == (2, 2)
    assert append(again, [b"a", b"b"], producer_id=9, epoch=0, sequence=0) == 0  # a retry


def test_after_a_crash_producer_state_is_replayed_from_the_log(tmp_path: Path) -> None:
    manager = replicas(tmp_path, with_records(MetadataImage(), *topic("t", T1, (ME,))))
    append(manager, [b"a"], producer_id=9, epoch=0, sequence=0)
    append(manager, [b"b"], producer_id=9, epoch=0, sequence=1)
    manager.logs.checkpoint()  # no shutdown: no snapshot, no clean marker
    again = replicas(tmp_path, manager.image)
    assert append(again, [b"b"], producer_id=9, epoch=0, sequence=1) == 1  # its retry
    with pytest.raises(ProducerStateError):
        append(again, [b"c"], producer_id=9, epoch=0, sequence=5)


def test_a_deleted_topic_is_renamed_then_removed_after_the_delay(tmp_path: Path) -> None:
    image = with_records(MetadataImage(), *topic("t", T1, (ME,)))
    manager = replicas(tmp_path, image)
    events: list[bool] = []
    _watch(manager, lambda p: events.append(p.is_leader))
    manager.apply_image(with_records(image, RemoveTopicRecord(topic_id=T1)), 10_000)
    assert events == [True, False]
    (renamed,) = tmp_path.glob("t-0.*-delete")
    assert not (tmp_path / "t-0").exists()
    manager.checkpoint(10_000 + 59_999)
    assert renamed.exists()
    manager.checkpoint(10_000 + 60_000)  # file.delete.delay.ms
    assert not renamed.exists()


def test_deleting_a_topic_walks_only_its_own_partitions(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each deleted partition's directory is renamed and the due ones removed; the other
    logs' deleted segments wait for the periodic task (walking every log of the broker for
    each deleted partition made deleting a large topic quadratic)."""
    kept = uuid.UUID(int=9)
    image = with_records(MetadataImage(), *topic("t", T1, *[(ME,)] * 20),
                         *topic("kept", kept, *[(ME,)] * 20))
    manager = replicas(tmp_path, image)
    walked: list[Path] = []
    monkeypatch.setattr(PartitionLog, "remove_deleted_segments",
                        lambda plog, now_ms: walked.append(plog.directory))
    manager.apply_image(with_records(image, RemoveTopicRecord(topic_id=T1)), 10_000)
    assert walked == [] and len(list(tmp_path.glob("t-*.*-delete"))) == 20
    manager.checkpoint(10_000)
    assert sorted(walked) == sorted(tmp_path / f"kept-{i}" for i in range(20))


def test_a_recreated_topic_starts_an_empty_log(tmp_path: Path) -> None:
    image = with_records(MetadataImage(), *topic("t", T1, (ME,)))
    manager = replicas(tmp_path, image)
    append(manager, [b"a"])
    manager.shutdown()
    other = uuid.UUID(int=8)
    recreated = with_records(image, RemoveTopicRecord(topic_id=T1), *topic("t", other, (ME,)))
    again = replicas(tmp_path, recreated)  # deleted while this broker was down
    assert again.partition_for("t", 0).log_end_offset == 0
    assert read_partition_metadata(tmp_path / "t-0" / "partition.metadata") == other


def test_retention_deletes_old_segments_below_the_high_watermark(tmp_path: Path) -> None:
    image = with_records(MetadataImage(), *topic("t", T1, (ME,)),
                         ConfigRecord(resource_type=2, resource_name="t",
                                      name="internal.segment.bytes", value="150"),
                         ConfigRecord(resource_type=2, resource_name="t",
                                      name="retention.bytes", value="250"))
    manager = replicas(tmp_path, image)
    for index in range(6):
        append(manager, [b"x" * 40], producer_id=9, epoch=0, sequence=index)
    part = manager.partition_for("t", 0)
    assert [s.size for s in part.log.segment_stats()] == [109] * 6  # a batch per segment
    assert len(list((tmp_path / "t-0").glob("*.snapshot"))) == 5  # one per roll
    assert manager.run_retention(5_000) == 3  # 654 bytes: 3 go while 250 or more remain
    assert part.log_start_offset == 3
    assert sorted(p.name for p in (tmp_path / "t-0").glob("*.snapshot")) == [
        f"{offset:020d}.snapshot" for offset in (3, 4, 5)]
    manager.checkpoint(5_000)
    assert read_offset_checkpoint(tmp_path / LOG_START_OFFSET_CHECKPOINT) == {}


def test_the_periodic_checkpoint_does_its_file_work_off_the_loop(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The checkpoint of a new topic's 1,000 leader-epoch files held the broker's loop 0.7 s
    (seconds on a busy disk); off the loop, only the worker thread fsyncs, and the files and
    recovery points come out as the on-loop checkpoint's."""
    image = with_records(MetadataImage(), *topic("t", T1, *[(ME,)] * 3))
    manager = replicas(tmp_path, image)
    append(manager, [b"a", b"b"])
    loop_thread = threading.get_ident()
    fsyncs: list[bool] = []
    real_fsync = os.fsync

    def recording_fsync(fd: int) -> None:
        fsyncs.append(threading.get_ident() == loop_thread)
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", recording_fsync)
    asyncio.run(manager.checkpoint_off_loop(2_000, asyncio.to_thread))
    assert fsyncs and not any(fsyncs), "fsync on the loop's thread"
    assert manager.partition_for("t", 0).log.recovery_point == 2
    assert read_offset_checkpoint(tmp_path / RECOVERY_POINT_CHECKPOINT) == {
        TP: 2, TopicPartition("t", 1): 0, TopicPartition("t", 2): 0}
    assert read_offset_checkpoint(tmp_path / REPLICATION_OFFSET_CHECKPOINT) == {
        TP: 2, TopicPartition("t", 1): 0, TopicPartition("t", 2): 0}
    for partition in range(3):  # each leader's epoch, from its becoming leader
        assert (tmp_path / f"t-{partition}" / "leader-epoch-checkpoint").read_text() == \
            "0\n1\n0 0\n"
