"""The log cleaner's broker settings (Kafka's ``CleanerConfig``) and its I/O throttle
(Kafka's ``Throttler``), pure: the broker reads them from its properties and dynamic configs
and applies a change as Kafka's ``LogCleaner.reconfigure`` does.

- ``log.cleaner.threads``: the cleaner threads, each cleaning one log at a time; each has
  ``log.cleaner.dedupe.buffer.size / threads`` bytes of offset map (at most 2 GiB) and
  ``log.cleaner.io.buffer.size / threads / 2`` bytes of read buffer (a batch larger is
  read whole, as Kafka grows its buffer).
- The offset map takes a key while it holds fewer than ``slots * log.cleaner.io.buffer.
  load.factor`` keys, a slot being 24 bytes (an MD5 digest and an offset): Kafka's
  ``SkimpyOffsetMap``. A dirty range that does not fit is cleaned in parts, up to the last
  offset mapped; a segment that does not fit is mapped and cleaned in part, the cleaner
  checkpoint then landing inside it. Kafka requires more than 1 MiB of it per thread
  (``KafkaConfig``), and a map able to hold a key (``Cleaner``): both refuse the config.
- ``log.cleaner.io.max.bytes.per.second``: the cleaner threads' reads and writes together,
  checked every 300 ms (:class:`Throttler`).
- ``log.cleaner.backoff.ms``: the pause after a pass that cleaned nothing.

A dynamic change validates the thread count as Kafka's ``validateReconfiguration`` (at
least 1, at least half and at most double the current count), updates the throttle's rate
and restarts the cleaner threads (so a pause under the old backoff ends at once).

Interface::

    config = CleanerConfig.from_layers(static_props, cluster_default, this_broker)
    check_reconfiguration(current, config)            # ConfigError as Kafka's
    offset_map = OffsetMap(config.max_map_entries())  # per cleaner thread
    throttler = Throttler(config.max_io_bytes_per_second, now_ms)
    pause_ms = throttler.observe(nbytes, now_ms)      # sleep that long, then go on
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from pykraft.errors import ConfigError

THREADS = "log.cleaner.threads"
DEDUPE_BUFFER_SIZE = "log.cleaner.dedupe.buffer.size"
LOAD_FACTOR = "log.cleaner.io.buffer.load.factor"
IO_BUFFER_SIZE = "log.cleaner.io.buffer.size"
IO_MAX_BYTES_PER_SECOND = "log.cleaner.io.max.bytes.per.second"
BACKOFF_MS = "log.cleaner.backoff.ms"
#: The keys a running broker re-reads from its dynamic configs (Kafka's
#: ``LogCleaner.RECONFIGURABLE_CONFIGS``, less ``message.max.bytes``, which pykraft's
#: cleaner needs not: it reads a batch larger than its buffer whole).
RECONFIGURABLE = (THREADS, DEDUPE_BUFFER_SIZE, LOAD_FACTOR, IO_BUFFER_SIZE,
                  IO_MAX_BYTES_PER_SECOND, BACKOFF_MS)
#: Bytes per offset map slot: an MD5 digest and an 8-byte offset (``SkimpyOffsetMap``).
BYTES_PER_ENTRY = 16 + 8
MAX_BUFFER_PER_THREAD = 2**31 - 1
#: Kafka's ``KafkaConfig`` requires more than this per thread, at start and when changed.
MIN_BUFFER = 1024 * 1024
#: Kafka's ``Throttler`` check interval for the cleaner (``"cleaner-io"``).
THROTTLE_CHECK_INTERVAL_MS = 300


class DedupeBufferTooSmallError(ConfigError):
    """1 MiB or less of dedupe buffer a thread: ``KafkaConfig`` refuses it (at start, and a
    dynamic change in the IncrementalAlterConfigs answer)."""


@dataclass(frozen=True, slots=True)
class CleanerConfig:
    """The cleaner's settings, Kafka's defaults."""

    threads: int = 1
    dedupe_buffer_size: int = 128 * 1024 * 1024
    load_factor: float = 0.9
    io_buffer_size: int = 512 * 1024
    max_io_bytes_per_second: float = 1.7976931348623157e308
    backoff_ms: int = 15_000

    @classmethod
    def from_layers(cls, *layers: Mapping[str, str]) -> CleanerConfig:
        """The settings of ``layers`` (the properties file, then the cluster default's
        dynamic configs, then this broker's: a later layer wins); a value that is no number
        is a :class:`ConfigError` naming its key."""
        merged: dict[str, str] = {}
        for layer in layers:
            merged.update((key, layer[key]) for key in RECONFIGURABLE if key in layer)
        default = cls()
        try:
            config = cls(
                threads=int(merged.get(THREADS, default.threads)),
                dedupe_buffer_size=int(merged.get(DEDUPE_BUFFER_SIZE,
                                                  default.dedupe_buffer_size)),
                load_factor=float(merged.get(LOAD_FACTOR, default.load_factor)),
                io_buffer_size=int(merged.get(IO_BUFFER_SIZE, default.io_buffer_size)),
                max_io_bytes_per_second=float(merged.get(IO_MAX_BYTES_PER_SECOND,
                                                         default.max_io_bytes_per_second)),
                backoff_ms=int(merged.get(BACKOFF_MS, default.backoff_ms)))
        except ValueError as exc:
            raise ConfigError(f"log cleaner config: {exc}") from exc
        if config.threads > 0 and config.dedupe_buffer_size // config.threads <= MIN_BUFFER:
            raise DedupeBufferTooSmallError("requirement failed: log.cleaner.dedupe.buffer.size "
                                            "must be at least 1MB per cleaner thread.")
        if config.threads > 0 and config.max_map_entries() < 1:
            raise ConfigError(
                "offset map is too small to fit in even a single message, so log cleaning "
                "will never make progress. You can increase log.cleaner.dedupe.buffer.size "
                "or decrease log.cleaner.threads")
        return config

    def map_slots(self) -> int:
        """A cleaner thread's offset map slots."""
        memory = min(self.dedupe_buffer_size // max(self.threads, 1), MAX_BUFFER_PER_THREAD)
        return memory // BYTES_PER_ENTRY

    def max_map_entries(self) -> int:
        """The keys a thread's map takes before it counts as full (Kafka's
        ``maxDesiredMapSize``); Kafka requires more than one."""
        slots = self.map_slots()
        return int(slots * self.load_factor) if slots * self.load_factor > 1 else 0

    def read_bytes(self) -> int:
        """A thread's read buffer: half of its share of ``log.cleaner.io.buffer.size``."""
        return max(self.io_buffer_size // max(self.threads, 1) // 2, 1)


KAFKA_DEFAULTS = CleanerConfig()


def check_reconfiguration(current: CleanerConfig, new: CleanerConfig) -> None:
    """Kafka's ``LogCleaner.validateReconfiguration``: the thread count may not drop below
    1 nor halve, nor more than double."""
    threads, now = new.threads, current.threads
    if threads < 1:
        raise ConfigError("Log cleaner threads should be at least 1")
    if threads < now // 2:
        raise ConfigError(
            f"Log cleaner threads cannot be reduced to less than half the current value {now}")
    if threads > now * 2:
        raise ConfigError(
            f"Log cleaner threads cannot be increased to more than double the current value "
            f"{now}")


class Throttler:
    """Kafka's ``Throttler`` (throttling down): bytes observed since the period began,
    and once a check interval has passed with some, the pause that brings the period's rate
    down to the desired one."""

    def __init__(self, rate_per_second: float, now_ms: int,
                 check_interval_ms: int = THROTTLE_CHECK_INTERVAL_MS) -> None:
        self.rate_per_second = rate_per_second
        self._check_interval_ms = check_interval_ms
        self._period_start_ms = now_ms
        self._observed = 0.0

    def observe(self, nbytes: int, now_ms: int) -> int:
        """Count ``nbytes``; the milliseconds to pause now (0: none). The next period
        starts after the pause."""
        self._observed += nbytes
        elapsed = now_ms - self._period_start_ms
        if elapsed <= self._check_interval_ms or self._observed <= 0:
            return 0
        pause = 0
        if self._observed * 1000 / elapsed > self.rate_per_second:
            pause = max(round(self._observed / (self.rate_per_second / 1000) - elapsed), 0)
        self._period_start_ms = now_ms + pause
        self._observed = 0.0
        return pause
