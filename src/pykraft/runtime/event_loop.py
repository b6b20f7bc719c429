"""The event loop a server process runs on: uvloop where it is installed, else asyncio's.

Everything in the runtime is plain asyncio; uvloop (libuv) only makes loop iterations and
socket I/O cheaper: +7 % committed writes at 16 concurrent writers and +13 % at 64 in
docs/bench.md, no measurable change for a single writer. ``pykraft.event.loop=asyncio``
keeps the standard loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


def run(main: Coroutine[Any, Any, T], choice: str) -> T:
    """Run ``main`` to completion on the chosen loop and return its result."""
    if choice == "uvloop":
        try:
            import uvloop
        except ImportError:  # not installable everywhere (Windows): the standard loop serves
            pass
        else:
            return uvloop.run(main)
    return asyncio.run(main)


def running_loop_name() -> str:
    """``uvloop`` or ``asyncio``: which loop runs this process (for its start-up log line)."""
    return type(asyncio.get_running_loop()).__module__.split(".")[0]
