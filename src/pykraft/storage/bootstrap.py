"""Bootstrap files written by ``storage format`` and read when a cluster starts empty.

* ``bootstrap.checkpoint`` (in each formatted directory's root): a SnapshotHeader control
  batch, the bootstrap metadata records (metadata.version first), a SnapshotFooter batch.
  The active controller replays them on activation when the metadata log is empty.
* ``__cluster_metadata-0/00000000000000000000-0000000000.checkpoint``: the initial voter set of
  a dynamic quorum (kraft.version 1): one control batch {SnapshotHeader, KRaftVersion,
  Voters} and a footer. It is never replicated; its voters count "at offset -1".
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from pykraft.errors import StorageError
from pykraft.records.batch import encode_batch, iter_batches
from pykraft.records.control import (
    KRaftVersionRecord,
    SnapshotFooterRecord,
    SnapshotHeaderRecord,
    VotersRecord,
    decode_control,
    encode_control,
)
from pykraft.records.metadata import (
    FeatureLevelRecord,
    MetadataRecord,
    decode_metadata_record,
    encode_metadata_record,
)
from pykraft.storage.fsutil import atomic_write
from pykraft.storage.snapshot_files import SnapshotId, SnapshotWriter

BOOTSTRAP_CHECKPOINT = "bootstrap.checkpoint"
METADATA_LOG_DIR_NAME = "__cluster_metadata-0"
BOOTSTRAP_SNAPSHOT_ID = SnapshotId(0, 0)

Clock = Callable[[], int]
"""Milliseconds since the epoch; called once per batch, as Kafka stamps each batch."""


def snapshot_file_bytes(
    control_after_header: Sequence[object],
    data_values: Sequence[bytes],
    *,
    epoch: int,
    clock: Clock,
    last_contained_timestamp: int = 0,
) -> bytes:
    """The bytes of a snapshot-format file: header batch, one data batch, footer batch.

    Offsets start at 0 inside the file and every batch carries the snapshot's epoch. Control
    records that belong with the header (KRaftVersion, Voters) share its batch, as in Kafka.
    """
    header = [encode_control(SnapshotHeaderRecord(0, last_contained_timestamp))]
    header += [encode_control(msg) for msg in control_after_header]
    out = bytearray(
        encode_batch(0, header, partition_leader_epoch=epoch, timestamp=clock(), control=True)
    )
    offset = len(header)
    if data_values:
        out += encode_batch(
            offset, [(None, v) for v in data_values], partition_leader_epoch=epoch,
            timestamp=clock(),
        )
        offset += len(data_values)
    out += encode_batch(
        offset, [encode_control(SnapshotFooterRecord(0))], partition_leader_epoch=epoch,
        timestamp=clock(), control=True,
    )
    return bytes(out)


def write_bootstrap_checkpoint(
    directory: Path, records: Sequence[object], *, clock: Clock
) -> Path:
    """Write ``bootstrap.checkpoint`` atomically with the given metadata records."""
    values = [encode_metadata_record(record, 0 if isinstance(record, FeatureLevelRecord)
                                     else None) for record in records]
    path = directory / BOOTSTRAP_CHECKPOINT
    atomic_write(path, snapshot_file_bytes((), values, epoch=0, clock=clock))
    return path


def read_bootstrap_checkpoint(directory: Path) -> list[MetadataRecord]:
    """The metadata records of ``bootstrap.checkpoint`` (CRC-checked, strictly decoded)."""
    path = directory / BOOTSTRAP_CHECKPOINT
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise StorageError(f"cannot read {path}: {exc}") from None
    records: list[MetadataRecord] = []
    for batch in iter_batches(data):
        for record in batch.records():
            if batch.is_control:
                decode_control(record.key, record.value)
            elif record.value is not None:
                records.append(decode_metadata_record(record.value))
    return records


def write_bootstrap_voters_snapshot(
    metadata_log_dir: Path, voters: VotersRecord, *, clock: Clock
) -> Path:
    """Write the 0-0 checkpoint holding kraft.version 1 and the initial voter set."""
    partition_dir = metadata_log_dir / METADATA_LOG_DIR_NAME
    partition_dir.mkdir(parents=True, exist_ok=True)
    content = snapshot_file_bytes(
        (KRaftVersionRecord(0, 1), voters), (), epoch=0, clock=clock
    )
    writer = SnapshotWriter(partition_dir, BOOTSTRAP_SNAPSHOT_ID)
    try:
        writer.append(content)
        return writer.freeze()
    except BaseException:
        writer.abort()
        raise
