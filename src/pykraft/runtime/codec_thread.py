"""Decoding and encoding large Kafka messages off the event loop.

The codec is pure Python: the 3.9 MB answer to a CreateTopics of 5,000 topics took 2 s to
encode and about as long to decode, a 100 MiB Produce half a second. Run on the loop's
thread, that time is one stall of every heartbeat, Raft timer and connection of the node;
on this module's one worker thread, the interpreter hands the loop the GIL every switch
interval (5 ms) meanwhile. One worker: large messages queue for it rather than compete
with each other and the loop for the GIL (the disk flusher has its own). Smaller messages
stay on the loop: a thread hop costs more than they do. The bound is 1 MiB: a Produce
request or a Fetch answer of that size (records, a few partitions) decodes in 25-70 us, the
hop alone costs 50-90 us of CPU plus the GIL's hand-overs and two context switches, and a
produce load hopped for nearly every request (64 KiB was the bound); the densest 1 MiB
frame (10,000 partitions of one tiny batch each) takes 7.5 ms on the loop, which the
handling of its 10,000 partitions there exceeds anyway (``bench/decode_hop.py``).

Costly produce validations (a compression bomb, a record of a gigabyte: seconds of zlib or
zstd, which release the GIL), the log cleaner's record walks and ListOffsets' walks of a
batch by timestamp have workers of their own (:data:`VALIDATION`, :data:`CLEANER`,
:data:`TIMESTAMP_SEARCH`): on the codec thread, every large frame would wait behind them.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

#: A frame above this size is decoded (and an answer that grows with it encoded) here.
OFF_LOOP_BYTES = 1024 * 1024
_CODEC = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="codec")
#: Whether the request the current task serves is above OFF_LOOP_BYTES (set by the
#: listener's dispatcher: a connection's task serves one request at a time): what the task
#: derives from it that grows with it (its answer, a copy forwarded to the controller) is
#: coded here too (:func:`off_loop_if_large`).
SERVING_LARGE: contextvars.ContextVar[bool] = contextvars.ContextVar("serving_large",
                                                                     default=False)


async def off_loop(work: Callable[..., T], *args: Any) -> T:
    """``work(*args)`` on the codec thread; ``work`` must be pure (it runs beside the
    loop)."""
    return await asyncio.get_running_loop().run_in_executor(_CODEC, work, *args)


async def off_loop_if_large(work: Callable[..., T], *args: Any) -> T:
    """``work(*args)``, work that grows with the request being served: on the codec thread
    when that request is large (:data:`SERVING_LARGE`), else at once on the loop (a thread
    hop costs more than a small request's work); ``work`` must be pure (reading immutable
    values only: the image, the request)."""
    if SERVING_LARGE.get():
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
TIMESTAMP_SEARCH = Worker("timestamp-search")
