"""A broker's client quotas (Kafka's ``QuotaFactory.QuotaManagers`` on a broker): the
produce and fetch byte rates checked on its client listeners, the quotas of its image.

Produce counts each request's size (``producer_byte_rate``); a consumer's Fetch its
answer's bytes (``consumer_byte_rate``), capped beforehand to what one answer may hold
without being throttled for certain, and answered empty when throttled (its bytes not
counted: :mod:`pykraft.broker.fetch`). A follower's Fetch is not a client's: replication
quotas are separate. A throttled client gets ``throttle_time_ms`` in its answer and its
connection muted for that long (:mod:`pykraft.runtime.channel_mute`). Quotas are keyed by
the session's principal name and the request's client id, as Kafka's default callback.

The throttle times given are kept per quota tags for Kafka's ``throttle-time`` metric (an
average over the quota windows, :class:`ThrottleTimes`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from pykraft.config.server import ServerConfig
from pykraft.image.image import MetadataImage
from pykraft.quota.manager import ClientQuotaManager
from pykraft.quota.resolution import Tags
from pykraft.runtime.channel_mute import mute_for
from pykraft.security.session import Session
from pykraft.windowed_sum import WindowedSum


class BrokerQuotas:
    """The produce and fetch quota managers, with the quotas of the broker's current
    ``image`` (taken at each use: a check of identity while they do not change)."""

    def __init__(self, config: ServerConfig, clock_ms: Callable[[], int],
                 image: Callable[[], MetadataImage]) -> None:
        samples: int = config.get("quota.window.num")
        window_s: int = config.get("quota.window.size.seconds")
        self.produce = ClientQuotaManager("producer_byte_rate", samples, window_s)
        self.fetch = ClientQuotaManager("consumer_byte_rate", samples, window_s)
        self.produce_throttles = ThrottleTimes(self.produce)
        self.fetch_throttles = ThrottleTimes(self.fetch)
        self._clock_ms = clock_ms
        self._image = image

    def now_ms(self) -> int:
        """The clock, once the managers hold the image's quotas."""
        quotas = self._image().client_quotas
        for manager in (self.produce, self.fetch):
            manager.update(quotas)
        return self._clock_ms()

    def throttle_produce(self, session: Session, client_id: str | None, size: int) -> int:
        """Record a Produce request of ``size`` bytes; its throttle time (the connection
        muted for it already)."""
        user, now = session.principal.name, self.now_ms()
        throttle_ms = self.produce.record(user, client_id or "", size, now)
        self.produce_throttles.record(user, client_id or "", throttle_ms, now)
        mute_for(throttle_ms)
        return throttle_ms

    def fetch_quota(self, session: Session, client_id: str | None) -> ConsumerQuota:
        return ConsumerQuota(self, session.principal.name, client_id or "")


@dataclass(frozen=True, slots=True)
class ConsumerQuota:
    """One consumer Fetch's view of its client's ``consumer_byte_rate``."""

    quotas: BrokerQuotas
    user: str
    client_id: str

    def max_bytes(self) -> int | None:
        """The most the answer may hold (None: no quota): more would always be throttled."""
        self.quotas.now_ms()
        cap = self.quotas.fetch.max_value_in_window(self.user, self.client_id)
        return None if cap is None else int(min(cap, 2**31 - 1))

    def throttle(self, size: int) -> int:
        """Record an answer of ``size`` bytes; its throttle time, the bytes taken back and
        the connection muted when throttled (the answer is then sent empty)."""
        manager, now = self.quotas.fetch, self.quotas.now_ms()
        throttle_ms = manager.record(self.user, self.client_id, size, now)
        if throttle_ms > 0:
            manager.unrecord(self.user, self.client_id, size, now)
            self.quotas.fetch_throttles.record(self.user, self.client_id, throttle_ms, now)
            mute_for(throttle_ms)
        return throttle_ms


class ThrottleTimes:
    """The throttle times of one quota manager's clients, per quota tags, over its windows:
    Kafka's ``throttle-time`` sensor (an ``Avg``, recorded only for a throttled request).
    Tags the manager no longer meters are dropped with it."""

    def __init__(self, manager: ClientQuotaManager) -> None:
        self._manager = manager
        self._sums: dict[Tags, tuple[WindowedSum, WindowedSum]] = {}

    def record(self, user: str, client_id: str, throttle_ms: int, now_ms: int) -> None:
        if throttle_ms <= 0:
            return
        manager = self._manager
        tags = manager.resolver.tags(user, client_id)
        sums = self._sums.get(tags)
        if sums is None:
            window_ms = manager.window_s * 1000
            sums = self._sums[tags] = (WindowedSum(manager.samples, window_ms),
                                       WindowedSum(manager.samples, window_ms))
        sums[0].record(throttle_ms, now_ms)
        sums[1].record(1, now_ms)

    def averages(self, now_ms: int) -> dict[Tags, float]:
        """Each metered tags' average throttle time (NaN when none was throttled in the
        windows, as Kafka's ``Avg``)."""
        metered = self._manager.meters()
        self._sums = {tags: sums for tags, sums in self._sums.items() if tags in metered}
        averages = {}
        for tags in metered:
            sums = self._sums.get(tags)
            throttled = sums[1].total(now_ms) if sums is not None else 0.0
            averages[tags] = (sums[0].total(now_ms) / throttled
                              if sums is not None and throttled else math.nan)
        return averages
