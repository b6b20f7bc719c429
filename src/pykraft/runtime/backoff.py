"""Kafka's ``ExponentialBackoff`` (reconnect.backoff.ms 50 -> reconnect.backoff.max.ms).

``initial * 2^failures`` capped at ``maximum``, with +-20% jitter so that peers restarting
together do not reconnect in lockstep.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

RECONNECT_BACKOFF_MS = 50
RECONNECT_BACKOFF_MAX_MS = 500
JITTER = 0.2


@dataclass(slots=True)
class ExponentialBackoff:
    initial_ms: int = RECONNECT_BACKOFF_MS
    maximum_ms: int = RECONNECT_BACKOFF_MAX_MS
    jitter: float = JITTER
    rng: random.Random = field(default_factory=random.Random)
    failures: int = 0

    def next_delay_ms(self) -> int:
        """Record one more failure and return how long to wait before the next attempt."""
        exponent = min(self.failures, 30)
        self.failures += 1
        base = min(self.maximum_ms, self.initial_ms * (2 ** exponent))
        spread = base * self.jitter
        return max(0, int(base + self.rng.uniform(-spread, spread)))

    def reset(self) -> None:
        self.failures = 0
