"""How many connections a node holds, and which it closes: Kafka's ``ConnectionQuotas`` and
the ``Selector``'s idle expiry, sans-I/O (counts and times in, verdicts out).

A node has two sides, as Kafka's KRaft process has two socket servers: the controller
listeners and the broker's client listeners. ``max.connections`` caps each side, and
``listener.name.<name>.max.connections`` each listener; a listener at a cap blocks: the
server stops accepting (the connection waits in the kernel's backlog) until one closes.
The inter-broker listener of a broker with several listeners is exempt from the side-wide
cap, as in Kafka, and a connection it takes beyond that cap evicts the least recently active
client connection. ``max.connections.per.ip`` (``max.connections.per.ip.overrides``: ``host:
count,...``) closes a connection beyond its address's count at once.
``max.connection.creation.rate`` (per side, the inter-broker listener exempt) and
``listener.name.<name>.max.connection.creation.rate`` throttle accepting to that many new
connections a second, measured as Kafka measures them (:class:`CreationRate`).

Beyond Kafka, the process's open-file limit bounds every side together: connections may
take all descriptors but a reserve for log segments, indexes, snapshots and the node's own
outgoing connections (:func:`open_files_reserve`). Internal listeners (the controller
listeners and the inter-broker listener) may use half of that reserve, so a flood of client
connections never cuts a broker off its controller.
"""

from __future__ import annotations

import collections
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from pykraft.quota.rate import SampledRate

#: Kafka's default for every connection count: Int.MaxValue, no limit.
UNLIMITED = 2**31 - 1
#: The least the reserve of open files keeps for the node's own files.
MIN_OPEN_FILES_RESERVE = 64
K = TypeVar("K", bound=Hashable)


