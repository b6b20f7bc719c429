"""file.delete.delay.ms: a deleted segment's files are renamed ``*.deleted`` at once and
removed by the periodic task once the delay passed; a restart removes what was left."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from pykraft.ids import TopicPartition
from pykraft.log.log_manager import LogManager
from pykraft.records.batch import encode_batch
from pykraft.storage.log_config import LogConfig
from pykraft.storage.partition_log import PartitionLog

DELAY = LogConfig(segment_bytes=200, file_delete_delay_ms=1000)
SEGMENT_0 = ("00000000000000000000.index.deleted", "00000000000000000000.log.deleted",
             "00000000000000000000.timeindex.deleted")


def _batch(offset: int) -> bytes:
    return encode_batch(offset, [(None, b"v" * 60)], partition_leader_epoch=0, timestamp=1)


def _deleted(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.glob("*.deleted"))


def _two_segments(directory: Path, config: LogConfig) -> PartitionLog:
    partition_log = PartitionLog.open(directory, config, now_ms=0)
    partition_log.append(_batch(0), now_ms=0)
    partition_log.append(_batch(1), now_ms=0)  # rolls: the first segment is full
    return partition_log


def test_a_deleted_segment_waits_renamed_for_the_delay(tmp_path: Path) -> None:
    with _two_segments(tmp_path / "t-0", DELAY) as log:
        assert log.delete_segments([0], now_ms=5000) == 1
        assert _deleted(log.directory) == list(SEGMENT_0)
        assert not (log.directory / "00000000000000000000.log").exists()
        assert log.remove_deleted_segments(5999) == 0
        assert _deleted(log.directory) == list(SEGMENT_0)
        assert log.remove_deleted_segments(6000) == 1
        assert _deleted(log.directory) == []


def test_no_delay_removes_at_once(tmp_path: Path) -> None:
    config = LogConfig(segment_bytes=200, file_delete_delay_ms=0)
    with _two_segments(tmp_path / "t-0", config) as log:
        log.delete_segments([0], now_ms=0)
        assert _deleted(log.directory) == []


def test_truncation_can_reuse_a_base_offset_still_waiting(tmp_path: Path) -> None:
    with _two_segments(tmp_path / "t-0", DELAY) as log:
        log.truncate_fully_and_start_at(0, now_ms=0)
        assert (log.directory / "00000000000000000000.log").stat().st_size == 0
        assert len(_deleted(log.directory)) == 6
        log.remove_deleted_segments(1000)
        assert _deleted(log.directory) == []
        assert (log.directory / "00000000000000000000.log").exists()


def test_reopening_removes_the_leftovers(tmp_path: Path) -> None:
    with _two_segments(tmp_path / "t-0", DELAY) as log:
        log.delete_segments([0], now_ms=0)
    assert _deleted(tmp_path / "t-0") == list(SEGMENT_0)
    with PartitionLog.open(tmp_path / "t-0", DELAY, now_ms=0) as log:
        assert _deleted(log.directory) == []
        assert log.log_start_offset == 1


def test_the_log_manager_periodic_task_removes_due_segments(tmp_path: Path) -> None:
    logs = LogManager([tmp_path], DELAY)
    tp = TopicPartition("t", 0)
    partition_log = logs.get_or_create(tp, uuid.uuid4(), DELAY, now_ms=0)
    partition_log.append(_batch(0), now_ms=0)
    partition_log.append(_batch(1), now_ms=0)
    partition_log.delete_segments([0], now_ms=0)
    logs.remove_deleted(999)
    assert _deleted(partition_log.directory) == list(SEGMENT_0)
    logs.remove_deleted(1000)
    assert _deleted(partition_log.directory) == []
    logs.shutdown()


def test_a_negative_delay_is_refused() -> None:
    with pytest.raises(ValueError, match=r"file\.delete\.delay\.ms must be non-negative"):
        LogConfig(file_delete_delay_ms=-1)
