"""The content of a snapshot: what Kafka's ``RecordsSnapshotWriter`` writes between a
SnapshotHeader and a SnapshotFooter control batch.

Pure record encoding, shared by the raft core (a snapshot it creates) and the storage layer
(the files it writes, ``bootstrap.checkpoint`` included); neither owns the other.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence

from pykraft.records.batch import encode_batch
from pykraft.records.control import SnapshotFooterRecord, SnapshotHeaderRecord, encode_control


def snapshot_batches(
    *,
    epoch: int,
    last_contained_timestamp: int,
    batches: Iterable[Sequence[bytes]],
    clock: Callable[[], int],
    header_records: Sequence[object] = (),
) -> Iterator[bytes]:
    """The batches of a snapshot-format file as Kafka's ``RecordsSnapshotWriter`` lays them out.

    One control batch holding SnapshotHeader followed by ``header_records`` (KRaftVersion and
    Voters when kraft.version >= 1), then one data batch per entry of ``batches`` (metadata
    record values), then a SnapshotFooter batch. Offsets start at 0, every batch carries the
    snapshot's epoch and ``clock()`` (ms) as its timestamp. ``bootstrap.checkpoint`` uses the
    same layout with epoch 0.
    """
    header = [encode_control(SnapshotHeaderRecord(0, last_contained_timestamp))]
    header += [encode_control(record) for record in header_records]
    yield encode_batch(0, header, partition_leader_epoch=epoch, timestamp=clock(), control=True)
    offset = len(header)
    for values in batches:
        if values:
            yield encode_batch(offset, [(None, value) for value in values],
                               partition_leader_epoch=epoch, timestamp=clock())
            offset += len(values)
    footer = [encode_control(SnapshotFooterRecord(0))]
    yield encode_batch(offset, footer, partition_leader_epoch=epoch, timestamp=clock(),
                       control=True)
