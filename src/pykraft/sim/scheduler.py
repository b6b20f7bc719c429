"""The virtual clock and the single priority queue every simulated event goes through."""

from __future__ import annotations

import heapq
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass(order=True, slots=True)
class _Event:
    at_ms: int
    seq: int
    label: str = field(compare=False)
    action: Callable[[], None] = field(compare=False)


class EventQueue:
    """Events ordered by (time, insertion order), so equal-time events replay identically."""

    def __init__(self) -> None:
        self._heap: list[_Event] = []
        self._seq = 0
        self.now_ms = 0

    def schedule(self, at_ms: int, label: str, action: Callable[[], None]) -> None:
        self._seq += 1
        heapq.heappush(self._heap, _Event(max(at_ms, self.now_ms), self._seq, label, action))

    def pop(self) -> tuple[str, Callable[[], None]] | None:
        """Advance the clock to the next event and return it; None when nothing is left."""
        if not self._heap:
            return None
        event = heapq.heappop(self._heap)
        self.now_ms = event.at_ms
        return event.label, event.action
