"""Leader epochs on the leader's side of a request: the epoch check every Produce and Fetch
passes (``Partition.checkCurrentLeaderEpoch``), and whether a follower's log left the
leader's (``Partition.readRecords``' diverging epoch, Fetch v12+).

Interface::

    code = check_leader_epoch(request_epoch, local_epoch)    # NONE, FENCED or UNKNOWN
    verdict = fetch_divergence(epochs, fetch_offset=..., last_fetched_epoch=...,
                               log_start_offset=..., log_end_offset=...)
    #   None: read from fetch_offset; a Divergence: answer it, no records; or
    #   OFFSET_OUT_OF_RANGE
"""

from __future__ import annotations

from dataclasses import dataclass

from pykraft.protocol.errors import ErrorCode
from pykraft.storage.leader_epoch import UNDEFINED_EPOCH, UNDEFINED_OFFSET, LeaderEpochCache


def check_leader_epoch(request_epoch: int, local_epoch: int) -> ErrorCode:
    """Kafka's ``Partition.checkCurrentLeaderEpoch``: -1 skips the check; an older epoch
    than ours is FENCED_LEADER_EPOCH, a newer one UNKNOWN_LEADER_EPOCH (we lag behind)."""
    if request_epoch in (-1, local_epoch):
        return ErrorCode.NONE
    if request_epoch < local_epoch:
        return ErrorCode.FENCED_LEADER_EPOCH
    return ErrorCode.UNKNOWN_LEADER_EPOCH


@dataclass(frozen=True, slots=True)
class Divergence:
    """The leader's (epoch, end offset) for a fetcher whose last epoch ends earlier here."""

    epoch: int
    end_offset: int


def fetch_divergence(epochs: LeaderEpochCache, *, fetch_offset: int, last_fetched_epoch: int,
                     log_start_offset: int, log_end_offset: int
                     ) -> Divergence | ErrorCode | None:
    """A fetch naming ``last_fetched_epoch`` (>= 0) is checked against our epochs: an epoch
    we cannot place, or a fetch offset below our log start, is OFFSET_OUT_OF_RANGE; an
    epoch that ends here before ``fetch_offset`` (or an older epoch in its place) is a
    divergence; otherwise (or without an epoch) the read goes ahead."""
    if last_fetched_epoch < 0:
        return None
    epoch, epoch_end = epochs.end_offset_for(last_fetched_epoch, log_end_offset)
    if epoch_end == UNDEFINED_OFFSET or epoch == UNDEFINED_EPOCH or (
            fetch_offset < log_start_offset):
        return ErrorCode.OFFSET_OUT_OF_RANGE
    if epoch < last_fetched_epoch or epoch_end < fetch_offset:
        return Divergence(epoch, epoch_end)
    return None
