"""Produce validation and offset assignment against Kafka's LogValidator behaviour."""

from __future__ import annotations

import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatch as KafkaPythonBatch
from kafka.record.legacy_records import LegacyRecordBatchBuilder
from partition_batches import client_batch, raw_batch, record

from pykraft.log.validator import (
    LOG_APPEND_TIME,
    AppendConfig,
    ProduceValidationError,
    ValidatedAppend,
    validate_produce,
)
from pykraft.protocol.errors import ErrorCode
from pykraft.records.batch import (
    ATTR_CONTROL,
    ATTR_TIMESTAMP_TYPE,
    HEADER_SIZE,
    Record,
    decode_record_payload,
    decode_records,
    iter_batches,
)
from pykraft.records.compression import GZIP, LZ4, NONE, SNAPPY, ZSTD, decompress

CODECS = [NONE, GZIP, SNAPPY, LZ4, ZSTD]
NOW = 10_000
PAIRS = [(b"k%d" % i, b"value-%d" % i * 20) for i in range(7)]


def run(records: bytes, config: AppendConfig | None = None, *, log_end_offset: int = 100,
        leader_epoch: int = 5, api_version: int = 12) -> ValidatedAppend:
    return validate_produce(records, config=config or AppendConfig(), partition="t-0",
                            log_end_offset=log_end_offset, leader_epoch=leader_epoch,
                            now_ms=NOW, api_version=api_version)


def refused(records: bytes, config: AppendConfig | None = None, **kwargs: int
            ) -> ProduceValidationError:
    with pytest.raises(ProduceValidationError) as info:
        run(records, config, **kwargs)
    return info.value


def contents(data: bytes) -> list[Record]:
    """Our reading of an output batch, CRC checked, compressed or not."""
    (batch,) = iter_batches(data)
    codec = batch.header.attributes & 7
    if codec == NONE:
        return decode_records(batch.header, batch.data)
    return decode_record_payload(batch.header, decompress(codec, batch.data[HEADER_SIZE:]))


def kafka_python_reads(data: bytes) -> list[tuple[int, bytes | None, bytes | None]]:
    """kafka-python's reader over the output: an independent check of offsets and CRC."""
    batch = KafkaPythonBatch(bytearray(data))
    assert batch.validate_crc()
    return [(r.offset, r.key, r.value) for r in batch]


@pytest.mark.parametrize("codec", CODECS)
def test_client_batches_keep_their_bytes_and_get_offsets_and_epoch(codec: int) -> None:
    raw = client_batch(PAIRS, codec=codec)
    result = run(raw)
    assert (result.first_offset, result.last_offset, result.records_count) == (100, 106, 7)
    assert not result.rebuilt and result.source_codec == result.target_codec == codec
    assert result.records[HEADER_SIZE:] == raw[HEADER_SIZE:]
    assert result.records[17:] == raw[17:]  # CRC unchanged: only offsets and epoch moved
    (batch,) = iter_batches(result.records)
    assert (batch.base_offset, batch.epoch) == (100, 5)
    assert result.max_timestamp == 1_006 and result.shallow_offset_of_max_timestamp == 106
    assert result.log_append_time_ms == -1
    assert kafka_python_reads(result.records) == [
        (100 + i, k, v) for i, (k, v) in enumerate(PAIRS)]


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("target", ["uncompressed", "gzip", "snappy", "lz4", "zstd"])
def test_a_topic_codec_other_than_the_producers_rebuilds_the_batch(codec: int, target: str
                                                                   ) -> None:
    raw = client_batch(PAIRS, codec=codec, producer_id=9, producer_epoch=2, base_sequence=40)
    result = run(raw, AppendConfig(compression_type=target))
    expected = {"uncompressed": NONE, "gzip": GZIP, "snappy": SNAPPY, "lz4": LZ4, "zstd": ZSTD}
    assert result.target_codec == expected[target]
    assert result.rebuilt == (codec != expected[target])
    (batch,) = iter_batches(result.records)
    header = batch.header
    assert header.attributes & 7 == expected[target]
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (9, 2, 40)
    assert (header.base_offset, header.partition_leader_epoch) == (100, 5)
    got = contents(result.records)
    assert [(r.offset, r.timestamp, r.key, r.value) for r in got] == [
        (100 + i, 1_000 + i, k, v) for i, (k, v) in enumerate(PAIRS)]
    assert kafka_python_reads(result.records) == [
        (100 + i, k, v) for i, (k, v) in enumerate(PAIRS)]


@pytest.mark.parametrize("codec", [GZIP, ZSTD])
def test_compressed_inner_offsets_out_of_order_are_rewritten(codec: int) -> None:
    raw = raw_batch([record(1), record(0, value=b"second")], codec=codec)
    result = run(raw)
    assert result.rebuilt
    assert [(r.offset, r.value) for r in contents(result.records)] == [(100, b"v"),
                                                                         (101, b"second")]


