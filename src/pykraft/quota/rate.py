"""The measure Kafka's client quotas are checked against, as its metrics library keeps it.

:class:`SampledRate` is ``Rate`` over a ``WindowedSum``: ``samples`` windows of
``window_ms`` each (``quota.window.num``, ``quota.window.size.seconds``), a sample
advancing when its window is over, one kept beyond ``samples`` for the window the oldest
overlaps, and a sample idle for ``samples`` windows reset. Its rate divides the retained sum
by the time since the oldest sample started, never less than ``samples - 1`` whole windows:
a client's first bytes are spread over that span, which is the burst Kafka lets through
before throttling.

The throttle time is ``QuotaUtils.throttleTime`` (how long without traffic brings the rate
back to the quota: ``(rate - quota) / quota * window``), rounded as Java's ``Math.round``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


def java_round(value: float) -> int:
    """``Math.round``: halves round up (Python's ``round`` rounds them to even)."""
    return math.floor(value + 0.5)


@dataclass(slots=True)
class _Sample:
    start_ms: int
    last_event_ms: int
    value: float = 0.0

    def reset(self, now_ms: int) -> None:
        self.start_ms = self.last_event_ms = now_ms
        self.value = 0.0


class SampledRate:
    """Kafka's ``Rate`` (per second) over a ``WindowedSum`` of ``samples`` windows."""

    __slots__ = ("_current", "_samples", "samples", "window_ms")

    def __init__(self, samples: int, window_ms: int) -> None:
        if samples < 1 or window_ms < 1:
            raise ValueError(f"a rate needs samples >= 1 and window_ms >= 1, "
                             f"not {samples} and {window_ms}")
        self.samples = samples
        self.window_ms = window_ms
        self._samples: list[_Sample] = []
        self._current = 0

    def record(self, value: float, now_ms: int) -> None:
        """Add ``value`` at ``now_ms`` (a negative one takes a recorded value back)."""
        sample = self._sample(now_ms)
        if now_ms - sample.start_ms >= self.window_ms:
            sample = self._advance(now_ms)
        sample.value += value
        sample.last_event_ms = now_ms

    def total(self, now_ms: int) -> float:
        """The retained samples' sum."""
        self._purge(now_ms)
        return sum(sample.value for sample in self._samples)

    def window_size_ms(self, now_ms: int) -> int:
        """The span the rate divides by: since the oldest retained sample started, at least
        ``samples - 1`` whole windows (and 1 ms)."""
        self._purge(now_ms)
        if not self._samples:
            self._samples.append(_Sample(now_ms, now_ms))
        elapsed = now_ms - min(sample.start_ms for sample in self._samples)
        full = elapsed // self.window_ms
        if full < self.samples - 1:
            elapsed += (self.samples - 1 - full) * self.window_ms
        return max(elapsed, 1)

    def measure(self, now_ms: int) -> float:
        """The rate per second at ``now_ms``."""
        return self.total(now_ms) / (self.window_size_ms(now_ms) / 1000)

    def throttle_time_ms(self, bound: float, now_ms: int) -> int:
        """``QuotaUtils.throttleTime``: 0 within ``bound``, else how long a pause brings
        the rate back to it."""
        rate = self.measure(now_ms)
        if rate <= bound:
            return 0
        return java_round((rate - bound) / bound * self.window_size_ms(now_ms))

    def _sample(self, now_ms: int) -> _Sample:
        if not self._samples:
            self._samples.append(_Sample(now_ms, now_ms))
        return self._samples[self._current]

    def _advance(self, now_ms: int) -> _Sample:
        self._current = (self._current + 1) % (self.samples + 1)
        if self._current >= len(self._samples):
            sample = _Sample(now_ms, now_ms)
            self._samples.append(sample)
            return sample
        sample = self._samples[self._current]
        sample.reset(now_ms)
        return sample

    def _purge(self, now_ms: int) -> None:
        """Reset the samples without an event for ``samples`` windows."""
        expire_ms = self.samples * self.window_ms
        for sample in self._samples:
            if now_ms - sample.last_event_ms >= expire_ms:
                sample.reset(now_ms)
