"""Snapshot rules of the core (KIP-630): which snapshot a fetcher needs, which ones the
retention limits let go, what a locally created snapshot contains, and a download's state.

Creation and cleaning are decisions over the log's snapshot list; the bytes themselves go
through the :class:`~pykraft.raft.log.RaftLog` interface, so this module does no I/O.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from pykraft.raft.log import OffsetAndEpoch, RaftLog, SnapshotInfo, SnapshotSink
from pykraft.records.snapshot import snapshot_batches

BOOTSTRAP_SNAPSHOT_ID = OffsetAndEpoch(0, 0)


def snapshot_for_fetch(log: RaftLog, offset: int, epoch: int) -> OffsetAndEpoch | None:
    """The snapshot a fetcher at (offset, epoch) must download instead of the log, if any.

    Kafka's rules: a fetch from offset 0 gets the latest snapshot when one exists (the
    bootstrap 0-0 checkpoint is never replicated); so does a fetch below the log start, or
    at it with another epoch, or from an epoch older than the snapshot at the log start.
    """
    ids = [s.snapshot_id for s in log.snapshots() if s.snapshot_id != BOOTSTRAP_SNAPSHOT_ID]
    if not ids:
        return None
    latest, earliest = ids[-1], ids[0]
    start = log.log_start_offset
    if offset == 0:
        return latest
    if earliest.offset == start and (
        offset < start or (offset == start and epoch != earliest.epoch)
        or epoch < earliest.epoch
    ):
        return latest
    return None


def retention_target(
    snapshots: Sequence[SnapshotInfo], log_bytes: int, now_ms: int, *, retention_bytes: int,
    retention_ms: int, committed_offset: int,
) -> OffsetAndEpoch | None:
    """The newest snapshot the log may be cleaned up to (Kafka's ``maybeClean``), or None.

    Walking snapshots oldest first, each one is retired (the log start moving to the next)
    while the log plus the snapshots still kept exceed ``retention_bytes``, or it is older
    than ``retention_ms``; -1 disables a limit. The newest snapshot always stays, and the
    log start never passes ``committed_offset``. (Unlike Kafka, the log's own size is not
    re-measured as segments go, so retirement stops a little later than Kafka's.)
    """
    target = None
    kept_bytes = sum(s.size for s in snapshots)
    for older, newer in itertools.pairwise(snapshots):
        if newer.snapshot_id.offset > committed_offset:
            break
        too_big = retention_bytes >= 0 and log_bytes + kept_bytes > retention_bytes
        too_old = retention_ms >= 0 and now_ms - older.timestamp_ms > retention_ms
        if not (too_big or too_old):
            break
        kept_bytes -= older.size
        target = newer.snapshot_id
    return target


def snapshot_content(
    snapshot_id: OffsetAndEpoch, *, timestamp_ms: int, header_records: Sequence[object],
    batches: Iterable[Sequence[bytes]],
) -> Iterator[bytes]:
    """The batches of a snapshot file: header (+ KRaftVersion/Voters), data, footer."""
    return snapshot_batches(epoch=snapshot_id.epoch, last_contained_timestamp=timestamp_ms,
                            batches=batches, clock=lambda: timestamp_ms,
                            header_records=header_records)


@dataclass(slots=True)
class SnapshotDownload:
    """A follower pulling a snapshot with FetchSnapshot: where it is and where it writes."""

    snapshot_id: OffsetAndEpoch
    sink: SnapshotSink

    @property
    def position(self) -> int:
        return self.sink.size
