"""Snapshots on the production log: the same contract as MemoryLog's, on real files."""

from __future__ import annotations

from pathlib import Path

import pytest

from pykraft.errors import CorruptRecordError, StorageError
from pykraft.raft.log import OffsetAndEpoch
from pykraft.records.batch import encode_batch
from pykraft.records.snapshot import snapshot_batches
from pykraft.runtime.disk_log import DiskRaftLog


def _log(path: Path) -> DiskRaftLog:
    return DiskRaftLog.open(path / "__cluster_metadata-0", segment_bytes=400)


def _fill(log: DiskRaftLog, count: int, epoch: int = 1) -> None:
    for _ in range(count):
        offset = log.log_end_offset
        log.append(encode_batch(offset, [(None, b"v%d" % offset)], partition_leader_epoch=epoch,
                                timestamp=1))


def _snapshot_bytes(epoch: int, timestamp: int = 77) -> bytes:
    return b"".join(snapshot_batches(epoch=epoch, last_contained_timestamp=timestamp,
                                     batches=[[b"state"]], clock=lambda: 5))


def _freeze(log: DiskRaftLog, snapshot_id: OffsetAndEpoch, data: bytes, chunk: int = 7) -> None:
    sink = log.create_snapshot(snapshot_id)
    for start in range(0, len(data), chunk):  # FetchSnapshot-like unaligned slices
        sink.write(data[start : start + chunk])
    sink.freeze()


def test_snapshot_write_read_and_log_start(tmp_path: Path) -> None:
    log = _log(tmp_path)
    _fill(log, 20)
    snapshot_id = OffsetAndEpoch(12, 1)
    data = _snapshot_bytes(1)
    _freeze(log, snapshot_id, data)
    (info,) = log.snapshots()
    assert (info.snapshot_id, info.size, info.timestamp_ms) == (snapshot_id, len(data), 77)
    assert log.read_snapshot(snapshot_id, 3, 10) == data[3:13]
    log.delete_before_snapshot(snapshot_id)
    assert log.log_start_offset == 12
    assert log.end_offset_for_epoch(0) == OffsetAndEpoch(12, 1)
    log.close()
    reopened = _log(tmp_path)  # the log start follows the snapshot across a restart
    assert reopened.log_start_offset == 12
    assert [s.snapshot_id for s in reopened.snapshots()] == [snapshot_id]
    assert reopened.log_end_offset == 20


def test_truncate_to_snapshot_restarts_the_log(tmp_path: Path) -> None:
    log = _log(tmp_path)
    _fill(log, 5)
    snapshot_id = OffsetAndEpoch(40, 3)
    _freeze(log, snapshot_id, _snapshot_bytes(3))
    log.truncate_to_snapshot(snapshot_id)
    assert (log.log_start_offset, log.log_end_offset, log.flushed_offset) == (40, 40, 40)
    assert log.last_fetched_epoch == 3
    _fill(log, 2, epoch=4)
    assert log.log_end_offset == 42


def test_snapshot_beyond_the_log_truncates_it_on_open(tmp_path: Path) -> None:
    log = _log(tmp_path)
    _fill(log, 3)
    _freeze(log, OffsetAndEpoch(50, 2), _snapshot_bytes(2))
    log.close()
    reopened = _log(tmp_path)
    assert (reopened.log_start_offset, reopened.log_end_offset) == (50, 50)
    assert reopened.last_fetched_epoch == 2


def test_bad_snapshots_are_refused_and_leave_nothing(tmp_path: Path) -> None:
    log = _log(tmp_path)
    _fill(log, 3)
    with pytest.raises(CorruptRecordError):
        _freeze(log, OffsetAndEpoch(2, 1), _snapshot_bytes(1)[:-3])
    plain = encode_batch(0, [(None, b"x")], partition_leader_epoch=1, timestamp=1)
    with pytest.raises(CorruptRecordError, match="SnapshotHeader"):
        _freeze(log, OffsetAndEpoch(2, 1), plain)
    assert log.snapshots() == []
    assert not list((tmp_path / "__cluster_metadata-0").glob("*.part"))
    _freeze(log, OffsetAndEpoch(2, 1), _snapshot_bytes(1))
    with pytest.raises(StorageError):
        log.create_snapshot(OffsetAndEpoch(2, 1))
    with pytest.raises(StorageError):
        log.read_snapshot(OffsetAndEpoch(9, 9), 0, 10)
