"""One compaction pass over a partition log: plan (:mod:`pykraft.storage.compaction`),
build the offset map and rewrite segments (:mod:`pykraft.partition.log_cleaner`), swap them
in (:meth:`pykraft.storage.partition_log.PartitionLog.replace_segment`).

Interface::

    end = clean_log(partition_log, now_ms=..., high_watermark=hw, first_dirty_offset=cp,
                    producer_last_offsets={producer_id: last_data_offset})
    # None: nothing cleaned; else the new first dirty offset (the cleaner checkpoint)
"""

from __future__ import annotations

from collections.abc import Mapping

from pykraft.partition.log_cleaner import add_to_offset_map, clean_batches
from pykraft.storage.compaction import OffsetMap, delete_horizon, plan_cleaning
from pykraft.storage.partition_log import PartitionLog


def clean_log(partition_log: PartitionLog, *, now_ms: int, high_watermark: int,
              first_dirty_offset: int, producer_last_offsets: Mapping[int, int]) -> int | None:
    """Compact the log's cleanable segments if its config and dirty ratio call for it
    (``producer_last_offsets``: each active producer's last data offset)."""
    config = partition_log.config
    stats = partition_log.segment_stats()
    plan = plan_cleaning(stats, config, now_ms=now_ms, first_dirty_offset=first_dirty_offset,
                         high_watermark=high_watermark)
    if plan is None:
        return None
    offset_map = OffsetMap()
    for base in plan.base_offsets:
        add_to_offset_map(partition_log.segment_data(base), offset_map, plan.end_offset)
    horizon = delete_horizon(config, now_ms)
    for base in plan.base_offsets:
        data = partition_log.segment_data(base)
        cleaned = clean_batches(data, offset_map, now_ms=now_ms, horizon_ms=horizon,
                                producer_last_offsets=producer_last_offsets)
        if cleaned != data:
            partition_log.replace_segment(base, cleaned, now_ms)
    return plan.end_offset
