"""Handler time (pykraft.runtime.handler_time): the loop time of a request's own steps, not
the time it is suspended, on a clock the steps themselves move."""

from __future__ import annotations

import asyncio

import pytest

from pykraft.runtime.handler_time import HandlerTime
from pykraft.security.session import ANONYMOUS, Session

SESSION = Session(ANONYMOUS, "127.0.0.1:1")


class Clock:
    """Seconds moved by hand: a step's work, or other tasks' while the step is suspended."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_only_the_requests_own_steps_count() -> None:
    clock = Clock()
    timed = HandlerTime(SESSION, clock)
    seen: list[float] = []

    async def run() -> str:
        purgatory = asyncio.Event()

        async def request() -> str:
            clock.now += 0.003  # decoding
            await asyncio.sleep(0)
            clock.now += 0.002  # handling, then a purgatory
            seen.append(timed.so_far())
            await purgatory.wait()
            clock.now += 0.001  # encoding
            return "answer"

        async def other() -> None:
            clock.now += 5.0  # another connection's turn while the request is suspended
            purgatory.set()

        answer, _ = await asyncio.gather(timed.run(request()), other())
        return answer

    assert asyncio.run(run()) == "answer"
    assert seen == [pytest.approx(0.005)]  # the running step counts while it runs
    assert timed.spent_s == pytest.approx(0.006)


def test_errors_and_cancellation_pass_through() -> None:
    timed = HandlerTime(SESSION, Clock())

    async def failing() -> None:
        await asyncio.sleep(0)
        raise ValueError("bad request")

    async def waiting() -> None:
        await asyncio.Event().wait()

    async def run() -> None:
        with pytest.raises(ValueError, match="bad request"):
            await timed.run(failing())
        task = asyncio.create_task(timed.run(waiting()))
        await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(run())


def test_the_time_after_the_decision_goes_to_the_rest() -> None:
    clock = Clock()
    timed = HandlerTime(SESSION, clock)
    rest: list[float] = []

    async def request() -> None:
        clock.now += 0.004
        timed.decided(0, timed.so_far(), rest.append)
        clock.now += 0.001  # encoding after the quota decided

    asyncio.run(timed.run(request()))
    timed.finish()
    assert rest == [pytest.approx(0.001)]
