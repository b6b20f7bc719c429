"""The topic settings a partition log obeys, with Kafka's names and defaults."""

from __future__ import annotations

from collections.abc import Callable
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
DEFAULT_FILE_DELETE_DELAY_MS = 60_000  # file.delete.delay.ms / log.segment.delete.delay.ms

#: Draws an int in [0, bound): where ``segment.jitter.ms`` gets its randomness, injected so
#: a log is deterministic under test (a broker passes ``random.Random().randrange``).
JitterSource = Callable[[int], int]


def no_jitter(_bound: int) -> int:
    """A :data:`JitterSource` that never jitters."""
    return 0


@dataclass(frozen=True, slots=True)
class LogConfig:
    """``segment.bytes``, ``segment.ms``, ``index.interval.bytes``, ``segment.index.bytes``,
    ``retention.ms`` and ``retention.bytes`` of one topic (-1 disables a retention limit).
    ``delete`` and ``compact`` are whether ``cleanup.policy`` includes them; the last four
    are the log cleaner's (:mod:`pykraft.log.compaction`). ``segment_jitter_ms`` is
    the most a segment's ``segment.ms`` roll is brought forward (drawn per segment, so
    partitions created together do not all roll at once); ``file_delete_delay_ms`` is how
    long a deleted segment's files wait, renamed ``.deleted``, before they go."""

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
    segment_jitter_ms: int = 0
    file_delete_delay_ms: int = DEFAULT_FILE_DELETE_DELAY_MS

    def __post_init__(self) -> None:
        if self.segment_bytes < 14:  # Kafka's minimum (1 MiB from Kafka 4.0, KIP-1030)
            raise ValueError(f"segment.bytes must be at least 14, not {self.segment_bytes}")
        if self.segment_ms < 1:
            raise ValueError(f"segment.ms must be at least 1, not {self.segment_ms}")
        if self.segment_jitter_ms < 0:
            raise ValueError(f"segment.jitter.ms must be non-negative, not "
                             f"{self.segment_jitter_ms}")
        if self.file_delete_delay_ms < 0:
            raise ValueError(f"file.delete.delay.ms must be non-negative, not "
                             f"{self.file_delete_delay_ms}")
        if self.index_interval_bytes < 0:
            raise ValueError(f"index.interval.bytes must be non-negative, not "
                             f"{self.index_interval_bytes}")
        if self.segment_index_bytes < 12:  # Kafka allows 4, but a time index entry needs 12
            raise ValueError(f"segment.index.bytes must be at least 12, not "
                             f"{self.segment_index_bytes}")

    def roll_jitter_ms(self, draw: JitterSource) -> int:
        """A new segment's jitter, as Kafka's ``randomSegmentJitter``: below the smaller of
        ``segment.jitter.ms`` and ``segment.ms``, 0 when jitter is off."""
        if self.segment_jitter_ms == 0:
            return 0
        return draw(min(self.segment_jitter_ms, self.segment_ms))
