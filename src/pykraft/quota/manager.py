"""Kafka's client quota managers, sans-I/O: one per quota key, each keeping a rate per
(user, client id) tags (:mod:`pykraft.quota.resolution`) and answering how long to throttle.

``producer_byte_rate`` counts each Produce request's bytes, ``consumer_byte_rate`` each
consumer Fetch response's (:class:`ClientQuotaManager`), ``request_percentage`` each
request's handler time (:class:`ClientRequestQuotaManager`); ``controller_mutation_rate``
is the controller's, a token bucket per client (:mod:`pykraft.quota.mutation`). Nothing
is recorded for a key no entity ever set (Kafka's ``quotasEnabled``); a rate whose tags no
entity covers is recorded but never throttled, so a quota set later finds its history.
A rate idle for an hour is dropped, as Kafka expires its quota sensors.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

from pykraft.image.client_quotas import ClientQuotasImage
from pykraft.quota.meters import ExpiringMeters
from pykraft.quota.rate import SampledRate
from pykraft.quota.resolution import Level, QuotaResolver, Tags, level_of

M = TypeVar("M")


class _QuotaKey(Generic[M]):
    """The entities of one quota key, the levels ever enabled, and a meter per tags
    (made by ``new_meter``), idle ones dropped."""

    def __init__(self, key: str, new_meter: Callable[[int], M]) -> None:
        self.key = key
        self._image: ClientQuotasImage | None = None
        self.resolver = QuotaResolver({}, Level.NONE)
        self._meters: ExpiringMeters[Tags, M] = ExpiringMeters(new_meter)
        self.throttled = 0
        """How many times a client was throttled (or refused) on this key."""
        self.throttle_ms = 0
        """Their throttle times, summed."""

    def update(self, image: ClientQuotasImage) -> None:
        """Take the quotas of an image (cheap when they did not change)."""
        if image is self._image:
            return
        self._image = image
        quotas = {entity: values[self.key] for entity, values in image.entities.items()
                  if self.key in values}
        levels = self.resolver.levels
        for entity in quotas:
            levels |= level_of(entity)
        self.resolver = QuotaResolver(quotas, levels)

    @property
    def enabled(self) -> bool:
        return self.resolver.levels != Level.NONE

    def meter(self, tags: Tags, now_ms: int) -> M:
        """The meter of ``tags``, made on first use."""
        return self._meters.get(tags, now_ms)

    def meters(self) -> dict[Tags, M]:
        """The meter of each tags recorded lately (Kafka's quota sensors)."""
        return self._meters.current()

    def counted(self, throttle_ms: int) -> int:
        if throttle_ms > 0:
            self.throttled += 1
            self.throttle_ms += throttle_ms
        return throttle_ms


class ClientQuotaManager(_QuotaKey[SampledRate]):
    """A rate quota (bytes or request time a second) of ``key`` over ``samples`` windows
    of ``window_s``; ``max_throttle_ms`` caps a throttle (the request quota's: one window,
    Kafka's ``boundedThrottleTime``)."""

    def __init__(self, key: str, samples: int, window_s: int,
                 max_throttle_ms: int | None = None) -> None:
        super().__init__(key, lambda _now: SampledRate(samples, window_s * 1000))
        self.samples = samples
        self.window_s = window_s
        self._max_throttle_ms = max_throttle_ms

    def record(self, user: str, client_id: str, value: float, now_ms: int) -> int:
        """Record ``value`` for the client; how long to throttle it (0: within its quota).
        Kafka's ``maybeRecordAndGetThrottleTimeMs``."""
        if not self.enabled:
            return 0
        tags = self.resolver.tags(user, client_id)
        rate = self.meter(tags, now_ms)
        rate.record(value, now_ms)
        bound = self.resolver.limit(tags)
        if bound is None:
            return 0
        throttle_ms = rate.throttle_time_ms(bound, now_ms)
        if self._max_throttle_ms is not None:
            throttle_ms = min(throttle_ms, self._max_throttle_ms)
        return self.counted(throttle_ms)

    def record_no_throttle(self, user: str, client_id: str, value: float,
                           now_ms: int) -> None:
        """Record ``value`` without a throttle decision (Kafka's ``recordNoThrottle``)."""
        if self.enabled:
            self.meter(self.resolver.tags(user, client_id), now_ms).record(value, now_ms)

    def unrecord(self, user: str, client_id: str, value: float, now_ms: int) -> None:
        """Take back a recorded ``value`` (a throttled Fetch answers no records)."""
        self.record_no_throttle(user, client_id, -value, now_ms)

    def max_value_in_window(self, user: str, client_id: str) -> float | None:
        """Kafka's ``getMaxValueInQuotaWindow``: the most one recording may hold without
        being throttled for certain (``samples - 1`` windows at the quota); None without a
        quota. A consumer's Fetch is capped to it, else it would never be answered."""
        if not self.enabled:
            return None
        bound = self.resolver.limit(self.resolver.tags(user, client_id))
        return None if bound is None else bound * (self.samples - 1) * self.window_s


#: Kafka's ``NanosToPercentagePerSecond``, per second: a second of handler time is 100 %
#: of one thread for a second.
PERCENT_PER_SECOND = 100.0


class ClientRequestQuotaManager(ClientQuotaManager):
    """Kafka's ``ClientRequestQuotaManager``: ``request_percentage`` over handler time, in
    percent of one thread (its rate: percent-seconds a second), a throttle capped at one
    window (``boundedThrottleTime``). Kafka's metrics of it: ``request-time`` and
    ``throttle-time`` in group ``Request`` by user and client-id."""

    def __init__(self, samples: int, window_s: int) -> None:
        super().__init__("request_percentage", samples, window_s,
                         max_throttle_ms=window_s * 1000)

    def record_time(self, user: str, client_id: str, seconds: float, now_ms: int) -> int:
        """Record ``seconds`` of handler time; the throttle time (Kafka's
        ``maybeRecordAndGetThrottleTimeMs``)."""
        return self.record(user, client_id, seconds * PERCENT_PER_SECOND, now_ms)

    def record_time_no_throttle(self, user: str, client_id: str, seconds: float,
                                now_ms: int) -> None:
        """Record ``seconds`` spent after the throttle decision (Kafka's network thread
        time): it counts against later requests."""
        self.record_no_throttle(user, client_id, seconds * PERCENT_PER_SECOND, now_ms)
