"""Kafka's ``RequestManager``: the requests this replica has out, and when it may send again.

One request in flight per destination: a peer that has not answered is not asked again
until it answers, the request times out (``request_timeout_ms``), or the driver reports the
send failed; after a failure or a useless answer the destination backs off for
``retry_backoff_ms``. Correlation ids are this replica's own, so a late answer to a request
that already timed out is recognised and dropped.
"""

from __future__ import annotations

from dataclasses import dataclass

from pykraft.raft import rpc
from pykraft.raft.api import OutboundRequest


@dataclass(slots=True)
class InFlight:
    correlation_id: int
    request: rpc.RaftRequest
    deadline_ms: int


class RequestManager:
    """In-flight requests, retry backoff and correlation ids, by destination."""

    def __init__(self, request_timeout_ms: int, retry_backoff_ms: int) -> None:
        self._request_timeout_ms = request_timeout_ms
        self._retry_backoff_ms = retry_backoff_ms
        self.in_flight: dict[int, InFlight] = {}
        self._retry_at: dict[int, int] = {}
        self._next_correlation = 0
        self._outbox: list[OutboundRequest] = []

    def send(self, destination: int, request: rpc.RaftRequest, now_ms: int) -> None:
        """Queue ``request`` unless one is in flight to ``destination`` or it backs off."""
        if destination in self.in_flight or not self.is_ready(destination, now_ms):
            return
        self._next_correlation += 1
        self.in_flight[destination] = InFlight(self._next_correlation, request,
                                               now_ms + self._request_timeout_ms)
        self._outbox.append(OutboundRequest(destination, self._next_correlation, request))

    def is_ready(self, destination: int, now_ms: int) -> bool:
        """Not backing off (a request may still be in flight)."""
        return self._retry_at.get(destination, 0) <= now_ms

    def backoff(self, destination: int, now_ms: int) -> None:
        self._retry_at[destination] = now_ms + self._retry_backoff_ms

    def complete(self, destination: int, correlation_id: int) -> InFlight | None:
        """The request an answer (or a failure) is for, no longer in flight; None for a late
        answer to one that already timed out."""
        in_flight = self.in_flight.get(destination)
        if in_flight is None or in_flight.correlation_id != correlation_id:
            return None
        del self.in_flight[destination]
        return in_flight

    def expire(self, now_ms: int) -> None:
        """Requests past their deadline are given up, and their destination backs off."""
        for destination, in_flight in list(self.in_flight.items()):
            if now_ms >= in_flight.deadline_ms:
                del self.in_flight[destination]
                self.backoff(destination, now_ms)

    def deadlines(self, now_ms: int) -> list[int]:
        """When something here needs the driver's next tick."""
        times = [f.deadline_ms for f in self.in_flight.values()]
        times += [t for t in self._retry_at.values() if t > now_ms]
        return times

    def take_outbox(self) -> tuple[OutboundRequest, ...]:
        taken = tuple(self._outbox)
        self._outbox.clear()
        return taken
