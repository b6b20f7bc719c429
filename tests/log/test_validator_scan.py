"""The validator's fast path (a scan of the records, no per-record objects) decides as the
record-by-record checks do, and a producer's batch never needs the full decoder."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from partition_batches import client_batch, raw_batch, record

from pykraft.errors import CorruptRecordError
from pykraft.log import validator
from pykraft.log.validator import (
    CREATE_TIME,
    LOG_APPEND_TIME,
    LONG_MAX,
    AppendConfig,
    ProduceValidationError,
    ValidatedAppend,
    validate_produce,
)
from pykraft.protocol.errors import ErrorCode
from pykraft.records.batch import ATTR_TIMESTAMP_TYPE, Record, decode_records, unpack_header
from pykraft.records.compression import GZIP, LZ4, NONE, SNAPPY, ZSTD

CODECS = [NONE, GZIP, SNAPPY, LZ4, ZSTD]
NOW = 1_700_000_000_000
LONG_MIN = -LONG_MAX - 1
Outcome = ValidatedAppend | tuple[int, str, tuple[validator.RecordError, ...]]


def outcome(records: bytes, config: AppendConfig, now_ms: int = NOW) -> Outcome:
    """The result of a validation, or its refusal's code, message and record errors."""
    try:
        return validate_produce(records, log_end_offset=77, leader_epoch=3, now_ms=now_ms,
                                config=config, partition="t-0")
    except ProduceValidationError as exc:
        return exc.error_code, exc.message, exc.record_errors


@pytest.fixture
def no_decoding(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Make building Record objects in the validator fail the test."""
    def refuse(*args: object) -> list[Record]:
        raise AssertionError("the validator decoded every record")
    monkeypatch.setattr(validator, "decode_records", refuse)
    monkeypatch.setattr(validator, "decode_record_payload", refuse)
    yield


@pytest.mark.usefixtures("no_decoding")
@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("config", [
    AppendConfig(), AppendConfig(timestamp_type=LOG_APPEND_TIME), AppendConfig(compacted=True),
    AppendConfig(timestamp_before_max_ms=60_000, timestamp_after_max_ms=60_000)])
def test_a_producers_batch_is_validated_without_decoding_its_records(
        codec: int, config: AppendConfig) -> None:
    pairs = [(b"key-%d" % i, b"v" * (i * 37 % 1500)) for i in range(300)]
    result = outcome(client_batch(pairs, codec=codec, timestamp=NOW - 100), config)
    assert isinstance(result, ValidatedAppend)
    assert (result.first_offset, result.last_offset, result.rebuilt) == (77, 376, False)
    if config.timestamp_type == CREATE_TIME:
        assert result.max_timestamp == NOW - 100 + 299


def test_malformed_records_are_refused_in_the_decoders_words() -> None:
    data = raw_batch([record(0), record(1)], body=raw_batch([record(0)])[61:] + b"\x00\x07")
    with pytest.raises(CorruptRecordError) as decoded:
        decode_records(unpack_header(data), data)
    assert outcome(data, AppendConfig()) == (
        ErrorCode.INVALID_RECORD, f"Found invalid record structure: {decoded.value}",
        ())


TIMESTAMPS = st.one_of(st.integers(NOW - 5_000, NOW + 5_000), st.just(-1),
                       st.integers(-(1 << 61), 1 << 61), st.integers(LONG_MIN, LONG_MIN + 9),
                       st.integers(LONG_MAX - 9, LONG_MAX))
LIMITS = st.one_of(st.just(LONG_MAX), st.integers(0, 10_000), st.integers(0, LONG_MAX))


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    timestamps=st.lists(TIMESTAMPS, min_size=1, max_size=6),
    null_keys=st.lists(st.booleans(), min_size=6, max_size=6),
    codec=st.sampled_from([NONE, LZ4]),
    log_append_flag=st.booleans(),
    now_ms=st.one_of(st.just(NOW), st.integers(-(1 << 62), 1 << 62)),
    config=st.builds(AppendConfig, timestamp_type=st.sampled_from([CREATE_TIME, LOG_APPEND_TIME]),
                     timestamp_before_max_ms=LIMITS, timestamp_after_max_ms=LIMITS,
                     compacted=st.booleans()),
)
def test_the_scan_decides_as_the_record_by_record_checks(
        timestamps: list[int], null_keys: list[bool], codec: int, log_append_flag: bool,
        now_ms: int, config: AppendConfig) -> None:
    records = [record(i, ts, key=None if null_keys[i] else b"k")
               for i, ts in enumerate(timestamps)]
    data = raw_batch(records, codec=codec,
                     attributes=ATTR_TIMESTAMP_TYPE if log_append_flag else 0)
    fast = outcome(data, config, now_ms)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(validator, "_passes_record_checks", lambda *args: False)
        assert outcome(data, config, now_ms) == fast
