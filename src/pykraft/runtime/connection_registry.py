"""Every connection a node's listeners hold, on the event loop: accepting waits for a slot
(:mod:`pykraft.runtime.connection_quotas`), an idle connection is closed, and the open-file
limit is raised to its hard limit at start (what the JVM does for Kafka), so running out
of descriptors means refusing connections, never failing the node. The per-IP
``connection_creation_rate`` quotas (:mod:`pykraft.quota.connection_rate`) are kept per
side, as each of Kafka's socket servers keeps its own.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import resource
from collections.abc import Callable

from pykraft.image.client_quotas import ClientQuotasImage
from pykraft.quota.connection_rate import IpConnectionRates, canonical_ip
from pykraft.runtime.connection_quotas import (
    ConnectionLimits,
    ConnectionQuotas,
    CreationRate,
    IdleExpiry,
)
from pykraft.runtime.logfmt import event
from pykraft.runtime.sasl_client import monotonic_ms
from pykraft.runtime.waits import wait_set

log = logging.getLogger("pykraft.server")


def raise_open_files_limit() -> int | None:
    """Raise the soft RLIMIT_NOFILE to the hard limit (as far as the kernel allows);
    returns the soft limit in force (None: unlimited)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return None
    if soft < hard or hard == resource.RLIM_INFINITY:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            soft = hard
        except (ValueError, OSError):
            pass  # above the kernel's nr_open: keep the soft limit
    return None if soft == resource.RLIM_INFINITY else soft


class Connection:
    """One accepted connection, counted until :meth:`closed`."""

    __slots__ = ("_abort", "_registry", "ip", "key", "listener")

    def __init__(self, registry: ConnectionRegistry, key: int, listener: str, ip: str,
                 abort: Callable[[], None]) -> None:
        self._registry = registry
        self.key = key
        self.listener = listener
        self.ip = ip
        self._abort = abort

    def touch(self) -> None:
        """Bytes moved: the connection is not idle."""
        self._registry.touch(self)

    def abort_with(self, abort: Callable[[], None]) -> None:
        """Close through ``abort`` from now on (the connection's stream, once it has one)."""
        self._abort = abort

    def abort(self, reason: str) -> None:
        event(log, "connection_closed", level=logging.DEBUG, listener=self.listener,
              peer=self.ip, reason=reason)
        self._abort()

    def closed(self) -> None:
        self._registry.release(self)


