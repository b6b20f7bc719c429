"""The byte-level half of log compaction: the offset map of a segment's batches and the
cleaned copy of a segment, in any codec (the rules are :mod:`pykraft.log.compaction`).

A batch whose records all survive is copied byte for byte. Otherwise its surviving records
are re-encoded into one batch of the same codec, with the same base offset, leader epoch,
attributes and producer id, epoch and base sequence (offsets never change, so gaps
appear) and its last offset stays, so the producer's last sequence does (Kafka's
``MemoryRecords.filterTo`` does the same). A batch keeping a tombstone is stamped with the
delete horizon the first time (KIP-534). A batch left empty is dropped, unless it is the
last of an active producer: then its header stays, with no records. Control batches
(transaction markers) are always kept.

Interface::

    full = add_to_offset_map(segment_bytes, offset_map, start_offset)  # True: map full
    pieces = io_chunks(segment_bytes, read_buffer_bytes)       # whole batches each
    cleaned = clean_batches(segment_bytes, offset_map, now_ms=..., horizon_ms=...,
                            producer_last_offsets={producer_id: last_data_offset})
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from pykraft.log.compaction import OffsetMap, retains_record
from pykraft.messages.varint import encode_varint
from pykraft.records.batch import (
    ATTR_COMPRESSION_MASK,
    ATTR_DELETE_HORIZON,
    ATTR_TIMESTAMP_TYPE,
    HEADER_SIZE,
    BatchHeader,
    RecordBatch,
    assemble_batch,
    iter_batches,
    read_header,
)
from pykraft.records.compression import Compressor, payload_reader
from pykraft.records.record_stream import RecordFields, RecordReader


def add_to_offset_map(data: bytes, offset_map: OffsetMap, start_offset: int) -> bool:
    """Record the latest offset of every key of the data batches in ``data`` from
    ``start_offset`` on (the map covers each batch's last offset, control batches' too);
    True, and stop, when a key finds the map full (Kafka's ``buildOffsetMapForSegment``)."""
    for batch in iter_batches(data):
        if not batch.is_control:
            for fields in RecordReader(batch.header, _records(batch), hash_keys=True):
                offset = batch.header.base_offset + fields.offset_delta
                if fields.key_digest is not None and offset >= start_offset:
                    if offset_map.full:
                        return True
                    offset_map.put(fields.key_digest, offset)
        if batch.last_offset >= start_offset:
            offset_map.update_latest_offset(batch.last_offset)
    return False


def io_chunks(data: bytes, chunk_bytes: int) -> list[bytes]:
    """``data`` cut between batches into pieces of at most ``chunk_bytes`` (the cleaner's
    read buffer); a batch larger is a piece of its own, as Kafka grows its buffer for it."""
    pieces: list[bytes] = []
    start = position = 0
    while position < len(data):
        size = read_header(data, position).size
        if position > start and position + size - start > chunk_bytes:
            pieces.append(data[start:position])
            start = position
        position += size
    if position > start:
        pieces.append(data[start:position])
    return pieces


def clean_batches(data: bytes, offset_map: OffsetMap, *, now_ms: int, horizon_ms: int,
                  producer_last_offsets: Mapping[int, int]) -> bytes:
    """``data`` (whole batches) without the records compaction removes; a batch keeping
    a tombstone without a delete horizon yet is stamped with ``horizon_ms``. An emptied
    batch that is the last of an active producer (``producer_last_offsets``: producer id
    -> its last data offset) stays as an empty header, so its sequence survives.

    Each batch is read twice as a stream, never whole: once to decide which records stay,
    once to copy them into the rebuilt batch."""
    out: list[bytes] = []
    for batch in iter_batches(data):
        if batch.is_control:
            out.append(batch.data)
            continue
        header = batch.header
        kept = _Kept(header.records_count)
        for index, fields in enumerate(RecordReader(header, _records(batch), hash_keys=True)):
            if retains_record(header.base_offset + fields.offset_delta, fields.key_digest,
                              fields.value_size < 0, offset_map,
                              horizon_ms=header.delete_horizon_ms, now_ms=now_ms):
                kept.add(index, fields, header.base_timestamp)
        stamp = header.delete_horizon_ms is None and kept.tombstones
        if not kept.count:
            if (header.producer_id >= 0
                    and producer_last_offsets.get(header.producer_id) == header.last_offset):
                out.append(_empty(header))
        elif kept.count == header.records_count and not stamp:
            out.append(batch.data)
        else:
            out.append(_rebuild(batch, kept, horizon_ms if stamp else None))
    return b"".join(out)


class _Kept:
    """Which records of a batch survive (a bit each) and what their rebuild needs."""

    def __init__(self, records: int) -> None:
        self._bits = bytearray((max(records, 0) + 7) // 8)
        self.count = 0
        self.tombstones = False
        self.first_timestamp: int | None = None
        self.max_timestamp = -1

    def add(self, index: int, fields: RecordFields, base_timestamp: int) -> None:
        self._bits[index >> 3] |= 1 << (index & 7)
        self.count += 1
        self.tombstones |= fields.value_size < 0
        timestamp = base_timestamp + fields.timestamp_delta
        if self.first_timestamp is None:
            self.first_timestamp = timestamp
        self.max_timestamp = max(self.max_timestamp, timestamp)

    def __contains__(self, index: int) -> bool:
        return bool(self._bits[index >> 3] & 1 << (index & 7))


def _records(batch: RecordBatch) -> Callable[[int], bytes]:
    """Reads the batch's records from their start, decompressing as it goes."""
    codec = batch.header.attributes & ATTR_COMPRESSION_MASK
    return payload_reader(codec, memoryview(batch.data)[HEADER_SIZE:])


def _empty(header: BatchHeader) -> bytes:
    """The header alone (Kafka's ``writeEmptyHeader``): offsets, producer and sequence."""
    attributes = header.attributes & ~(ATTR_COMPRESSION_MASK | ATTR_DELETE_HORIZON)
    return assemble_batch(
        b"", base_offset=header.base_offset, partition_leader_epoch=header.partition_leader_epoch,
        attributes=attributes, last_offset_delta=header.last_offset_delta,
        base_timestamp=header.max_timestamp, max_timestamp=header.max_timestamp,
        records_count=0, producer_id=header.producer_id, producer_epoch=header.producer_epoch,
        base_sequence=header.base_sequence)


def _rebuild(batch: RecordBatch, kept: _Kept, horizon_ms: int | None) -> bytes:
    """The kept records in one batch like the original, its last offset too (so the
    producer's last sequence stays); a new delete horizon becomes the base timestamp
    (record timestamps stay, as deltas from it). Records are copied one at a time
    through the codec, their heads written anew."""
    header = batch.header
    codec = header.attributes & ATTR_COMPRESSION_MASK
    attributes = header.attributes
    if horizon_ms is not None:
        base_timestamp = horizon_ms
        attributes |= ATTR_DELETE_HORIZON
    elif header.delete_horizon_ms is not None:
        base_timestamp = header.base_timestamp
    else:
        base_timestamp = kept.first_timestamp if kept.first_timestamp is not None else 0
    out = Compressor(codec)
    reader = RecordReader(header, _records(batch))
    for index in range(header.records_count):
        prefix = reader.prefix()
        if index not in kept:
            reader.rest(prefix)
            continue
        head = (b"\x00" + encode_varint(header.base_timestamp + prefix.timestamp_delta
                                        - base_timestamp) + encode_varint(prefix.offset_delta))
        out.write(encode_varint(len(head) + prefix.rest) + head)
        reader.rest(prefix, out.write)
    reader.finish()
    max_timestamp = (header.max_timestamp if header.attributes & ATTR_TIMESTAMP_TYPE
                     else kept.max_timestamp)
    return assemble_batch(
        out.finish(), base_offset=header.base_offset,
        partition_leader_epoch=header.partition_leader_epoch, attributes=attributes,
        last_offset_delta=header.last_offset_delta, base_timestamp=base_timestamp,
        max_timestamp=max_timestamp, records_count=kept.count,
        producer_id=header.producer_id, producer_epoch=header.producer_epoch,
        base_sequence=header.base_sequence)
