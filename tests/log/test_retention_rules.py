"""Retention decisions (pure): Kafka's log start offset, size and time rules."""

from __future__ import annotations

from pykraft.log.retention import (
    log_start_offset_breached,
    retention_size_breached,
    retention_time_breached,
    segments_to_delete,
)
from pykraft.storage.log_config import LogConfig
from pykraft.storage.partition_log import SegmentStats

# four segments [0,10) [10,20) [20,30) [30,35), 100 bytes each but the last (50)
_SEGMENTS = [SegmentStats(0, 10, 100, 1000), SegmentStats(10, 20, 100, 2000),
             SegmentStats(20, 30, 100, 3000), SegmentStats(30, 35, 50, 4000)]


def _bases(chosen: list[SegmentStats]) -> list[int]:
    return [segment.base_offset for segment in chosen]


def test_log_start_offset_breach_deletes_segments_wholly_below_it() -> None:
    assert _bases(log_start_offset_breached(_SEGMENTS, 19, 35)) == [0]
    assert _bases(log_start_offset_breached(_SEGMENTS, 20, 35)) == [0, 10]
    assert _bases(log_start_offset_breached(_SEGMENTS, 35, 35)) == [0, 10, 20]  # never the last


def test_size_retention_keeps_the_log_at_or_above_retention_bytes() -> None:
    assert _bases(retention_size_breached(_SEGMENTS, -1, 35)) == []
    assert _bases(retention_size_breached(_SEGMENTS, 351, 35)) == []
    assert _bases(retention_size_breached(_SEGMENTS, 250, 35)) == [0]  # 350 - 100 >= 250
    assert _bases(retention_size_breached(_SEGMENTS, 249, 35)) == [0]  # 150 left would be < 249
    assert _bases(retention_size_breached(_SEGMENTS, 50, 35)) == [0, 10, 20]
    assert _bases(retention_size_breached(_SEGMENTS, 0, 35)) == [0, 10, 20, 30]


def test_time_retention_by_largest_timestamp() -> None:
    assert _bases(retention_time_breached(_SEGMENTS, 1000, 3001, 35)) == [0, 10]
    assert _bases(retention_time_breached(_SEGMENTS, 1000, 3000, 35)) == [0]  # not > 1000
    assert _bases(retention_time_breached(_SEGMENTS, -1, 10**12, 35)) == []


def test_nothing_at_or_above_the_high_watermark_and_never_an_empty_last_segment() -> None:
    assert _bases(retention_time_breached(_SEGMENTS, 0, 10**6, 19)) == [0]
    assert _bases(retention_time_breached(_SEGMENTS, 0, 10**6, 20)) == [0, 10]
    empty_last = [*_SEGMENTS[:3], SegmentStats(30, 30, 0, 4000)]
    assert _bases(retention_time_breached(empty_last, 0, 10**6, 30)) == [0, 10, 20]


def test_scanning_stops_at_the_first_segment_kept() -> None:
    out_of_order = [SegmentStats(0, 10, 100, 5000), SegmentStats(10, 20, 100, 1000)]
    assert _bases(retention_time_breached(out_of_order, 1000, 5500, 20)) == []


def test_the_rules_combined_and_compact_only_topics() -> None:
    config = LogConfig(retention_ms=1500, retention_bytes=150)
    # time alone would delete [0]; size (350 - 150 = 200 bytes too many) deletes [0, 10]
    assert segments_to_delete(_SEGMENTS, config, now_ms=2600, log_start_offset=0,
                              high_watermark=35) == [0, 10]
    # size deletes [0, 10]; then time deletes [20] too
    assert segments_to_delete(_SEGMENTS, config, now_ms=4600, log_start_offset=0,
                              high_watermark=35) == [0, 10, 20]
    assert segments_to_delete(_SEGMENTS, config, now_ms=0, log_start_offset=25,
                              high_watermark=35) == [0, 10]
    compact = LogConfig(retention_ms=0, retention_bytes=0, delete=False)
    assert segments_to_delete(_SEGMENTS, compact, now_ms=10**6, log_start_offset=10,
                              high_watermark=35) == [0]