@pytest.mark.parametrize("codec", [NONE, LZ4])
def test_log_append_time_rewrites_type_and_max_timestamp_and_the_crc(codec: int) -> None:
    raw = client_batch(PAIRS, codec=codec, timestamp=1)
    result = run(raw, AppendConfig(timestamp_type=LOG_APPEND_TIME))
    (batch,) = iter_batches(result.records)  # verifies the new CRC
    assert batch.header.attributes & ATTR_TIMESTAMP_TYPE
    assert batch.header.max_timestamp == NOW == result.max_timestamp == result.log_append_time_ms
    assert result.shallow_offset_of_max_timestamp == 106
    assert batch.crc_valid() and batch.header.crc != struct.unpack_from(">I", raw, 17)[0]
    assert result.records[HEADER_SIZE:] == raw[HEADER_SIZE:]


def test_create_time_max_timestamp_is_recomputed_by_the_broker() -> None:
    raw = raw_batch([record(0, 500), record(1, 900), record(2, 700)], max_timestamp=0)
    result = run(raw)
    (batch,) = iter_batches(result.records)
    assert batch.header.max_timestamp == 900 == result.max_timestamp


def test_a_partial_trailing_batch_is_ignored() -> None:
    raw = client_batch(PAIRS)
    assert run(raw + raw[:30]).records_count == 7


@pytest.mark.parametrize(("data", "code", "message"), [
    (b"", ErrorCode.INVALID_RECORD, "must have at least one record batch per partition"),
    (client_batch(PAIRS)[:40], ErrorCode.INVALID_RECORD, "at least one record batch"),
    (client_batch(PAIRS) * 2, ErrorCode.INVALID_RECORD, "exactly one record batch"),
    (bytes(8) + struct.pack(">i", 13) + bytes(10), ErrorCode.CORRUPT_MESSAGE,
     "Record size 13 is less than the minimum record overhead (14)"),
    (bytes(8) + struct.pack(">i", 60) + bytes(4) + b"\x03" + bytes(56), ErrorCode.CORRUPT_MESSAGE,
     "Invalid magic found in record: 3"),
])
def test_request_level_refusals(data: bytes, code: ErrorCode, message: str) -> None:
    error = refused(data)
    assert error.error_code == code and message in error.message


def test_magic_below_2_is_refused_as_kafka_4() -> None:
    builder = LegacyRecordBatchBuilder(magic=1, compression_type=0, batch_size=1 << 16)
    builder.append(0, timestamp=1, key=b"k", value=b"v")
    error = refused(bytes(builder.build()), api_version=9)
    assert error.error_code == ErrorCode.INVALID_RECORD
    assert error.message == ("Produce requests with version 9 are only allowed to contain "
                             "record batches with magic version 2")


def test_zstd_needs_produce_v7() -> None:
    raw = client_batch(PAIRS, codec=ZSTD)
    assert refused(raw, api_version=6).error_code == ErrorCode.UNSUPPORTED_COMPRESSION_TYPE
    assert run(raw, api_version=7).records_count == 7


def test_client_base_offset_must_be_zero() -> None:
    error = refused(raw_batch([record(0)], base_offset=3))
    assert error.error_code == ErrorCode.INVALID_RECORD
    assert error.message == ("The baseOffset of the record batch in the append to t-0 should "
                             "be 0, but it is 3")


def test_max_message_bytes() -> None:
    raw = client_batch(PAIRS)
    error = refused(raw, AppendConfig(max_message_bytes=len(raw) - 1))
    assert error.error_code == ErrorCode.MESSAGE_TOO_LARGE
    assert f"is {len(raw)} bytes which exceeds the maximum configured value" in error.message
    assert run(raw, AppendConfig(max_message_bytes=len(raw))).records_count == 7


def test_a_rebuilt_batch_is_measured_again() -> None:
    raw = client_batch([(b"k", b"a" * 5000)], codec=GZIP)
    error = refused(raw, AppendConfig(compression_type="uncompressed", max_message_bytes=len(raw)))
    assert error.error_code == ErrorCode.MESSAGE_TOO_LARGE
    assert error.message.startswith("Message batch size is")


def test_crc_mismatch_is_corrupt_message() -> None:
    raw = bytearray(client_batch(PAIRS))
    raw[-1] ^= 0xFF
    error = refused(bytes(raw))
    assert error.error_code == ErrorCode.CORRUPT_MESSAGE
    assert error.message.startswith("Record is corrupt (stored crc = ")


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"records_count": 2}, "Inconsistent batch offset range [0, 0] and count of records 2"),
    ({"records_count": 0, "last_offset_delta": -1}, "Batch has an invalid offset range"),
    ({"records_count": 0}, "Invalid reported count for record batch: 0"),
    ({"attributes": ATTR_CONTROL}, "Clients are not allowed to write control records"),
    ({"producer_id": 4, "base_sequence": -1}, "Invalid sequence number -1 in record batch with "
                                              "producerId 4"),
])
def test_batch_shape_refusals(kwargs: dict[str, int], message: str) -> None:
    error = refused(raw_batch([record(0)], **kwargs))
    assert error.error_code == ErrorCode.INVALID_RECORD
    assert message in error.message and error.record_errors == ()


