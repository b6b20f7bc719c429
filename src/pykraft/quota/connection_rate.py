"""``connection_creation_rate`` per IP (KIP-612), as Kafka's ``ConnectionQuotas`` keeps it.

An ``ips`` entity's quota holds for its address, the default entity's (``ips=<default>``)
for every address without its own; without either an address is not limited (Kafka's
``IP_CONNECTION_RATE_DEFAULT``, Int.MaxValue). Each limited address has a rate of new
connections, Kafka's ``Rate`` over ``quota.window.num`` windows of
``quota.window.size.seconds`` (:class:`~pykraft.quota.rate.SampledRate`), idle an hour before
it is dropped. A connection that takes its address beyond the quota is not recorded (Kafka
un-records it) and is throttled: Kafka keeps the accepted socket, never reads it, and closes
it once the throttle time has passed (``ConnectionThrottledException``, the acceptor's
``DelayedCloseSocket``); the time is ``QuotaUtils.boundedThrottleTime``, at most one window.
A changed quota applies to the rate kept so far.
"""

from __future__ import annotations

import ipaddress

from pykraft.image.client_quotas import IP, ClientQuotasImage
from pykraft.quota.meters import ExpiringMeters
from pykraft.quota.rate import SampledRate

KEY = "connection_creation_rate"


def canonical_ip(text: str) -> str:
    """One spelling per address (``::1`` for ``0:0:0:0:0:0:0:1`` or ``[::1]``), as Kafka
    compares ``InetAddress`` values."""
    return str(ipaddress.ip_address(text.strip("[]")))


class IpConnectionRates:
    """The per-address connection creation quotas of an image and the rates they bound."""

    def __init__(self, samples: int, window_s: int) -> None:
        self.samples = samples
        self.window_ms = window_s * 1000
        self._image: ClientQuotasImage | None = None
        self._quotas: dict[str, float] = {}
        self._default: float | None = None
        self._rates: ExpiringMeters[str, SampledRate] = ExpiringMeters(
            lambda _now: SampledRate(samples, self.window_ms))
        self.throttled = 0
        """Connections throttled (closed unread after their throttle time)."""

    def update(self, image: ClientQuotasImage) -> None:
        """Take the ``ips`` quotas of an image (cheap when they did not change)."""
        if image is self._image:
            return
        self._image = image
        quotas: dict[str, float] = {}
        default = None
        for entity, values in image.entities.items():
            if KEY not in values or len(entity) != 1 or entity[0][0] != IP:
                continue
            name = entity[0][1]
            if name is None:
                default = values[KEY]
            else:
                quotas[canonical_ip(name)] = values[KEY]
        self._quotas, self._default = quotas, default

    def quota(self, ip: str) -> float | None:
        """The connections a second ``ip`` may open (None: not limited)."""
        return self._quotas.get(ip, self._default)

    def record(self, ip: str, now_ms: int) -> int:
        """A connection accepted from ``ip`` (canonical): 0 when it is within its quota
        (recorded), else how long to hold it unread before closing it (not recorded)."""
        bound = self.quota(ip)
        if bound is None:
            return 0
        rate = self._rates.get(ip, now_ms)
        rate.record(1, now_ms)
        throttle_ms = min(rate.throttle_time_ms(bound, now_ms), self.window_ms)
        if throttle_ms > 0:
            rate.record(-1, now_ms)
            self.throttled += 1
        return throttle_ms
