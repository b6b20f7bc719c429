"""Log compaction: the latest value per key survives at its offset, tombstones until
``delete.retention.ms``, markers always; kafka-python reads the cleaned segments; a crash at
any step of the segment swap is completed or undone on open."""

from __future__ import annotations

import asyncio
import dataclasses
import shutil
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka.record.memory_records import MemoryRecords
from partition_batches import raw_batch, record

from pykraft.log.batch_records import batch_records
from pykraft.log.cleaner import clean_log
from pykraft.log.cleaner_bytes import add_to_offset_map, clean_batches
from pykraft.log.compaction import OffsetMap, compaction_delay_ms, plan_cleaning
from pykraft.records.batch import RecordBatch, encode_batch, iter_batches
from pykraft.records.compression import NONE
from pykraft.records.control import ControlType, control_key
from pykraft.storage.log_config import LogConfig
from pykraft.storage.partition_log import PartitionLog, SegmentStats

GZIP = 1
DAY = 86_400_000
Entry = tuple[int, bytes | None, bytes | None]  # offset, key, value

batch_strategy = st.tuples(
    st.lists(st.tuples(st.sampled_from([b"a", b"b", b"c", b"d", b"e"]),
                       st.one_of(st.none(), st.binary(min_size=1, max_size=6))),
             min_size=1, max_size=4),
    st.sampled_from([NONE, GZIP]),
    st.integers(0, 3 * DAY),
)


def _config(**changes: object) -> LogConfig:
    base = LogConfig(segment_bytes=300, index_interval_bytes=40, delete=False, compact=True)
    return dataclasses.replace(base, **changes)  # type: ignore[arg-type]


def _append_all(log: PartitionLog, batches: list[tuple[list[tuple[bytes, bytes | None]], int,
                                                        int]]) -> dict[int, int]:
    """Append the batches (producer id = batch number); returns offset -> batch base."""
    bases: dict[int, int] = {}
    for number, (pairs, codec, timestamp) in enumerate(batches):
        base = log.log_end_offset
        records = [record(i, timestamp, key, value) for i, (key, value) in
                   enumerate(pairs)]
        log.append(raw_batch(records, codec=codec, base_offset=base, producer_id=number,
                             base_sequence=number * 10), now_ms=0)
        bases.update({base + i: base for i in range(len(pairs))})
    log.roll(now_ms=0)
    return bases


def _batches(log: PartitionLog) -> Iterator[RecordBatch]:
    offset = log.log_start_offset
    while offset < log.log_end_offset:
        data = log.read(offset, 1 << 20)
        if not data:
            return
        for batch in iter_batches(data):
            yield batch
            offset = batch.header.next_offset


def _entries(log: PartitionLog) -> list[Entry]:
    return [(r.offset, r.key, r.value) for batch in _batches(log) for r in batch_records(batch)]


def _expected(before: list[Entry], tombstone_kept: set[int]) -> list[Entry]:
    latest = {key: offset for offset, key, _ in before}
    return [(offset, key, value) for offset, key, value in before
            if latest[key] == offset and (value is not None or offset in tombstone_kept)]


def _clean(log: PartitionLog, now: int, active: Mapping[int, int] | None = None) -> int | None:
    stats = asyncio.run(clean_log(
        log, now_ms=now, high_watermark=log.log_end_offset, first_dirty_offset=0,
        producer_last_offsets=active or {}))
    return None if stats is None else stats.end_offset


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batches=st.lists(batch_strategy, min_size=1, max_size=25),
       retention=st.sampled_from([0, 1, DAY]))
