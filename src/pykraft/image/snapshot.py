"""Snapshots of the metadata image: when to take one, and how to write and read them.

A metadata snapshot is the image written as records (:meth:`MetadataImage.records`) in the
snapshot file layout of :mod:`pykraft.storage.snapshot_files`, split into batches of at most
``max_records_per_batch`` records. Loading replays such a file (or ``bootstrap.checkpoint``)
through an :class:`ImageLoader`; a metadata log directory is loaded as its newest snapshot
plus the log segments after it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pykraft.errors import ConfigError, CorruptRecordError, StorageError
from pykraft.image.image import MetadataImage, Provenance
from pykraft.image.loader import ImageLoader, cyclic_gc_paused
from pykraft.records.batch import RecordBatch, iter_batches
from pykraft.records.control import SnapshotHeaderRecord, decode_control
from pykraft.storage.log_verify import TornTail
from pykraft.storage.snapshot_files import (
    SnapshotId,
    SnapshotReader,
    list_snapshots,
    write_snapshot,
)

DEFAULT_MAX_BYTES_BETWEEN_SNAPSHOTS = 20 * 1024 * 1024
DEFAULT_MAX_SNAPSHOT_INTERVAL_MS = 3_600_000
MAX_RECORDS_PER_BATCH = 10_000  # Kafka's QuorumController.MAX_RECORDS_PER_BATCH


@dataclass(slots=True)
class SnapshotPolicy:
    """Decides when to snapshot, like Kafka's SnapshotGenerator.

    Triggers: ``metadata.log.max.record.bytes.between.snapshots`` committed bytes since the
    last snapshot, or ``metadata.log.max.snapshot.interval.ms`` elapsed (0 disables the time
    trigger). The time trigger needs at least one new byte: an unchanged image is not
    snapshotted again.
    """

    max_bytes_between: int = DEFAULT_MAX_BYTES_BETWEEN_SNAPSHOTS
    max_interval_ms: int = DEFAULT_MAX_SNAPSHOT_INTERVAL_MS
    last_snapshot_ms: int = 0
    bytes_since: int = field(default=0, init=False)

    def __post_init__(self) -> None:
        if self.max_bytes_between < 1:
            raise ConfigError("metadata.log.max.record.bytes.between.snapshots must be >= 1")
        if self.max_interval_ms < 0:
            raise ConfigError("metadata.log.max.snapshot.interval.ms must be >= 0")

    def committed(self, batch_bytes: int) -> None:
        self.bytes_since += batch_bytes

    def reason(self, now_ms: int) -> str | None:
        """Why a snapshot is due now, or None."""
        if self.bytes_since >= self.max_bytes_between:
            return f"{self.bytes_since} bytes committed since the last snapshot"
        if (self.max_interval_ms and self.bytes_since
                and now_ms - self.last_snapshot_ms >= self.max_interval_ms):
            return f"{now_ms - self.last_snapshot_ms} ms since the last snapshot"
        return None

    def snapshot_taken(self, now_ms: int) -> None:
        self.bytes_since = 0
        self.last_snapshot_ms = now_ms


def chunked(values: Sequence[bytes], size: int) -> Iterator[Sequence[bytes]]:
    if size < 1:
        raise ValueError("batch size must be >= 1")
    for start in range(0, len(values), size):
        yield values[start : start + size]


def write_image_snapshot(
    directory: Path,
    image: MetadataImage,
    *,
    clock: Callable[[], int],
    max_records_per_batch: int = MAX_RECORDS_PER_BATCH,
    header_records: Sequence[object] = (),
) -> Path:
    """Write ``image`` as the snapshot named after its provenance (offset + 1, epoch)."""
    provenance = image.provenance
    if provenance.last_offset < 0 or provenance.last_epoch < 0:
        raise StorageError("cannot name a snapshot of an image with no provenance")
    snapshot_id = SnapshotId(provenance.last_offset + 1, provenance.last_epoch)
    return write_snapshot(
        directory, snapshot_id, last_contained_timestamp=max(provenance.last_timestamp_ms, 0),
        batches=chunked(image.encoded_records(), max_records_per_batch), clock=clock,
        header_records=header_records,
    )


def load_snapshot(path: Path) -> MetadataImage:
    """The image held by a snapshot file or ``bootstrap.checkpoint``.

    Its provenance is the snapshot id (end offset - 1, epoch) when the name is one, else
    that of the file's last batch.
    """
    with SnapshotReader(path) as reader, cyclic_gc_paused():
        loader = ImageLoader()
        timestamp = -1
        last: RecordBatch | None = None
        for batch in reader.batches():
            if batch.is_control:
                for record in batch.records():
                    control = decode_control(record.key, record.value)
                    if isinstance(control.message, SnapshotHeaderRecord):
                        timestamp = control.message.last_contained_log_timestamp
            else:
                loader.load_batch(batch)
            last = batch
        if loader.in_transaction:
            raise CorruptRecordError(f"{path}: snapshot ends inside a metadata transaction")
        sid = reader.snapshot_id
        if sid is not None:
            provenance = Provenance(sid.end_offset - 1, sid.epoch, timestamp)
        elif last is not None:
            provenance = Provenance(last.last_offset, last.epoch, timestamp)
        else:
            provenance = Provenance()
        return loader.finish(provenance)


def load_log_directory(directory: Path, tail: TornTail | None = None) -> MetadataImage:
    """Replay a ``__cluster_metadata-0`` directory read-only: newest snapshot, then segments
    (up to ``tail``, the torn end :func:`verify_segments` found, if any).

    Everything in the log is replayed (a reader of a stopped node's files cannot know the
    high watermark); an open transaction at the end is left out of the image.
    """
    if not directory.is_dir():
        raise StorageError(f"{directory} is not a directory")
    snapshots = [sid for sid in list_snapshots(directory) if sid.end_offset > 0]
    image = load_snapshot(directory / snapshots[-1].file_name) if snapshots else MetadataImage()
    return load_segments(sorted(directory.glob("*.log")), image, tail)


def load_segments(segments: Sequence[Path], image: MetadataImage | None = None,
                  tail: TornTail | None = None) -> MetadataImage:
    """Replay log segment files in order on top of ``image``, skipping offsets it holds,
    and stopping at ``tail``."""
    loader = ImageLoader(image)
    with cyclic_gc_paused():
        for segment in segments:
            try:
                data = segment.read_bytes()
            except OSError as exc:
                raise StorageError(f"cannot read {segment}: {exc}") from None
            for batch in iter_batches(data if tail is None else tail.cut(segment, data)):
                if batch.last_offset > loader.last_offset:
                    loader.load_batch(batch)
    return loader.image
