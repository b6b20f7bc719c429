"""The topic settings a partition log obeys, with Kafka's names and defaults."""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_SEGMENT_BYTES = 1024 * 1024 * 1024  # segment.bytes / log.segment.bytes
DEFAULT_SEGMENT_MS = 7 * 24 * 3600 * 1000  # segment.ms / log.roll.hours=168
DEFAULT_INDEX_INTERVAL_BYTES = 4096  # index.interval.bytes
DEFAULT_SEGMENT_INDEX_BYTES = 10 * 1024 * 1024  # segment.index.bytes
DEFAULT_RETENTION_MS = 7 * 24 * 3600 * 1000  # retention.ms / log.retention.hours=168
DEFAULT_RETENTION_BYTES = -1  # retention.bytes: no size limit
DEFAULT_DELETE_RETENTION_MS = 24 * 3600 * 1000  # delete.retention.ms: tombstones kept a day
DEFAULT_MIN_CLEANABLE_DIRTY_RATIO = 0.5  # min.cleanable.dirty.ratio
DEFAULT_MAX_COMPACTION_LAG_MS = (1 << 63) - 1  # max.compaction.lag.ms


@dataclass(frozen=True, slots=True)
class LogConfig:
    """``segment.bytes``, ``segment.ms``, ``index.interval.bytes``, ``segment.index.bytes``,
    ``retention.ms`` and ``retention.bytes`` of one topic (-1 disables a retention limit).
    ``delete`` and ``compact`` are whether ``cleanup.policy`` includes them; the last four
    are the log cleaner's (:mod:`pykraft.storage.compaction`)."""

    segment_bytes: int = DEFAULT_SEGMENT_BYTES
    segment_ms: int = DEFAULT_SEGMENT_MS
    index_interval_bytes: int = DEFAULT_INDEX_INTERVAL_BYTES
    segment_index_bytes: int = DEFAULT_SEGMENT_INDEX_BYTES
    retention_ms: int = DEFAULT_RETENTION_MS
    retention_bytes: int = DEFAULT_RETENTION_BYTES
    delete: bool = True
    compact: bool = False
    delete_retention_ms: int = DEFAULT_DELETE_RETENTION_MS
    min_cleanable_dirty_ratio: float = DEFAULT_MIN_CLEANABLE_DIRTY_RATIO
    min_compaction_lag_ms: int = 0
    max_compaction_lag_ms: int = DEFAULT_MAX_COMPACTION_LAG_MS

    def __post_init__(self) -> None:
        if self.segment_bytes < 14:  # Kafka's minimum (1 MiB from Kafka 4.0, KIP-1030)
            raise ValueError(f"segment.bytes must be at least 14, not {self.segment_bytes}")
        if self.segment_ms < 1:
            raise ValueError(f"segment.ms must be at least 1, not {self.segment_ms}")
        if self.index_interval_bytes < 0:
            raise ValueError(f"index.interval.bytes must be non-negative, not "
                             f"{self.index_interval_bytes}")
        if self.segment_index_bytes < 12:  # Kafka allows 4, but a time index entry needs 12
            raise ValueError(f"segment.index.bytes must be at least 12, not "
                             f"{self.segment_index_bytes}")
