"""A compacted topic on a broker: the log cleaner compacts it (the latest value per key
stays at its offset), the retention task does not, and a record without a key is refused
at produce."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest
from replica_fixtures import client_batch, topic, with_records

from pykraft.broker.broker_server import cleaner_enabled
from pykraft.broker.replica_manager import ReplicaManager
from pykraft.broker.topic_settings import topic_settings
from pykraft.ids import TopicPartition
from pykraft.image.image import MetadataImage
from pykraft.log.batch_records import batch_records
from pykraft.log.log_manager import CLEANER_OFFSET_CHECKPOINT, LogManager
from pykraft.log.validator import ProduceValidationError
from pykraft.protocol.errors import ErrorCode
from pykraft.records.batch import iter_batches
from pykraft.records.metadata import ConfigRecord, RemoveTopicRecord
from pykraft.runtime.codec_thread import CLEANER
from pykraft.storage.log_config import LogConfig
from pykraft.storage.offset_checkpoints import read_offset_checkpoint

T1 = uuid.UUID(int=9)
T = TypeVar("T")


def _compacted(directory: Path) -> ReplicaManager:
    image = with_records(MetadataImage(), *topic("t", T1, (1,)), *(
        ConfigRecord(resource_type=2, resource_name="t", name=name, value=value)
        for name, value in (("cleanup.policy", "compact"), ("internal.segment.bytes", "200"))))
    logs = LogManager([directory], LogConfig())
    logs.startup(1_000)
    manager = ReplicaManager(1, logs, {})
    manager.apply_image(image, 1_000)
    return manager


def _filled(directory: Path) -> ReplicaManager:
    """A compacted t-0 of 8 records over 2 keys, several segments of them cleanable."""
    manager = _compacted(directory)
    part = manager.partition_for("t", 0)
    for index in range(8):
        manager.append_records(part, client_batch([b"v%d" % index], key=b"k%d" % (index % 2)),
                               acks=-1, api_version=12, now_ms=2_000)
    return manager


def test_the_cleaner_compacts_a_compacted_topic(tmp_path: Path) -> None:
    manager = _filled(tmp_path)
    part = manager.partition_for("t", 0)
    assert len(part.log.segment_stats()) > 2
    assert manager.run_retention(3_000) == 0
    assert asyncio.run(manager.run_cleaner(3_000)) == 1
    data = b""
    offset = part.log.log_start_offset
    while data_part := part.log.read(offset, 1 << 20):
        batches = list(iter_batches(data_part))
        data += data_part
        offset = batches[-1].header.next_offset
    seen = [(r.offset, r.key, r.value) for b in iter_batches(data) for r in batch_records(b)]
    # the active segment is never cleaned: what it holds stays, older duplicates go
    active = part.log.active.base_offset
    assert active >= 4
    assert [entry for entry in seen if entry[0] < active] == [
        (offset, b"k%d" % (offset % 2), b"v%d" % offset) for offset in (active - 2, active - 1)]
    assert [entry[0] for entry in seen if entry[0] >= active] == list(range(active, 8))
    assert part.log_end_offset == 8
    # the first dirty offset is checkpointed: nothing is dirty again, even after a restart
    checkpoint = tmp_path / CLEANER_OFFSET_CHECKPOINT
    assert read_offset_checkpoint(checkpoint) == {TopicPartition("t", 0): active}
    assert not asyncio.run(manager.logs.compact(TopicPartition("t", 0), 8, 3_000, {}))
    manager.shutdown(now_ms=3_000)
    restarted = LogManager([tmp_path], LogConfig(segment_bytes=200, compact=True))
    restarted.startup(4_000)
    assert not asyncio.run(restarted.compact(TopicPartition("t", 0), 8, 4_000, {}))
    checkpoint.unlink()
    fresh = LogManager([tmp_path], LogConfig(segment_bytes=200, compact=True))
    fresh.startup(4_000)
    assert asyncio.run(fresh.compact(TopicPartition("t", 0), 8, 4_000, {}))


def test_records_appended_while_the_cleaner_walks_the_log_are_kept(tmp_path: Path) -> None:
    manager = _filled(tmp_path)
    part = manager.partition_for("t", 0)
    appended: list[int] = []

    async def append_meanwhile(work: Callable[[], T]) -> T:
        if not appended:  # the loop serves produces while the cleaner's thread works
            appended.append(manager.append_records(
                part, client_batch([b"late"], key=b"k0"), acks=-1, api_version=12,
                now_ms=2_500).base_offset)
        return await CLEANER.run(work)

    assert asyncio.run(manager.run_cleaner(3_000, append_meanwhile)) == 1
    assert appended == [8] and part.log_end_offset == 9
    last = list(iter_batches(part.log.read(8, 1 << 20)))
    assert [(r.key, r.value) for r in batch_records(last[0])] == [(b"k0", b"late")]


def test_a_topic_deleted_while_the_cleaner_walks_its_log_is_left_alone(
        tmp_path: Path) -> None:
    manager = _filled(tmp_path)

    async def delete_meanwhile(work: Callable[[], T]) -> T:
        manager.apply_image(with_records(manager.image, RemoveTopicRecord(topic_id=T1)), 2_500)
        return await CLEANER.run(work)

    assert asyncio.run(manager.run_cleaner(3_000, delete_meanwhile)) == 0
    assert not (tmp_path / CLEANER_OFFSET_CHECKPOINT).exists()


def test_a_record_without_key_is_refused(tmp_path: Path) -> None:
    manager = _compacted(tmp_path)
    part = manager.partition_for("t", 0)
    with pytest.raises(ProduceValidationError) as refused:
        manager.append_records(part, client_batch([b"v"], key=None), acks=-1, api_version=12,
                               now_ms=2_000)
    assert refused.value.error_code == ErrorCode.INVALID_RECORD
    assert "Compacted topic cannot accept message without key" in str(refused.value)


def test_compaction_settings_follow_topic_then_broker_keys() -> None:
    settings = topic_settings({"cleanup.policy": "compact,delete",
                               "min.cleanable.dirty.ratio": "0.1"},
                              {"log.cleaner.delete.retention.ms": "5000",
                               "log.cleaner.min.compaction.lag.ms": "7"})
    log = settings.log
    assert (log.compact, log.delete, log.min_cleanable_dirty_ratio, log.delete_retention_ms,
            log.min_compaction_lag_ms, log.max_compaction_lag_ms) == (
        True, True, 0.1, 5000, 7, (1 << 63) - 1)
    assert settings.append.compacted
    plain = topic_settings({}, {}).log
    assert (plain.compact, plain.delete, plain.delete_retention_ms,
            plain.min_cleanable_dirty_ratio) == (False, True, 86_400_000, 0.5)


@pytest.mark.parametrize(("properties", "enabled"), [
    ({}, True), ({"log.cleaner.enable": "false"}, False), ({"log.cleaner.threads": "0"}, False),
    ({"log.cleaner.enable": "TRUE", "log.cleaner.threads": "2"}, True)])
def test_the_cleaner_runs_unless_kafka_would_start_none(properties: dict[str, str],
                                                        enabled: bool) -> None:
    assert cleaner_enabled(properties) is enabled
