"""The records of a stored batch, whatever its codec: what readers of a partition log need.

``records/`` decodes only uncompressed batches (the metadata log never compresses); user
partitions hold batches in any codec, so the tools and the Spark reader decompress with
:mod:`pykraft.partition.compression` first. Timestamps are as stored: for a LogAppendTime
batch the records keep their producer timestamps and readers substitute the batch's max
timestamp (:func:`record_timestamp`), as Kafka's consumer does.

Interface::

    records = batch_records(batch)          # CorruptRecordError / CodecError when invalid
    ts = record_timestamp(batch.header, record)
    name = timestamp_type_name(batch.header)   # "CreateTime" or "LogAppendTime"
"""

from __future__ import annotations

from pykraft.partition.compression import NONE, decompress
from pykraft.partition.validator import CREATE_TIME, LOG_APPEND_TIME
from pykraft.records.batch import (
    ATTR_COMPRESSION_MASK,
    ATTR_TIMESTAMP_TYPE,
    HEADER_SIZE,
    BatchHeader,
    Record,
    RecordBatch,
    decode_record_payload,
)

CREATE_TIME_ID = 0
LOG_APPEND_TIME_ID = 1


def batch_records(batch: RecordBatch) -> list[Record]:
    """Every record of ``batch``, decompressed when its codec is not none."""
    codec = batch.header.attributes & ATTR_COMPRESSION_MASK
    if codec == NONE:
        return batch.records()
    payload = decompress(codec, batch.data[HEADER_SIZE:batch.header.size])
    return decode_record_payload(batch.header, payload, batch.position)


def timestamp_type(header: BatchHeader) -> int:
    """Kafka's ``TimestampType`` id of a v2 batch: 0 CreateTime, 1 LogAppendTime."""
    return LOG_APPEND_TIME_ID if header.attributes & ATTR_TIMESTAMP_TYPE else CREATE_TIME_ID


def timestamp_type_name(header: BatchHeader) -> str:
    """What Kafka prints for the batch's timestamp type (``TimestampType.toString``)."""
    return LOG_APPEND_TIME if header.attributes & ATTR_TIMESTAMP_TYPE else CREATE_TIME


def record_timestamp(header: BatchHeader, record: Record) -> int:
    """The timestamp a consumer sees: the batch's max timestamp under LogAppendTime."""
    return header.max_timestamp if header.attributes & ATTR_TIMESTAMP_TYPE else record.timestamp
