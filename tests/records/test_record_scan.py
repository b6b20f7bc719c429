"""The record scanner and the streaming reader accept exactly the records the full decoder
accepts, and agree with it.

Records are built field by field so that every framing rule can be broken: lengths off by a
few bytes, negative lengths, non-canonical (padded) and over-long varints, varints beyond 32
or 64 bits, wrong record counts, offset deltas outside the header's range, trailing bytes.
"""

from __future__ import annotations

import io
import itertools

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from pykraft.errors import CorruptRecordError
from pykraft.records.batch import (
    HEADER_SIZE,
    LOG_OVERHEAD,
    BatchHeader,
    Record,
    decode_record_payload,
    decode_records,
)
from pykraft.records.record_scan import RecordsScan, scan_records
from pykraft.records.record_stream import scan_stream

BASE_TIMESTAMP = 1_700_000_000_000
BASE_OFFSET = 500


def leb128(raw: int, pad: int) -> bytes:
    """Unsigned LEB128 of ``raw`` with ``pad`` superfluous zero groups (still decodable)."""
    groups = []
    while True:
        groups.append(raw & 0x7F)
        raw >>= 7
        if not raw:
            break
    groups += [0] * pad
    return bytes([g | 0x80 for g in groups[:-1]] + [groups[-1]])


def varint(value: int, pad: int = 0) -> bytes:
    """Zig-zag ``value`` (any size: the decoders must refuse what does not fit)."""
    return leb128(value * 2 if value >= 0 else -value * 2 - 1, pad)


PADS = st.integers(1, 10)  # superfluous groups of a non-canonical varint, up to over-long
DATA = st.one_of(st.binary(max_size=70), st.integers(60, 300).map(b"v".__mul__),
                 st.integers(8180, 8300).map(b"x".__mul__))  # 1, 2 and 3 byte lengths
NEGATIVE_LENGTHS = st.integers(-300, -1)
TIMESTAMP_DELTAS = st.one_of(st.integers(-5, 200), st.integers(0, 20_000),
                             st.integers(-(1 << 63), (1 << 63) - 1))
HUGE_TIMESTAMP_DELTAS = st.integers(1 << 63, 1 << 66) | st.integers(-(1 << 66), -(1 << 63) - 1)
WILD_OFFSET_DELTAS = st.integers(-(1 << 33), 1 << 33)
PERCENT = st.integers(0, 99)


class Builder:
    """Writes records field by field; each field is broken with probability ``rate`` %."""

    def __init__(self, draw: st.DrawFn, rate: int) -> None:
        self.draw = draw
        self.rate = rate

    def broken(self) -> bool:
        return self.rate > 0 and self.draw(PERCENT) < self.rate

    def varint(self, value: int) -> bytes:
        return varint(value, self.draw(PADS) if self.broken() else 0)

    def field(self, nullable: bool = True) -> bytes:
        """A key, value or header field: null, or bytes with a 1, 2 or 3 byte length."""
        if self.broken():  # then maybe the bytes a reader taking it as a length would skip
            length = self.draw(NEGATIVE_LENGTHS)
            return self.varint(length) + b"z" * self.draw(st.sampled_from([0, -length - 1]))
        if nullable and self.draw(st.booleans()):
            return b"\x01"
        data = self.draw(DATA)
        return self.varint(len(data)) + data

    def headers(self) -> bytes:
        pairs = [self.field(nullable=False) + self.field()
                 for _ in range(self.draw(st.integers(0, 2)))]
        error = self.draw(st.integers(-2, 2)) if self.broken() else 0
        return self.varint(len(pairs) + error) + b"".join(pairs)

    def record(self, index: int, last_offset_delta: int) -> bytes:
        offset_delta = self.draw(
            WILD_OFFSET_DELTAS | st.integers(-2, last_offset_delta + 2) if self.broken()
            else st.just(index) | st.integers(0, max(last_offset_delta, 0)))
        timestamp_delta = self.draw(
            HUGE_TIMESTAMP_DELTAS if self.broken() else TIMESTAMP_DELTAS)
        body = (bytes([self.draw(st.integers(0, 255))])  # attributes: any, as Kafka reads them
                + self.varint(timestamp_delta) + self.varint(offset_delta)
                + self.field() + self.field() + self.headers())
        error = self.draw(st.integers(-4, 4)) if self.broken() else 0
        return self.varint(len(body) + error) + body


