"""The purgatory of delayed operations (sans-I/O) and its asyncio driver: each operation
ends exactly once (completed, expired or cancelled), watched under several keys, checked in
watch order, the broker's purgatories in a fixed order."""

from __future__ import annotations

import asyncio

import pytest

from pykraft.broker.purgatory import DelayedOperation, FollowerKey, Purgatories, Purgatory
from pykraft.broker.purgatory_timer import DelayedOperations
from pykraft.runtime.metrics import purgatory_metrics


class Op(DelayedOperation):
    """Completes once ``ready`` is set; records how it ended in ``log``."""

    def __init__(self, name: str, log: list[tuple[str, bool]], deadline_ms: int = 1_000
                 ) -> None:
        super().__init__(deadline_ms)
        self.name = name
        self.log = log
        self.ready = False
        self.tries = 0

    def try_complete(self) -> bool:
        self.tries += 1
        return self.force_complete() if self.ready else False

    def on_complete(self, expired: bool) -> None:
        self.log.append((self.name, expired))


def test_an_operation_completes_once_and_then_neither_expires_nor_is_tried() -> None:
    log: list[tuple[str, bool]] = []
    purgatory: Purgatory[str] = Purgatory("Produce")
    op = Op("a", log)
    assert not purgatory.try_complete_else_watch(op, ["k"])
    assert (purgatory.delayed, purgatory.watched) == (1, 1)
    op.ready = True
    assert purgatory.check_and_complete("k") == 1
    assert not op.force_complete() and not op.expire() and not op.cancel()
    assert purgatory.expire(10_000) == 0 and purgatory.check_and_complete("k") == 0
    assert log == [("a", False)] and op.tries == 2
    assert (purgatory.delayed, purgatory.watched, purgatory.next_deadline_ms()) == (0, 0, None)


def test_a_satisfied_operation_completes_without_being_watched() -> None:
    log: list[tuple[str, bool]] = []
    purgatory: Purgatory[str] = Purgatory("Produce")
    op = Op("a", log)
    op.ready = True
    assert purgatory.try_complete_else_watch(op, ["k"])
    assert log == [("a", False)] and purgatory.watched == 0
    with pytest.raises(ValueError, match="already ended"):
        purgatory.try_complete_else_watch(op, ["k"])


def test_an_operation_expires_at_its_deadline_once() -> None:
    log: list[tuple[str, bool]] = []
    purgatory: Purgatory[str] = Purgatory("Fetch")
    late, early = Op("late", log, deadline_ms=500), Op("early", log, deadline_ms=200)
    purgatory.try_complete_else_watch(late, ["k"])
    purgatory.try_complete_else_watch(early, ["k"])
    assert purgatory.next_deadline_ms() == 200
    assert purgatory.expire(199) == 0
    assert purgatory.expire(200) == 1 and log == [("early", True)]
    assert purgatory.next_deadline_ms() == 500 and purgatory.watching("k") == 1
    late.ready = True  # expired ones are not tried again; the other one is
    assert purgatory.check_and_complete("k") == 1 and early.tries == 1
    assert purgatory.expire(1_000) == 0
    assert log == [("early", True), ("late", False)]


def test_an_operation_watched_under_several_keys_leaves_all_of_them() -> None:
    log: list[tuple[str, bool]] = []
    purgatory: Purgatory[str] = Purgatory("Fetch")
    op = Op("a", log)
    purgatory.try_complete_else_watch(op, ["t-0", "t-1", "t-0"])  # a key named twice: once
    assert (purgatory.watched, purgatory.delayed) == (2, 1)
    assert purgatory.check_and_complete("t-0") == 0
    op.ready = True
    assert purgatory.check_and_complete("t-1") == 1
    assert (purgatory.watching("t-0"), purgatory.watching("t-1"), purgatory.watched) == (0, 0, 0)
    assert log == [("a", False)]


def test_a_key_s_operations_are_tried_and_completed_in_watch_order() -> None:
    log: list[tuple[str, bool]] = []
    purgatory: Purgatory[str] = Purgatory("GroupCommit")
    ops = [Op(name, log) for name in "abc"]
    for op in ops:
        purgatory.try_complete_else_watch(op, ["k"])
    ops[2].ready = ops[0].ready = True
    assert purgatory.check_and_complete("k") == 2
    ops[1].ready = True
    purgatory.check_and_complete("k")
    assert log == [("a", False), ("c", False), ("b", False)]


def test_a_cancelled_operation_leaves_without_a_callback() -> None:
    log: list[tuple[str, bool]] = []
    purgatory: Purgatory[str] = Purgatory("Fetch")
    op = Op("a", log)
    purgatory.try_complete_else_watch(op, ["k"])
    assert op.cancel() and not op.cancel()
    op.ready = True
    assert purgatory.check_and_complete("k") == 0 and purgatory.expire(10_000) == 0
    assert log == [] and purgatory.watched == 0 and purgatory.next_deadline_ms() is None


