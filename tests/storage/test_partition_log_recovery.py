"""Opening a partition log after a crash: indexes rebuilt from the recovery point, a torn
tail cut back to the last complete valid batch, later segments dropped, as Kafka's loader."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from pykraft.records.batch import encode_batch, iter_batches
from pykraft.storage.leader_epoch import LEADER_EPOCH_CHECKPOINT, read_epoch_checkpoint
from pykraft.storage.log_config import LogConfig
from pykraft.storage.partition_log import PartitionLog

_CONFIG = LogConfig(segment_bytes=1000, index_interval_bytes=60, segment_index_bytes=120)
_FIRST_LOG = "00000000000000000000.log"


def _write(directory: Path, batches: int, *, config: LogConfig = _CONFIG) -> list[bytes]:
    """Append ``batches`` one-record batches (epoch = offset // 4), flush and close."""
    written = []
    with PartitionLog.open(directory, config, now_ms=0) as log:
        for offset in range(batches):
            batch = encode_batch(offset, [(None, b"r" * (offset % 7))],
                                 partition_leader_epoch=offset // 4, timestamp=100 + offset)
            log.append(batch, now_ms=0)
            written.append(batch)
        log.flush()
    return written


def _all_data(log: PartitionLog) -> bytes:
    chunks, offset = [], log.log_start_offset
    while offset < log.log_end_offset:
        data = log.read(offset, 1 << 20)
        chunks.append(data)
        offset = list(iter_batches(data))[-1].last_offset + 1
    return b"".join(chunks)


def test_recovery_from_every_truncation_point_keeps_exactly_the_complete_batches(
        tmp_path: Path) -> None:
    source = tmp_path / "src-0"
    written = _write(source, 8, config=LogConfig(index_interval_bytes=60))
    whole = b"".join(written)
    ends = [sum(map(len, written[:n])) for n in range(len(written) + 1)]
    for cut in range(len(whole) + 1):
        directory = tmp_path / f"cut{cut}-0"
        shutil.copytree(source, directory)
        os.truncate(directory / _FIRST_LOG, cut)
        complete = max(n for n, end in enumerate(ends) if end <= cut)
        with PartitionLog.open(directory, LogConfig(index_interval_bytes=60), now_ms=0,
                               recovery_point=0) as log:
            assert log.log_end_offset == complete, cut
            assert (directory / _FIRST_LOG).stat().st_size == ends[complete]
            assert _all_data(log) == whole[: ends[complete]]
            for offset in range(complete):  # every offset is found through the rebuilt index
                assert log.read(offset, 1) == written[offset]
        shutil.rmtree(directory)


def test_a_corrupt_batch_truncates_its_segment_and_drops_the_later_ones(tmp_path: Path) -> None:
    directory = tmp_path / "t-0"
    written = _write(directory, 40)
    with PartitionLog.open(directory, _CONFIG, now_ms=0) as log:
        bases = [s.base_offset for s in log.segment_stats()]
    assert len(bases) >= 3
    second = directory / f"{bases[1]:020d}.log"
    data = bytearray(second.read_bytes())
    position = len(written[bases[1]]) + 30  # inside the segment's second batch
    data[position] ^= 0xFF
    second.write_bytes(bytes(data))
    with PartitionLog.open(directory, _CONFIG, now_ms=0, recovery_point=bases[1]) as log:
        assert log.log_end_offset == bases[1] + 1
        assert [s.base_offset for s in log.segment_stats()] == bases[:2]
        assert log.leader_epochs.latest_epoch == bases[1] // 4
    assert not (directory / f"{bases[2]:020d}.log").exists()
    assert not (directory / f"{bases[2]:020d}.index").exists()


def test_a_crash_leaves_preallocated_indexes_that_recovery_rebuilds(tmp_path: Path) -> None:
    directory = tmp_path / "t-0"
    _write(directory, 20)
    log = PartitionLog.open(directory, _CONFIG, now_ms=0)
    for offset in range(20, 26):
        log.append(encode_batch(offset, [(None, b"late")], partition_leader_epoch=9,
                                timestamp=500 + offset), now_ms=0)
    log.flush()
    crashed = tmp_path / "crashed-0"
    shutil.copytree(directory, crashed)  # the files as a power cut would leave them
    log.close()
    active = log.active.base_offset
    assert (crashed / f"{active:020d}.index").stat().st_size == 120  # untrimmed
    with PartitionLog.open(crashed, _CONFIG, now_ms=0, recovery_point=15) as recovered:
        assert recovered.log_end_offset == 26
        assert recovered.read(23, 1)[:8] == (23).to_bytes(8, "big")
        assert recovered.offset_for_timestamp(522) is not None
        assert recovered.offset_for_timestamp(522).offset == 22  # type: ignore[union-attr]
        assert recovered.leader_epochs.entries[-1] == (9, 20)


def test_a_clean_open_keeps_the_indexes_and_a_corrupt_index_is_rebuilt(tmp_path: Path) -> None:
    directory = tmp_path / "t-0"
    _write(directory, 12)
    index = directory / "00000000000000000000.index"
    kept = index.read_bytes()
    assert kept
    with PartitionLog.open(directory, _CONFIG, now_ms=0, recovery_point=12,
                           clean_shutdown=True) as log:
        assert log.log_end_offset == 12
    assert index.read_bytes() == kept
    # a last entry below the base offset fails Kafka's sanity check: rebuilt at open
    index.write_bytes(kept[:-8] + (-1).to_bytes(4, "big", signed=True) + kept[-4:])
    with PartitionLog.open(directory, _CONFIG, now_ms=0, recovery_point=12,
                           clean_shutdown=True) as log:
        assert [log.read(offset, 1)[:8] for offset in range(12)] == [
            offset.to_bytes(8, "big") for offset in range(12)]
    assert index.read_bytes() == kept


def test_an_index_without_its_segment_and_leftover_files_are_removed(tmp_path: Path) -> None:
    directory = tmp_path / "t-0"
    _write(directory, 3)
    (directory / "00000000000000000099.index").write_bytes(b"\x00" * 8)
    (directory / "00000000000000000000.log.deleted").write_bytes(b"x")
    with PartitionLog.open(directory, _CONFIG, now_ms=0, clean_shutdown=True,
                           recovery_point=3) as log:
        assert log.log_end_offset == 3
    assert not (directory / "00000000000000000099.index").exists()
    assert not (directory / "00000000000000000000.log.deleted").exists()


def test_the_leader_epoch_checkpoint_is_rebuilt_and_written_on_flush(tmp_path: Path) -> None:
    directory = tmp_path / "t-0"
    _write(directory, 10)
    checkpoint = directory / LEADER_EPOCH_CHECKPOINT
    assert read_epoch_checkpoint(checkpoint) == [(0, 0), (1, 4), (2, 8)]
    checkpoint.unlink()
    with PartitionLog.open(directory, _CONFIG, now_ms=0, recovery_point=0) as log:
        log.flush()
    assert read_epoch_checkpoint(checkpoint) == [(0, 0), (1, 4), (2, 8)]


_ONE_SEGMENT = LogConfig(index_interval_bytes=60)
_FLUSHED, _UNFLUSHED = 30, 10


def _crashed_one_segment(tmp_path: Path) -> tuple[Path, list[bytes]]:
    """One segment of 40 one-record batches, the first 30 flushed (the recovery point) and
    the process gone before closing: its indexes untrimmed, as kill -9 leaves them."""
    directory = tmp_path / "live-0"
    written = _write(directory, _FLUSHED, config=_ONE_SEGMENT)
    log = PartitionLog.open(directory, _ONE_SEGMENT, now_ms=0, recovery_point=_FLUSHED,
                            clean_shutdown=True)
    for offset in range(_FLUSHED, _FLUSHED + _UNFLUSHED):
        batch = encode_batch(offset, [(None, b"late" * (offset % 5))],
                             partition_leader_epoch=offset // 4, timestamp=100 + offset)
        log.append(batch, now_ms=0)
        written.append(batch)
    crashed = tmp_path / "crashed-0"
    shutil.copytree(directory, crashed)
    log.close()
    return crashed, written


def _damage_batch(directory: Path, written: list[bytes], number: int) -> None:
    """Flip a byte inside batch ``number``'s records (the CRC then fails)."""
    data = bytearray((directory / _FIRST_LOG).read_bytes())
    data[sum(map(len, written[:number])) + len(written[number]) - 1] ^= 0xFF
    (directory / _FIRST_LOG).write_bytes(bytes(data))


def test_recovery_resumes_below_the_recovery_point_inside_its_segment(tmp_path: Path) -> None:
    """Beyond Kafka (issue 29): the segment holding the recovery point is rescanned only
    from its last indexed batch below it, so damage further back (which the recovery point
    says was flushed) is not even read, while a full rescan would cut the log there."""
    crashed, written = _crashed_one_segment(tmp_path)
    _damage_batch(crashed, written, 3)
    full = tmp_path / "full-0"
    shutil.copytree(crashed, full)
    with PartitionLog.open(crashed, _ONE_SEGMENT, now_ms=0, recovery_point=_FLUSHED) as log:
        assert log.log_end_offset == _FLUSHED + _UNFLUSHED
        assert [log.read(offset, 1) for offset in range(4, 40)] == written[4:]
    with PartitionLog.open(full, _ONE_SEGMENT, now_ms=0, recovery_point=0) as log:
        assert log.log_end_offset == 3


def test_a_resumed_recovery_rebuilds_what_a_full_rescan_does(tmp_path: Path) -> None:
    """Indexes, largest timestamp and leader epochs after resuming equal a full rescan's."""
    crashed, written = _crashed_one_segment(tmp_path)
    full = tmp_path / "full-0"
    shutil.copytree(crashed, full)
    opened = [PartitionLog.open(directory, _ONE_SEGMENT, now_ms=0, recovery_point=point)
              for directory, point in ((crashed, _FLUSHED), (full, 0))]
    try:
        resumed, rescanned = opened
        for log in opened:
            assert [log.read(offset, 1) for offset in range(40)] == written
        assert resumed.segment_stats() == rescanned.segment_stats()
        assert resumed.leader_epochs.entries == rescanned.leader_epochs.entries
        assert [resumed.offset_for_timestamp(ts) for ts in range(95, 145)] == [
            rescanned.offset_for_timestamp(ts) for ts in range(95, 145)]
    finally:
        for log in opened:
            log.close()
    for suffix in (".index", ".timeindex"):
        name = _FIRST_LOG.replace(".log", suffix)
        assert (crashed / name).read_bytes() == (full / name).read_bytes()


def test_damage_after_the_recovery_point_is_still_cut_when_resuming(tmp_path: Path) -> None:
    crashed, written = _crashed_one_segment(tmp_path)
    _damage_batch(crashed, written, _FLUSHED + 2)
    with PartitionLog.open(crashed, _ONE_SEGMENT, now_ms=0, recovery_point=_FLUSHED) as log:
        assert log.log_end_offset == _FLUSHED + 2
        assert log.leader_epochs.latest_epoch == (_FLUSHED + 1) // 4
    assert (crashed / _FIRST_LOG).stat().st_size == sum(map(len, written[:_FLUSHED + 2]))


def _index_points_inside_a_batch(directory: Path) -> None:
    index = directory / _FIRST_LOG.replace(".log", ".index")
    data = bytearray(index.read_bytes())
    position = int.from_bytes(data[4:8], "big")
    data[4:8] = (position + 1).to_bytes(4, "big")  # its first entry, mid-batch
    data[8:] = bytes(len(data) - 8)  # and no later entries
    index.write_bytes(bytes(data))


def _time_index_zeroed(directory: Path) -> None:
    """As a power cut may leave a new preallocated file: zeros, read as one entry (0, base)."""
    index = directory / _FIRST_LOG.replace(".log", ".timeindex")
    index.write_bytes(bytes(len(index.read_bytes())))


def _remove(suffix: str) -> Callable[[Path], None]:
    return lambda directory: (directory / _FIRST_LOG.replace(".log", suffix)).unlink()


@pytest.mark.parametrize("untrusted", [_index_points_inside_a_batch, _remove(".index"),
                                       _remove(".timeindex"), _time_index_zeroed],
                         ids=["index-mid-batch", "no-index", "no-time-index",
                              "time-index-zeroed"])
def test_indexes_that_cannot_be_trusted_mean_a_full_rescan(
        tmp_path: Path, untrusted: Callable[[Path], None]) -> None:
    """The shortcut is taken only when the indexes describe the file: otherwise the whole
    segment is rescanned, so damage before the recovery point is found and cut."""
    crashed, written = _crashed_one_segment(tmp_path)
    _damage_batch(crashed, written, 3)
    untrusted(crashed)
    with PartitionLog.open(crashed, _ONE_SEGMENT, now_ms=0, recovery_point=_FLUSHED) as log:
        assert log.log_end_offset == 3
