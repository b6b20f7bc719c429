"""The byte-level half of log compaction: the offset map of a segment's batches and the
cleaned copy of a segment, in any codec (the rules are :mod:`pykraft.storage.compaction`).

A batch whose records all survive is copied byte for byte. Otherwise its surviving records
are re-encoded into one batch of the same codec, with the same base offset, leader epoch,
attributes and producer id, epoch and base sequence (offsets never change, so gaps
appear) and its last offset stays, so the producer's last sequence does (Kafka's
``MemoryRecords.filterTo`` does the same). A batch keeping a tombstone is stamped with the
delete horizon the first time (KIP-534). A batch left empty is dropped, unless it is the
last of an active producer: then its header stays, with no records. Control batches
(transaction markers) are always kept.

Interface::

    add_to_offset_map(segment_bytes, offset_map, end_offset)   # keys below end_offset
    cleaned = clean_batches(segment_bytes, offset_map, now_ms=..., horizon_ms=...,
                            producer_last_offsets={producer_id: last_data_offset})
"""

from __future__ import annotations

from collections.abc import Mapping

from pykraft.partition.batch_records import batch_records
from pykraft.partition.compression import NONE, compress
from pykraft.records.batch import (
    ATTR_COMPRESSION_MASK,
    ATTR_DELETE_HORIZON,
    ATTR_TIMESTAMP_TYPE,
    BatchHeader,
    Record,
    RecordBatch,
    assemble_batch,
    encode_records,
    iter_batches,
)
from pykraft.storage.compaction import OffsetMap, retains_record


def add_to_offset_map(data: bytes, offset_map: OffsetMap, end_offset: int) -> None:
    """Record the latest offset of every key of the data batches in ``data`` below
    ``end_offset``."""
    for batch in iter_batches(data):
        if batch.is_control:
            continue
        for record in batch_records(batch):
            if record.key is not None and record.offset < end_offset:
                offset_map.put(record.key, record.offset)


def clean_batches(data: bytes, offset_map: OffsetMap, *, now_ms: int, horizon_ms: int,
                  producer_last_offsets: Mapping[int, int]) -> bytes:
    """``data`` (whole batches) without the records compaction removes; a batch keeping
    a tombstone without a delete horizon yet is stamped with ``horizon_ms``. An emptied
    batch that is the last of an active producer (``producer_last_offsets``: producer id
    -> its last data offset) stays as an empty header, so its sequence survives."""
    out: list[bytes] = []
    for batch in iter_batches(data):
        if batch.is_control:
            out.append(batch.data)
            continue
        header = batch.header
        records = batch_records(batch)
        kept = [record for record in records if retains_record(
            record, offset_map, horizon_ms=header.delete_horizon_ms, now_ms=now_ms)]
        stamp = (header.delete_horizon_ms is None
                 and any(record.value is None for record in kept))
        if not kept:
            if (header.producer_id >= 0
                    and producer_last_offsets.get(header.producer_id) == header.last_offset):
                out.append(_empty(header))
        elif len(kept) == len(records) and not stamp:
            out.append(batch.data)
        else:
            out.append(_rebuild(batch, kept, horizon_ms if stamp else None))
    return b"".join(out)


def _empty(header: BatchHeader) -> bytes:
    """The header alone (Kafka's ``writeEmptyHeader``): offsets, producer and sequence."""
    attributes = header.attributes & ~(ATTR_COMPRESSION_MASK | ATTR_DELETE_HORIZON)
    return assemble_batch(
        b"", base_offset=header.base_offset, partition_leader_epoch=header.partition_leader_epoch,
        attributes=attributes, last_offset_delta=header.last_offset_delta,
        base_timestamp=header.max_timestamp, max_timestamp=header.max_timestamp,
        records_count=0, producer_id=header.producer_id, producer_epoch=header.producer_epoch,
        base_sequence=header.base_sequence)


def _rebuild(batch: RecordBatch, kept: list[Record], horizon_ms: int | None) -> bytes:
    """The kept records in one batch like the original, its last offset too (so the
    producer's last sequence stays); a new delete horizon becomes the base timestamp
    (record timestamps stay, as deltas from it)."""
    header = batch.header
    codec = header.attributes & ATTR_COMPRESSION_MASK
    attributes = header.attributes
    if horizon_ms is not None:
        base_timestamp = horizon_ms
        attributes |= ATTR_DELETE_HORIZON
    elif header.delete_horizon_ms is not None:
        base_timestamp = header.base_timestamp
    else:
        base_timestamp = kept[0].timestamp
    body = encode_records(kept, header.base_offset, base_timestamp)
    max_timestamp = (header.max_timestamp if header.attributes & ATTR_TIMESTAMP_TYPE
                     else max(record.timestamp for record in kept))
    return assemble_batch(
        compress(codec, body) if codec != NONE else body,
        base_offset=header.base_offset, partition_leader_epoch=header.partition_leader_epoch,
        attributes=attributes, last_offset_delta=header.last_offset_delta,
        base_timestamp=base_timestamp, max_timestamp=max_timestamp, records_count=len(kept),
        producer_id=header.producer_id, producer_epoch=header.producer_epoch,
        base_sequence=header.base_sequence)