def open_files_reserve(open_files: int) -> int:
    """Descriptors kept from connections under an open-file limit of ``open_files``: an
    eighth, at least :data:`MIN_OPEN_FILES_RESERVE` (a broker's segments and indexes grow
    with its partitions, which the limit must still cover)."""
    return max(MIN_OPEN_FILES_RESERVE, open_files // 8)


@dataclass(frozen=True, slots=True)
class ConnectionLimits:
    """A node's connection settings, from Kafka's keys (see the module docstring)."""

    max_connections: int = UNLIMITED
    listener_max: Mapping[str, int] = field(default_factory=dict)
    """``listener.name.<name>.max.connections`` by upper-case listener name."""
    per_ip: int = UNLIMITED
    per_ip_overrides: Mapping[str, int] = field(default_factory=dict)
    """Address -> count (host names resolved when the settings load)."""
    max_idle_ms: int = 600_000
    """``connections.max.idle.ms`` (above the delay below, as Kafka requires)."""
    failed_authentication_delay_ms: int = 100
    controller_listeners: frozenset[str] = frozenset()
    protected_listener: str | None = None
    """The inter-broker listener, when the broker has more than one (Kafka's rule)."""
    creation_rate: int = UNLIMITED
    """``max.connection.creation.rate``: new connections a second, per side."""
    listener_creation_rate: Mapping[str, int] = field(default_factory=dict)
    quota_window_num: int = 11
    quota_window_size_s: int = 1
    """``quota.window.*``: the windows of the per-IP ``connection_creation_rate`` quotas."""

    def side(self, listener: str) -> str:
        return "controller" if listener in self.controller_listeners else "broker"

    def internal(self, listener: str) -> bool:
        return listener in self.controller_listeners or listener == self.protected_listener

    def ip_limit(self, ip: str) -> int:
        return self.per_ip_overrides.get(ip, self.per_ip)


class ConnectionQuotas:
    """The node's open connections by listener, side and address, checked against
    :class:`ConnectionLimits` and the open-file limit (None: not bounded)."""

    def __init__(self, limits: ConnectionLimits, open_files: int | None = None) -> None:
        self.limits = limits
        self.fd_cap: int | None = None
        self._internal_fd_cap: int | None = None
        if open_files is not None:
            reserve = open_files_reserve(open_files)
            self.fd_cap = max(0, open_files - reserve)
            self._internal_fd_cap = max(0, open_files - reserve // 2)
        self._listeners: collections.Counter[str] = collections.Counter()
        self._sides: collections.Counter[str] = collections.Counter()
        self._ips: collections.Counter[str] = collections.Counter()
        self.total = 0

    def count(self, listener: str) -> int:
        return self._listeners[listener]

    def blocked(self, listener: str) -> str | None:
        """The limit that keeps ``listener`` from accepting now (its key), or None."""
        limits = self.limits
        if self._listeners[listener] >= limits.listener_max.get(listener, UNLIMITED):
            return f"listener.name.{listener.lower()}.max.connections"
        if (listener != limits.protected_listener
                and self._sides[limits.side(listener)] >= limits.max_connections):
            return "max.connections"
        cap = self._internal_fd_cap if limits.internal(listener) else self.fd_cap
        if cap is not None and self.total >= cap:
            return "open files (RLIMIT_NOFILE)"
        return None

    def admit(self, listener: str, ip: str) -> str | None:
        """Count a connection just accepted; the reason to close it at once instead
        (``max.connections.per.ip``), when it is one too many from ``ip``."""
        limit = self.limits.ip_limit(ip)
        if self._ips[ip] >= limit:
            return f"Too many connections from /{ip} (maximum = {limit})"
        self._listeners[listener] += 1
        self._sides[self.limits.side(listener)] += 1
        self._ips[ip] += 1
        self.total += 1
        return None

    def release(self, listener: str, ip: str) -> None:
        """A counted connection closed."""
        for counter, key in ((self._listeners, listener),
                             (self._sides, self.limits.side(listener)), (self._ips, ip)):
            counter[key] -= 1
            if counter[key] <= 0:
                del counter[key]
        self.total -= 1

    def over_side_limit(self, listener: str) -> bool:
        """Whether ``listener``'s side holds more than ``max.connections`` (only the
        exempt inter-broker listener takes it there): Kafka then closes the least recently
        used connection of another listener."""
        return self._sides[self.limits.side(listener)] > self.limits.max_connections


class CreationRate:
    """Kafka's connection creation rates (``ConnectionQuotas.recordConnectionAndGetThrottle
    TimeMs``): each accepted connection is recorded in its listener's rate and, but on the
    inter-broker listener, in its side's; beyond ``listener.name.<name>.max.connection.
    creation.rate`` or ``max.connection.creation.rate`` the acceptor waits the longer
    throttle time (at most one window, ``QuotaUtils.boundedThrottleTime``) before it goes on
    with the connection and accepts the next. The rates are Kafka's windowed ``Rate`` over
    ``quota.window.*`` (a burst of ``num - 1`` windows at the rate passes first); a changed
    limit applies to the rate kept so far, as Kafka updates its sensors' quotas."""

    def __init__(self, limits: ConnectionLimits) -> None:
        self.limits = limits
        self._window_ms = limits.quota_window_size_s * 1000
        self._rates: dict[tuple[str, str], SampledRate] = {}

    def _of(self, listener: str) -> list[tuple[SampledRate, int]]:
        """The rates a connection on ``listener`` counts in, with their limits."""
        limits = self.limits
        keys = [(("listener", listener), limits.listener_creation_rate.get(listener, UNLIMITED))]
        if listener != limits.protected_listener:
            keys.append((("side", limits.side(listener)), limits.creation_rate))
        found = []
        for key, bound in keys:
            rate = self._rates.get(key)
            if rate is None:
                rate = self._rates[key] = SampledRate(limits.quota_window_num, self._window_ms)
            found.append((rate, bound))
        return found

    def accepted(self, listener: str, now_ms: int) -> int:
        """Record a connection accepted on ``listener``; how long the acceptor waits."""
        throttle_ms = 0
        for rate, bound in self._of(listener):
            rate.record(1, now_ms)
            throttle_ms = max(throttle_ms, self._window_ms if bound == 0
                              else rate.throttle_time_ms(bound, now_ms))
        return min(throttle_ms, self._window_ms)

    def taken_back(self, listener: str, now_ms: int) -> None:
        """A recorded connection refused after all (its address is over its own rate)."""
        for rate, _ in self._of(listener):
            rate.record(-1, now_ms)


class IdleExpiry(Generic[K]):
    """Connections by last activity, oldest first (Kafka's ``IdleExpiryManager``)."""

    def __init__(self, max_idle_ms: int) -> None:
        self.max_idle_ms = max_idle_ms
        self._last: collections.OrderedDict[K, int] = collections.OrderedDict()

    def __len__(self) -> int:
        return len(self._last)

    def touch(self, key: K, now_ms: int) -> None:
        self._last[key] = now_ms
        self._last.move_to_end(key)

    def remove(self, key: K) -> None:
        self._last.pop(key, None)

    def expired(self, now_ms: int) -> list[K]:
        """The connections idle longer than ``connections.max.idle.ms``, oldest first."""
        found = []
        for key, last in self._last.items():
            if now_ms - last <= self.max_idle_ms:
                break
            found.append(key)
        return found

    def next_check_ms(self, now_ms: int) -> int:
        """When the oldest connection expires if nothing happens on it."""
        oldest = next(iter(self._last.values()), now_ms)
        return max(now_ms, oldest + self.max_idle_ms + 1)

    def least_recent(self, eligible: Callable[[K], bool]) -> K | None:
        return next((key for key in self._last if eligible(key)), None)
