"""Decoding and encoding large Kafka messages off the event loop.

The codec is pure Python: the 3.9 MB answer to a CreateTopics of 5,000 topics took 2 s to
encode and about as long to decode, a 100 MiB Produce half a second. Run on the loop's
thread, that time is one stall of every heartbeat, Raft timer and connection of the node;
on this module's one worker thread, the interpreter hands the loop the GIL every switch
interval (5 ms) meanwhile. One worker: large messages queue for it rather than compete
with each other and the loop for the GIL (the disk flusher has its own). Small messages
stay on the loop: a thread hop costs more than they do.

Costly produce validations (a compression bomb, a record of a gigabyte: seconds of zlib or
zstd, which release the GIL) and the log cleaner's record walks have workers of their own
(:data:`VALIDATION`, :data:`CLEANER`): on the codec thread, every large frame would wait
behind them.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

#: A frame above this size is decoded (and an answer that grows with it encoded) here.
OFF_LOOP_BYTES = 64 * 1024
_CODEC = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="codec")
#: Whether the request the current task serves (a connection's task serves one at a time)
#: came in a frame above OFF_LOOP_BYTES: then the work that grows with it (converting it,
#: encoding its answer, re-encoding it to forward it) runs here too (:func:`sized`).
LARGE_REQUEST: contextvars.ContextVar[bool] = contextvars.ContextVar("large_request",
                                                                     default=False)


async def off_loop(work: Callable[..., T], *args: Any) -> T:
    """``work(*args)`` on the codec thread; ``work`` must be pure (it runs beside the
    loop)."""
    return await asyncio.get_running_loop().run_in_executor(_CODEC, work, *args)


async def sized(work: Callable[..., T], *args: Any) -> T:
    """``work(*args)``, on the codec thread when the request being served is large (see
    :data:`LARGE_REQUEST`), else at once on the loop (a thread hop costs more than a small
    request's work); ``work`` must be pure."""
    if LARGE_REQUEST.get():
        return await off_loop(work, *args)
    return work(*args)


class Worker:
    """One named worker thread: ``await worker.run(work)`` is ``work()`` run there, in
    submission order; ``work`` must not touch what the loop changes meanwhile."""

    def __init__(self, name: str) -> None:
        self._executor = concurrent.futures.ThreadPoolExecutor(max_workers=1,
                                                               thread_name_prefix=name)

    async def run(self, work: Callable[[], T]) -> T:
        return await asyncio.get_running_loop().run_in_executor(self._executor, work)


VALIDATION = Worker("validation")
CLEANER = Worker("log-cleaner")
