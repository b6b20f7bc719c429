"""A user partition written by ``storage.partition_log`` from kafka-python's batches, and
kafka-python's own reading of its segments (the independent oracle of the readers' tests).

The batches cover what a consumer can meet: every codec, keys and null keys, null values,
headers, an idempotent producer's sequences, a LogAppendTime batch and a transaction
marker (a control batch consumers never see).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords

from pykraft.ids import TopicPartition
from pykraft.messages import encode
from pykraft.records.batch import (
    ATTR_CONTROL,
    ATTR_TIMESTAMP_TYPE,
    ATTR_TRANSACTIONAL,
    Record,
    RecordBatch,
    assemble_batch,
    encode_records,
    iter_batches,
    read_header,
    rewrite_header,
)
from pykraft.records.compression import GZIP, LZ4, NONE, SNAPPY, ZSTD
from pykraft.records.control import ControlType, EndTxnMarker, control_key
from pykraft.storage.log_config import LogConfig
from pykraft.storage.offset_checkpoints import (
    REPLICATION_OFFSET_CHECKPOINT,
    write_offset_checkpoint,
)
from pykraft.storage.partition_log import PartitionLog

EPOCH = 4
LOG_APPEND_TIME_MS = 9_000


# Spark's Kafka source row: key, value, topic, partition, offset, timestamp, type, headers
SparkRow = tuple[bytes | None, bytes | None, str, int, int, datetime, int,
                 list[tuple[str, bytes | None]] | None]


@dataclass(frozen=True, slots=True)
class Row:
    """One record as a consumer sees it."""

    offset: int
    timestamp: int
    timestamp_type: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...]


def kafka_python_batch(base_offset: int, records: list[tuple[bytes | None, bytes | None]],
                       *, codec: int = NONE, timestamp: int = 1_000,
                       headers: list[tuple[str, bytes]] | None = None,
                       producer_id: int = -1, base_sequence: int = -1) -> bytes:
    """A producer's batch from kafka-python's builder, placed at ``base_offset``."""
    builder = DefaultRecordBatchBuilder(
        magic=2, compression_type=codec, is_transactional=False, producer_id=producer_id,
        producer_epoch=0 if producer_id >= 0 else -1, base_sequence=base_sequence,
        batch_size=1 << 24)
    for delta, (key, value) in enumerate(records):
        builder.append(delta, timestamp=timestamp + delta, key=key, value=value,
                       headers=list(headers or []))
    data = bytes(builder.build())
    return RecordBatch(read_header(data), data).with_base_offset(base_offset, EPOCH).data


def log_append_time(batch: bytes) -> bytes:
    """The batch as a LogAppendTime topic's leader stores it (type bit, max timestamp)."""
    buf = bytearray(batch)
    header = read_header(buf)
    rewrite_header(buf, base_offset=header.base_offset, partition_leader_epoch=EPOCH,
                   attributes=header.attributes | ATTR_TIMESTAMP_TYPE,
                   max_timestamp=LOG_APPEND_TIME_MS)
    return bytes(buf)


def commit_marker(offset: int, producer_id: int) -> bytes:
    """A COMMIT transaction marker, as the transaction coordinator has leaders write."""
    value = encode(EndTxnMarker(0, 7), 0)
    body = encode_records([Record(0, 5_000, control_key(ControlType.COMMIT), value)], 0, 5_000)
    return assemble_batch(body, base_offset=offset, partition_leader_epoch=EPOCH,
                          attributes=ATTR_CONTROL | ATTR_TRANSACTIONAL, last_offset_delta=0,
                          base_timestamp=5_000, max_timestamp=5_000, records_count=1,
                          producer_id=producer_id, producer_epoch=0)


def write_partition(directory: Path) -> None:
    """Several segments (small ``segment.bytes``) with sparse indexes, every batch kind."""
    batches: list[bytes] = []
    offset = 0

    def add(batch: bytes) -> None:
        nonlocal offset
        batches.append(batch)
        offset = read_header(batch).next_offset

    for number, codec in enumerate((NONE, GZIP, SNAPPY, LZ4, ZSTD)):
        add(kafka_python_batch(offset, [(b"k%d" % offset, b"v%d " % offset * 40),
                                        (None, "värde %d".encode() % offset),
                                        (b"k-null", None)],
                               codec=codec, timestamp=1_000 + 100 * number,
                               headers=[("trace", b"t%d" % number), ("empty", b"")]))
    add(kafka_python_batch(offset, [(b"idem", b"a"), (b"idem", b"b")], producer_id=42,
                           base_sequence=0x7FFFFFFF, timestamp=2_000))
    add(log_append_time(kafka_python_batch(
        offset, [(b"lat", b"x" * 100), (None, b"y" * 100)], codec=GZIP, timestamp=3_000)))
    add(commit_marker(offset, 42))
    add(kafka_python_batch(offset, [(b"last", b"z" * 300)], timestamp=6_000))
    config = LogConfig(segment_bytes=800, index_interval_bytes=100)
    with PartitionLog.open(directory, config, now_ms=0) as log:
        for batch in batches:
            log.append(batch, now_ms=0)


def kafka_python_rows(directory: Path) -> list[tuple[Path, list[Row]]]:
    """Each segment's consumer-visible records as kafka-python reads them."""
    out = []
    for segment in sorted(directory.glob("*.log")):
        rows: list[Row] = []
        records = MemoryRecords(segment.read_bytes())
        while records.has_next():
            batch = records.next_batch()
            assert batch.validate_crc()
            if batch.is_control_batch:
                continue
            rows += [Row(r.offset, r.timestamp, r.timestamp_type, r.key, r.value,
                         tuple(r.headers)) for r in batch]
        out.append((segment, rows))
    return out


def expected_rows(segment: Path, topic: str, partition: int) -> list[SparkRow]:
    """kafka-python's records of ``segment`` as Spark's Kafka source would show them."""
    rows = dict(kafka_python_rows(segment.parent))[segment]
    return [(r.key, r.value, topic, partition, r.offset,
             datetime(1970, 1, 1, tzinfo=UTC) + timedelta(milliseconds=r.timestamp),
             r.timestamp_type, list(r.headers) or None) for r in rows]


def checkpoint_high_watermarks(log_dir: Path, overrides: dict[str, int] | None = None) -> None:
    """Write the log directory's ``replication-offset-checkpoint`` as a broker does: each
    partition's high watermark, its log end unless ``overrides`` (dir name -> HW) says."""
    offsets: dict[TopicPartition, int] = {}
    for directory in sorted(log_dir.iterdir()):
        segments = sorted(directory.glob("*.log")) if directory.is_dir() else []
        if not segments or "." in directory.name:
            continue
        batches = list(iter_batches(segments[-1].read_bytes()))
        end = batches[-1].last_offset + 1 if batches else int(segments[-1].name[:20])
        topic, _, number = directory.name.rpartition("-")
        offsets[TopicPartition(topic, int(number))] = (overrides or {}).get(directory.name, end)
    write_offset_checkpoint(log_dir / REPLICATION_OFFSET_CHECKPOINT, offsets)
