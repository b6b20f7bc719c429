"""What the broker's log cleaner keeps between passes: its settings in force, the I/O
throttle its threads share, the partitions it gave up on, and the figures Kafka's
``kafka.log:type=LogCleaner`` and ``LogCleanerManager`` gauges show.

Interface::

    state = CleanerState(config)
    state.begin_pass({tp: (dirtiness, log_dir)})   # max-dirty-percent, -compaction-delay
    await state.throttle(nbytes)                   # log.cleaner.io.max.bytes.per.second
    state.record(elapsed_s, stats)                 # each log cleaned
    state.mark_uncleanable(tp, log_dir)            # its cleaning failed: skipped after
    state.end_pass(monotonic_now)
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from pathlib import Path

from pykraft.ids import TopicPartition
from pykraft.log.cleaner import CleanerStats
from pykraft.log.cleaner_config import CleanerConfig, Throttler
from pykraft.log.compaction import Dirtiness


class CleanerState:
    """The cleaner's settings, throttle and metrics (see the module docstring)."""

    def __init__(self, config: CleanerConfig) -> None:
        self.config = config
        self.started = False
        """Whether a cleaner runs (Kafka registers its gauges only then: none with
        ``log.cleaner.enable=false``)."""
        self.throttler = Throttler(config.max_io_bytes_per_second, _monotonic_ms())
        self.uncleanable: dict[TopicPartition, Path] = {}
        """Partitions whose cleaning failed (Kafka's ``markPartitionUncleanable``), with
        their log directory: never cleaned again while hosted here."""
        self.last_pass_ended: float | None = None
        self.max_dirty_ratio = 0.0
        self.max_compaction_delay_ms = 0
        self.uncleanable_bytes: dict[Path, int] = {}
        self.max_clean_time_s = 0.0
        self.recopy_ratio = 0.0
        self.buffer_utilization = 0.0
        self.dead_threads = 0
        self._pass: list[tuple[float, CleanerStats]] = []

    def reconfigure(self, config: CleanerConfig) -> None:
        """New settings: the throttle takes the new rate at once (Kafka's
        ``updateDesiredRatePerSec``)."""
        self.config = config
        self.throttler.rate_per_second = config.max_io_bytes_per_second

    async def throttle(self, nbytes: int) -> None:
        """Count ``nbytes`` read or written; pause while above the rate."""
        pause_ms = self.throttler.observe(nbytes, _monotonic_ms())
        if pause_ms:
            await asyncio.sleep(pause_ms / 1000)

    def begin_pass(self, logs: Mapping[TopicPartition, tuple[Dirtiness, Path]]) -> None:
        """The compacted logs this pass sees: Kafka's ``dirtiestLogCleanableRatio`` over
        them, the largest compaction delay, and the uncleanable partitions' bytes per
        directory; uncleanable partitions no longer hosted are forgotten (Kafka's
        ``maintainUncleanablePartitions``)."""
        self._pass = []
        self.uncleanable = {tp: d for tp, d in self.uncleanable.items() if tp in logs}
        cleanable = [dirtiness for tp, (dirtiness, _) in logs.items()
                     if tp not in self.uncleanable]
        self.max_dirty_ratio = max((d.ratio for d in cleanable), default=0.0)
        self.max_compaction_delay_ms = max((d.compaction_delay_ms for d in cleanable),
                                           default=0)
        self.uncleanable_bytes = {}
        for tp, directory in self.uncleanable.items():
            self.uncleanable_bytes[directory] = (self.uncleanable_bytes.get(directory, 0)
                                                 + logs[tp][0].cleanable_bytes)

    def record(self, elapsed_s: float, stats: CleanerStats) -> None:
        self._pass.append((elapsed_s, stats))

    def mark_uncleanable(self, tp: TopicPartition, directory: Path) -> None:
        self.uncleanable[tp] = directory

    def end_pass(self, monotonic_now: float) -> None:
        """The pass's figures; a pass that cleaned nothing leaves the last cleaning's, as
        Kafka's threads keep their ``lastStats``."""
        self.last_pass_ended = monotonic_now
        if not self._pass:
            return
        self.max_clean_time_s = max(elapsed for elapsed, _ in self._pass)
        read = sum(stats.bytes_read for _, stats in self._pass)
        self.recopy_ratio = sum(stats.bytes_written for _, stats in self._pass) / max(read, 1)
        self.buffer_utilization = max(stats.buffer_utilization for _, stats in self._pass)


def _monotonic_ms() -> int:
    """The throttle's clock (Kafka's ``Throttler`` reads ``time.nanoseconds()``)."""
    return time.monotonic_ns() // 1_000_000
