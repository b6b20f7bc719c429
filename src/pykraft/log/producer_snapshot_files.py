"""Producer state files of a partition directory: ``<offset>.snapshot`` written on segment
roll and at shutdown, and the state rebuilt at load time, as Kafka's ``UnifiedLog`` does.

Interface::

    state = load_producer_state(log, partition="t-0", now_ms=..., expiration_ms=...)
    write_producer_snapshot(log.directory, state)       # at state.map_end_offset
    delete_producer_snapshots(log.directory, below=log.log_start_offset)

Loading takes the newest snapshot at or below the log end offset (later ones are stale, from
a truncated log, and are deleted), then replays every batch after it from the log, markers
included (they close transactions, and rebuild the ``.txnindex`` entries recovery dropped).
A corrupt snapshot is deleted and the next older one tried, as Kafka does.
"""

from __future__ import annotations

import logging
from pathlib import Path

from pykraft.log.producer_snapshot import (
    CorruptSnapshotError,
    decode_snapshot,
    encode_snapshot,
    snapshot_file_name,
    snapshot_offset,
)
from pykraft.log.producer_state import AppendOrigin, ProducerStateManager
from pykraft.log.transactions import apply_batches, end_transactions, read_marker
from pykraft.storage.fsutil import atomic_write
from pykraft.storage.partition_log import PartitionLog

log = logging.getLogger(__name__)


def _snapshots(directory: Path) -> dict[int, Path]:
    found: dict[int, Path] = {}
    for path in directory.glob("*.snapshot"):
        try:
            found[snapshot_offset(path.name)] = path
        except ValueError:
            continue
    return found


def write_producer_snapshot(directory: Path, state: ProducerStateManager) -> None:
    """``<map_end_offset>.snapshot``, atomically (Kafka's ``takeSnapshot``)."""
    atomic_write(directory / snapshot_file_name(state.map_end_offset),
                 encode_snapshot(state.snapshot()))


def delete_producer_snapshots(directory: Path, *, below: int | None = None,
                              above: int | None = None) -> None:
    """Delete snapshots at offsets < ``below`` or > ``above``."""
    for offset, path in _snapshots(directory).items():
        if (below is not None and offset < below) or (above is not None and offset > above):
            path.unlink(missing_ok=True)


def load_producer_state(partition_log: PartitionLog, *, partition: str, now_ms: int,
                        expiration_ms: int) -> ProducerStateManager:
    """The producer state at the log end offset: newest usable snapshot plus replay. When
    recovery dropped aborted-transaction index entries (the log's
    ``txn_index_reset_from``), the replay starts at a snapshot at or below that offset and
    indexes the aborts it meets from there, with the stable offsets the state gives, as
    Kafka's segment recovery does."""
    state = ProducerStateManager(partition=partition, producer_id_expiration_ms=expiration_ms)
    directory = partition_log.directory
    end = partition_log.log_end_offset
    delete_producer_snapshots(directory, above=end)
    start = partition_log.log_start_offset
    index_from = partition_log.txn_index_reset_from
    for offset, path in sorted(_snapshots(directory).items(), reverse=True):
        if index_from is not None and offset > index_from:
            continue
        try:
            entries = decode_snapshot(path.read_bytes())
        except CorruptSnapshotError as exc:
            log.warning("%s: deleting a corrupt producer snapshot: %s", path, exc)
            path.unlink()
            continue
        state.load(entries, now_ms, offset)
        start = max(offset, start)
        break
    _replay(partition_log, state, start, end, end if index_from is None else index_from)
    partition_log.txn_indexes_rebuilt()
    state.update_map_end_offset(end)
    return state


def _replay(partition_log: PartitionLog, state: ProducerStateManager, start: int,
            end: int, index_from: int) -> None:
    """Feed the batches in [start, end) to the state (as a follower would), one at a time
    as Kafka's recovery does, from their headers only but for markers: after a crash
    without a snapshot this walks the whole log. Aborts whose marker is at or past
    ``index_from`` are indexed."""
    for header in partition_log.batch_headers(start):
        if header.next_offset > end:
            break
        if header.next_offset <= start:
            continue
        marker = None
        if header.is_control:
            marker = read_marker(header, partition_log.read(header.base_offset, header.size))
        completed = apply_batches(state, ((header, marker),), AppendOrigin.REPLICATION)
        end_transactions(state, partition_log, completed, index_from=index_from)
