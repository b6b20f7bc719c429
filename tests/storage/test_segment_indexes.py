"""The ``.index``/``.timeindex`` files: Kafka's byte layout, preallocation and trimming, and
lookups that agree with a linear scan of the segment."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from pykraft.records.batch import encode_batch, iter_batches
from pykraft.storage.log_config import LogConfig
from pykraft.storage.offset_index import OffsetIndex
from pykraft.storage.partition_log import PartitionLog
from pykraft.storage.time_index import TimeIndex


def _batch(offset: int, timestamp: int, values: int = 1, size: int = 12) -> bytes:
    return encode_batch(offset, [(None, b"v" * size)] * values, partition_leader_epoch=0,
                        timestamp=timestamp)


def test_offset_index_entries_are_relative_offset_and_position_big_endian(
        tmp_path: Path) -> None:
    index = OffsetIndex(tmp_path / "00000000000000000100.index", 100, 100)
    assert (tmp_path / "00000000000000000100.index").stat().st_size == 96  # 12 whole entries
    index.append(105, 4096)
    index.append(300, 0x01020304)
    index.close()
    assert (tmp_path / "00000000000000000100.index").read_bytes() == bytes.fromhex(
        "00000005" "00001000" "000000c8" "01020304")


def test_time_index_entries_are_timestamp_and_relative_offset_big_endian(
        tmp_path: Path) -> None:
    index = TimeIndex(tmp_path / "00000000000000000100.timeindex", 100, 100)
    assert index.length == 96  # 8 entries of 12 bytes
    index.maybe_append(1_700_000_000_000, 101)
    index.maybe_append(1_700_000_000_000, 102)  # not greater: no entry, as Kafka
    index.maybe_append(1_700_000_000_001, 103)
    index.close()
    assert (tmp_path / "00000000000000000100.timeindex").read_bytes() == bytes.fromhex(
        "0000018bcfe56800" "00000001" "0000018bcfe56801" "00000003")


def test_segment_indexes_follow_kafkas_interval_rule_and_trim_on_close(tmp_path: Path) -> None:
    """Interval 100 and 80-byte batches: no entry for the first append, then one for the
    batch appended once more than 100 bytes went by since the last entry."""
    directory = tmp_path / "t-0"
    config = LogConfig(index_interval_bytes=100, segment_index_bytes=1200)
    log = PartitionLog.open(directory, config, now_ms=0)
    for offset in range(6):
        batch = _batch(offset, 1000 + offset)
        assert len(batch) == 80
        log.append(batch, now_ms=0)
    index = directory / "00000000000000000000.index"
    timeindex = directory / "00000000000000000000.timeindex"
    assert index.stat().st_size == 1200 and timeindex.stat().st_size == 1200  # preallocated
    log.close()
    # entries at batch 2 (position 160) and batch 4 (position 320)
    assert index.read_bytes() == bytes.fromhex("00000002000000a0" "0000000400000140")
    # the same points in the time index, then the max timestamp forced in at close
    assert timeindex.read_bytes() == bytes.fromhex(
        "00000000000003ea00000002" "00000000000003ec00000004" "00000000000003ed00000005")


def test_roll_trims_the_old_segments_indexes_and_preallocates_the_new(tmp_path: Path) -> None:
    directory = tmp_path / "t-0"
    config = LogConfig(segment_bytes=400, index_interval_bytes=0, segment_index_bytes=240)
    log = PartitionLog.open(directory, config, now_ms=0)
    for offset in range(7):
        log.append(_batch(offset, 5000 + offset), now_ms=0)
    assert [s.base_offset for s in log.segment_stats()] == [0, 5]
    assert (directory / "00000000000000000000.index").stat().st_size == 4 * 8
    assert (directory / "00000000000000000000.timeindex").stat().st_size == 4 * 12
    assert (directory / "00000000000000000005.index").stat().st_size == 240
    assert (directory / "00000000000000000005.timeindex").stat().st_size == 240
    log.close()


_SEGMENT = st.lists(st.tuples(st.integers(1, 5), st.integers(0, 300), st.integers(0, 3)),
                    min_size=1, max_size=40)


@settings(max_examples=40, deadline=None)
@given(batches=_SEGMENT, interval=st.integers(0, 600), data=st.data())
def test_lookups_equal_a_linear_scan(batches: list[tuple[int, int, int]], interval: int,
                                     data: st.DataObject) -> None:
    """Random batches (record count, value size, timestamp step) at a random index interval:
    offset translation, index lookups and the timestamp search answer like a scan."""
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp) / "t-0"
        log = PartitionLog.open(directory, LogConfig(index_interval_bytes=interval), now_ms=0)
        offset, timestamp = 0, 1000
        for count, size, step in batches:
            timestamp += step
            log.append(_batch(offset, timestamp, count, size), now_ms=0)
            offset += count
        segment = log.active
        scan = list(iter_batches(segment.read_bytes(0, segment.size)))
        entries = [segment.offset_index.entry(i) for i in range(segment.offset_index.entries)]
        times = [segment.time_index.entry(i) for i in range(segment.time_index.entries)]
        targets = data.draw(st.lists(st.integers(-1, offset + 1), min_size=1, max_size=10))
        for target in targets:
            expected = next((b for b in scan if b.last_offset >= target), None)
            found = segment.translate_offset(target)
            assert (found and found.position) == (expected and expected.position)
            below = [e for e in entries if e.offset <= target]
            assert segment.offset_index.lookup(target) == (below[-1] if below else (0, 0))
        stamps = data.draw(st.lists(st.integers(990, timestamp + 2), min_size=1, max_size=10))
        for stamp in stamps:
            below_t = [e for e in times if e.timestamp <= stamp]
            assert segment.time_index.lookup(stamp) == (below_t[-1] if below_t else (-1, 0))
            records = [r for b in scan for r in b.records() if r.timestamp >= stamp]
            hit = log.offset_for_timestamp(stamp)
            expected_hit = (records[0].timestamp, records[0].offset) if records else None
            assert (hit and (hit.timestamp, hit.offset)) == expected_hit
        log.close()


def test_truncating_an_index_removes_the_entries_at_and_above_the_offset(
        tmp_path: Path) -> None:
    offsets = OffsetIndex(tmp_path / "a.index", 10, 80)
    times = TimeIndex(tmp_path / "a.timeindex", 10, 120)
    for offset in (12, 15, 19):
        offsets.append(offset, offset * 100)
        times.maybe_append(offset * 1000, offset)
    offsets.truncate_to(15)
    times.truncate_to(16)
    assert [offsets.entry(i) for i in range(offsets.entries)] == [(12, 1200)]
    assert [times.entry(i) for i in range(times.entries)] == [(12000, 12), (15000, 15)]
    offsets.truncate_to(5)
    assert offsets.entries == 0 and offsets.lookup(30) == (10, 0)
    offsets.close()
    times.close()
    assert (tmp_path / "a.index").read_bytes() == b""
