"""PartitionLog: appends and their validation, rolls, reads, truncation, log start offset
and segment deletion, partition directory names and deletion."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from pykraft.errors import CorruptRecordError, OffsetOutOfRangeError, StorageError
from pykraft.ids import TopicPartition
from pykraft.records.batch import encode_batch, iter_batches
from pykraft.storage.file_error import StateFileError
from pykraft.storage.log_config import LogConfig
from pykraft.storage.partition_log import (
    LogFlush,
    PartitionLog,
    RecordBatchTooLargeError,
    parse_partition_dir_name,
    remove_deleted_dir,
    rename_for_delete,
    run_log_flush,
)


def _batch(offset: int, timestamp: int = 1000, records: int = 1, epoch: int = 0) -> bytes:
    return encode_batch(offset, [(None, b"value-%d" % i) for i in range(records)],
                        partition_leader_epoch=epoch, timestamp=timestamp)


def _bases(log: PartitionLog) -> list[int]:
    return [segment.base_offset for segment in log.segment_stats()]


def test_appends_roll_on_segment_bytes(tmp_path: Path) -> None:
    size = len(_batch(0))
    with PartitionLog.open(tmp_path / "t-0", LogConfig(segment_bytes=3 * size),
                           now_ms=0) as log:
        for offset in range(7):
            log.append(_batch(offset), now_ms=0)
        assert _bases(log) == [0, 3, 6]
        assert [s.size for s in log.segment_stats()] == [3 * size, 3 * size, size]


def test_segment_ms_counts_from_the_first_batch_timestamp(tmp_path: Path) -> None:
    with PartitionLog.open(tmp_path / "t-0", LogConfig(segment_ms=100), now_ms=0) as log:
        log.append(_batch(0, timestamp=1000), now_ms=0)
        log.append(_batch(1, timestamp=1100), now_ms=10**9)  # waited exactly segment.ms
        assert _bases(log) == [0]
        log.append(_batch(2, timestamp=1101), now_ms=0)
        assert _bases(log) == [0, 2]


def test_segment_ms_counts_from_creation_without_timestamps(tmp_path: Path) -> None:
    with PartitionLog.open(tmp_path / "t-0", LogConfig(segment_ms=100), now_ms=5000) as log:
        log.append(_batch(0, timestamp=-1), now_ms=5000)
        log.append(_batch(1, timestamp=-1), now_ms=5100)
        assert _bases(log) == [0]
        log.append(_batch(2, timestamp=-1), now_ms=5101)
        assert _bases(log) == [0, 2]


def test_a_full_index_rolls_the_segment(tmp_path: Path) -> None:
    config = LogConfig(index_interval_bytes=0, segment_index_bytes=36)  # 3 time entries
    with PartitionLog.open(tmp_path / "t-0", config, now_ms=0) as log:
        for offset in range(6):
            log.append(_batch(offset, timestamp=offset), now_ms=0)
        # time index full at 2 entries (one slot kept for the entry forced at roll)
        assert _bases(log) == [0, 3]


def test_an_append_is_validated_before_anything_is_written(tmp_path: Path) -> None:
    with PartitionLog.open(tmp_path / "t-0", LogConfig(segment_bytes=1000), now_ms=0) as log:
        log.append(_batch(0), now_ms=0)
        with pytest.raises(CorruptRecordError, match="offset 5 does not continue the log at 2"):
            log.append(_batch(1) + _batch(5), now_ms=0)
        corrupt = bytearray(_batch(1))
        corrupt[-1] ^= 1
        with pytest.raises(CorruptRecordError, match="CRC mismatch"):
            log.append(bytes(corrupt), now_ms=0)
        with pytest.raises(RecordBatchTooLargeError, match="exceeds the maximum configured "
                                                           "segment size of 1000"):
            log.append(_batch(1, records=100), now_ms=0)
        assert log.log_end_offset == 1 and log.size == len(_batch(0))
        info = log.append(_batch(1, timestamp=7, records=3) + _batch(4, timestamp=5), now_ms=0)
        assert (info.first_offset, info.last_offset) == (1, 4)
        assert (info.max_timestamp, info.offset_of_max_timestamp) == (7, 3)
        assert log.log_end_offset == 5


def test_reads_return_whole_batches_of_one_segment(tmp_path: Path) -> None:
    size = len(_batch(0, records=2))
    with PartitionLog.open(tmp_path / "t-0", LogConfig(segment_bytes=3 * size),
                           now_ms=0) as log:
        for base in range(0, 12, 2):
            log.append(_batch(base, records=2), now_ms=0)
        assert _bases(log) == [0, 6]
        data = log.read(3, 10 * size)  # from the batch holding 3, to the segment's end
        assert [b.base_offset for b in iter_batches(data)] == [2, 4]
        assert log.read(6, 1) == _batch(6, records=2)  # the first batch even if too large
        # without min_one_batch the slice ends mid-batch, as Kafka's (clients drop the rest)
        assert log.read(6, 1, min_one_batch=False) == _batch(6, records=2)[:1]
        assert log.read(0, size + 5) == _batch(0, records=2) + _batch(2, records=2)[:5]
        assert [b.base_offset for b in iter_batches(log.read(0, 10 * size, max_offset=4))] == [
            0, 2]
        assert log.read(4, 10 * size, max_offset=4) == b""
        assert log.read(12, 100) == b""
        with pytest.raises(OffsetOutOfRangeError, match="offset 13"):
            log.read(13, 100)


def test_truncate_to_drops_batches_and_segments_from_the_offset(tmp_path: Path) -> None:
    size = len(_batch(0))
    with PartitionLog.open(tmp_path / "t-0", LogConfig(segment_bytes=3 * size),
                           now_ms=0) as log:
        for offset in range(8):
            log.append(_batch(offset, epoch=offset // 2), now_ms=0)
        assert log.truncate_to(4, now_ms=0) == 4
        assert _bases(log) == [0, 3] and log.log_end_offset == 4
        assert log.leader_epochs.entries == [(0, 0), (1, 2)]
        assert not (tmp_path / "t-0" / "00000000000000000006.log").exists()
        log.append(_batch(4, epoch=5), now_ms=0)  # the truncated segment is active again
        assert log.read(4, 1) == _batch(4, epoch=5)
        log.truncate_fully_and_start_at(100, now_ms=0)
        assert _bases(log) == [100]
        assert (log.log_start_offset, log.log_end_offset) == (100, 100)
        assert log.leader_epochs.entries == []


def test_truncating_at_the_log_end_drops_an_epoch_started_there(tmp_path: Path) -> None:
    """A broker that led briefly assigned its epoch at its log end and wrote nothing; as a
    follower told to truncate to its log end it must forget that epoch (Kafka's truncateTo),
    or its next fetch names an epoch the leader never had, and the leader answers with the
    same diverging epoch forever (found by `pykraft chaos run --seed 21 --faults 100`)."""
    with PartitionLog.open(tmp_path / "t-0", LogConfig(), now_ms=0) as log:
        log.append(_batch(0, epoch=1), now_ms=0)
        log.assign_epoch_start_offset(3, 1)
        assert log.truncate_to(1, now_ms=0) == 1
        assert log.leader_epochs.entries == [(1, 0)]
        log.flush()
    with PartitionLog.open(tmp_path / "t-0", LogConfig(), now_ms=0) as log:
        assert log.leader_epochs.entries == [(1, 0)]


def test_delete_records_moves_the_log_start_and_retention_deletes_below_it(
        tmp_path: Path) -> None:
    size = len(_batch(0))
    with PartitionLog.open(tmp_path / "t-0", LogConfig(segment_bytes=2 * size),
                           now_ms=0) as log:
        for offset in range(6):
            log.append(_batch(offset), now_ms=0)
        with pytest.raises(OffsetOutOfRangeError, match="larger than the high watermark 4"):
            log.increment_log_start_offset(5, high_watermark=4)
        assert log.increment_log_start_offset(3, high_watermark=4)
        assert not log.increment_log_start_offset(2, high_watermark=4)
        with pytest.raises(OffsetOutOfRangeError):
            log.read(2, 100)
        with pytest.raises(StorageError, match="oldest"):
            log.delete_segments([2], now_ms=0)
        assert log.delete_segments([0], now_ms=0) == 1
        assert _bases(log) == [2, 4] and log.log_start_offset == 3
        assert log.delete_segments([2, 4], now_ms=0) == 2  # all: an empty one rolled first
        assert _bases(log) == [6]
        assert (log.log_start_offset, log.log_end_offset) == (6, 6)
        log.append(_batch(6), now_ms=0)


def test_partition_directory_names(tmp_path: Path) -> None:
    assert parse_partition_dir_name("my-topic-12") == TopicPartition("my-topic", 12)
    unique = uuid.UUID(int=7)
    assert parse_partition_dir_name(f"a-b-0.{unique.hex}-delete") == TopicPartition("a-b", 0)
    with pytest.raises(StateFileError):
        parse_partition_dir_name("no_partition")
    directory = tmp_path / "my-topic-3"
    with PartitionLog.open(directory, LogConfig(), now_ms=0) as log:
        log.append(_batch(0), now_ms=0)
    renamed = rename_for_delete(directory, unique)
    assert renamed.name == f"my-topic-3.{unique.hex}-delete"
    assert not directory.exists() and (renamed / "00000000000000000000.log").exists()
    remove_deleted_dir(renamed)
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(StorageError, match="not a partition renamed"):
        remove_deleted_dir(tmp_path)


def test_a_flush_planned_before_a_truncation_leaves_the_recovery_point(tmp_path: Path) -> None:
    """The fsyncs of a flush run on another thread; a truncation meanwhile may rewrite what
    it covered, so the recovery point stays where the truncation put it."""
    with PartitionLog.open(tmp_path / "t-0", LogConfig(), now_ms=0) as log:
        for offset in range(4):
            log.append(_batch(offset), now_ms=0)
        job = log.plan_flush()
        run_log_flush(job)
        log.truncate_to(2, now_ms=0)
        log.append(_batch(2), now_ms=0)
        log.append(_batch(3), now_ms=0)
        assert log.flushed(job) == 0
        assert log.flushed(run_flush_of(log)) == 4


def run_flush_of(log: PartitionLog) -> LogFlush:
    job = log.plan_flush()
    run_log_flush(job)
    return job


def test_a_flush_writes_no_epochs_into_a_directory_deleted_or_recreated_meanwhile(
        tmp_path: Path) -> None:
    with PartitionLog.open(tmp_path / "t-0", LogConfig(), now_ms=0) as log:
        log.assign_epoch_start_offset(3, 0)
        job = log.plan_flush()
    renamed = rename_for_delete(tmp_path / "t-0")
    run_log_flush(job)  # renamed for deletion: nothing to write, no error
    assert not (renamed / "leader-epoch-checkpoint").exists()
    with PartitionLog.open(tmp_path / "t-0", LogConfig(), now_ms=0) as recreated:
        run_log_flush(job)  # the topic re-created at the same path: not the same directory
        assert not (tmp_path / "t-0" / "leader-epoch-checkpoint").exists()
        assert recreated.leader_epochs.entries == []


def test_a_flush_skips_the_files_of_segments_deleted_meanwhile(tmp_path: Path) -> None:
    size = len(_batch(0))
    with PartitionLog.open(tmp_path / "t-0", LogConfig(segment_bytes=size), now_ms=0) as log:
        for offset in range(3):
            log.append(_batch(offset), now_ms=0)
        job = log.plan_flush()
        log.increment_log_start_offset(2, high_watermark=3)
        log.delete_segments([0, 1], now_ms=0)
        run_log_flush(job)
        assert log.flushed(job) == 3
