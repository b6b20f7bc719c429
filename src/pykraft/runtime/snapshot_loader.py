"""Loading the snapshot the raft core announces into a listener's image.

A broker's metadata listener and the controller both restart their image from a snapshot
when the log below it is gone (cleaned, or a snapshot was fetched); this is their shared
half of the core's ``handle_load_snapshot``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from pykraft.image.image import MetadataImage
from pykraft.image.loader import image_from_snapshot
from pykraft.raft.log import OffsetAndEpoch
from pykraft.records.batch import RecordBatch
from pykraft.runtime.logfmt import event

log = logging.getLogger("pykraft.metadata")

SnapshotReader = Callable[[OffsetAndEpoch], list[RecordBatch]]
"""The raft core's ``read_snapshot``: a frozen snapshot's batches."""


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
