"""The broker's view of the cluster: committed metadata batches replayed into an image.

A broker fetches the metadata partition with the raft core as an observer (the same code
that replicates it between controllers, so fetch, truncation and high-watermark rules are
Kafka's by construction); only batches below the high watermark reach this listener, so
the image a client sees never holds a record that could still be lost. A broker-only node
also snapshots that image when Kafka's thresholds pass (on a combined node the controller
does, once for the process).

As Kafka's MetadataLoader, nothing is published while the listener first catches up: until
it has replayed up to the high watermark it learnt from the quorum, the replica manager
would otherwise act out every historical leadership of a restarted broker, one batch after
another (becoming leader in old epochs, starting fetchers for old leaders).

A forwarded write waits here (:meth:`BrokerMetadataListener.reached`) until the image holds
what the controller had committed when it answered, so that a read sent to this broker
right after sees the write (:mod:`pykraft.broker.read_after_write`).
"""

from __future__ import annotations

import asyncio
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
        self.high_watermark: Callable[[], int | None] = lambda: None
        """The quorum's high watermark as the raft core knows it (None: not yet known)."""
        self._catching_up = True
        self._waiters: list[tuple[int, asyncio.Future[None]]] = []

    def _restart_from(self, image: MetadataImage) -> None:
        self._loader = ImageLoader(image)
        if self.generator is not None:
            self.generator.loaded()
        self._publish(image)

    def _publish(self, image: MetadataImage) -> None:
        self._wake_reached()
        if self._still_catching_up():
            return
        for publisher in self.publishers:
            publisher(image)

    def _still_catching_up(self) -> bool:
        """Kafka's ``stillNeedToCatchUp``: true until the replayed offset first reaches the
        high watermark; from then on every image is published."""
        if not self._catching_up:
            return False
        high_watermark = self.high_watermark()
        if high_watermark is None or self._loader.last_offset + 1 < high_watermark:
            return True
        self._catching_up = False
        return False

    @property
    def image(self) -> MetadataImage:
        return self._loader.image

    @property
    def committed_offset(self) -> int:
        """The last offset replayed (-1 before any): the heartbeat's metadata offset."""
        return self._loader.last_offset

    async def reached(self, end_offset: int) -> None:
        """Return once the image holds every record below ``end_offset`` (await on the
        loop that drives the raft core; the caller bounds the wait)."""
        if self._loader.last_offset + 1 >= end_offset:
            return
        waiter = asyncio.get_running_loop().create_future()
        self._waiters.append((end_offset, waiter))
        try:
            await waiter
        finally:
            self._waiters = [(o, w) for o, w in self._waiters if w is not waiter]

    def _wake_reached(self) -> None:
        end = self._loader.last_offset + 1
        for offset, waiter in self._waiters:
            if offset <= end and not waiter.done():
                waiter.set_result(None)

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
