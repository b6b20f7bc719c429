"""One compaction pass over a partition log: plan (:mod:`pykraft.log.compaction`),
build the offset map over the dirty range and rewrite segments
(:mod:`pykraft.log.cleaner_bytes`), swap them in
(:meth:`pykraft.storage.partition_log.PartitionLog.replace_segment`).

Interface::

    stats = await clean_log(partition_log, now_ms=..., high_watermark=hw,
                            first_dirty_offset=cp,
                            producer_last_offsets={producer_id: last_data_offset},
                            compute=run,             # run(work) -> work(), awaited
                            config=cleaner_config,   # offset map and read buffer bounds
                            throttle=spend,          # await spend(nbytes): the I/O budget
                            aborted=paused)          # paused() true: the pass stops
    # None: nothing cleaned (or the log moved meanwhile); else stats.end_offset is the new
    # first dirty offset

As Kafka's ``Cleaner.doClean``: the offset map covers the dirty range from the first dirty
offset, until it is full (``log.cleaner.dedupe.buffer.size``); the segments below the last
offset mapped are rewritten, records past it kept, and the next pass starts there. Reads go
in pieces of the thread's read buffer, each piece and each rewritten piece counted against
``log.cleaner.io.max.bytes.per.second``. The segments are read and swapped on the caller's
loop, the CPU-heavy part (decompressing and walking every record) runs through
``compute``, on the log cleaner's thread as Kafka's. Meanwhile retention, DeleteRecords, a
truncation or the topic's deletion may change the log: a segment no longer as it was read
ends the pass.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Protocol, TypeVar

from pykraft.log.cleaner_bytes import add_to_offset_map, clean_batches, io_chunks
from pykraft.log.cleaner_config import KAFKA_DEFAULTS, CleanerConfig
from pykraft.log.compaction import OffsetMap, delete_horizon, plan_cleaning
from pykraft.storage.partition_log import PartitionLog

T = TypeVar("T")


class Compute(Protocol):
    """Runs ``work()`` and gives its result (on a worker thread, or at once)."""

    def __call__(self, work: Callable[[], T], /) -> Awaitable[T]: ...


async def inline(work: Callable[[], T]) -> T:
    """A :class:`Compute` that runs ``work`` at once (tests, tools)."""
    return work()


async def unthrottled(_nbytes: int) -> None:
    """An I/O budget without bound (``log.cleaner.io.max.bytes.per.second`` unset)."""


@dataclass(frozen=True, slots=True)
class CleanerStats:
    """One log's cleaning: the new first dirty offset, and what Kafka's cleaner metrics
    read (``cleaner-recopy-percent``, ``max-buffer-utilization-percent``)."""

    end_offset: int
    bytes_read: int
    bytes_written: int
    buffer_utilization: float


def _never() -> bool:
    return False


async def clean_log(partition_log: PartitionLog, *, now_ms: int, high_watermark: int,
                    first_dirty_offset: int, producer_last_offsets: Mapping[int, int],
                    compute: Compute = inline, config: CleanerConfig = KAFKA_DEFAULTS,
                    throttle: Callable[[int], Awaitable[None]] = unthrottled,
                    aborted: Callable[[], bool] = _never) -> CleanerStats | None:
    """Compact the log's cleanable segments if its config and dirty ratio call for it
    (``producer_last_offsets``: each active producer's last data offset); a pass that
    finds ``aborted()`` true between its steps stops there (Kafka's
    ``checkCleaningAborted``: the partition's cleaning was paused meanwhile)."""
    stats = partition_log.segment_stats()
    plan = plan_cleaning(stats, partition_log.config, now_ms=now_ms,
                         first_dirty_offset=first_dirty_offset, high_watermark=high_watermark)
    if plan is None:
        return None
    sizes = {s.base_offset: s.size for s in stats}

    def goes_on(base: int) -> bool:
        return not aborted() and _unchanged(partition_log, base, sizes[base])

    ends = {s.base_offset: s.end_offset for s in stats}
    offset_map = OffsetMap(config.max_map_entries())
    read = config.read_bytes()
    for base in plan.base_offsets:
        if ends[base] <= first_dirty_offset:
            continue  # already clean: its keys are unique and older than the dirty range's
        if not goes_on(base):
            return None
        full = False
        for piece in io_chunks(partition_log.segment_data(base), read):
            await throttle(len(piece))
            full = await compute(functools.partial(add_to_offset_map, piece, offset_map,
                                                   first_dirty_offset))
            if full:
                break
        if full:
            break
    end = offset_map.latest_offset + 1
    if end <= first_dirty_offset:
        return None
    horizon = delete_horizon(partition_log.config, now_ms)
    bytes_read = bytes_written = 0
    for base in plan.base_offsets:
        if base >= end:
            break
        if not goes_on(base):
            return None
        data = partition_log.segment_data(base)
        pieces = []
        for piece in io_chunks(data, read):
            pieces.append(await compute(functools.partial(
                clean_batches, piece, offset_map, now_ms=now_ms, horizon_ms=horizon,
                producer_last_offsets=producer_last_offsets)))
            await throttle(len(piece) + len(pieces[-1]))
        cleaned = b"".join(pieces)
        bytes_read += len(data)
        bytes_written += len(cleaned)
        if not goes_on(base):
            return None
        if cleaned != data:
            partition_log.replace_segment(base, cleaned, now_ms)
    slots = config.map_slots()
    return CleanerStats(end, bytes_read, bytes_written, len(offset_map) / slots if slots else 0.0)


def _unchanged(partition_log: PartitionLog, base: int, size: int) -> bool:
    """Whether the log is open and still has an inactive segment at ``base`` of ``size``
    bytes, as when the pass planned it."""
    return not partition_log.closed and any(
        s.base_offset == base and s.size == size for s in partition_log.segment_stats()[:-1])
