"""Kafka's ``TokenBucket`` (its metrics library), the measure of the controller mutation quota
(KIP-599): unlike the byte rates' sampled windows, a mutation may take a client below zero at
once, and the bucket refills at the quota's rate.

The bucket holds at most ``burst`` tokens (``samples * window_s * quota``: Kafka's
``controller.quota.window.num`` times ``controller.quota.window.size.seconds`` times the
``controller_mutation_rate``); it refills by ``quota`` a second, and a recording takes its
value away, possibly below zero. The quota is passed in at each use, as Kafka reads it from
the metric's config, so a quota changed later applies to the tokens already there. A new
bucket is full: Kafka's starts empty at time 0, which its first refill (at a wall clock's
now) fills.
"""

from __future__ import annotations


class TokenBucket:
    """The tokens of one client (per Kafka's quota metric tags)."""

    __slots__ = ("_last_ms", "_tokens")

    def __init__(self) -> None:
        self._tokens = 0.0
        self._last_ms: int | None = None

    def tokens(self, quota: float, burst: float, now_ms: int) -> float:
        """The tokens left at ``now_ms`` (Kafka's ``measure``): negative once a recording
        took more than there were."""
        self._refill(quota, burst, now_ms)
        return self._tokens

    def record(self, value: float, quota: float, burst: float, now_ms: int) -> None:
        """Take ``value`` tokens at ``now_ms``."""
        self._refill(quota, burst, now_ms)
        self._tokens = min(burst, self._tokens - value)

    def _refill(self, quota: float, burst: float, now_ms: int) -> None:
        if self._last_ms is None:
            self._tokens = burst
        else:
            self._tokens = min(burst, self._tokens + quota * (now_ms - self._last_ms) / 1000)
        self._last_ms = now_ms
