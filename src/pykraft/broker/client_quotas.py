"""A broker's client quotas (Kafka's ``QuotaFactory.QuotaManagers`` on a broker): the
produce and fetch byte rates and the request quota checked on its client listeners, the
quotas of its image.

Produce counts each request's size (``producer_byte_rate``); a consumer's Fetch its
answer's bytes (``consumer_byte_rate``), capped beforehand to what one answer may hold
without being throttled for certain, and answered empty when throttled (its bytes not
counted: :mod:`pykraft.broker.fetch`). A follower's Fetch is not a client's: replication
quotas are separate. A throttled client gets ``throttle_time_ms`` in its answer and its
connection muted for that long (:mod:`pykraft.runtime.channel_mute`). Quotas are keyed by
the session's principal name and the request's client id, as Kafka's default callback.

``request_percentage`` is checked against each request's handler time
(:mod:`pykraft.runtime.handler_time`) when its answer is ready, as Kafka's
``sendResponseMaybeThrottle``: the answer carries the larger of its other throttle (a byte
quota's, the controller's for a forwarded request) and the request quota's. Exempt, as
Kafka's cluster actions, are the APIs only brokers and controllers send
(:data:`CLUSTER_ACTIONS`), a follower's Fetch, and an acks=0 Produce (never answered).

The throttle times given are kept per quota tags for Kafka's ``throttle-time`` metric (an
average over the quota windows, :class:`ThrottleTimes`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from pykraft.config.server import ServerConfig
from pykraft.image.image import MetadataImage
from pykraft.protocol.apis import ApiKey
from pykraft.quota.manager import ClientQuotaManager, ClientRequestQuotaManager
from pykraft.quota.resolution import Tags
from pykraft.runtime import handler_time
from pykraft.runtime.channel_mute import mute_for
from pykraft.security.session import Session
from pykraft.windowed_sum import WindowedSum

#: Kafka's ``ApiKeys.clusterAction`` APIs pykraft knows: exempt from the request quota.
CLUSTER_ACTIONS = frozenset({
    ApiKey.WRITE_TXN_MARKERS, ApiKey.VOTE, ApiKey.BEGIN_QUORUM_EPOCH,
    ApiKey.END_QUORUM_EPOCH, ApiKey.DESCRIBE_QUORUM, ApiKey.ALTER_PARTITION,
    ApiKey.UPDATE_FEATURES, ApiKey.ENVELOPE, ApiKey.BROKER_REGISTRATION,
    ApiKey.BROKER_HEARTBEAT, ApiKey.ALLOCATE_PRODUCER_IDS})


class BrokerQuotas:
    """The produce, fetch and request quota managers, with the quotas of the broker's
    current ``image`` (taken at each use: a check of identity while they do not change)."""

    def __init__(self, config: ServerConfig, clock_ms: Callable[[], int],
                 image: Callable[[], MetadataImage]) -> None:
        samples: int = config.get("quota.window.num")
        window_s: int = config.get("quota.window.size.seconds")
        self.produce = ClientQuotaManager("producer_byte_rate", samples, window_s)
        self.fetch = ClientQuotaManager("consumer_byte_rate", samples, window_s)
        self.request = ClientRequestQuotaManager(samples, window_s)
        self.produce_throttles = ThrottleTimes(self.produce)
        self.fetch_throttles = ThrottleTimes(self.fetch)
        self._clock_ms = clock_ms
        self._image = image

    def now_ms(self) -> int:
        """The clock, once the managers hold the image's quotas."""
        quotas = self._image().client_quotas
        for manager in (self.produce, self.fetch, self.request):
            manager.update(quotas)
        return self._clock_ms()

    def request_quota_enabled(self) -> bool:
        """Whether a ``request_percentage`` quota was ever set: the listeners measure each
        request's handler time from then on."""
        self.request.update(self._image().client_quotas)
        return self.request.enabled

    def throttle_request(self, api_key: int, client_id: str | None) -> int:
        """The request quota's throttle time for the request being served: its handler
        time so far recorded and the connection muted for it, once per request (a second
        call answers the first decision); 0 for a request not timed (outside a listener,
        or no request quota when it came) and for exempt APIs."""
        handler = handler_time.CURRENT.get()
        if handler is None or api_key in CLUSTER_ACTIONS:
            return 0
        if handler.throttle_ms is not None:
            return handler.throttle_ms
        now_ms = self.now_ms()
        manager = self.request
        user, client = handler.session.principal.name, client_id or ""
        spent_s = handler.so_far()
        throttle_ms = manager.record_time(user, client, spent_s, now_ms)
        handler.decided(throttle_ms, spent_s, lambda rest_s: manager.record_time_no_throttle(
            user, client, rest_s, self._clock_ms()))
        mute_for(throttle_ms)
        return throttle_ms

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
        """Record an answer of ``size`` bytes and the request's handler time; the larger
        throttle time, the bytes taken back and the connection muted when throttled (the
        answer is then sent empty), as KafkaApis' ``handleFetchRequest``."""
        request_ms = self.quotas.throttle_request(ApiKey.FETCH, self.client_id)
        manager, now = self.quotas.fetch, self.quotas.now_ms()
        bytes_ms = manager.record(self.user, self.client_id, size, now)
        throttle_ms = max(bytes_ms, request_ms)
        if throttle_ms > 0:
            manager.unrecord(self.user, self.client_id, size, now)
            if bytes_ms > request_ms:  # Kafka throttles through the quota of the longer time
                self.quotas.fetch_throttles.record(self.user, self.client_id, bytes_ms, now)
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
