"""Snapshots (KIP-630) and committed data in the core: what the application is handed
(``Committed`` and ``LoadSnapshot`` events), the snapshots it asks the core to write,
retention that moves the log start behind them, a snapshot a follower installs in place of
its log, and the voter-set history rebuilt from the latest snapshot and the log at start.

The snapshot formats and retention rules are :mod:`pykraft.raft.snapshots` (pure); this
module applies them to the core's log.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from pykraft.errors import RaftError, StorageError
from pykraft.raft.api import Committed, LoadSnapshot, RaftEvent
from pykraft.raft.log import OffsetAndEpoch, is_valid_fetch_position
from pykraft.raft.snapshots import (
    BOOTSTRAP_SNAPSHOT_ID,
    retention_target,
    snapshot_content,
)
from pykraft.records.batch import RecordBatch, iter_batches
from pykraft.records.control import KRaftVersionRecord

if TYPE_CHECKING:
    from pykraft.raft.replica import Replica


def committed_events(core: Replica) -> list[RaftEvent]:
    """What the application has not been handed yet: the latest snapshot if the log start
    passed its next offset, then every batch below the high watermark, in order."""
    events: list[RaftEvent] = []
    log = core.log
    if core.app_next_offset < log.log_start_offset:
        latest = latest_snapshot(core)
        if latest is not None:
            core.app_next_offset = latest.offset
            events.append(LoadSnapshot(latest))
    hwm = core.high_watermark
    while hwm is not None and core.app_next_offset < hwm:
        data = log.read(core.app_next_offset, core.config.max_fetch_bytes)
        delivered = False
        for batch in iter_batches(data, verify_crc=False):
            if batch.last_offset >= hwm:
                break
            if batch.last_offset >= core.app_next_offset:
                events.append(Committed(batch))
                core.app_next_offset = batch.last_offset + 1
                delivered = True
        if not delivered:
            break
    return events


def create_snapshot(core: Replica, snapshot_id: OffsetAndEpoch,
                    batches: Iterable[Sequence[bytes]], timestamp_ms: int | None) -> None:
    """Write a snapshot of the state machine at ``snapshot_id`` (end offset exclusive,
    epoch of the last record), then let retention move the log start behind it.

    The offset must be committed and already handed out (``Committed`` events), at or above
    the log start, at a batch boundary, and (offset, epoch) must be a position of this log.
    ``batches`` are the state machine's record values; the core adds the SnapshotHeader
    (with KRaftVersion and Voters at kraft.version 1) and the SnapshotFooter.
    """
    log, offset = core.log, snapshot_id.offset
    problem = None
    if offset <= 0 or offset > core.app_next_offset:
        problem = f"offset {offset} is not committed and delivered yet"
    elif offset < log.log_start_offset or offset > log.log_end_offset:
        problem = (f"offset {offset} is outside the log [{log.log_start_offset}, "
                   f"{log.log_end_offset}]")
    elif not _is_batch_boundary(core, offset):
        problem = f"offset {offset} is not at a batch boundary"
    elif is_valid_fetch_position(log, offset, snapshot_id.epoch) is not None:
        problem = f"epoch {snapshot_id.epoch} does not end at or after offset {offset}"
    elif any(s.snapshot_id == snapshot_id for s in log.snapshots()):
        problem = "it exists already"
    if problem is not None:
        raise RaftError(f"node {core.node_id}: cannot snapshot at {snapshot_id}: {problem}")
    header: list[object] = []
    control = core.control
    if control.kraft_version_at(offset - 1) >= 1:
        header = [KRaftVersionRecord(0, control.kraft_version_at(offset - 1)),
                  control.voter_set_at(offset - 1).to_record()]
    sink = log.create_snapshot(snapshot_id)
    try:
        for data in snapshot_content(snapshot_id, header_records=header, batches=batches,
                                     timestamp_ms=core.now if timestamp_ms is None
                                     else timestamp_ms):
            sink.write(data)
        sink.freeze()
    except BaseException:
        sink.abort()
        raise
    clean_snapshots(core)


def read_snapshot(core: Replica, snapshot_id: OffsetAndEpoch) -> list[RecordBatch]:
    info = next((s for s in core.log.snapshots() if s.snapshot_id == snapshot_id), None)
    if info is None:
        raise StorageError(f"node {core.node_id}: no snapshot {snapshot_id}")
    data = core.log.read_snapshot(snapshot_id, 0, info.size)
    return list(iter_batches(data, verify_crc=True))


def install_snapshot(core: Replica, snapshot_id: OffsetAndEpoch) -> None:
    """Replace the whole log by a snapshot (a follower far behind); the application loads
    it (a ``LoadSnapshot`` event) since its next offset is now below the log start."""
    core.log.truncate_to_snapshot(snapshot_id)
    core.requested_flush = core.log.log_end_offset
    core.control.load_snapshot(snapshot_id.offset, read_snapshot(core, snapshot_id))


def clean_snapshots(core: Replica) -> None:
    """Apply snapshot retention: move the log start to a newer snapshot if allowed."""
    log = core.log
    target = retention_target(
        log.snapshots(), log.size_bytes, core.now,
        retention_bytes=core.config.snapshot_retention_bytes,
        retention_ms=core.config.snapshot_retention_ms,
        committed_offset=core.app_next_offset,
    )
    if target is not None and target.offset > log.log_start_offset:
        log.delete_before_snapshot(target)
        core.control.truncate_old_entries(log.log_start_offset)


def load_control_state(core: Replica) -> None:
    """Rebuild kraft.version and voter-set history: latest snapshot, then the log.

    A snapshot beyond the log end (the crash lost an unflushed tail it covers) replaces
    the whole log, as Kafka does when it opens the log.
    """
    log = core.log
    latest = latest_snapshot(core, include_bootstrap=True)
    if latest is not None and latest.offset > log.log_end_offset:
        log.truncate_to_snapshot(latest)
        core.requested_flush = log.log_end_offset
    offset = log.log_start_offset
    if latest is not None:
        core.control.load_snapshot(latest.offset, read_snapshot(core, latest))
        offset = max(offset, latest.offset)
    while offset < log.log_end_offset:
        batches = [b for b in iter_batches(log.read(offset, core.config.max_fetch_bytes),
                                           verify_crc=False) if b.last_offset >= offset]
        if not batches:
            break
        core.control.observe(batches)
        offset = batches[-1].last_offset + 1


def latest_snapshot(core: Replica, *,
                    include_bootstrap: bool = False) -> OffsetAndEpoch | None:
    ids = [s.snapshot_id for s in core.log.snapshots()
           if include_bootstrap or s.snapshot_id != BOOTSTRAP_SNAPSHOT_ID]
    return ids[-1] if ids else None


def _is_batch_boundary(core: Replica, offset: int) -> bool:
    if offset == core.log.log_end_offset:
        return True
    first = next(iter_batches(core.log.read(offset, 1), verify_crc=False), None)
    return first is not None and first.base_offset == offset