def test_ended_operations_do_not_pile_up_in_the_deadline_heap() -> None:
    log: list[tuple[str, bool]] = []
    purgatory: Purgatory[str] = Purgatory("Fetch")
    for index in range(1_000):
        op = Op(str(index), log, deadline_ms=10**9)
        purgatory.try_complete_else_watch(op, ["k"])
        op.cancel()
    assert len(purgatory._deadlines) <= 64 + 1


def test_the_broker_purgatories_check_produce_then_fetch_then_group() -> None:
    """An acks=all produce completed by a high watermark move is answered ahead of the
    fetches and group replies the same move wakes, whatever order they were parked in."""
    log: list[tuple[str, bool]] = []
    purgatories: Purgatories[str] = Purgatories()
    group, fetch, produce = Op("group", log), Op("fetch", log), Op("produce", log)
    purgatories.group.try_complete_else_watch(group, ["t-0"])
    purgatories.fetch.try_complete_else_watch(fetch, ["t-0"])
    purgatories.produce.try_complete_else_watch(produce, ["t-0"])
    for op in (group, fetch, produce):
        op.ready = True
    purgatories.partition_changed("t-0")
    assert [name for name, _ in log] == ["produce", "fetch", "group"]


def test_a_follower_key_is_checked_when_a_partition_it_replicates_is_led() -> None:
    log: list[tuple[str, bool]] = []
    purgatories: Purgatories[str] = Purgatories()
    op = Op("follower 2", log)
    purgatories.fetch.try_complete_else_watch(op, ["t-0", FollowerKey(2)])
    purgatories.started_leading([1, 3])
    assert op.tries == 1 and purgatories.led == {1: 1, 3: 1}
    purgatories.started_leading([1, 2])
    assert op.tries == 2 and purgatories.led[2] == 1


def test_the_driver_answers_completed_and_expired_waits() -> None:
    async def run() -> None:
        log: list[tuple[str, bool]] = []
        delayed = DelayedOperations(Purgatories[str]())
        produce = delayed.purgatories.produce
        ready = Op("ready", log, delayed.deadline_ms(60_000))
        ready.ready = True
        assert await delayed.wait(produce, ready, ["k"]) is False  # at once
        waiting = Op("waiting", log, delayed.deadline_ms(60_000))
        woken = asyncio.create_task(delayed.wait(produce, waiting, ["k"]))
        await _until_delayed(produce, 1)
        waiting.ready = True
        produce.check_and_complete("k")
        assert await asyncio.wait_for(woken, 5) is False
        timed_out = Op("timed out", log, delayed.deadline_ms(1))
        assert await asyncio.wait_for(delayed.wait(produce, timed_out, ["k"]), 5) is True
        assert log == [("ready", False), ("waiting", False), ("timed out", True)]
        assert produce.delayed == 0

    asyncio.run(run())


def test_a_cancelled_waiter_takes_its_operation_out_of_the_purgatory() -> None:
    """A request whose connection closed does not leave its operation behind."""
    async def run() -> None:
        log: list[tuple[str, bool]] = []
        delayed = DelayedOperations(Purgatories[str]())
        fetch = delayed.purgatories.fetch
        op = Op("gone", log, delayed.deadline_ms(60_000))
        waiter = asyncio.create_task(delayed.wait(fetch, op, ["k"]))
        await _until_delayed(fetch, 1)
        waiter.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiter
        assert (fetch.delayed, fetch.watched, fetch.next_deadline_ms()) == (0, 0, None)
        assert op.completed and log == []

    asyncio.run(run())


def test_each_purgatory_shows_kafka_s_size_and_delayed_operation_gauges() -> None:
    log: list[tuple[str, bool]] = []
    purgatories: Purgatories[str] = Purgatories()
    purgatories.fetch.try_complete_else_watch(Op("a", log), ["t-0", "t-1", FollowerKey(2)])
    purgatories.produce.try_complete_else_watch(Op("b", log), ["t-0"])
    samples = {(s.name, s.labels["delayedOperation"]): s.value
               for family in purgatory_metrics(purgatories) for s in family.samples}
    prefix = "kafka_server_delayedoperationpurgatory_"
    assert samples == {
        (prefix + "purgatorysize", "Produce"): 1.0, (prefix + "purgatorysize", "Fetch"): 3.0,
        (prefix + "purgatorysize", "GroupCommit"): 0.0,
        (prefix + "numdelayedoperations", "Produce"): 1.0,
        (prefix + "numdelayedoperations", "Fetch"): 1.0,
        (prefix + "numdelayedoperations", "GroupCommit"): 0.0}


async def _until_delayed(purgatory: Purgatory[str] | Purgatory[str | FollowerKey],
                         count: int) -> None:
    """Let the waiting task run until ``purgatory`` holds ``count`` operations (a bounded
    number of event-loop turns, not a time)."""
    for _ in range(100):
        if purgatory.delayed == count:
            return
        await asyncio.sleep(0)
    raise AssertionError(f"{purgatory.delayed} operations delayed, expected {count}")
