"""Keyed deadlines for a coordinator shard, fired by the runtime's clock through ``tick``.

Kafka's coordinator timer, without threads: scheduling a key again replaces its deadline
(a heartbeat pushes the session expiry forward), cancelling forgets it, and ``fire`` runs
what is due in deadline order. Timers scheduled while firing wait for the next ``fire`` even
when already due, so a zero timeout cannot spin one tick forever.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable

from pykraft.group.outcome import Outcome

Action = Callable[[int], Outcome]
"""What a timer does when due; given the time it fires at."""


class Timers:
    """Deadlines by key; the earliest one tells the runtime when to tick."""

    def __init__(self) -> None:
        self._entries: dict[Hashable, tuple[int, int, Action]] = {}
        self._sequence = 0

    def schedule(self, key: Hashable, deadline_ms: int, action: Action) -> None:
        """Run ``action`` at ``deadline_ms`` unless rescheduled or cancelled first."""
        self._sequence += 1
        self._entries[key] = (deadline_ms, self._sequence, action)

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
        return min((entry[0] for entry in self._entries.values()), default=None)

    def fire(self, now_ms: int) -> Outcome:
        """Run the timers due at ``now_ms`` (earliest first, ties in scheduling order)."""
        due = sorted((deadline, sequence, key)
                     for key, (deadline, sequence, _) in self._entries.items()
                     if deadline <= now_ms)
        outcome = Outcome()
        for _, sequence, key in due:
            entry = self._entries.get(key)
            if entry is None or entry[1] != sequence:
                continue  # cancelled or rescheduled by an earlier timer of this round
            del self._entries[key]
            outcome.extend(entry[2](now_ms))
        return outcome

    def clear(self) -> None:
        self._entries.clear()
