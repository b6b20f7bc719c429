"""One compaction pass over a partition log: plan (:mod:`pykraft.log.compaction`),
build the offset map and rewrite segments (:mod:`pykraft.log.cleaner_bytes`), swap them
in (:meth:`pykraft.storage.partition_log.PartitionLog.replace_segment`).

Interface::

    end = await clean_log(partition_log, now_ms=..., high_watermark=hw, first_dirty_offset=cp,
                          producer_last_offsets={producer_id: last_data_offset},
                          compute=run,  # run(work) -> work(), awaited: on a worker thread
                          aborted=paused)  # paused() true: the pass stops
    # None: nothing cleaned (or the log moved meanwhile); else the new first dirty offset

The segments are read and swapped on the caller's loop, the CPU-heavy part (decompressing
and walking every record: seconds for a record of a gigabyte) runs through ``compute``, on
the log cleaner's thread as Kafka's. Meanwhile retention, DeleteRecords, a truncation or the
topic's deletion may change the log: a segment no longer as it was read ends the pass.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Mapping
from typing import Protocol, TypeVar

from pykraft.log.cleaner_bytes import add_to_offset_map, clean_batches
from pykraft.log.compaction import OffsetMap, delete_horizon, plan_cleaning
from pykraft.storage.partition_log import PartitionLog

T = TypeVar("T")


class Compute(Protocol):
    """Runs ``work()`` and gives its result (on a worker thread, or at once)."""

    def __call__(self, work: Callable[[], T], /) -> Awaitable[T]: ...


async def inline(work: Callable[[], T]) -> T:
    """A :class:`Compute` that runs ``work`` at once (tests, tools)."""
    return work()


def _never() -> bool:
    return False


async def clean_log(partition_log: PartitionLog, *, now_ms: int, high_watermark: int,
                    first_dirty_offset: int, producer_last_offsets: Mapping[int, int],
                    compute: Compute = inline,
                    aborted: Callable[[], bool] = _never) -> int | None:
    """Compact the log's cleanable segments if its config and dirty ratio call for it
    (``producer_last_offsets``: each active producer's last data offset); a pass that
    finds ``aborted()`` true between its steps stops there (Kafka's
    ``checkCleaningAborted``: the partition's cleaning was paused meanwhile)."""
    config = partition_log.config
    stats = partition_log.segment_stats()
    plan = plan_cleaning(stats, config, now_ms=now_ms, first_dirty_offset=first_dirty_offset,
                         high_watermark=high_watermark)
    if plan is None:
        return None
    sizes = {s.base_offset: s.size for s in stats}

    def goes_on(base: int) -> bool:
        return not aborted() and _unchanged(partition_log, base, sizes[base])

    offset_map = OffsetMap()
    for base in plan.base_offsets:
        if not goes_on(base):
            return None
        await compute(functools.partial(add_to_offset_map, partition_log.segment_data(base),
                                        offset_map, plan.end_offset))
    horizon = delete_horizon(config, now_ms)
    for base in plan.base_offsets:
        if not goes_on(base):
            return None
        data = partition_log.segment_data(base)
        cleaned = await compute(functools.partial(
            clean_batches, data, offset_map, now_ms=now_ms, horizon_ms=horizon,
            producer_last_offsets=producer_last_offsets))
        if not goes_on(base):
            return None
        if cleaned != data:
            partition_log.replace_segment(base, cleaned, now_ms)
    return plan.end_offset


def _unchanged(partition_log: PartitionLog, base: int, size: int) -> bool:
    """Whether the log is open and still has an inactive segment at ``base`` of ``size``
    bytes, as when the pass planned it."""
    return not partition_log.closed and any(
        s.base_offset == base and s.size == size for s in partition_log.segment_stats()[:-1])
