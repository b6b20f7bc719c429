"""A follower's decisions over its log (Kafka's ``AbstractFetcherThread`` and
``Partition.appendRecordsToFollowerOrFutureReplica``): where to truncate when the leader
names a diverging epoch (or answers OffsetForLeaderEpoch), and the high watermark it takes
from a fetch answer. Its log is read through its leader-epoch cache and log end offset.

Interface::

    cut = truncation_for(epochs, log_end_offset, leader_epoch, leader_end_offset,
                         fetch_offset)               # truncate to cut.offset
    hw = follower_high_watermark(leader_hw, log_start_offset=..., log_end_offset=...)
"""

from __future__ import annotations

from dataclasses import dataclass

from pykraft.storage.leader_epoch import UNDEFINED_EPOCH, UNDEFINED_OFFSET, LeaderEpochCache


@dataclass(frozen=True, slots=True)
class Truncation:
    """Where to truncate, and whether that ends the truncation (Kafka's
    ``OffsetTruncationState``): not when the leader named an epoch this replica does not
    have, so the next round asks again from the epoch it truncated back to."""

    offset: int
    completed: bool


def truncation_for(epochs: LeaderEpochCache, log_end_offset: int, leader_epoch: int,
                   leader_end_offset: int, fetch_offset: int) -> Truncation:
    """Kafka's ``getOffsetTruncationState`` for the leader's (epoch, end offset): a
    diverging epoch from Fetch, or an OffsetForLeaderEpoch answer."""
    end = log_end_offset
    if leader_end_offset == UNDEFINED_OFFSET:
        return Truncation(fetch_offset, True)
    if leader_epoch == UNDEFINED_EPOCH:
        return Truncation(min(leader_end_offset, end), True)
    own_epoch, own_end = epochs.end_offset_for(leader_epoch, end)
    if own_end == UNDEFINED_OFFSET:
        return Truncation(min(leader_end_offset, end), True)
    if own_epoch != leader_epoch:
        return Truncation(min(own_end, end), False)
    return Truncation(min(own_end, leader_end_offset, end), True)


def follower_high_watermark(leader_high_watermark: int, *, log_start_offset: int,
                            log_end_offset: int) -> int:
    """The leader's high watermark capped at our log end (we may not have its tail yet),
    never below our log start."""
    return max(log_start_offset, min(leader_high_watermark, log_end_offset))
