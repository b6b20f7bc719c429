"""Replay of committed batches into images, honouring metadata transactions.

Records between a BeginTransactionRecord and its EndTransactionRecord become visible
together, when the End record is read; an AbortTransactionRecord drops them. This is what
lets a multi-batch bootstrap (or any atomic change larger than one batch) be all-or-nothing
for readers. The image only advances past whole batches outside a transaction.
"""

from __future__ import annotations

import gc
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

from pykraft.errors import CorruptRecordError, MetadataImageError, MetadataRecordError
from pykraft.image.image import MetadataDelta, MetadataImage, Provenance
from pykraft.raft.log import OffsetAndEpoch
from pykraft.records.batch import RecordBatch
from pykraft.records.metadata import (
    AbortTransactionRecord,
    BeginTransactionRecord,
    EndTransactionRecord,
    MetadataRecord,
    decode_metadata_record,
)


@contextmanager
def cyclic_gc_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off while a whole image is replayed.

    A snapshot load allocates millions of long-lived objects and no reference cycles; every
    collection pass over the growing heap is wasted work that made load time grow faster
    than the snapshot (bench/scale.py). Reference counting still frees everything as usual.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


class ImageLoader:
    """Feeds committed batches (log, snapshot or raft listener) into a :class:`MetadataImage`."""

    def __init__(self, image: MetadataImage | None = None) -> None:
        self.image = MetadataImage() if image is None else image
        self._delta: MetadataDelta | None = None
        self._transaction: list[MetadataRecord] | None = None
        self.transaction_start_offset = -1
        """The offset of the open transaction's BeginTransactionRecord, -1 outside one
        (Kafka's ``transactionStartOffset``: the activation aborts it and names it)."""
        self.last_offset = self.image.provenance.last_offset
        self.last_delta = MetadataDelta(self.image)
        """The changes that made :attr:`image` (what a publisher of committed images, such as
        the migration driver's dual write, hands on with it)."""

    @property
    def in_transaction(self) -> bool:
        """A BeginTransactionRecord was read and its End or Abort was not (yet)."""
        return self._transaction is not None

    def load_batch(self, batch: RecordBatch) -> MetadataImage:
        """Replay one batch (control batches only move the offset) and return the image."""
        if not batch.is_control:
            for record in batch.records():
                if record.value is None:
                    raise MetadataRecordError("metadata record with a null value",
                                              position=batch.position)
                self.replay(decode_metadata_record(record.value), record.offset)
        return self.finish(Provenance(batch.last_offset, batch.epoch, batch.header.max_timestamp))

    def replay(self, record: MetadataRecord, offset: int) -> None:
        """One decoded record, at ``offset``; call :meth:`load_batch` or :meth:`finish` to
        publish it."""
        body = record.message
        if isinstance(body, BeginTransactionRecord):
            if self._transaction is not None:
                raise MetadataImageError("BeginTransactionRecord inside a transaction")
            self._transaction = []
            self.transaction_start_offset = offset
        elif isinstance(body, EndTransactionRecord | AbortTransactionRecord):
            if self._transaction is None:
                raise MetadataImageError(f"{type(body).__name__} outside a transaction")
            if isinstance(body, EndTransactionRecord):
                for pending in self._transaction:
                    self._replay_now(pending)
            self._transaction = None
            self.transaction_start_offset = -1
        elif self._transaction is not None:
            self._transaction.append(record)
        else:
            self._replay_now(record)

    def finish(self, provenance: Provenance) -> MetadataImage:
        """Publish what was replayed outside a transaction, up to ``provenance``."""
        self.last_offset = max(self.last_offset, provenance.last_offset)
        self._publish(provenance)
        return self.image

    def _replay_now(self, record: MetadataRecord) -> None:
        if self._delta is None:
            self._delta = MetadataDelta(self.image)
        self._delta.replay(record)

    def _publish(self, provenance: Provenance) -> None:
        if self._transaction is not None:
            return
        delta = self._delta if self._delta is not None else MetadataDelta(self.image)
        self.image = delta.apply(provenance)
        self.last_delta = delta
        self._delta = None


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
