"""Header encodings and the header-version rule, including Kafka's two exceptions."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kafka.protocol.metadata import ApiVersionsResponse as KafkaPythonApiVersionsResponse

from pykraft.errors import MalformedMessageError
from pykraft.protocol.api_versions import api_versions_response
from pykraft.protocol.apis import Listener
from pykraft.protocol.codec import encode_response
from pykraft.protocol.cursor import Reader
from pykraft.protocol.header import (
    RequestHeader,
    encode_request_header,
    encode_response_header,
    read_request_header_rest,
    read_request_prefix,
    read_response_header,
    request_header_version,
    response_header_version,
)


def test_request_header_v2_client_id_is_a_classic_string() -> None:
    header = RequestHeader(api_key=18, api_version=3, correlation_id=1, client_id="abc")
    assert encode_request_header(header, 2) == bytes.fromhex("0012 0003 00000001 0003 616263 00")


def test_request_header_v1_and_v0() -> None:
    assert encode_request_header(RequestHeader(3, 4, 7, "abc"), 1) == bytes.fromhex(
        "0003000400000007" + "0003616263"
    )
    assert encode_request_header(RequestHeader(3, 4, 7, None), 1) == bytes.fromhex(
        "0003000400000007ffff"
    )
    assert encode_request_header(RequestHeader(7, 0, 7), 0) == bytes.fromhex("0007000000000007")
    with pytest.raises(ValueError):
        encode_request_header(RequestHeader(7, 0, 7, "abc"), 0)


def test_response_headers() -> None:
    assert encode_response_header(258, 0) == bytes.fromhex("00000102")
    assert encode_response_header(258, 1) == bytes.fromhex("0000010200")


def test_header_version_rule() -> None:
    assert request_header_version(52, 0, flexible=True) == 2
    assert request_header_version(53, 0, flexible=False) == 1
    assert request_header_version(7, 0, flexible=False) == 0  # ControlledShutdown v0
    assert request_header_version(7, 1, flexible=False) == 1
    assert response_header_version(52, flexible=True) == 1
    assert response_header_version(53, flexible=False) == 0
    assert response_header_version(18, flexible=True) == 0  # ApiVersions, always


def test_api_versions_v3_response_uses_header_v0() -> None:
    wire = encode_response(9, 18, 3, api_versions_response(Listener.BROKER, 3))
    assert wire[:4] == bytes.fromhex("00000009")
    assert wire[4:6] == b"\x00\x00"  # the body's error code follows at once: no tag byte
    decoded = KafkaPythonApiVersionsResponse.decode(wire, version=3, header=True)
    assert decoded.header.correlation_id == 9
    assert {entry.api_key for entry in decoded.api_keys} >= {3, 18}


@given(
    st.integers(-(2**15), 2**15 - 1),
    st.integers(-(2**15), 2**15 - 1),
    st.integers(-(2**31), 2**31 - 1),
    st.none() | st.text(max_size=50),
    st.sampled_from([1, 2]),
)
def test_request_header_round_trip(
    api_key: int, api_version: int, correlation_id: int, client_id: str | None, version: int
) -> None:
    header = RequestHeader(api_key, api_version, correlation_id, client_id)
    reader = Reader(encode_request_header(header, version))
    assert read_request_header_rest(reader, read_request_prefix(reader), version) == header
    assert reader.remaining == 0


def test_unknown_request_header_tags_are_skipped() -> None:
    reader = Reader(bytes.fromhex("0012000300000001ffff" + "01 05 02 abcd".replace(" ", "")))
    header = read_request_header_rest(reader, read_request_prefix(reader), 2)
    assert header == RequestHeader(18, 3, 1, None)
    assert reader.remaining == 0


@pytest.mark.parametrize(
    "hex_bytes",
    [
        "00120003000000",  # short prefix
        "0012000300000001" + "0005616263",  # client_id longer than what follows
        "0012000300000001" + "0002fffe",  # client_id not UTF-8
        "0012000300000001" + "ffff" + "02 00 00 00 00".replace(" ", ""),  # tags not ascending
        "0012000300000001" + "ffff" + "ffffffff0f",  # absurd tag count
    ],
)
def test_malformed_request_headers(hex_bytes: str) -> None:
    reader = Reader(bytes.fromhex(hex_bytes))
    with pytest.raises(MalformedMessageError):
        read_request_header_rest(reader, read_request_prefix(reader), 2)


def test_response_header_v1_skips_tags() -> None:
    reader = Reader(bytes.fromhex("0000000a" + "0101 01 ff".replace(" ", "")))
    assert read_response_header(reader, 1) == 10
    assert reader.remaining == 0


@pytest.mark.parametrize(
    ("hex_bytes", "value", "end"),
    [("05", 5, 1), ("ac02", 300, 2), ("ffffffff0f", 2**32 - 1, 5)],
)
def test_reader_uvarint(hex_bytes: str, value: int, end: int) -> None:
    reader = Reader(bytes.fromhex(hex_bytes + "ee"))
    assert reader.uvarint("tag count") == value
    assert reader.pos == end


@pytest.mark.parametrize(
    ("hex_bytes", "reason"),
    [
        ("8080", "tag count: varint runs past the end of its buffer at byte 2"),
        ("80808080808001", "tag count: varint longer than 5 bytes at byte 5"),
        # 5 bytes but 35 bits: the codec's read_uvarint refused it, the cursor did not
        ("ffffffff1f", "tag count: unsigned varint 8589934591 does not fit in 32 bits at byte 0"),
    ],
)
def test_reader_uvarint_refuses_what_kafka_refuses(hex_bytes: str, reason: str) -> None:
    with pytest.raises(MalformedMessageError, match=f"^{reason}$"):
        Reader(bytes.fromhex(hex_bytes)).uvarint("tag count")
