"""A follower replica's log writes and truncation decisions (Kafka's
``Partition.appendRecordsToFollowerOrFutureReplica``, ``UnifiedLog.appendAsFollower``,
``truncateTo``/``truncateFullyAndStartAt``; where to truncate is
:func:`pykraft.replica.follower.truncation_for`). No sockets, clocks or event loop: the fetcher
(:mod:`pykraft.broker.replica_fetcher`) does the I/O and passes ``now_ms`` in.

Interface::

    append_as_follower(part, records, leader_high_watermark=..., leader_log_start_offset=...,
                       now_ms=...)          # the leader's batches, offsets as they are
    truncate_to(part, cut.offset, now_ms)  # producer state reloaded at the new end
    truncate_fully_and_start_at(part, offset, now_ms)
    last_fetched_epoch(part)               # the latest epoch in the log, -1 without one

``part`` is a hosted replica, or the future replica AlterReplicaLogDirs copies from it
(:mod:`pykraft.broker.log_dir_mover`), which takes the same writes (Kafka's
``appendRecordsToFollowerOrFutureReplica``).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Protocol

from pykraft.broker.replica_manager import HostedPartition
from pykraft.log.producer_snapshot_files import (
    delete_producer_snapshots,
    load_producer_state,
    write_producer_snapshot,
)
from pykraft.log.producer_state import AppendOrigin, ProducerStateManager
from pykraft.log.transactions import Marker, apply_batches, end_transactions, read_marker
from pykraft.records.batch import BatchHeader, complete_batches, runs_within
from pykraft.replica.follower import follower_high_watermark
from pykraft.storage.leader_epoch import UNDEFINED_EPOCH
from pykraft.storage.partition_log import PartitionLog


class ReplicaLog(Protocol):
    """What a follower's writes need of a replica: its log, producer state and high
    watermark, and who to tell of a change."""

    log: PartitionLog
    producer_state: ProducerStateManager
    high_watermark: int

    @property
    def log_end_offset(self) -> int: ...

    def notify(self) -> None: ...


def last_fetched_epoch(part: HostedPartition) -> int:
    """The epoch of the last batch in the log (a follower's Fetch ``last_fetched_epoch``)."""
    latest = part.log.leader_epochs.latest_epoch
    return UNDEFINED_EPOCH if latest is None else latest


def _new_batches(records: bytes, log_end_offset: int) -> tuple[bytes, list[BatchHeader]]:
    """The complete batches of a fetched chunk not already in the log, and their headers.

    A leader's read may end with a batch cut short (its file slice), which the follower
    drops as Kafka's does; leading batches below our log end (the leader read from the
    batch holding our fetch offset) are skipped.
    """
    headers, end = complete_batches(records)
    start = skip = 0
    while skip < len(headers) and headers[skip].next_offset <= log_end_offset:
        start += headers[skip].size
        skip += 1
    return records[start:end], headers[skip:]


def append_as_follower(part: ReplicaLog, records: bytes, *, leader_high_watermark: int,
                       leader_log_start_offset: int, now_ms: int) -> int:
    """Append the leader's batches (framing, CRC and offset continuity checked by the log),
    update the producer state from them, then take the leader's high watermark (capped at
    our log end) and log start offset; returns the bytes appended."""
    data, headers = _new_batches(records, part.log_end_offset)
    appended = 0
    for start, end, run in runs_within(headers, part.log.config.segment_bytes):
        _append_chunk(part, data[start:end], run, now_ms)
        appended += end - start
    log = part.log
    before = part.high_watermark, log.log_start_offset
    part.high_watermark = follower_high_watermark(
        leader_high_watermark, log_start_offset=log.log_start_offset,
        log_end_offset=log.log_end_offset)
    if leader_log_start_offset > log.log_start_offset:
        log.increment_log_start_offset(min(leader_log_start_offset, part.high_watermark),
                                       part.high_watermark)
    if appended or headers or before != (part.high_watermark, log.log_start_offset):
        part.notify()  # consumers fetching from this follower may wait on either
    return appended


def _append_chunk(part: ReplicaLog, chunk: bytes, run: Sequence[BatchHeader],
                  now_ms: int) -> None:
    log, state = part.log, part.producer_state
    active = log.active.base_offset
    log.append(chunk, now_ms)
    if log.active.base_offset != active:
        # rolled: the new segment's snapshot holds the state before these batches
        state.update_map_end_offset(log.active.base_offset)
        write_producer_snapshot(log.directory, state)
    completed = apply_batches(state, _with_markers(chunk, run), AppendOrigin.REPLICATION)
    end_transactions(state, log, completed)
    state.update_map_end_offset(log.log_end_offset)


def _with_markers(chunk: bytes, run: Sequence[BatchHeader]
                  ) -> Iterator[tuple[BatchHeader, Marker | None]]:
    """Each batch of ``chunk`` with its marker (control batches are decoded, data batches
    never are)."""
    position = 0
    for header in run:
        marker = (read_marker(header, chunk[position:position + header.size])
                  if header.is_control else None)
        yield header, marker
        position += header.size


def truncate_to(part: ReplicaLog, offset: int, now_ms: int) -> None:
    """Drop the batches from ``offset`` on; the producer state is reloaded from the
    newest snapshot at or below the new end plus the log after it, as Kafka does. At or
    past the log end only epochs begun there go (a replica that led without appending)."""
    log = part.log
    end = log.log_end_offset
    log.truncate_to(offset, now_ms)  # at the log end it still drops epochs begun there
    if offset >= end:
        return
    state = part.producer_state
    delete_producer_snapshots(log.directory, above=log.log_end_offset)
    part.producer_state = load_producer_state(
        log, partition=state.partition, now_ms=now_ms,
        expiration_ms=state.producer_id_expiration_ms)
    part.high_watermark = min(part.high_watermark, log.log_end_offset)
    part.notify()


def truncate_fully_and_start_at(part: ReplicaLog, offset: int, now_ms: int) -> None:
    """Empty the log and restart it at ``offset`` (the leader's log start is past ours):
    no producer state or snapshot survives."""
    log = part.log
    log.truncate_fully_and_start_at(offset, now_ms)
    delete_producer_snapshots(log.directory, above=-1)
    state = part.producer_state
    fresh = ProducerStateManager(partition=state.partition,
                                 producer_id_expiration_ms=state.producer_id_expiration_ms)
    fresh.update_map_end_offset(offset)
    part.producer_state = fresh
    part.high_watermark = offset
    part.notify()
