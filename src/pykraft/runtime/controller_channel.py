"""Requests from a node to the active controller (Kafka's controller channel manager):
a broker's registration and heartbeats, forwarded admin requests, a controller's own
registration.

The active controller is the metadata partition's leader, which the broker's observer core
already tracks; where it listens comes from the node (the voter set in the log, the static
voters, or the leader's endpoint a Fetch answer named), so a broker works with a static or a
dynamic quorum. A request with no known leader, or to a controller that cannot be reached,
fails with :class:`NetworkError` and the caller retries or answers the client with a
retriable error. One larger than ``max_request_bytes`` (the cluster's
``socket.request.max.bytes``: a forwarded request grows by the broker's header) fails with
:class:`RequestTooLargeError` unsent: the controller would close the connection on it. On
a TLS controller listener, ``tls`` is the node's client context; on a SASL one, ``sasl``
the node's credentials.
"""

from __future__ import annotations

import ssl
from collections.abc import Callable
from typing import Protocol

from pykraft.errors import NetworkError
from pykraft.protocol.api_versions import listener_ranges
from pykraft.protocol.apis import Listener
from pykraft.runtime.peers import PeerPool
from pykraft.runtime.sasl_client import SaslCredentials


class ControllerSender(Protocol):
    """What the broker's parts that ask the controller need of :class:`ControllerChannel`
    (the answer is any API's: each caller checks it is the one it asked for)."""

    async def send(self, body: object) -> object: ...


class ControllerChannel:
    """One connection per controller; :meth:`send` goes to the current leader."""

    def __init__(self, node_id: int, address_of: Callable[[int], tuple[str, int] | None],
                 active_controller: Callable[[], int | None], request_timeout_ms: int,
                 tls: ssl.SSLContext | None = None, sasl: SaslCredentials | None = None,
                 purpose: str | None = None, max_request_bytes: int | None = None) -> None:
        suffix = "" if purpose is None else f"-{purpose}"  # Kafka's channel names
        self._pool = PeerPool(client_id=f"broker-{node_id}-to-controller{suffix}",
                              ours=listener_ranges(Listener.CONTROLLER),
                              request_timeout_ms=request_timeout_ms, tls=tls,
                              sasl=sasl, max_request_bytes=max_request_bytes)
        self._address_of = address_of
        self._active = active_controller

    def active_id(self) -> int | None:
        return self._active()

    async def send(self, body: object, client_id: str | None = None) -> object:
        """The active controller's latest-version response to ``body`` (any version);
        ``client_id``: a forwarded request's client's."""
        leader = self._active()
        peer = None if leader is None else self._pool.get(leader, self._address_of(leader))
        if peer is None:
            raise NetworkError("no active controller is known yet")
        return await peer.send(body, client_id)

    def close(self) -> None:
        self._pool.close()