def test_latest_value_per_key_survives_at_its_offset(tmp_path: Path, batches: list[
        tuple[list[tuple[bytes, bytes | None]], int, int]], retention: int) -> None:
    directory = tmp_path / "compacted-0"
    shutil.rmtree(directory, ignore_errors=True)
    now = 4 * DAY
    with PartitionLog.open(directory, _config(delete_retention_ms=retention), now_ms=0) as log:
        bases = _append_all(log, batches)
        before = _entries(log)
        headers_before = {b.header.base_offset: b.header for b in _batches(log)}
        # the producers of even batches are active: their emptied last batch stays
        active = {header.producer_id: header.last_offset
                  for header in headers_before.values() if header.producer_id % 2 == 0}
        assert _clean(log, now, active) == log.log_end_offset
        latest = _expected(before, {offset for offset, _, _ in before})
        assert _entries(log) == latest
        after = {b.header.base_offset: b for b in _batches(log)}
        for base, original in headers_before.items():
            survivors = [entry for entry in latest if bases[entry[0]] == base]
            assert (base in after) == (bool(survivors) or original.producer_id in active)
        for batch in after.values():  # offsets, producer ids and sequences never change
            original = headers_before[batch.header.base_offset]
            assert (batch.header.last_offset, batch.header.producer_id,
                    batch.header.base_sequence) == (original.last_offset, original.producer_id,
                                                    original.base_sequence)
            assert all(bases[r.offset] == batch.header.base_offset
                       for r in batch_records(batch))
            assert (batch.header.delete_horizon_ms == now + retention) == any(
                r.value is None for r in batch_records(batch))
        # tombstones stay until delete.retention.ms after the pass that kept them
        if retention:
            _clean(log, now + retention - 1)
            assert _entries(log) == latest
        _clean(log, now + retention)
        without_tombstones = _expected(before, set())
        assert _entries(log) == without_tombstones
        # once their producers expired, the emptied batches go too
        assert all(b.header.records_count for b in _batches(log))
    with PartitionLog.open(directory, _config(), now_ms=now) as reopened:
        assert _entries(reopened) == without_tombstones


def _filled_log(directory: Path, now: int) -> tuple[PartitionLog, list[Entry]]:
    log = PartitionLog.open(directory, _config(), now_ms=0)
    pairs: list[tuple[bytes, bytes | None]] = [(b"k%d" % (i % 3), b"v%d" % i) for i in range(12)]
    _append_all(log, [([pair], GZIP if i % 2 else NONE, now) for i, pair in enumerate(pairs)])
    return log, _expected(_entries(log), set())


def test_kafka_python_reads_the_cleaned_segments(tmp_path: Path) -> None:
    directory = tmp_path / "compacted-0"
    log, expected = _filled_log(directory, now=1_000)
    with log:
        active = {b.header.producer_id: b.header.last_offset for b in _batches(log)}
        assert _clean(log, 1_000, active) is not None
    seen: list[Entry] = []
    empty = 0
    for segment in sorted(directory.glob("*.log")):
        records = MemoryRecords(segment.read_bytes())
        while records.has_next():
            batch = records.next_batch()
            assert batch.validate_crc()
            found = [(r.offset, r.key, r.value) for r in batch]
            empty += not found
            seen += found
    assert seen == expected and len(seen) == 3
    assert empty == 9  # the active producers' emptied batches stay as headers


def test_markers_and_control_batches_are_kept(tmp_path: Path) -> None:
    marker = encode_batch(1, [(control_key(ControlType.COMMIT), b"\x00\x00\x00\x00\x00\x00")],
                          partition_leader_epoch=0, timestamp=5, control=True)
    data = raw_batch([record(0, key=b"k", value=b"old")]) + marker + raw_batch(
        [record(0, key=b"k", value=b"new")], base_offset=2)
    offset_map = OffsetMap()
    add_to_offset_map(data, offset_map, start_offset=0)
    cleaned = clean_batches(data, offset_map, now_ms=5, horizon_ms=DAY,
                            producer_last_offsets={})
    assert [b.header.base_offset for b in iter_batches(cleaned)] == [1, 2]
    assert next(iter_batches(cleaned)).data == marker


def _crash_states(directory: Path, cleaned: bytes) -> dict[str, Path]:
    """Copies of the log directory as a crash would leave it after each swap step."""
    base = directory / f"{0:020d}.log"
    states = {}
    for step in ("cleaned", "swap", "old-deleted"):
        copy = directory.with_name(f"{directory.name.rsplit('-', 1)[0]}{step}-0")
        shutil.copytree(directory, copy)
        target = copy / (base.name + (".cleaned" if step == "cleaned" else ".swap"))
        target.write_bytes(cleaned)
        if step == "old-deleted":
            (copy / base.name).unlink()
        states[step] = copy
    return states


