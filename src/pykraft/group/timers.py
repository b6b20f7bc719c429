"""Keyed deadlines for a coordinator shard, fired by the runtime's clock through ``tick``.

Kafka's coordinator timer, without threads: scheduling a key again replaces its deadline
(a heartbeat pushes the session expiry forward), cancelling forgets it, and ``fire`` runs
what is due in deadline order. Timers scheduled while firing wait for the next ``fire`` even
when already due, so a zero timeout cannot spin one tick forever.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Hashable

from pykraft.group.outcome import Outcome

Action = Callable[[int], Outcome]
"""What a timer does when due; given the time it fires at."""


class Timers:
    """Deadlines by key; the earliest one tells the runtime when to tick.

    A heap orders the deadlines; rescheduling or cancelling leaves the old heap entry behind,
    skipped when it surfaces (a heartbeat per member per few seconds must stay cheap)."""

    def __init__(self) -> None:
        self._entries: dict[Hashable, tuple[int, int, Action]] = {}
        self._heap: list[tuple[int, int, Hashable]] = []
        self._sequence = 0

    def schedule(self, key: Hashable, deadline_ms: int, action: Action) -> None:
        """Run ``action`` at ``deadline_ms`` unless rescheduled or cancelled first."""
        self._sequence += 1
        self._entries[key] = (deadline_ms, self._sequence, action)
        heapq.heappush(self._heap, (deadline_ms, self._sequence, key))

    def cancel(self, key: Hashable) -> None:
        self._entries.pop(key, None)

    def cancel_where(self, predicate: Callable[[Hashable], bool]) -> None:
        """Forget every timer whose key satisfies ``predicate`` (a deleted group's)."""
        for key in [key for key in self._entries if predicate(key)]:
            del self._entries[key]

    def deadline(self, key: Hashable) -> int | None:
        entry = self._entries.get(key)
        return None if entry is None else entry[0]

    def next_deadline_ms(self) -> int | None:
        while self._heap and not self._current(self._heap[0]):
            heapq.heappop(self._heap)
        return self._heap[0][0] if self._heap else None

    def fire(self, now_ms: int) -> Outcome:
        """Run the timers due at ``now_ms`` (earliest first, ties in scheduling order)."""
        limit = self._sequence
        later: list[tuple[int, int, Hashable]] = []
        outcome = Outcome()
        while self._heap and self._heap[0][0] <= now_ms:
            item = heapq.heappop(self._heap)
            if not self._current(item):
                continue  # cancelled or rescheduled
            if item[1] > limit:
                later.append(item)  # scheduled by a timer of this round
                continue
            action = self._entries.pop(item[2])[2]
            outcome.extend(action(now_ms))
        for item in later:
            heapq.heappush(self._heap, item)
        return outcome

    def clear(self) -> None:
        self._entries.clear()
        self._heap.clear()

    def _current(self, item: tuple[int, int, Hashable]) -> bool:
        entry = self._entries.get(item[2])
        return entry is not None and entry[1] == item[1]
