"""Waiting with a timeout, safely cancellable.

Python 3.11's ``asyncio.wait_for`` loses a cancellation that arrives as the awaited thing
completes (it returns the result instead; CPython gh-86296, fixed in 3.12): a loop that
goes on after it never ends, and whoever awaits the cancelled task hangs. A broker's replica
fetcher did exactly that at SIGTERM, its task left "cancelling" forever. pykraft therefore
uses ``asyncio.timeout``, which counts cancellations, wherever a task may be cancelled.
"""

from __future__ import annotations

import asyncio


async def wait_set(event: asyncio.Event, timeout_s: float | None) -> bool:
    """Whether ``event`` was set within ``timeout_s`` (None: no limit); a cancellation of
    the caller always propagates."""
    try:
        async with asyncio.timeout(timeout_s):
            await event.wait()
    except TimeoutError:
        return False
    return True
