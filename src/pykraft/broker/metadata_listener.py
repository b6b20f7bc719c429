"""The broker's view of the cluster: committed metadata batches replayed into an image.

A broker fetches the metadata partition with the raft core as an observer (the same code
that replicates it between controllers, so fetch, truncation and high-watermark rules are
Kafka's by construction); only batches below the high watermark reach this listener, so
the image a client sees never holds a record that could still be lost. A broker-only node
also snapshots that image when Kafka's thresholds pass (on a combined node the controller
does, once for the process).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable

from pykraft.errors import CorruptRecordError
from pykraft.image.image import MetadataImage, Provenance
from pykraft.image.loader import ImageLoader, cyclic_gc_paused
from pykraft.image.snapshot_generator import SnapshotGenerator
from pykraft.raft.api import LeaderAndEpoch
from pykraft.raft.log import OffsetAndEpoch
from pykraft.records.batch import RecordBatch
from pykraft.runtime.logs import event

log = logging.getLogger("pykraft.metadata")

SnapshotReader = Callable[[OffsetAndEpoch], list[RecordBatch]]
"""The raft core's ``read_snapshot``: a frozen snapshot's batches."""


def image_from_snapshot(batches: Iterable[RecordBatch],
                        snapshot_id: OffsetAndEpoch) -> MetadataImage:
    """The image a snapshot holds; its provenance is the snapshot id (end offset - 1)."""
    loader = ImageLoader()
    last_timestamp = -1
    with cyclic_gc_paused():
        for batch in batches:
            if not batch.is_control:  # header and footer control batches carry no metadata
                loader.load_batch(batch)
                last_timestamp = max(last_timestamp, batch.header.max_timestamp)
    if loader.in_transaction:
        raise CorruptRecordError(f"snapshot {snapshot_id} ends inside a metadata transaction")
    return loader.finish(Provenance(snapshot_id.offset - 1, snapshot_id.epoch, last_timestamp))


class SnapshotLoader:
    """Turns the core's ``handle_load_snapshot`` into an image for ``on_image``.

    The core may announce a snapshot from its constructor (its first poll, when the log
    starts above the listener's offset), before the driver holds the core to read it with:
    the announcement then waits for :meth:`attach`. No batch can follow it before that,
    because the high watermark is unknown until a leader answers a fetch.
    """

    def __init__(self, on_image: Callable[[MetadataImage], None], *, label: str) -> None:
        self._on_image = on_image
        self._label = label
        self._reader: SnapshotReader | None = None
        self._pending: OffsetAndEpoch | None = None

    def attach(self, reader: SnapshotReader) -> None:
        self._reader = reader
        self._load_pending()

    def announce(self, snapshot_id: OffsetAndEpoch) -> None:
        self._pending = snapshot_id
        self._load_pending()

    def _load_pending(self) -> None:
        if self._reader is None or self._pending is None:
            return
        snapshot_id, self._pending = self._pending, None
        image = image_from_snapshot(self._reader(snapshot_id), snapshot_id)
        self._on_image(image)
        event(log, "snapshot_loaded", listener=self._label, end_offset=snapshot_id.offset,
              epoch=snapshot_id.epoch, topics=len(image.topics.by_name),
              brokers=len(image.cluster.brokers))


class BrokerMetadataListener:
    """A :class:`~pykraft.raft.api.RaftListener` publishing a new image per batch."""

    def __init__(self, generator: SnapshotGenerator | None = None) -> None:
        self._loader = ImageLoader()
        self.snapshots = SnapshotLoader(self._restart_from, label="broker")
        """Call ``snapshots.attach(core.read_snapshot)`` once the core exists."""
        self.generator = generator
        """Writes snapshots of the image (attach it to the node too), or None."""
        self.leader = LeaderAndEpoch(None, -1)

    def _restart_from(self, image: MetadataImage) -> None:
        self._loader = ImageLoader(image)
        if self.generator is not None:
            self.generator.loaded()

    @property
    def image(self) -> MetadataImage:
        return self._loader.image

    @property
    def committed_offset(self) -> int:
        """The last offset replayed (-1 before any): the heartbeat's metadata offset."""
        return self._loader.last_offset

    def handle_commit(self, batch: RecordBatch) -> None:
        image = self._loader.load_batch(batch)
        if self.generator is not None:
            self.generator.committed(image, batch)

    def handle_leader_change(self, leader: LeaderAndEpoch) -> None:
        self.leader = leader

    def handle_load_snapshot(self, snapshot_id: OffsetAndEpoch) -> None:
        """The log below ``snapshot_id`` is gone (cleaned, or a snapshot was fetched): the
        image restarts from the snapshot, and batches after it follow as usual."""
        self.snapshots.announce(snapshot_id)
