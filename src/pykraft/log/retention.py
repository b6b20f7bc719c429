"""Which segments retention deletes: pure functions over segment statistics, as Kafka's
``UnifiedLog.deleteOldSegments`` decides.

Three rules, each deleting a prefix of the oldest segments: the log start offset breach
(a segment wholly below the log start offset, moved by DeleteRecords), ``retention.bytes``
(oldest segments while the log stays at or above the limit without them) and
``retention.ms`` (a segment whose largest timestamp is older than the limit). Only the
first rule applies when ``cleanup.policy`` has no ``delete``. Whatever the rule, a segment
goes only if it lies entirely below the high watermark, scanning stops at the first
segment kept, and an empty last segment is never deleted.

The caller (:meth:`pykraft.storage.partition_log.PartitionLog.delete_segments`) deletes the
returned segments and advances the log start offset to the next segment's base.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from pykraft.storage.log_config import LogConfig
from pykraft.storage.partition_log import SegmentStats


def _deletable(segments: Sequence[SegmentStats], high_watermark: int,
               predicate: Callable[[SegmentStats, bool], bool]) -> list[SegmentStats]:
    """The oldest segments satisfying ``predicate(segment, is_last)`` below the high
    watermark, up to the first that does not."""
    chosen: list[SegmentStats] = []
    for number, segment in enumerate(segments):
        is_last = number == len(segments) - 1
        if (is_last and segment.size == 0) or segment.end_offset > high_watermark:
            break
        if not predicate(segment, is_last):
            break
        chosen.append(segment)
    return chosen


def log_start_offset_breached(segments: Sequence[SegmentStats], log_start_offset: int,
                              high_watermark: int) -> list[SegmentStats]:
    """Segments whose successor starts at or below the log start offset."""
    return _deletable(segments, high_watermark,
                      lambda segment, is_last: (not is_last
                                                and segment.end_offset <= log_start_offset))


def retention_size_breached(segments: Sequence[SegmentStats], retention_bytes: int,
                            high_watermark: int) -> list[SegmentStats]:
    """The oldest segments whose removal keeps the log at or above ``retention_bytes``."""
    total = sum(segment.size for segment in segments)
    if retention_bytes < 0 or total < retention_bytes:
        return []
    excess = total - retention_bytes

    def fits(segment: SegmentStats, _is_last: bool) -> bool:
        nonlocal excess
        if excess - segment.size < 0:
            return False
        excess -= segment.size
        return True

    return _deletable(segments, high_watermark, fits)


def retention_time_breached(segments: Sequence[SegmentStats], retention_ms: int, now_ms: int,
                            high_watermark: int) -> list[SegmentStats]:
    """Segments whose largest timestamp is more than ``retention_ms`` before ``now_ms``."""
    if retention_ms < 0:
        return []
    return _deletable(segments, high_watermark,
                      lambda segment, _: now_ms - segment.largest_timestamp > retention_ms)


def segments_to_delete(segments: Sequence[SegmentStats], config: LogConfig, *, now_ms: int,
                       log_start_offset: int, high_watermark: int) -> list[int]:
    """Base offsets of the oldest segments that retention deletes now (all three rules)."""
    remaining = list(segments)
    deleted: list[int] = []

    def take(chosen: list[SegmentStats]) -> None:
        deleted.extend(segment.base_offset for segment in chosen)
        del remaining[:len(chosen)]

    take(log_start_offset_breached(remaining, log_start_offset, high_watermark))
    if config.delete:
        take(retention_size_breached(remaining, config.retention_bytes, high_watermark))
        take(retention_time_breached(remaining, config.retention_ms, now_ms, high_watermark))
    return deleted
