"""Record batch v2: round-trips, Kafka fixture bytes, and corruption detection."""

from __future__ import annotations

import contextlib
import struct
from pathlib import Path

import crc32c
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pykraft.errors import CorruptRecordError, UnsupportedCompressionError
from pykraft.records.batch import (
    ATTR_CONTROL,
    HEADER_SIZE,
    encode_batch,
    iter_batches,
    read_header,
)

optional_bytes = st.none() | st.binary(max_size=300)
record_lists = st.lists(st.tuples(optional_bytes, optional_bytes), min_size=1, max_size=40)
header_lists = st.lists(st.tuples(st.text(max_size=10), optional_bytes), max_size=3)


@given(
    base_offset=st.integers(0, 2**62),
    epoch=st.integers(0, 2**31 - 1),
    timestamp=st.integers(-1, 2**62),
    records=record_lists,
    control=st.booleans(),
)
def test_round_trip(
    base_offset: int,
    epoch: int,
    timestamp: int,
    records: list[tuple[bytes | None, bytes | None]],
    control: bool,
) -> None:
    data = encode_batch(
        base_offset, records, partition_leader_epoch=epoch, timestamp=timestamp, control=control
    )
    (batch,) = list(iter_batches(data))
    assert batch.header.size == len(data)
    assert batch.base_offset == base_offset
    assert batch.last_offset == base_offset + len(records) - 1
    assert batch.epoch == epoch
    assert batch.is_control is control
    decoded = batch.records()
    assert [(r.key, r.value) for r in decoded] == records
    assert [r.offset for r in decoded] == list(range(base_offset, base_offset + len(records)))
    assert all(r.timestamp == timestamp for r in decoded)


@given(records=record_lists, data=st.data())
def test_record_headers_round_trip(
    records: list[tuple[bytes | None, bytes | None]], data: st.DataObject
) -> None:
    headers = [data.draw(header_lists) for _ in records]
    raw = encode_batch(7, records, partition_leader_epoch=1, timestamp=5, headers=headers)
    decoded = next(iter_batches(raw)).records()
    assert [list(r.headers) for r in decoded] == headers


def _fixture_batches(kafka37_dir: Path) -> bytes:
    return (kafka37_dir / "bootstrap.checkpoint").read_bytes()


def test_kafka_fixture_parses_exactly(kafka37_dir: Path) -> None:
    batches = list(iter_batches(_fixture_batches(kafka37_dir)))
    assert len(batches) == 3
    assert all(b.crc_valid() for b in batches)
    assert [b.is_control for b in batches] == [True, False, True]
    assert [b.base_offset for b in batches] == [0, 1, 2]
    assert sum(len(b.records()) for b in batches) == 3
    assert batches[0].records()[0].key == struct.pack(">hh", 0, 3)  # SnapshotHeader
    assert batches[2].records()[0].key == struct.pack(">hh", 0, 4)  # SnapshotFooter
    assert batches[1].records()[0].key is None


def test_reencoding_kafka_batches_is_byte_identical(kafka37_dir: Path) -> None:
    for batch in iter_batches(_fixture_batches(kafka37_dir)):
        records = batch.records()
        again = encode_batch(
            batch.base_offset,
            [(r.key, r.value) for r in records],
            partition_leader_epoch=batch.epoch,
            timestamp=batch.header.base_timestamp,
            control=batch.is_control,
        )
        assert again == batch.data


def _sample_batch() -> bytes:
    return encode_batch(
        100, [(None, b"value-%d" % i) for i in range(5)], partition_leader_epoch=3, timestamp=42
    )


def _parse_fully(data: bytes) -> None:
    for batch in iter_batches(data):
        batch.records()


@pytest.mark.parametrize("flip", [0x01, 0x80, 0xFF])
def test_every_checked_single_byte_flip_is_detected(flip: int) -> None:
    """Every byte from the length field on is covered: length, magic, CRC, and the CRC range.

    baseOffset (bytes 0-7) and partitionLeaderEpoch (12-15) sit outside Kafka's CRC by
    design; the log layer checks offsets for contiguity and epochs for monotonicity.
    """
    data = _sample_batch()
    outside_crc = set(range(8)) | set(range(12, 16))
    for position in range(len(data)):
        if position in outside_crc:
            continue
        corrupted = bytearray(data)
        corrupted[position] ^= flip
        with pytest.raises(CorruptRecordError):
            _parse_fully(bytes(corrupted))


