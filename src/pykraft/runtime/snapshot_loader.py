"""Loading the snapshot the raft core announces into a listener's image.

A broker's metadata listener and the controller both restart their image from a snapshot
when the log below it is gone (cleaned, or a snapshot was fetched); this is their shared
half of the core's ``LoadSnapshot`` event.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from pykraft.image.image import MetadataImage
from pykraft.image.loader import image_from_snapshot
from pykraft.raft.api import ReadSnapshot
from pykraft.raft.log import OffsetAndEpoch
from pykraft.runtime.logfmt import event

log = logging.getLogger("pykraft.metadata")



class SnapshotLoader:
    """Turns the core's ``LoadSnapshot`` event into an image for ``on_image``.

    Drivers hand events over only after the core's step returns (``Ready.events``), and
    processes attach the reader before they start the node, so an announcement always finds
    the reader: one without it is a wiring bug, refused loudly.
    """

    def __init__(self, on_image: Callable[[MetadataImage], None], *, label: str) -> None:
        self._on_image = on_image
        self._label = label
        self._reader: ReadSnapshot | None = None

    def attach(self, reader: ReadSnapshot) -> None:
        self._reader = reader

    def announce(self, snapshot_id: OffsetAndEpoch) -> None:
        if self._reader is None:
            raise RuntimeError(f"{self._label}: snapshot {snapshot_id} announced before "
                               "SnapshotLoader.attach()")
        image = image_from_snapshot(self._reader(snapshot_id), snapshot_id)
        self._on_image(image)
        event(log, "snapshot_loaded", listener=self._label, end_offset=snapshot_id.offset,
              epoch=snapshot_id.epoch, topics=len(image.topics.by_name),
              brokers=len(image.cluster.brokers))
