"""Log compaction (``cleanup.policy=compact``): pure rules of Kafka's ``LogCleaner``.

Nothing here touches files or clocks: the caller passes the segments' statistics, ``now_ms``
and the records it decoded. Kafka's rules, as far as pykraft applies them:

- The cleanable range runs from the log start to the first uncleanable offset: the active
  segment's base, the high watermark (Kafka stops at the last stable offset, which never
  exceeds it) and the first segment younger than ``min.compaction.lag.ms``
  (:func:`first_uncleanable_offset`). Only whole segments below it are rewritten; the active
  segment never is.
- A log is cleaned when its dirty ratio (bytes after the cleaner checkpoint over the
  cleanable bytes) is above ``min.cleanable.dirty.ratio``, or when the first batch of a
  dirty inactive segment is older than ``max.compaction.lag.ms`` (:func:`plan_cleaning`).
- The offset map holds each key's latest offset in the dirty part of the cleanable range,
  until it holds its most keys (:class:`OffsetMap`, ``log.cleaner.dedupe.buffer.size``); the
  segments below the last offset mapped are rewritten. A data record survives when it is its
  key's latest (records past the map's range are never touched); a record without a key
  never survives (the produce path refuses them for compacted topics: "Compacted topic
  cannot accept message without key").
- A tombstone (null value) survives ``delete.retention.ms``, so consumers that are behind
  still see the delete (KIP-534): the first pass that keeps it stamps its batch with a
  delete horizon (``now_ms + delete.retention.ms``, :func:`delete_horizon`, kept in the
  batch's base timestamp with attribute bit 6), and a later pass at or past the horizon
  removes it (:func:`retains_record`).
- Control batches (transaction markers) are always kept.

Not yet as Kafka: records of aborted transactions are compacted like committed ones (Kafka
drops them and, past the horizon, the markers too), segments are rewritten one to one
(Kafka merges small neighbours into one) and a segment is rewritten in memory.

Interface::

    plan = plan_cleaning(segment_stats, config, now_ms=..., first_dirty_offset=...,
                         high_watermark=...)            # None: nothing to clean now
    dirtiness = assess_dirtiness(segment_stats, config, ...)  # ratio, bytes, delay (metrics)
    offset_map = OffsetMap(max_entries)
    if not offset_map.full: offset_map.put(key_digest, offset)  # from the first dirty offset
    keep = retains_record(offset, key_digest, value is None, offset_map,
                          horizon_ms=batch_header.delete_horizon_ms, now_ms=now_ms)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pykraft.storage.log_config import LogConfig
from pykraft.storage.partition_log import SegmentStats


@dataclass(frozen=True, slots=True)
class CleaningPlan:
    """The segments to rewrite (base offsets, oldest first), the first offset the cleaner
    leaves alone (the next cleaner checkpoint) and the dirty ratio that triggered it."""

    base_offsets: tuple[int, ...]
    end_offset: int
    dirty_ratio: float


class OffsetMap:
    """Each key's latest offset in the cleanable range, keys as their MD5 digests
    (Kafka's ``SkimpyOffsetMap``: 16 bytes a key, however long the key), holding at most
    ``max_entries`` keys (``log.cleaner.dedupe.buffer.size`` over the cleaner threads, as
    :meth:`pykraft.log.cleaner_config.CleanerConfig.max_map_entries` computes; None:
    unbounded, for tools)."""

    def __init__(self, max_entries: int | None = None) -> None:
        self._latest: dict[bytes, int] = {}
        self.max_entries = max_entries
        self.latest_offset = -1

    @property
    def full(self) -> bool:
        """Whether the map may take no more keys (Kafka checks before every put, even of
        a key it holds: ``map.size < maxDesiredMapSize``)."""
        return self.max_entries is not None and len(self._latest) >= self.max_entries

    def put(self, key: bytes, offset: int) -> None:
        self._latest[key] = offset
        self.update_latest_offset(offset)

    def update_latest_offset(self, offset: int) -> None:
        """The last offset the map covers (a batch's last, though its keys may be fewer)."""
        self.latest_offset = max(self.latest_offset, offset)

    def get(self, key: bytes) -> int | None:
        return self._latest.get(key)

    def __len__(self) -> int:
        return len(self._latest)


def first_uncleanable_offset(segments: Sequence[SegmentStats], config: LogConfig, *,
                             now_ms: int, high_watermark: int) -> int:
    """The first offset the cleaner may not touch (Kafka's ``cleanableOffsets``)."""
    bound = min(segments[-1].base_offset, high_watermark)
    if config.min_compaction_lag_ms > 0:
        for segment in segments[:-1]:
            if segment.largest_timestamp > now_ms - config.min_compaction_lag_ms:
                bound = min(bound, segment.base_offset)
                break
    return bound


@dataclass(frozen=True, slots=True)
class Dirtiness:
    """A compacted log as the cleaner's manager sees it before choosing (Kafka's
    ``LogToClean`` and ``maxCompactionDelay``): its dirty ratio, the bytes of its dirty
    cleanable segments, and how long past ``max.compaction.lag.ms`` its oldest dirty
    segment is (ms, 0 when none is)."""

    ratio: float
    cleanable_bytes: int
    compaction_delay_ms: int


def _cleanable(segments: Sequence[SegmentStats], config: LogConfig, now_ms: int,
               high_watermark: int) -> list[SegmentStats]:
    bound = first_uncleanable_offset(segments, config, now_ms=now_ms,
                                     high_watermark=high_watermark)
    return [segment for segment in segments[:-1] if segment.end_offset <= bound]


def compaction_delay_ms(segments: Sequence[SegmentStats], config: LogConfig, *, now_ms: int,
                        first_dirty_offset: int) -> int:
    """Kafka's ``maxCompactionDelay``: how long ago the earliest first-batch timestamp of
    the dirty inactive segments passed ``max.compaction.lag.ms`` (0: not yet)."""
    firsts = [segment.first_batch_timestamp for segment in segments[:-1]
              if segment.end_offset > first_dirty_offset and segment.first_batch_timestamp > 0]
    clean_until = now_ms - max(config.max_compaction_lag_ms, 0)
    earliest = min(firsts, default=clean_until)
    return clean_until - earliest if earliest < clean_until else 0


def assess_dirtiness(segments: Sequence[SegmentStats], config: LogConfig, *, now_ms: int,
                     first_dirty_offset: int, high_watermark: int) -> Dirtiness | None:
    """The log's :class:`Dirtiness`; None for a log without ``compact``."""
    if not config.compact or not segments:
        return None
    cleanable = _cleanable(segments, config, now_ms, high_watermark)
    dirty = [segment for segment in cleanable if segment.end_offset > first_dirty_offset]
    total = sum(segment.size for segment in cleanable)
    dirty_bytes = sum(segment.size for segment in dirty)
    return Dirtiness(dirty_bytes / total if total else 0.0, dirty_bytes,
                     compaction_delay_ms(segments, config, now_ms=now_ms,
                                         first_dirty_offset=first_dirty_offset))


def plan_cleaning(segments: Sequence[SegmentStats], config: LogConfig, *, now_ms: int,
                  first_dirty_offset: int, high_watermark: int) -> CleaningPlan | None:
    """The whole segments below the first uncleanable offset, when the log needs cleaning
    (Kafka's ``grabFilthiestCompactedLog`` filter): dirty ratio above
    ``min.cleanable.dirty.ratio``, or past ``max.compaction.lag.ms`` with cleanable bytes.
    None for a log without ``compact`` or nothing to do."""
    dirtiness = assess_dirtiness(segments, config, now_ms=now_ms,
                                 first_dirty_offset=first_dirty_offset,
                                 high_watermark=high_watermark)
    if dirtiness is None or not dirtiness.cleanable_bytes:
        return None
    if (dirtiness.ratio <= config.min_cleanable_dirty_ratio
            and not dirtiness.compaction_delay_ms):
        return None
    cleanable = _cleanable(segments, config, now_ms, high_watermark)
    return CleaningPlan(tuple(segment.base_offset for segment in cleanable),
                        cleanable[-1].end_offset, dirtiness.ratio)


def delete_horizon(config: LogConfig, now_ms: int) -> int:
    """The delete horizon a cleaning pass stamps on batches whose tombstones it keeps."""
    return now_ms + config.delete_retention_ms


def retains_record(offset: int, key: bytes | None, tombstone: bool, offset_map: OffsetMap, *,
                   horizon_ms: int | None, now_ms: int) -> bool:
    """Whether a data record (its offset, key digest, null value or not) survives cleaning
    (Kafka's ``shouldRetainRecord``); a tombstone survives while its batch has no delete
    horizon yet or ``now_ms`` is before it."""
    if offset > offset_map.latest_offset:
        return True
    if key is None:
        return False
    latest = offset_map.get(key)
    if latest is not None and offset < latest:
        return False
    return not tombstone or horizon_ms is None or now_ms < horizon_ms
