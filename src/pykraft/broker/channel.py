"""Requests from a broker to the active controller (Kafka's controller channel manager).

The active controller is the metadata partition's leader, which the broker's observer core
already tracks; a request with no known leader, or to a controller that cannot be reached,
fails with :class:`NetworkError` and the caller retries or answers the client with a
retriable error.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pykraft.config.server import VoterSpec
from pykraft.errors import NetworkError
from pykraft.protocol.api_versions import listener_ranges
from pykraft.protocol.apis import Listener
from pykraft.runtime.peers import PeerConnection


class ControllerChannel:
    """One connection per controller; :meth:`send` goes to the current leader."""

    def __init__(self, node_id: int, voters: tuple[VoterSpec, ...],
                 active_controller: Callable[[], int | None], request_timeout_ms: int) -> None:
        ranges = listener_ranges(Listener.CONTROLLER)
        self._peers = {
            voter.node_id: PeerConnection(voter.node_id, voter.host, voter.port,
                                          client_id=f"broker-{node_id}-to-controller",
                                          ours=ranges, request_timeout_ms=request_timeout_ms)
            for voter in voters
        }
        self._active = active_controller

    def active_id(self) -> int | None:
        return self._active()

    async def send(self, body: Any) -> Any:
        """The active controller's latest-version response to ``body`` (any version)."""
        leader = self._active()
        peer = None if leader is None else self._peers.get(leader)
        if peer is None:
            raise NetworkError("no active controller is known yet")
        return await peer.send(body)

    def close(self) -> None:
        for peer in self._peers.values():
            peer.close()
