"""The broker's view of the cluster: committed metadata batches replayed into an image.

A broker fetches the metadata partition with the raft core as an observer (the same code
that replicates it between controllers, so fetch, truncation and high-watermark rules are
Kafka's by construction); only batches below the high watermark reach this listener, so
the image a client sees never holds a record that could still be lost.
"""

from __future__ import annotations

from pykraft.image.image import MetadataImage
from pykraft.image.loader import ImageLoader
from pykraft.raft.api import LeaderAndEpoch
from pykraft.raft.log import OffsetAndEpoch
from pykraft.records.batch import RecordBatch


class BrokerMetadataListener:
    """A :class:`~pykraft.raft.api.RaftListener` publishing a new image per batch."""

    def __init__(self) -> None:
        self._loader = ImageLoader()
        self.leader = LeaderAndEpoch(None, -1)

    @property
    def image(self) -> MetadataImage:
        return self._loader.image

    @property
    def committed_offset(self) -> int:
        """The last offset replayed (-1 before any): the heartbeat's metadata offset."""
        return self._loader.last_offset

    def handle_commit(self, batch: RecordBatch) -> None:
        self._loader.load_batch(batch)

    def handle_leader_change(self, leader: LeaderAndEpoch) -> None:
        self.leader = leader

    def handle_load_snapshot(self, snapshot_id: OffsetAndEpoch) -> None:
        """Snapshot loading reaches brokers once the disk log stores snapshots (issue 4)."""