def test_malformed_records_under_a_valid_crc_are_invalid_record() -> None:
    body = b"\x40" + bytes(10)  # a record claiming 32 bytes
    error = refused(raw_batch([record(0)], body=body))
    assert error.error_code == ErrorCode.INVALID_RECORD


def test_a_payload_that_does_not_decompress_is_unknown_server_error() -> None:
    raw = raw_batch([record(0)], attributes=GZIP, body=b"not gzip at all")
    error = refused(raw)
    assert error.error_code == ErrorCode.UNKNOWN_SERVER_ERROR
    assert error.message.startswith("Failed to decompress record stream")


def test_compacted_topics_refuse_null_keys_per_record() -> None:
    raw = client_batch([(b"a", b"1"), (None, b"2"), (b"c", b"3"), (None, b"4")])
    error = refused(raw, AppendConfig(compacted=True))
    assert error.error_code == ErrorCode.INVALID_RECORD
    assert [e.batch_index for e in error.record_errors] == [1, 3]
    assert error.record_errors[0].message == (
        "Compacted topic cannot accept message without key in topic partition t-0.")
    assert error.message.startswith("One or more records have been rejected due to 2 record "
                                    "errors in total, and only showing the first three errors "
                                    "at most: [RecordError(batchIndex=1, message='Compacted")


def test_timestamps_outside_before_and_after_max_are_invalid_timestamp() -> None:
    config = AppendConfig(timestamp_before_max_ms=1_000, timestamp_after_max_ms=500)
    raw = raw_batch([record(0, NOW - 1_000), record(1, NOW - 1_001), record(2, NOW + 500),
                     record(3, NOW + 501)])
    error = refused(raw, config)
    assert error.error_code == ErrorCode.INVALID_TIMESTAMP
    assert error.message == "One or more records have been rejected due to invalid timestamp"
    assert [e.batch_index for e in error.record_errors] == [1, 3]
    assert error.record_errors[0].message == (
        f"Timestamp {NOW - 1_001} of message with offset 1 is out of range. The timestamp "
        f"should be within [{NOW - 1_000}, {NOW + 500}]")


def test_invalid_timestamp_wins_over_invalid_record() -> None:
    config = AppendConfig(compacted=True, timestamp_after_max_ms=0)
    raw = raw_batch([record(0, key=None), record(1, NOW + 1)])
    error = refused(raw, config)
    assert error.error_code == ErrorCode.INVALID_TIMESTAMP
    assert [e.batch_index for e in error.record_errors] == [0, 1]


def test_a_client_batch_flagged_log_append_time_is_refused_on_a_log_append_time_topic() -> None:
    raw = raw_batch([record(0)], attributes=ATTR_TIMESTAMP_TYPE)
    error = refused(raw, AppendConfig(timestamp_type=LOG_APPEND_TIME))
    assert error.error_code == ErrorCode.INVALID_TIMESTAMP
    assert "Producer should not set timestamp type to LogAppendTime." in (
        error.record_errors[0].message or "")


def test_java_long_arithmetic_in_the_default_range_message() -> None:
    error = refused(raw_batch([record(0, NOW + 3_600_001)]))
    lowest = NOW - (1 << 63) + 1
    assert f"should be within [{lowest}, {NOW + 3_600_000}]" in (
        error.record_errors[0].message or "")


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    values=st.lists(st.binary(max_size=300) | st.none(), min_size=1, max_size=25),
    codec=st.sampled_from(CODECS),
    target=st.sampled_from(["producer", "uncompressed", "gzip", "lz4"]),
    leo=st.integers(0, 1 << 40),
    epoch=st.integers(0, 1 << 20),
)
def test_offsets_are_contiguous_from_the_log_end_and_the_crc_valid(
        values: list[bytes | None], codec: int, target: str, leo: int, epoch: int) -> None:
    pairs = [(b"%d" % i, v) for i, v in enumerate(values)]
    result = run(client_batch(pairs, codec=codec), AppendConfig(compression_type=target),
                 log_end_offset=leo, leader_epoch=epoch)
    assert (result.first_offset, result.last_offset) == (leo, leo + len(values) - 1)
    got = contents(result.records)  # iter_batches checks the CRC
    assert [(r.offset, r.key, r.value) for r in got] == [
        (leo + i, k, v) for i, (k, v) in enumerate(pairs)]
    (batch,) = iter_batches(result.records)
    assert batch.epoch == epoch and batch.header.last_offset == result.last_offset