@pytest.mark.parametrize("clean_shutdown", [True, False])
def test_crash_at_each_swap_step_recovers(tmp_path: Path, clean_shutdown: bool) -> None:
    directory = tmp_path / "compacted-0"
    log, _ = _filled_log(directory, now=1_000)
    first = log.segment_stats()[0]
    offset_map = OffsetMap()
    for stats in log.segment_stats()[:-1]:
        add_to_offset_map(log.segment_data(stats.base_offset), offset_map, 0)
    original = log.segment_data(first.base_offset)
    cleaned = clean_batches(original, offset_map, now_ms=0, horizon_ms=DAY,
                            producer_last_offsets={})
    before = _entries(log)
    log.close()
    assert cleaned != original
    removed = {offset for batch in iter_batches(original) for offset in
               range(batch.header.base_offset, batch.header.next_offset)} - {
        offset for batch in iter_batches(cleaned) for offset in
        range(batch.header.base_offset, batch.header.next_offset)}
    after_swap = [entry for entry in before if entry[0] not in removed]
    for step, copy in _crash_states(directory, cleaned).items():
        with PartitionLog.open(copy, _config(), now_ms=1_000,
                               clean_shutdown=clean_shutdown) as reopened:
            assert _entries(reopened) == (before if step == "cleaned" else after_swap), step
        assert not list(copy.glob("*.cleaned")) and not list(copy.glob("*.swap"))


def _stats(*segments: tuple[int, int, int, int, int]) -> list[SegmentStats]:
    return [SegmentStats(*segment) for segment in segments]


def test_plan_respects_ratio_lags_active_segment_and_high_watermark() -> None:
    segments = _stats((0, 10, 100, 1_000, 500), (10, 20, 100, 2_000, 1_500),
                      (20, 25, 50, 3_000, 2_500))
    config = _config()
    plan = plan_cleaning(segments, config, now_ms=5_000, first_dirty_offset=0,
                         high_watermark=25)
    assert plan is not None and plan.base_offsets == (0, 10) and plan.end_offset == 20
    # half the cleanable bytes dirty: at the ratio, which Kafka wants exceeded; below it
    # only overdue: a dirty inactive segment's first batch past max.compaction.lag.ms
    assert plan_cleaning(segments, config, now_ms=5_000, first_dirty_offset=10,
                         high_watermark=25) is None
    assert plan_cleaning(segments, _config(min_cleanable_dirty_ratio=0.49), now_ms=5_000,
                         first_dirty_offset=10, high_watermark=25) is not None
    assert plan_cleaning(segments, _config(max_compaction_lag_ms=3_600), now_ms=5_000,
                         first_dirty_offset=10, high_watermark=25) is None
    overdue = plan_cleaning(segments, _config(max_compaction_lag_ms=3_400), now_ms=5_000,
                            first_dirty_offset=10, high_watermark=25)
    assert overdue is not None and overdue.base_offsets == (0, 10)
    # by the first batch, though the segment's largest timestamp is within the lag
    assert compaction_delay_ms(segments, _config(max_compaction_lag_ms=3_000), now_ms=5_000,
                               first_dirty_offset=10) == 500
    assert plan_cleaning(segments, config, now_ms=5_000, first_dirty_offset=20,
                         high_watermark=25) is None
    # too young by min.compaction.lag.ms, or above the high watermark: not cleanable
    young = plan_cleaning(segments, _config(min_compaction_lag_ms=3_500), now_ms=5_000,
                          first_dirty_offset=0, high_watermark=25)
    assert young is not None and young.base_offsets == (0,)
    assert plan_cleaning(segments, config, now_ms=5_000, first_dirty_offset=0,
                         high_watermark=15) is not None
    low = plan_cleaning(segments, config, now_ms=5_000, first_dirty_offset=0,
                        high_watermark=15)
    assert low is not None and low.base_offsets == (0,)
    assert plan_cleaning(segments, _config(compact=False), now_ms=5_000,
                         first_dirty_offset=0, high_watermark=25) is None


def test_a_swap_over_several_segments_replaces_them_all(tmp_path: Path) -> None:
    """Kafka cleans groups of segments into one: its ``.swap`` covers their offsets."""
    directory = tmp_path / "compacted-0"
    log, _ = _filled_log(directory, now=1_000)
    first, second = log.segment_stats()[:2]
    offset_map = OffsetMap()
    add_to_offset_map(log.segment_data(first.base_offset)
                      + log.segment_data(second.base_offset), offset_map, 0)
    merged = clean_batches(log.segment_data(first.base_offset)
                           + log.segment_data(second.base_offset), offset_map, now_ms=0,
                           horizon_ms=DAY, producer_last_offsets={})
    before = _entries(log)
    log.close()
    (directory / f"{first.base_offset:020d}.log.swap").write_bytes(merged)
    with PartitionLog.open(directory, _config(), now_ms=1_000) as reopened:
        kept = {r.offset for b in iter_batches(merged) for r in batch_records(b)}
        assert _entries(reopened) == [entry for entry in before
                                      if entry[0] >= second.end_offset or entry[0] in kept]
        assert [s.base_offset for s in reopened.segment_stats()][:2] == [
            first.base_offset, second.end_offset]