class ConnectionRegistry:
    """The node's connections on all its listeners (one per process)."""

    def __init__(self, limits: ConnectionLimits | None = None, open_files: int | None = None,
                 clock: Callable[[], int] = monotonic_ms,
                 client_quotas: Callable[[], ClientQuotasImage] = ClientQuotasImage) -> None:
        self.limits = limits or ConnectionLimits()
        self.quotas = ConnectionQuotas(self.limits, open_files)
        self._idle: IdleExpiry[int] = IdleExpiry(self.limits.max_idle_ms)
        self._rate = CreationRate(self.limits)
        self._ip_rates = {side: IpConnectionRates(self.limits.quota_window_num,
                                                  self.limits.quota_window_size_s)
                          for side in ("broker", "controller")}
        self._client_quotas = client_quotas
        """The node's metadata image's client quotas (the ``ips`` entities'), as of now."""
        self._open: dict[int, Connection] = {}
        self._keys = itertools.count()
        self._clock = clock
        self._released = asyncio.Event()
        self._blocked: set[str] = set()
        self._reaper: asyncio.Task[None] | None = None

    def reconfigure(self, limits: ConnectionLimits) -> None:
        """New limits from dynamic configs (``max.connections*``, the creation rates): they
        hold for new connections (the creation rates kept so far), open ones stay, as in
        Kafka. The idle limit and the authentication delay are read-only keys and keep
        their start values."""
        self.limits = limits
        self.quotas.limits = limits
        self._rate.limits = limits
        event(log, "connection_limits_updated", max_connections=limits.max_connections,
              max_connections_per_ip=limits.per_ip,
              max_connection_creation_rate=limits.creation_rate)
        self._wake()

    @property
    def failed_authentication_delay_s(self) -> float:
        return self.limits.failed_authentication_delay_ms / 1000

    async def slot(self, listener: str) -> None:
        """Until ``listener`` may accept one more connection (logged when it must wait)."""
        while (limit := self.quotas.blocked(listener)) is not None:
            if listener not in self._blocked:
                self._blocked.add(listener)
                event(log, "connections_blocked", level=logging.WARNING, listener=listener,
                      limit=limit, connections=self.quotas.count(listener),
                      total=self.quotas.total)
            await self._released.wait()
        if listener in self._blocked:
            self._blocked.discard(listener)
            event(log, "connections_unblocked", listener=listener,
                  connections=self.quotas.count(listener), total=self.quotas.total)

    def creation_throttle_ms(self, listener: str) -> int:
        """A connection just accepted on ``listener``: how long its acceptor waits before
        going on, by the creation rates (0: at once)."""
        return self._rate.accepted(listener, self._clock())

    def ip_throttle_ms(self, listener: str, ip: str) -> int:
        """A connection just accepted from ``ip``: 0 when its address's creation rate
        allows it, else how long to hold it unread before closing it (Kafka's
        ``ConnectionThrottledException``; it no longer counts in the listener's and side's
        creation rates)."""
        now_ms = self._clock()
        rates = self._ip_rates[self.limits.side(listener)]
        rates.update(self._client_quotas())  # cheap while the image's quotas stay
        throttle_ms = rates.record(canonical_ip(ip), now_ms)
        if throttle_ms > 0:
            self._rate.taken_back(listener, now_ms)
        return throttle_ms

    @property
    def ip_throttled(self) -> int:
        """Connections throttled by their address's creation rate so far."""
        return sum(rates.throttled for rates in self._ip_rates.values())

    async def released(self, timeout_s: float) -> None:
        """Until a connection closes, at most ``timeout_s``."""
        await wait_set(self._released, timeout_s)

    def open(self, listener: str, ip: str, abort: Callable[[], None]) -> Connection | None:
        """Count a just-accepted connection; None when it must be closed at once (too many
        from its address, logged)."""
        refused = self.quotas.admit(listener, ip)
        if refused is not None:
            event(log, "connection_refused", level=logging.INFO, listener=listener, peer=ip,
                  reason=refused)
            return None
        connection = Connection(self, next(self._keys), listener, ip, abort)
        self._open[connection.key] = connection
        self._idle.touch(connection.key, self._clock())
        if self.quotas.over_side_limit(listener):
            self._evict_for(listener)
        self._start_reaper()
        return connection

    def touch(self, connection: Connection) -> None:
        if connection.key in self._open:
            self._idle.touch(connection.key, self._clock())

    def release(self, connection: Connection) -> None:
        if self._open.pop(connection.key, None) is None:
            return
        self._idle.remove(connection.key)
        self.quotas.release(connection.listener, connection.ip)
        self._wake()

    def _wake(self) -> None:
        """Let every listener waiting for a slot look again."""
        self._released.set()
        self._released = asyncio.Event()

    def _evict_for(self, listener: str) -> None:
        """Kafka's rule for the inter-broker listener beyond ``max.connections``: close the
        least recently active connection of another listener of the same side."""
        side = self.limits.side(listener)
        victim = self._idle.least_recent(
            lambda key: self._open[key].listener != listener
            and self.limits.side(self._open[key].listener) == side)
        if victim is not None:
            self._forget(victim).abort(f"max.connections reached: {listener} takes its slot")

    def _forget(self, key: int) -> Connection:
        """Stop counting a connection that is being closed here."""
        connection = self._open[key]
        self.release(connection)
        return connection

    def _start_reaper(self) -> None:
        if self._reaper is None:
            self._reaper = asyncio.get_running_loop().create_task(self._reap())

    async def _reap(self) -> None:
        """Close connections idle beyond ``connections.max.idle.ms``."""
        while True:
            now = self._clock()
            for key in self._idle.expired(now):
                self._forget(key).abort(
                    f"idle for more than connections.max.idle.ms={self.limits.max_idle_ms}")
            await asyncio.sleep((self._idle.next_check_ms(now) - now) / 1000)

    async def close(self) -> None:
        if self._reaper is not None:
            self._reaper.cancel()
            await asyncio.gather(self._reaper, return_exceptions=True)
            self._reaper = None
