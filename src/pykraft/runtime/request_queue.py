"""``queued.max.requests``: the bound of one side's request queue (Kafka's ``RequestChannel``).

Kafka's network processors put each request they read on a queue of
``queued.max.requests`` that the handler threads take from; when it is full a processor
blocks on the put and reads nothing more from any of its connections until a handler takes
one: backpressure, never an error or a dropped request. A request parked in a purgatory
(acks=all Produce, long-poll Fetch) has left the queue, and its completion does not go back.

pykraft has no processors or handler threads: each connection's task reads a frame and
handles it on the event loop. Its queue is the requests read and taken up but neither
answered nor parked yet: a connection's task, once it has read a frame, waits in
:meth:`RequestQueue.admit` for a place before handling it (that connection reads nothing
more meanwhile, as it reads one request at a time), and leaves the queue when the request
parks (:func:`pykraft.runtime.request_metrics.parked`) or is answered. Waiters are admitted
in arrival order. One queue per side, as Kafka's broker and controller socket servers each
have their request channel.
"""

from __future__ import annotations

import asyncio
import collections


class RequestQueue:
    """At most ``capacity`` requests taken up and not yet answered or parked."""

    def __init__(self, capacity: int) -> None:
        if capacity < 1:
            raise ValueError(f"queued.max.requests must be at least 1, not {capacity}")
        self.capacity = capacity
        self.size = 0
        """Requests in the queue now."""
        self.peak = 0
        """The largest :attr:`size` seen (what a test checks the bound by)."""
        self.waited = 0
        """Requests that found the queue full and waited for a place."""
        self._waiters: collections.deque[asyncio.Future[None]] = collections.deque()

    async def admit(self) -> None:
        """Until the request just read has a place in the queue (taken on return)."""
        while self._waiters and self._waiters[0].cancelled():
            self._waiters.popleft()  # its task was cancelled and has not resumed yet
        if self.size >= self.capacity or self._waiters:
            self.waited += 1
            waiter = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
            try:
                await waiter  # its place was taken for it by leave()
            except asyncio.CancelledError:
                if waiter.done() and not waiter.cancelled():
                    self.leave()  # given a place as it was cancelled: pass it on
                elif waiter in self._waiters:
                    self._waiters.remove(waiter)
                raise
            return
        self._take()

    def leave(self) -> None:
        """A request of the queue answered or parked: its place goes to the first waiter."""
        self.size -= 1
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                self._take()
                waiter.set_result(None)
                return

    def _take(self) -> None:
        self.size += 1
        self.peak = max(self.peak, self.size)
