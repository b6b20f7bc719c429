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

from pykraft.windowed_sum import WindowedSum


def java_round(value: float) -> int:
    """``Math.round``: halves round up (Python's ``round`` rounds them to even)."""
    return math.floor(value + 0.5)


class SampledRate(WindowedSum):
    """Kafka's ``Rate`` (per second) over a ``WindowedSum`` of ``samples`` windows."""

    __slots__ = ()

    def window_size_ms(self, now_ms: int) -> int:
        """The span the rate divides by: since the oldest retained sample started, at least
        ``samples - 1`` whole windows (and 1 ms)."""
        elapsed = now_ms - self.oldest_start_ms(now_ms)
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
