"""The broker's view of the cluster: committed metadata batches replayed into an image.

A broker fetches the metadata partition with the raft core as an observer (the same code
that replicates it between controllers, so fetch, truncation and high-watermark rules are
Kafka's by construction); only batches below the high watermark reach this listener, so
the image a client sees never holds a record that could still be lost. A broker-only node
also snapshots that image when Kafka's thresholds pass (on a combined node the controller
does, once for the process).
"""

from __future__ import annotations

from collections.abc import Callable

from pykraft.image.image import MetadataImage
from pykraft.image.loader import ImageLoader
from pykraft.image.snapshot_generator import SnapshotGenerator
from pykraft.raft.api import LeaderAndEpoch
from pykraft.raft.log import OffsetAndEpoch
from pykraft.records.batch import RecordBatch
from pykraft.runtime.snapshot_loader import SnapshotLoader


class BrokerMetadataListener:
    """A :class:`~pykraft.raft.api.RaftListener` publishing a new image per batch."""

    def __init__(self, generator: SnapshotGenerator | None = None) -> None:
        self._loader = ImageLoader()
        self.snapshots = SnapshotLoader(self._restart_from, label="broker")
        """Call ``snapshots.attach(core.read_snapshot)`` once the core exists."""
        self.generator = generator
        """Writes snapshots of the image (attach it to the node too), or None."""
        self.leader = LeaderAndEpoch(None, -1)
        self.publishers: list[Callable[[MetadataImage], None]] = []
        """Called with each new image (the replica manager applies it)."""

    def _restart_from(self, image: MetadataImage) -> None:
        self._loader = ImageLoader(image)
        if self.generator is not None:
            self.generator.loaded()
        self._publish(image)

    def _publish(self, image: MetadataImage) -> None:
        for publisher in self.publishers:
            publisher(image)

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
        self._publish(image)

    def handle_leader_change(self, leader: LeaderAndEpoch) -> None:
        self.leader = leader

    def handle_load_snapshot(self, snapshot_id: OffsetAndEpoch) -> None:
        """The log below ``snapshot_id`` is gone (cleaned, or a snapshot was fetched): the
        image restarts from the snapshot, and batches after it follow as usual."""
        self.snapshots.announce(snapshot_id)