def test_every_truncation_is_detected() -> None:
    data = _sample_batch()
    for cut in range(1, len(data)):
        with pytest.raises(CorruptRecordError):
            _parse_fully(data[:cut])


def test_compressed_batch_gets_a_clear_error() -> None:
    data = bytearray(_sample_batch())
    struct.pack_into(">h", data, 21, 4)  # zstd
    struct.pack_into(">I", data, 17, crc32c.crc32c(bytes(data[21:])))
    (batch,) = list(iter_batches(bytes(data)))
    assert batch.header.compression == "zstd"
    with pytest.raises(UnsupportedCompressionError, match="zstd"):
        batch.records()


def test_header_rejects_wrong_magic_and_short_input() -> None:
    data = bytearray(_sample_batch())
    with pytest.raises(CorruptRecordError, match="truncated batch header"):
        read_header(bytes(data[: HEADER_SIZE - 1]))
    data[16] = 1
    with pytest.raises(CorruptRecordError, match="magic 1"):
        read_header(bytes(data))


@settings(max_examples=300)
@given(data=st.binary(min_size=0, max_size=200))
def test_garbage_only_raises_typed_errors(data: bytes) -> None:
    with contextlib.suppress(CorruptRecordError):
        _parse_fully(_sample_batch()[:HEADER_SIZE] + data)


def test_control_attribute_is_set_only_for_control_batches() -> None:
    plain = read_header(_sample_batch())
    control = read_header(
        encode_batch(0, [(b"\x00\x00\x00\x04", b"\x00\x00\x00")], partition_leader_epoch=0,
                     timestamp=0, control=True)
    )
    assert plain.attributes == 0
    assert control.attributes == ATTR_CONTROL


def test_with_base_offset_keeps_crc_valid() -> None:
    (batch,) = list(iter_batches(_sample_batch()))
    moved = batch.with_base_offset(5000, epoch=9)
    assert moved.base_offset == 5000 and moved.epoch == 9
    assert moved.crc_valid()
    assert [r.offset for r in moved.records()] == list(range(5000, 5005))


def test_complete_batches_stop_at_a_cut_or_damaged_batch() -> None:
    from pykraft.records.batch import complete_batches, encode_batch

    first = encode_batch(0, [(None, b"a")] * 2, partition_leader_epoch=1, timestamp=1)
    second = encode_batch(2, [(None, b"b")], partition_leader_epoch=1, timestamp=2)
    headers, end = complete_batches(first + second)
    assert ([h.base_offset for h in headers], end) == ([0, 2], len(first + second))
    for cut in range(len(second)):  # a file slice ending anywhere inside the second batch
        headers, end = complete_batches(first + second[:cut])
        assert ([h.base_offset for h in headers], end) == ([0], len(first))
    damaged = bytearray(second)
    damaged[8:12] = (0).to_bytes(4, "big")  # a length no batch can have
    assert complete_batches(first + bytes(damaged))[1] == len(first)


def test_runs_within_a_limit_keep_batches_whole_and_in_order() -> None:
    from pykraft.records.batch import complete_batches, encode_batch, runs_within

    batches = [encode_batch(i, [(None, bytes(10 * (i + 1)))], partition_leader_epoch=1,
                            timestamp=i) for i in range(6)]
    data = b"".join(batches)
    headers, _ = complete_batches(data)
    limit = len(batches[0]) + len(batches[1])
    runs = list(runs_within(headers, limit))
    assert b"".join(data[start:end] for start, end, _ in runs) == data
    for start, end, run in runs:
        assert end - start <= limit or len(run) == 1  # only a lone batch exceeds it
        assert sum(h.size for h in run) == end - start
    assert [h.base_offset for _, _, run in runs for h in run] == list(range(6))
