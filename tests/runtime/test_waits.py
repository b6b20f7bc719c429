"""wait_set: an event within a timeout, and a cancellation that always propagates."""

from __future__ import annotations

import asyncio

import pytest

from pykraft.runtime.waits import wait_set


def test_set_timeout_and_no_limit() -> None:
    async def run() -> tuple[bool, bool, bool]:
        event = asyncio.Event()
        missed = await wait_set(event, 0.001)
        asyncio.get_running_loop().call_soon(event.set)
        seen = await wait_set(event, None)
        return missed, seen, await wait_set(event, 0)

    assert asyncio.run(run()) == (False, True, True)


def test_cancelling_a_heartbeat_like_loop_ends_it() -> None:
    """The loop shape of the broker's heartbeat: a timeout means "carry on"; a cancellation
    must still end it, whenever it lands (here: at every point of a short cadence)."""
    async def beat(event: asyncio.Event) -> None:
        while True:
            await wait_set(event, 0.001)

    async def run() -> int:
        ended = 0
        for delay in range(20):
            task = asyncio.create_task(beat(asyncio.Event()))
            await asyncio.sleep(delay / 10_000)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await asyncio.wait_for(task, 5)
            ended += 1
        return ended

    assert asyncio.run(run()) == 20
