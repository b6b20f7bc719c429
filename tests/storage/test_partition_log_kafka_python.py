"""An independent reader: kafka-python's record parser reads the segments pykraft writes,
and batches built by kafka-python's writer are stored and found by timestamp."""

from __future__ import annotations

from pathlib import Path

from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords

from pykraft.records.batch import RecordBatch, encode_batch, read_header
from pykraft.storage.log_config import LogConfig
from pykraft.storage.partition_log import PartitionLog


def _kafka_python_batch(base_offset: int, timestamps: list[int]) -> bytes:
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False,
                                        producer_id=-1, producer_epoch=-1, base_sequence=-1,
                                        batch_size=1 << 20)
    for delta, timestamp in enumerate(timestamps):
        builder.append(delta, timestamp=timestamp, key=b"k%d" % (base_offset + delta),
                       value=b"v%d" % (base_offset + delta), headers=[])
    data = bytes(builder.build())
    return RecordBatch(read_header(data), data).with_base_offset(base_offset, epoch=3).data


def test_kafka_python_reads_every_segment(tmp_path: Path) -> None:
    directory = tmp_path / "orders-0"
    expected: list[tuple[int, int, bytes | None, bytes | None]] = []
    with PartitionLog.open(directory, LogConfig(segment_bytes=400, index_interval_bytes=50),
                           now_ms=0) as log:
        offset = 0
        for number in range(12):
            if number % 2:
                stamps = [2000 + 10 * number + step for step in (0, 5, 3)]
                log.append(_kafka_python_batch(offset, stamps), now_ms=0)
                expected += [(offset + i, stamp, b"k%d" % (offset + i), b"v%d" % (offset + i))
                             for i, stamp in enumerate(stamps)]
                offset += 3
            else:
                log.append(encode_batch(offset, [(None, b"p%d" % offset)],
                                        partition_leader_epoch=3, timestamp=2000 + 10 * number),
                           now_ms=0)
                expected.append((offset, 2000 + 10 * number, None, b"p%d" % offset))
                offset += 1
        assert len(log.segment_stats()) > 2
        # per-record timestamps in kafka-python's batch 5..7 (2030, 2035, 2033): the first
        # record in offset order at or after the target, as Kafka answers ListOffsets
        found = [log.offset_for_timestamp(stamp) for stamp in (2030, 2032, 2036, 3000)]
        assert [hit and hit.offset for hit in found] == [5, 6, 8, None]
        assert found[1] is not None and found[1].timestamp == 2035
    seen = []
    for segment in sorted(directory.glob("*.log")):
        records = MemoryRecords(segment.read_bytes())
        while records.has_next():
            batch = records.next_batch()
            assert batch.validate_crc()
            seen += [(r.offset, r.timestamp, r.key, r.value) for r in batch]
    assert seen == expected
