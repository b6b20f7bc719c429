"""Long handler loops cut into event-loop turns.

A request naming tens of thousands of partitions (ListOffsets, DeleteRecords, Produce, ...)
is handled on the loop, item by item, since it reads and changes the replicas' state; in
one turn that is seconds without heartbeats, Raft timers or other connections. The handler
lets the loop run once its turn has lasted :data:`TURN_S` instead, answering each item
independently as Kafka does (no atomicity across partitions).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

#: The longest a handler works before letting the loop run: far below the 1 s a node's
#: loop may stall, yet long enough that a thousand-item request yields only a few times.
TURN_S = 0.01


class Turns:
    """One handler's time in the current loop turn; :meth:`pause` ends the turn when due."""

    def __init__(self, budget_s: float = TURN_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._budget_s = budget_s
        self._clock = clock
        self._since = clock()

    async def pause(self) -> None:
        """Let the loop run if this turn has lasted the budget (cheap otherwise)."""
        if self._clock() - self._since >= self._budget_s:
            await asyncio.sleep(0)
            self._since = self._clock()
