"""Decoding and encoding large Kafka messages off the event loop.

The codec is pure Python: the 3.9 MB answer to a CreateTopics of 5,000 topics took 2 s to
encode and about as long to decode, a 100 MiB Produce half a second. Run on the loop's
thread, that time is one stall of every heartbeat, Raft timer and connection of the node;
on this module's one worker thread, the interpreter hands the loop the GIL every switch
interval (5 ms) meanwhile. One worker: large messages queue for it rather than compete
with each other and the loop for the GIL (the disk flusher has its own). Small messages
stay on the loop: a thread hop costs more than they do.

Costly produce validations (a compression bomb, a record of a gigabyte: seconds of zlib or
zstd, which release the GIL) have a worker of their own, :func:`validation_off_loop`: on
this one, every large frame would wait behind them.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

#: A frame above this size is decoded (and an answer that grows with it encoded) here.
OFF_LOOP_BYTES = 64 * 1024
_CODEC = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="codec")
_VALIDATION = concurrent.futures.ThreadPoolExecutor(max_workers=1,
                                                    thread_name_prefix="validation")


async def off_loop(work: Callable[..., T], *args: Any) -> T:
    """``work(*args)`` on the codec thread; ``work`` must be pure (it runs beside the
    loop)."""
    return await asyncio.get_running_loop().run_in_executor(_CODEC, work, *args)


async def validation_off_loop(work: Callable[[], T]) -> T:
    """``work()`` on the validation thread (in submission order); ``work`` must be pure."""
    return await asyncio.get_running_loop().run_in_executor(_VALIDATION, work)
