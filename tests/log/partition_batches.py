"""Batch builders for the partition tests: kafka-python's (an independent writer) and ours."""

from __future__ import annotations

from collections.abc import Sequence

from kafka.record.default_records import DefaultRecordBatchBuilder

from pykraft.records.batch import Record, assemble_batch, encode_records
from pykraft.records.compression import NONE, compress

Pair = tuple[bytes | None, bytes | None]


def client_batch(records: Sequence[Pair], *, codec: int = NONE, timestamp: int = 1_000,
                 producer_id: int = -1, producer_epoch: int = -1, base_sequence: int = -1,
                 transactional: bool = False) -> bytes:
    """A producer's batch as kafka-python's record builder writes it."""
    builder = DefaultRecordBatchBuilder(
        magic=2, compression_type=codec, is_transactional=transactional,
        producer_id=producer_id, producer_epoch=producer_epoch, base_sequence=base_sequence,
        batch_size=1 << 24)
    for index, (key, value) in enumerate(records):
        builder.append(index, timestamp=timestamp + index, key=key, value=value, headers=[])
    return bytes(builder.build())


def raw_batch(records: Sequence[Record], *, codec: int = NONE, attributes: int = 0,
              base_offset: int = 0, max_timestamp: int | None = None,
              records_count: int | None = None, last_offset_delta: int | None = None,
              producer_id: int = -1, base_sequence: int = -1, body: bytes | None = None) -> bytes:
    """A batch with any header we like (CRC valid), for the cases no client would write."""
    base_ts = records[0].timestamp if records else 0
    payload = encode_records(records, 0, base_ts) if body is None else body
    return assemble_batch(
        compress(codec, payload) if codec != NONE else payload,
        base_offset=base_offset, partition_leader_epoch=-1, attributes=attributes | codec,
        last_offset_delta=len(records) - 1 if last_offset_delta is None else last_offset_delta,
        base_timestamp=base_ts,
        max_timestamp=max((r.timestamp for r in records), default=-1)
        if max_timestamp is None else max_timestamp,
        records_count=len(records) if records_count is None else records_count,
        producer_id=producer_id, producer_epoch=0 if producer_id >= 0 else -1,
        base_sequence=base_sequence,
    )


def record(offset: int, timestamp: int = 1_000, key: bytes | None = b"k",
           value: bytes | None = b"v") -> Record:
    return Record(offset, timestamp, key, value)
