"""The event loop's side of the broker's purgatories: one timer handle for every delayed
operation's expiry (set to the earliest deadline, moved as operations come and go) and
the awaiting of one operation by a request's task.

Interface::

    delayed = DelayedOperations(purgatories)      # purgatories: Purgatories (sans-I/O)
    deadline = delayed.deadline_ms(timeout_ms)     # on the loop's clock, in ms
    expired = await delayed.wait(purgatories.produce, op, keys)
    # -> False once the op's condition held (now or later), True once it expired; a task
    #    cancelled meanwhile (its connection closed) cancels the op
    delayed.watch(purgatories.group, op, keys)     # no task waits: op.on_complete answers
"""

from __future__ import annotations

import asyncio
from collections.abc import Hashable, Iterable
from typing import Generic, TypeVar

from pykraft.broker.purgatory import DelayedOperation, Purgatories, Purgatory
from pykraft.runtime.request_metrics import parked

K = TypeVar("K", bound=Hashable)
J = TypeVar("J", bound=Hashable)


class DelayedOperations(Generic[K]):
    """Drives a :class:`Purgatories`' expiry from the running loop's clock."""

    def __init__(self, purgatories: Purgatories[K]) -> None:
        self.purgatories = purgatories
        self._timer: asyncio.TimerHandle | None = None
        self._armed_ms: int | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    @staticmethod
    def now_ms() -> int:
        return int(asyncio.get_running_loop().time() * 1000)

    def deadline_ms(self, timeout_ms: float) -> int:
        """The deadline ``timeout_ms`` from now (a negative timeout: now)."""
        return self.now_ms() + max(int(timeout_ms), 0)

    def watch(self, purgatory: Purgatory[J], op: DelayedOperation, keys: Iterable[J]) -> bool:
        """Complete ``op`` now or watch it (see :meth:`Purgatory.try_complete_else_watch`),
        the timer moved to its deadline when that is the earliest."""
        if purgatory.try_complete_else_watch(op, keys):
            return True
        loop = asyncio.get_running_loop()
        if self._armed_ms is None or op.deadline_ms < self._armed_ms or loop is not self._loop:
            self._arm(op.deadline_ms)
        return False

    async def wait(self, purgatory: Purgatory[J], op: DelayedOperation,
                   keys: Iterable[J]) -> bool:
        """Wait for ``op`` to end: False when completed, True when expired."""
        ended: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        op.on_done = ended.set_result
        if self.watch(purgatory, op, keys):
            return False
        try:
            with parked():  # the request's remote time (Kafka's RemoteTimeMs)
                return await ended
        finally:
            op.cancel()  # a no-op once it ended; else its task was cancelled

    def _arm(self, deadline_ms: int) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._armed_ms = deadline_ms
        self._loop = asyncio.get_running_loop()  # a later loop (a test's next run) re-arms
        self._timer = self._loop.call_at(deadline_ms / 1000, self._fire)

    def _fire(self) -> None:
        assert self._armed_ms is not None
        # the loop may run a timer a hair before its time: the armed deadline is reached
        now = max(self.now_ms(), self._armed_ms)
        self._timer = self._armed_ms = None
        self.purgatories.expire(now)
        following = self.purgatories.next_deadline_ms()
        if following is not None:
            self._arm(following)
