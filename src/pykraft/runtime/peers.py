"""Outbound connections to the other voters, one per peer, like KRaft's RaftManager.

Each peer gets one connection with at most one request in flight (the core already never
has two outstanding to one destination; the lock makes it a property of the transport too).
A failed connect, a hang-up, a protocol error or a request timeout closes the connection and
arms an exponential reconnect backoff; the next request waits that backoff out (bounded by
its timeout) and reconnects. The core is told about every failure and does its own retry.
A refused connection (and the backoff that follows it) raises :class:`PeerUnreachableError`,
so the node can tell the core the peer is down rather than slow. Peers on a TLS listener
are reached with the node's client context; a handshake the peer refuses (or whose
certificate we refuse), or a SASL authentication it refuses, is logged as a warning with its
reason, once per run of failures. A connection unused for Kafka's client
``connections.max.idle.ms`` (9 minutes, below the servers' 10) is closed before the next
request rather than sent on and found closed by the peer's idle expiry.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
import time
from collections.abc import Callable
from typing import Any

from pykraft.errors import NetworkError, PeerUnreachableError, UnsupportedVersionError
from pykraft.protocol.api_versions import VersionRanges
from pykraft.runtime.backoff import ExponentialBackoff
from pykraft.runtime.kafka_client import CONNECTION_ERRORS, ClientConnection
from pykraft.runtime.sasl_client import SaslClientError, SaslCredentials

log = logging.getLogger(__name__)
#: Kafka's client ``connections.max.idle.ms``: below the broker's 10 minutes, so a client
#: drops an idle connection before the server does.
CLIENT_MAX_IDLE_S = 540.0


class PeerConnection:
    """Requests to one peer with reconnects, backoff and a per-request timeout."""

    def __init__(
        self, peer_id: int, host: str, port: int, *, client_id: str, ours: VersionRanges,
        request_timeout_ms: int, backoff: ExponentialBackoff | None = None,
        clock: Callable[[], float] = time.monotonic,
        opener: Callable[[str, int], Any] | None = None, tls: ssl.SSLContext | None = None,
        sasl: SaslCredentials | None = None, max_request_bytes: int | None = None,
    ) -> None:
        self.peer_id = peer_id
        self.host = host
        self.port = port
        self._client_id = client_id
        self._ours = ours
        self._timeout_s = request_timeout_ms / 1000
        self._backoff = backoff or ExponentialBackoff()
        self._clock = clock
        self._opener = opener or self._open
        self._tls = tls
        self._sasl = sasl
        self._max_request_bytes = max_request_bytes
        self._tls_failing = False
        self._connection: ClientConnection | None = None
        self._last_used = 0.0
        self._reconnect_at = 0.0
        self._refused = False
        self._lock = asyncio.Lock()
        self.connects = 0
        self.failures = 0

    @property
    def connected(self) -> bool:
        return self._connection is not None

    async def send(self, body: Any, client_id: str | None = None) -> Any:
        """One request/response exchange (``client_id``: see :meth:`ClientConnection.request`);
        raises :class:`NetworkError` on any failure, and :class:`UnsupportedVersionError`,
        the connection kept, for an API the peer does not speak (as Kafka's NetworkClient)."""
        async with self._lock:
            deadline = self._clock() + self._timeout_s
            try:
                connection = await self._ready_connection(deadline)
                # asyncio.timeout, unlike 3.11's wait_for, runs the request in this task
                # instead of a new one: one loop iteration less per exchange.
                async with asyncio.timeout(max(0.0, deadline - self._clock())):
                    return await connection.request(body, client_id)
            except UnsupportedVersionError:  # nothing was sent: the connection is sound
                raise
            except CONNECTION_ERRORS as exc:
                self._fail(exc)
                if isinstance(exc, NetworkError):
                    raise
                error = PeerUnreachableError if self._refused else NetworkError
                raise error(f"request to node {self.peer_id} failed: "
                            f"{type(exc).__name__}: {exc}") from exc

    async def _ready_connection(self, deadline: float) -> ClientConnection:
        now = self._clock()
        if self._connection is not None and now - self._last_used > CLIENT_MAX_IDLE_S:
            self.close()
        self._last_used = now
        if self._connection is not None:
            return self._connection
        wait = self._reconnect_at - self._clock()
        if wait > 0:
            if self._clock() + wait >= deadline:
                error = PeerUnreachableError if self._refused else NetworkError
                raise error(f"node {self.peer_id} is in reconnect backoff")
            await asyncio.sleep(wait)
        remaining = max(0.0, deadline - self._clock())
        async with asyncio.timeout(remaining):  # not wait_for: see pykraft.runtime.waits
            connection: ClientConnection = await self._opener(self.host, self.port)
        self._connection = connection
        self._tls_failing = False
        self._backoff.reset()
        self.connects += 1
        log.info("connected", extra={"fields": {"peer": self.peer_id,
                                                "address": f"{self.host}:{self.port}"}})
        return connection

    async def _open(self, host: str, port: int) -> ClientConnection:
        return await ClientConnection.open(host, port, client_id=self._client_id,
                                           ours=self._ours, tls=self._tls, sasl=self._sasl,
                                           max_request_bytes=self._max_request_bytes)

    def _fail(self, error: BaseException) -> None:
        self.failures += 1
        if isinstance(error, ssl.SSLError) and not self._tls_failing:
            self._tls_failing = True
            log.warning("SSL handshake failed", extra={"fields": {
                "peer": self.peer_id, "address": f"{self.host}:{self.port}",
                "reason": error.reason or str(error)}})
        if isinstance(error, SaslClientError) and not self._tls_failing:
            self._tls_failing = True
            log.warning("SASL authentication failed", extra={"fields": {
                "peer": self.peer_id, "address": f"{self.host}:{self.port}", "reason": str(error)}})
        self._refused = isinstance(error, ConnectionRefusedError | PeerUnreachableError)
        if self._connection is not None:
            self._connection.close()
            self._connection = None
        delay_ms = self._backoff.next_delay_ms()
        self._reconnect_at = self._clock() + delay_ms / 1000
        log.debug("peer request failed", extra={"fields": {
            "peer": self.peer_id, "error": f"{type(error).__name__}: {error}",
            "backoff_ms": delay_ms}})

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None


class PeerPool:
    """One :class:`PeerConnection` per destination, replaced when its address moves (a
    voter back with new endpoints, a replica id reused by a new controller)."""

    def __init__(self, *, client_id: str, ours: VersionRanges, request_timeout_ms: int,
                 tls: ssl.SSLContext | None = None, sasl: SaslCredentials | None = None,
                 max_request_bytes: int | None = None) -> None:
        self._client_id = client_id
        self._tls = tls
        self._sasl = sasl
        self._max_request_bytes = max_request_bytes
        self._ours = ours
        self._request_timeout_ms = request_timeout_ms
        self.peers: dict[int, PeerConnection] = {}

    def get(self, destination: int, address: tuple[str, int] | None) -> PeerConnection | None:
        """The connection to ``destination`` at ``address`` (None: nobody knows where)."""
        current = self.peers.get(destination)
        if address is None:
            return None
        if current is not None and (current.host, current.port) == address:
            return current
        if current is not None:
            current.close()
        self.peers[destination] = PeerConnection(
            destination, *address, client_id=self._client_id, ours=self._ours,
            request_timeout_ms=self._request_timeout_ms, tls=self._tls, sasl=self._sasl,
            max_request_bytes=self._max_request_bytes)
        return self.peers[destination]

    def close(self) -> None:
        for peer in self.peers.values():
            peer.close()
