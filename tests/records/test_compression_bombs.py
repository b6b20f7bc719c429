"""Compression bombs: a few kilobytes that expand to gigabytes are validated and read as
streams, in bounded memory, as Kafka's broker reads them (``StreamRecordIterator``).

Memory is Python's allocations as tracemalloc counts them: every decompressed piece a
reader holds is a Python object.
"""

from __future__ import annotations

import struct
import tracemalloc
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from pykraft.log.batch_records import batch_record_times
from pykraft.log.cleaner_bytes import add_to_offset_map, clean_batches
from pykraft.log.compaction import OffsetMap
from pykraft.log.partition_reads import (
    FetchIsolation,
    TimestampWalk,
    list_offset,
    walked_offset,
)
from pykraft.log.validator import AppendConfig, ProduceValidationError, validate_produce
from pykraft.messages.varint import encode_varint
from pykraft.protocol.errors import ErrorCode
from pykraft.records.batch import ATTR_COMPRESSION_MASK, read_header
from pykraft.records.compression import GZIP, LZ4, SNAPPY, ZSTD
from pykraft.storage.log_config import LogConfig
from pykraft.storage.partition_log import PartitionLog
from pykraft.testing.compression_bombs import NOW, XERIAL, MiB, batch, bomb, huge_record

LIMIT = 24 * MiB  # the most a validation or a read may hold, whatever the expansion
BIG = 64 * MiB  # max.message.bytes for the valid bombs (snappy's is megabytes compressed)
EXPANSION = {GZIP: 256 * MiB, SNAPPY: 256 * MiB, LZ4: 256 * MiB, ZSTD: 1024 * MiB}
CODECS = sorted(EXPANSION)


@contextmanager
def peak_memory() -> Iterator[list[int]]:
    """The peak of Python's allocations in the block, in bytes (one element, at exit)."""
    peak: list[int] = []
    tracemalloc.start()
    try:
        yield peak
    finally:
        peak.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()


def produce(records: bytes, **config: int | str) -> object:
    settings = AppendConfig(**config)  # type: ignore[arg-type]
    return validate_produce(records, log_end_offset=0, leader_epoch=0, now_ms=NOW,
                            config=settings, partition="t-0")


@pytest.mark.parametrize("codec", CODECS)
def test_a_bomb_of_nul_bytes_is_refused_at_its_first_record(codec: int) -> None:
    records = batch(codec, bomb(codec, b"", EXPANSION[codec]))
    with peak_memory() as peak, pytest.raises(ProduceValidationError) as refused:
        produce(records, max_message_bytes=BIG)
    assert refused.value.error_code == ErrorCode.INVALID_RECORD
    assert "Found invalid record structure" in refused.value.message
    assert peak[0] < LIMIT


@pytest.mark.parametrize("codec", CODECS)
def test_a_valid_record_expanding_past_memory_is_accepted_as_sent(codec: int) -> None:
    """Kafka accepts it (no limit on uncompressed size; ``skipKeyValueIterator`` streams
    it): the client's compressed bytes are kept, only the header moves."""
    head, tail = huge_record(EXPANSION[codec])
    records = batch(codec, bomb(codec, head, EXPANSION[codec], tail))
    with peak_memory() as peak:
        result = produce(records, max_message_bytes=BIG)
    assert peak[0] < LIMIT
    assert result.records[61:] == records[61:]  # type: ignore[attr-defined]


def test_bytes_after_the_last_record_are_refused_before_they_are_expanded() -> None:
    head, tail = huge_record(10)
    records = batch(ZSTD, bomb(ZSTD, head + bytes(10) + tail, EXPANSION[ZSTD]))
    with peak_memory() as peak, pytest.raises(ProduceValidationError) as refused:
        produce(records)
    assert refused.value.error_code == ErrorCode.INVALID_RECORD
    assert "unexpected bytes after 1 records" in refused.value.message
    assert peak[0] < LIMIT


def test_a_field_longer_than_its_record_is_refused_without_reading_it() -> None:
    body = b"\x00\x00\x00\x01" + encode_varint((1 << 31) - 1)  # a 2 GiB value in 6 bytes
    records = batch(ZSTD, bomb(ZSTD, encode_varint(len(body) + 1) + body, 64 * MiB))
    with peak_memory() as peak, pytest.raises(ProduceValidationError) as refused:
        produce(records)
    assert refused.value.error_code == ErrorCode.INVALID_RECORD
    assert "overruns its record" in refused.value.message
    assert peak[0] < LIMIT


