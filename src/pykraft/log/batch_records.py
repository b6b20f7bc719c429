"""The records of a stored batch, whatever its codec: what readers of a partition log need.

``records/`` decodes only uncompressed batches (the metadata log never compresses); user
partitions hold batches in any codec, so the tools and the Spark reader decompress with
:mod:`pykraft.records.compression` first. Timestamps are as stored: for a LogAppendTime
batch the records keep their producer timestamps and readers substitute the batch's max
timestamp (:func:`record_timestamp`), as Kafka's consumer does.

Interface::

    records = batch_records(batch)          # CorruptRecordError / CodecError when invalid
    ts = record_timestamp(batch.header, record)
    times = batch_record_times(header, data)   # (offset, timestamp) streamed: ListOffsets
    name = timestamp_type_name(batch.header)   # "CreateTime" or "LogAppendTime"
    end = complete_batches_end(data, limit)    # where a file reader stops, as Kafka's
"""

from __future__ import annotations

from collections.abc import Iterator

from pykraft.log.validator import CREATE_TIME, LOG_APPEND_TIME
from pykraft.records.batch import (
    ATTR_COMPRESSION_MASK,
    ATTR_TIMESTAMP_TYPE,
    HEADER_SIZE,
    LOG_OVERHEAD,
    BatchHeader,
    Record,
    RecordBatch,
    decode_record_payload,
)
from pykraft.records.compression import NONE, decompress, payload_reader
from pykraft.records.record_stream import record_times

# Kafka's FileLogInputStream refuses a size field below a v0 record's overhead as corrupt.
MIN_RECORD_OVERHEAD = 14
CREATE_TIME_ID = 0
LOG_APPEND_TIME_ID = 1


def batch_records(batch: RecordBatch) -> list[Record]:
    """Every record of ``batch``, decompressed when its codec is not none."""
    codec = batch.header.attributes & ATTR_COMPRESSION_MASK
    if codec == NONE:
        return batch.records()
    payload = decompress(codec, batch.data[HEADER_SIZE:batch.header.size])
    return decode_record_payload(batch.header, payload, batch.position)


def batch_record_times(header: BatchHeader, data: bytes) -> Iterator[tuple[int, int]]:
    """Each record's (offset, stored timestamp) of the whole batch ``data`` in any codec,
    decompressed and read a piece at a time: a few kilobytes may expand to gigabytes."""
    codec = header.attributes & ATTR_COMPRESSION_MASK
    return record_times(header, payload_reader(codec, memoryview(data)[HEADER_SIZE:]))


def timestamp_type(header: BatchHeader) -> int:
    """Kafka's ``TimestampType`` id of a v2 batch: 0 CreateTime, 1 LogAppendTime."""
    return LOG_APPEND_TIME_ID if header.attributes & ATTR_TIMESTAMP_TYPE else CREATE_TIME_ID


def timestamp_type_name(header: BatchHeader) -> str:
    """What Kafka prints for the batch's timestamp type (``TimestampType.toString``)."""
    return LOG_APPEND_TIME if header.attributes & ATTR_TIMESTAMP_TYPE else CREATE_TIME


def record_timestamp(header: BatchHeader, record: Record) -> int:
    """The timestamp a consumer sees: the batch's max timestamp under LogAppendTime."""
    return header.max_timestamp if header.attributes & ATTR_TIMESTAMP_TYPE else record.timestamp


def complete_batches_end(data: bytes, limit: int | None = None) -> int:
    """Where the last batch wholly within ``data[:limit]`` ends: Kafka's file iterator
    stops at a partial batch. A size field too small for any batch leaves the end at the
    limit, so the decoder that reads on reports the damage."""
    end = len(data) if limit is None else min(len(data), limit)
    pos = 0
    while pos + LOG_OVERHEAD <= end:
        length = int.from_bytes(data[pos + 8 : pos + LOG_OVERHEAD], "big", signed=True)
        if length < MIN_RECORD_OVERHEAD:
            return end
        if pos + LOG_OVERHEAD + length > end:
            break
        pos += LOG_OVERHEAD + length
    return pos