@st.composite
def batch(draw: st.DrawFn, faulty: bool) -> tuple[BatchHeader, bytes, int]:
    """(header, data, start): a framed batch (start 61) or a decompressed payload (0)."""
    build = Builder(draw, draw(st.sampled_from([1, 3, 10])) if faulty else 0)
    count = draw(st.integers(0 if faulty else 1, 12))
    last_offset_delta = draw(st.integers(-1, count + 2)) if build.broken() else count - 1
    records = b"".join(build.record(index, last_offset_delta) for index in range(count))
    records_count = count + (draw(st.integers(-2, 2)) if build.broken() else 0)
    if build.broken():
        records += draw(st.binary(min_size=1, max_size=3))
    if build.broken() and records:
        at = draw(st.integers(0, len(records) - 1))
        records = records[:at] + bytes([draw(st.integers(0, 255))]) + records[at + 1:]
    framed = draw(st.booleans())
    data = bytes(HEADER_SIZE) + records if framed else records
    header = BatchHeader(BASE_OFFSET, len(data) - LOG_OVERHEAD, 0, 2, 0, 0,
                         last_offset_delta, BASE_TIMESTAMP, BASE_TIMESTAMP, -1, -1, -1,
                         records_count)
    return header, data, HEADER_SIZE if framed else 0


def payload(*bodies: bytes, last_offset_delta: int | None = None
            ) -> tuple[BatchHeader, bytes, int]:
    """A decompressed batch payload of records with these bodies (lengths prefixed)."""
    count = len(bodies)
    header = BatchHeader(BASE_OFFSET, 0, 0, 2, 0, 0,
                         count - 1 if last_offset_delta is None else last_offset_delta,
                         BASE_TIMESTAMP, BASE_TIMESTAMP, -1, -1, -1, count)
    return header, b"".join(varint(len(body)) + body for body in bodies), 0


def decoded_summary(header: BatchHeader, data: bytes, start: int) -> RecordsScan | None:
    """What the full decoder says: the summary of its records, or None when it refuses."""
    try:
        records: list[Record] = (decode_records(header, data) if start
                                 else decode_record_payload(header, data))
    except CorruptRecordError:
        return None
    deltas = [r.timestamp - BASE_TIMESTAMP for r in records] or [0]
    return RecordsScan(
        min(deltas), max(deltas), any(r.key is None for r in records),
        [r.offset - BASE_OFFSET for r in records] == list(range(len(records))))


def scanned_summary(header: BatchHeader, data: bytes, start: int) -> RecordsScan | None:
    try:
        return scan_records(header, data, start)
    except CorruptRecordError:
        return None


def streamed_summary(header: BatchHeader, data: bytes, start: int) -> RecordsScan | None:
    """The streaming reader's summary, fed pieces of 1, 7, 300 and 4096 bytes in turn
    (varints and fields split across reads anywhere)."""
    source = io.BytesIO(data[start:])
    pieces = itertools.cycle((1, 7, 300, 4096))
    try:
        return scan_stream(header, lambda _size: source.read(next(pieces)))
    except CorruptRecordError:
        return None


@settings(max_examples=200, deadline=None)
@given(batch(faulty=False))
def test_scan_agrees_with_the_decoder_on_valid_batches(
        batch: tuple[BatchHeader, bytes, int]) -> None:
    expected = decoded_summary(*batch)
    assert expected is not None
    assert scanned_summary(*batch) == expected
    assert streamed_summary(*batch) == expected


@settings(max_examples=1000, deadline=None)
@given(batch(faulty=True))
@example(payload(  # offset deltas 0, 1, 0 under a last offset delta of 0: 1 is out of range
    *(b"\x00\x00" + varint(delta) + b"\x00\x01\x00" for delta in (0, 1, 0)),
    last_offset_delta=0))
@example(payload(b"\x00\x00\x00\x01\x01\x00", b"\x00\x00" + varint(-1) + b"\x01\x01\x00",
                 last_offset_delta=0))  # past the offset range, a negative delta
@example(payload(b"\x00\x00\x00" + leb128(1, 1) + b"\x00"))  # a key of -1, not one byte
@example(payload(b"\x00\x00\x00\x01\x01" + varint(-1)))  # -1 headers
@example(payload(b"\x00\x00\x00\x01\x01" + varint(1) + b"\x01\x01"))  # a null header key
@example(payload(b"\x00\x00\x00\x01\x01" + varint(1) + varint(1) + b"k" + varint(-2)))
@example(payload(b"\x00\x00\x00\x01" + varint(-100) + b"z" * 99 + b"\x00"))  # a value of -100
def test_scan_refuses_exactly_what_the_decoder_refuses(
        batch: tuple[BatchHeader, bytes, int]) -> None:
    expected = decoded_summary(*batch)
    assert scanned_summary(*batch) == expected
    assert streamed_summary(*batch) == expected


def test_scan_refusals_say_where() -> None:
    header, record, _ = payload(b"\x00\x00" + varint(3) + b"\x01\x01\x00")  # offset delta 3
    with pytest.raises(CorruptRecordError,
                       match=r"^batch at offset 500, a record before byte 4: offset delta 3$"):
        scan_records(header, record)
