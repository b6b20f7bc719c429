"""Kafka's SnapshotGenerator: snapshot a listener's committed image when the policy says so.

Controllers and brokers both snapshot the image they replayed (Kafka's SharedServer runs one
generator per process, so a combined node snapshots once). The decision is taken in the
listener's ``handle_commit``, where the image and the batch it ends at are known, but the
snapshot is written later, once encoded. The image is immutable, so the later write still
holds exactly the records up to the batch the decision saw.

Kafka builds snapshots on a thread of their own. Here the image is encoded in slices of
:data:`ENCODE_SLICE` records, one per event-loop turn (``defer``), so a large image (about
16 µs a record) does not stall fetches and heartbeats for seconds; only framing and writing
the encoded values happen in one node step of their own.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import islice
from typing import Protocol

from pykraft.errors import RaftError
from pykraft.image.image import MetadataImage
from pykraft.image.snapshot import MAX_RECORDS_PER_BATCH, SnapshotPolicy, chunked
from pykraft.raft.log import OffsetAndEpoch
from pykraft.records.batch import RecordBatch
from pykraft.records.metadata import encode_metadata_record

log = logging.getLogger("pykraft.snapshots")
ENCODE_SLICE = 2_000
"""Records encoded per event-loop turn (some 30 ms)."""

Step = Callable[[Callable[[int], object]], object]
"""Run ``action(now_ms)`` as one input of the node (``RaftNode.step``)."""
Defer = Callable[[Callable[[], None]], object]
"""Run a callback on a later event-loop turn (``call_soon``): one encode slice per turn."""


class SnapshotSink(Protocol):
    """The part of the raft core that writes snapshots (``RaftClient.create_snapshot``)."""

    def create_snapshot(self, now_ms: int, snapshot_id: OffsetAndEpoch,
                        batches: Iterable[Sequence[bytes]], *,
                        timestamp_ms: int | None = None) -> None: ...


@dataclass(slots=True)
class SnapshotJob:
    """A snapshot to write: ``image`` as of ``snapshot_id`` (end offset exclusive)."""

    snapshot_id: OffsetAndEpoch
    image: MetadataImage
    reason: str
    values: list[bytes] = field(default_factory=list, repr=False)
    """The image's records encoded so far."""
    _records: Iterator[tuple[object, int]] | None = field(default=None, repr=False,
                                                          compare=False)

    def encode_some(self, count: int) -> bool:
        """Encode up to ``count`` more records; True once the whole image is encoded."""
        if self._records is None:
            self._records = self.image.iter_records()
        before = len(self.values)
        self.values.extend(encode_metadata_record(record, version)
                           for record, version in islice(self._records, count))
        return len(self.values) - before < count

    def write(self, sink: SnapshotSink, now_ms: int) -> None:
        """Hand the encoded image to the core (call once :meth:`encode_some` is done)."""
        sink.create_snapshot(now_ms, self.snapshot_id,
                             chunked(self.values, MAX_RECORDS_PER_BATCH),
                             timestamp_ms=max(self.image.provenance.last_timestamp_ms, 0))


@dataclass(frozen=True, slots=True)
class _Driver:
    sink: SnapshotSink
    step: Step
    defer: Defer
    clock: Callable[[], int]


class SnapshotGenerator:
    """Turns committed batches into snapshot writes; see the module docstring.

    Create it with the listener, then :meth:`attach` the node once it exists. Until then
    (and while a write is pending) no snapshot is started; the bytes still count.
    """

    def __init__(self, policy: SnapshotPolicy) -> None:
        self.policy = policy
        self._driver: _Driver | None = None
        self._pending: SnapshotJob | None = None
        self.written: list[OffsetAndEpoch] = []
        """Snapshot ids this generator wrote, oldest first."""

    def attach(self, sink: SnapshotSink, *, step: Step, defer: Defer,
               clock: Callable[[], int]) -> None:
        """Start the interval clock and accept work (Kafka counts from process start)."""
        self._driver = _Driver(sink, step, defer, clock)
        self.policy.snapshot_taken(clock())

    def committed(self, image: MetadataImage, batch: RecordBatch) -> SnapshotJob | None:
        """Count ``batch`` (just replayed into ``image``); schedule a snapshot if one is due.

        Only an image published at this batch qualifies: inside a metadata transaction
        the image lags the log, and a snapshot there would drop the open transaction.
        """
        self.policy.committed(len(batch.data))
        driver = self._driver
        provenance = image.provenance
        if (driver is None or self._pending is not None
                or provenance.last_offset != batch.last_offset):
            return None
        reason = self.policy.reason(driver.clock())
        if reason is None:
            return None
        job = SnapshotJob(OffsetAndEpoch(batch.last_offset + 1, batch.epoch), image, reason)
        self.policy.snapshot_taken(driver.clock())  # bytes from here on count for the next
        self._pending = job
        driver.defer(lambda: self._encode(job))
        return job

    def loaded(self) -> None:
        """A snapshot replaced the image: counting restarts, a pending write is dropped
        (its offset may now be below the log start)."""
        self._pending = None
        self.policy.snapshot_taken(self._driver.clock() if self._driver is not None else 0)

    def _encode(self, job: SnapshotJob) -> None:
        """One slice per turn; the last one writes (unless a loaded snapshot dropped it)."""
        driver = self._driver
        if self._pending is not job or driver is None:
            return
        if not job.encode_some(ENCODE_SLICE):
            driver.defer(lambda: self._encode(job))
            return
        self._pending = None
        driver.step(lambda now: self._write(driver.sink, job, now))

    def _write(self, sink: SnapshotSink, job: SnapshotJob, now_ms: int) -> None:
        try:
            job.write(sink, now_ms)
        except RaftError as exc:
            # The core refused (e.g. a snapshot fetched meanwhile already covers the offset):
            # a skipped snapshot loses nothing, the next threshold tries again.
            log.warning("snapshot_skipped", extra={"fields": {
                "snapshot_id": str(job.snapshot_id), "error": str(exc)}})
            return
        self.written.append(job.snapshot_id)
        log.info("snapshot_written", extra={"fields": {
            "snapshot_id": str(job.snapshot_id), "reason": job.reason}})
