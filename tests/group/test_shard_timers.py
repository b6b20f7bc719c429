"""The shard's keyed timers: earliest first, a key rescheduled or cancelled forgets its old
deadline, and what firing schedules waits for the next round."""

from __future__ import annotations

from pykraft.group.outcome import Outcome
from pykraft.group.timers import Action, Timers


def recorder(log: list[tuple[str, int]], name: str) -> Action:
    def fire(now: int) -> Outcome:
        log.append((name, now))
        return Outcome()
    return fire


def test_due_timers_fire_earliest_first_and_ties_in_scheduling_order() -> None:
    timers, log = Timers(), list[tuple[str, int]]()
    timers.schedule("c", 30, recorder(log, "c"))
    timers.schedule("a", 10, recorder(log, "a"))
    timers.schedule("b", 10, recorder(log, "b"))
    assert timers.next_deadline_ms() == 10
    timers.fire(20)
    assert log == [("a", 20), ("b", 20)]
    assert timers.next_deadline_ms() == 30


def test_rescheduling_and_cancelling_forget_the_old_deadline() -> None:
    timers, log = Timers(), list[tuple[str, int]]()
    timers.schedule("a", 10, recorder(log, "a"))
    timers.schedule("a", 50, recorder(log, "a2"))
    timers.schedule("b", 20, recorder(log, "b"))
    timers.cancel("b")
    assert timers.next_deadline_ms() == 50 and timers.deadline("a") == 50
    timers.fire(49)
    assert log == []
    timers.fire(50)
    assert log == [("a2", 50)] and timers.next_deadline_ms() is None


def test_timers_scheduled_while_firing_wait_for_the_next_round() -> None:
    timers = Timers()
    fired: list[int] = []

    def again(now: int) -> Outcome:
        fired.append(now)
        timers.schedule("loop", now, again)  # due at once, yet not in this round
        return Outcome()

    timers.schedule("loop", 5, again)
    timers.fire(5)
    assert fired == [5] and timers.next_deadline_ms() == 5
    timers.fire(5)
    assert fired == [5, 5]


def test_cancel_where_and_clear() -> None:
    timers, log = Timers(), list[tuple[str, int]]()
    for key in [("hb", "g1", "m"), ("hb", "g2", "m"), ("join", "g1")]:
        timers.schedule(key, 1, recorder(log, str(key)))
    timers.cancel_where(lambda key: isinstance(key, tuple) and key[1] == "g1")
    timers.fire(1)
    assert log == [(str(("hb", "g2", "m")), 1)]
    timers.schedule("x", 2, recorder(log, "x"))
    timers.clear()
    assert timers.next_deadline_ms() is None