def test_a_snappy_block_declaring_more_than_it_can_hold_is_refused_before_allocating() -> None:
    block = bytes([0xFF, 0xFF, 0xFF, 0xFF, 0x0F]) + b"\x00" * 8  # 4 GiB declared
    records = batch(SNAPPY, XERIAL + struct.pack(">i", len(block)) + block)
    with peak_memory() as peak, pytest.raises(ProduceValidationError) as refused:
        produce(records)
    assert refused.value.error_code == ErrorCode.UNKNOWN_SERVER_ERROR
    assert peak[0] < LIMIT


def test_a_rebuild_to_the_topics_codec_streams_the_records() -> None:
    """compression.type differs from the producer's: the records are re-encoded one at a
    time into the topic's codec, the huge value copied through in pieces."""
    head, tail = huge_record(EXPANSION[LZ4])
    records = batch(ZSTD, bomb(ZSTD, head, EXPANSION[LZ4], tail))
    with peak_memory() as peak:
        result = produce(records, max_message_bytes=BIG, compression_type="lz4")
    assert peak[0] < LIMIT
    header = read_header(result.records)  # type: ignore[attr-defined]
    assert (header.attributes & ATTR_COMPRESSION_MASK, header.records_count) == (LZ4, 1)


def test_a_rebuild_stops_once_past_max_message_bytes() -> None:
    head, tail = huge_record(EXPANSION[ZSTD])
    records = batch(ZSTD, bomb(ZSTD, head, EXPANSION[ZSTD], tail))
    with peak_memory() as peak, pytest.raises(ProduceValidationError) as refused:
        produce(records, compression_type="uncompressed")
    assert refused.value.error_code == ErrorCode.MESSAGE_TOO_LARGE
    assert peak[0] < LIMIT


class _Leader:
    def __init__(self, log: PartitionLog) -> None:
        self.log = log
        self.leader_epoch = 0

    @property
    def high_watermark(self) -> int:
        return self.log.log_end_offset

    @property
    def log_start_offset(self) -> int:
        return self.log.log_start_offset

    @property
    def log_end_offset(self) -> int:
        return self.log.log_end_offset

    @property
    def last_stable_offset(self) -> int:
        return self.log.log_end_offset


def test_list_offsets_by_timestamp_reads_a_bomb_stored_in_the_log_as_a_stream(
        tmp_path: Path) -> None:
    head, tail = huge_record(EXPANSION[ZSTD])
    with PartitionLog.open(tmp_path / "t-0", LogConfig(), now_ms=0) as log:
        payload = bomb(ZSTD, head, EXPANSION[ZSTD], tail)
        for offset, timestamp in enumerate((NOW, NOW + 10, NOW)):
            log.append(batch(ZSTD, payload, timestamp=timestamp, offset=offset), now_ms=0)
        leader, isolation = _Leader(log), FetchIsolation.HIGH_WATERMARK
        with peak_memory() as peak:
            found = list_offset(leader, NOW + 5, isolation=isolation)
            while isinstance(found, TimestampWalk):  # the broker walks it off its loop
                found = walked_offset(leader, found, found.walk(), isolation=isolation)
    assert (found.error, found.offset, found.timestamp) == (ErrorCode.NONE, 1, NOW + 10)
    assert peak[0] < LIMIT


def test_the_log_cleaner_streams_a_compressed_batch_it_rewrites() -> None:
    """Key a's 256 MiB value stays, key b's first value is replaced by a later batch: the
    first batch is rebuilt, the huge value copied through the codec in pieces."""
    head, tail = huge_record(EXPANSION[GZIP], key=b"a")
    old_b = b"".join(huge_record(0, key=b"b", offset_delta=1))
    first = batch(ZSTD, bomb(ZSTD, head, EXPANSION[GZIP], tail + old_b), records=2)
    data = first + batch(ZSTD, bomb(ZSTD, b"".join(huge_record(0, key=b"b")), 0), offset=2)
    offset_map = OffsetMap()
    with peak_memory() as peak:
        add_to_offset_map(data, offset_map, start_offset=0)
        cleaned = clean_batches(data, offset_map, now_ms=NOW, horizon_ms=NOW,
                                producer_last_offsets={})
    assert peak[0] < LIMIT
    rebuilt = read_header(cleaned)
    assert (rebuilt.records_count, rebuilt.last_offset, read_header(cleaned, rebuilt.size)
            .base_offset) == (1, 1, 2)
    assert rebuilt.attributes & ATTR_COMPRESSION_MASK == ZSTD
    assert list(batch_record_times(rebuilt, cleaned[: rebuilt.size])) == [(0, NOW)]
