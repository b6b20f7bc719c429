"""A broker's client quotas (Kafka's ``QuotaFactory.QuotaManagers`` on a broker): the
produce and fetch byte rates checked on its client listeners, the quotas of its image.

Produce counts each request's size (``producer_byte_rate``); a consumer's Fetch its
answer's bytes (``consumer_byte_rate``), capped beforehand to what one answer may hold
without being throttled for certain, and answered empty when throttled (its bytes not
counted: :mod:`pykraft.broker.fetch`). A follower's Fetch is not a client's: replication
quotas are separate. A throttled client gets ``throttle_time_ms`` in its answer and its
connection muted for that long (:mod:`pykraft.runtime.channel_mute`). Quotas are keyed by
the session's principal name and the request's client id, as Kafka's default callback.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from pykraft.config.server import ServerConfig
from pykraft.image.image import MetadataImage
from pykraft.quota.manager import ClientQuotaManager
from pykraft.runtime.channel_mute import mute_for
from pykraft.security.session import Session


class BrokerQuotas:
    """The produce and fetch quota managers, with the quotas of the broker's current
    ``image`` (taken at each use: a check of identity while they do not change)."""

    def __init__(self, config: ServerConfig, clock_ms: Callable[[], int],
                 image: Callable[[], MetadataImage]) -> None:
        samples: int = config.get("quota.window.num")
        window_s: int = config.get("quota.window.size.seconds")
        self.produce = ClientQuotaManager("producer_byte_rate", samples, window_s)
        self.fetch = ClientQuotaManager("consumer_byte_rate", samples, window_s)
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
        throttle_ms = self.produce.record(session.principal.name, client_id or "", size,
                                          self.now_ms())
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
            mute_for(throttle_ms)
        return throttle_ms
