"""Decoding and encoding large Kafka messages off the event loop.

The codec is pure Python: the 3.9 MB answer to a CreateTopics of 5,000 topics took 2 s to
encode and about as long to decode, a 100 MiB Produce half a second. Run on the loop's
thread, that time is one stall of every heartbeat, Raft timer and connection of the node;
on this module's one worker thread, the interpreter hands the loop the GIL every switch
interval (5 ms) meanwhile. One worker: large messages queue for it rather than compete
with each other and the loop for the GIL (the disk flusher has its own). Smaller messages
stay on the loop: a thread hop costs more than they do. The bound is 64 KiB, but 1 MiB for
the messages that carry records (Produce requests, Fetch answers): their bytes are mostly
records, sliced, not parsed, so a producer's frame of a few partitions decodes in 25-70 us,
while the hop alone costs 50-90 us of CPU plus the GIL's hand-overs and two context
switches (``bench/decode_hop.py``), and a produce load hopped for nearly every request.
Other messages can be all structure: a FindCoordinator request of 1 MiB (a million empty
keys) takes 0.8 s to decode; the densest 1 MiB Produce (partitions without records) 0.28 s,
about what its handling spends on the loop anyway.

Costly produce validations (a compression bomb, a record of a gigabyte: seconds of zlib or
zstd, which release the GIL), the log cleaner's record walks and ListOffsets' walks of a
batch by timestamp have workers of their own (:data:`VALIDATION`, :data:`CLEANER` and
one more a ``log.cleaner.threads`` (:func:`cleaner_workers`), :data:`TIMESTAMP_SEARCH`): on
the codec thread, every large frame would wait behind them.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
from collections.abc import Callable
from typing import Any, TypeVar

from pykraft.protocol.apis import ApiKey

T = TypeVar("T")

#: A frame above this size is decoded (and an answer that grows with it encoded) here.
OFF_LOOP_BYTES = 64 * 1024
#: The same for the messages that carry records (:func:`off_loop_above`).
RECORDS_OFF_LOOP_BYTES = 1024 * 1024
_CARRYING_RECORDS = frozenset({ApiKey.PRODUCE, ApiKey.FETCH})
_CODEC = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="codec")
#: Whether the request the current task serves is above its :func:`off_loop_above` (set by the
#: listener's dispatcher: a connection's task serves one request at a time): what the task
#: derives from it that grows with it (its answer, a copy forwarded to the controller) is
#: coded here too (:func:`off_loop_if_large`).
SERVING_LARGE: contextvars.ContextVar[bool] = contextvars.ContextVar("serving_large",
                                                                     default=False)


def off_loop_above(api_key: int) -> int:
    """The size above which a frame of ``api_key`` (a request, or an answer to one) is
    decoded here: :data:`RECORDS_OFF_LOOP_BYTES` for Produce and Fetch, whose frames are
    mostly records, else :data:`OFF_LOOP_BYTES`."""
    return RECORDS_OFF_LOOP_BYTES if api_key in _CARRYING_RECORDS else OFF_LOOP_BYTES


async def off_loop(work: Callable[..., T], *args: Any) -> T:
    """``work(*args)`` on the codec thread; ``work`` must be pure (it runs beside the
    loop)."""
    # in the caller's context: an encoding there notes its response for the request
    # metrics (pykraft.runtime.request_metrics.CURRENT)
    return await asyncio.get_running_loop().run_in_executor(
        _CODEC, contextvars.copy_context().run, work, *args)


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
_CLEANERS = [CLEANER]


def cleaner_workers(count: int) -> list[Worker]:
    """The first ``count`` log cleaner threads (``log.cleaner.threads``), made when first
    asked for (a thread starts at its first work); :data:`CLEANER` is the first."""
    while len(_CLEANERS) < count:
        _CLEANERS.append(Worker(f"log-cleaner-{len(_CLEANERS)}"))
    return _CLEANERS[:count]
TIMESTAMP_SEARCH = Worker("timestamp-search")
