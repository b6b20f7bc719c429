"""Meters kept per key and dropped once idle, as Kafka expires its quota sensors."""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

#: Kafka's ``InactiveSensorExpirationTimeSeconds``, the ip connection rates' too.
INACTIVE_EXPIRY_MS = 3_600_000
#: How often idle meters are looked for.
_SWEEP_EVERY_MS = 60_000
K = TypeVar("K", bound=Hashable)
M = TypeVar("M")


class ExpiringMeters(Generic[K, M]):
    """A meter per key, made by ``new_meter`` on first use, dropped after an hour unused."""

    def __init__(self, new_meter: Callable[[int], M]) -> None:
        self._new_meter = new_meter
        self._meters: dict[K, tuple[M, list[int]]] = {}
        self._swept_ms = 0

    def get(self, key: K, now_ms: int) -> M:
        """The meter of ``key``, made on first use (idle ones swept first, now and then)."""
        if now_ms - self._swept_ms >= _SWEEP_EVERY_MS:
            self._swept_ms = now_ms
            self._meters = {each: entry for each, entry in self._meters.items()
                            if now_ms - entry[1][0] < INACTIVE_EXPIRY_MS}
        entry = self._meters.get(key)
        if entry is None:
            entry = self._meters[key] = (self._new_meter(now_ms), [now_ms])
        entry[1][0] = now_ms
        return entry[0]

    def current(self) -> dict[K, M]:
        """Every meter kept (used within the hour)."""
        return {key: entry[0] for key, entry in self._meters.items()}
