"""Bootstrap files written by ``storage format`` and read when a cluster starts empty.

* ``bootstrap.checkpoint`` (in each formatted directory's root): a SnapshotHeader control
  batch, the bootstrap metadata records (metadata.version first), a SnapshotFooter batch.
  The active controller replays them on activation when the metadata log is empty.
* ``__cluster_metadata-0/00000000000000000000-0000000000.checkpoint``: the initial voter set of
  a dynamic quorum (kraft.version 1): one control batch {SnapshotHeader, KRaftVersion,
  Voters} and a footer. It is never replicated; its voters count "at offset -1".
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from pykraft.errors import StorageError
from pykraft.records.batch import iter_batches
from pykraft.records.control import KRaftVersionRecord, VotersRecord, decode_control
from pykraft.records.metadata import (
    MetadataRecord,
    decode_metadata_record,
    encode_metadata_record,
)
from pykraft.records.snapshot import snapshot_batches
from pykraft.storage.fsutil import atomic_write
from pykraft.storage.metadata_log import Clock
from pykraft.storage.snapshot_files import SnapshotId, write_snapshot

BOOTSTRAP_CHECKPOINT = "bootstrap.checkpoint"
METADATA_LOG_DIR_NAME = "__cluster_metadata-0"
BOOTSTRAP_SNAPSHOT_ID = SnapshotId(0, 0)


def write_bootstrap_checkpoint(
    directory: Path, records: Sequence[object], *, clock: Clock
) -> Path:
    """Write ``bootstrap.checkpoint`` atomically with the given metadata records.

    FeatureLevelRecord only exists at version 0; other records use their highest version.
    """
    values = [encode_metadata_record(record) for record in records]
    path = directory / BOOTSTRAP_CHECKPOINT
    content = snapshot_batches(
        epoch=0, last_contained_timestamp=0, batches=[values], clock=clock
    )
    atomic_write(path, b"".join(content))
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
    return write_snapshot(
        partition_dir, BOOTSTRAP_SNAPSHOT_ID, last_contained_timestamp=0, batches=(),
        clock=clock, header_records=(KRaftVersionRecord(0, 1), voters),
    )
