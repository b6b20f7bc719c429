"""Malformed input only ever raises ProtocolError subclasses, quickly and without big
allocations: every truncation, random byte flips, absurd counts and lengths."""

from __future__ import annotations

import contextlib
import tracemalloc

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from pykraft.errors import MalformedMessageError, ProtocolError
from pykraft.protocol.codec import (
    decode_request,
    decode_response,
    encode_request,
    encode_response,
)
from pykraft.protocol.header import RequestHeader
from rpc_strategies import PAIR_IDS, PAIRS, request_bodies, response_bodies

SETTINGS = settings(max_examples=3, deadline=None, suppress_health_check=list(HealthCheck))


# Every cut of a frame is decoded, which is quadratic in its size: keep frames modest.
MAX_FRAME = 1500


def _request(data: st.DataObject, api_key: int, version: int) -> bytes:
    body = data.draw(request_bodies(api_key, version))
    wire = encode_request(RequestHeader(api_key, version, 1, "client"), body)
    assume(len(wire) <= MAX_FRAME)
    return wire


def _response(data: st.DataObject, api_key: int, version: int) -> bytes:
    body = data.draw(response_bodies(api_key, version))
    wire = encode_response(1, api_key, version, body)
    assume(len(wire) <= MAX_FRAME)
    return wire


@pytest.mark.parametrize(("api_key", "version"), PAIRS, ids=PAIR_IDS)
@SETTINGS
@given(data=st.data())
def test_every_truncation_of_a_request_is_a_protocol_error(
    api_key: int, version: int, data: st.DataObject
) -> None:
    wire = _request(data, api_key, version)
    for cut in range(len(wire)):
        with pytest.raises(ProtocolError):
            decode_request(wire[:cut])


@pytest.mark.parametrize(("api_key", "version"), PAIRS, ids=PAIR_IDS)
@SETTINGS
@given(data=st.data())
def test_every_truncation_of_a_response_is_a_protocol_error(
    api_key: int, version: int, data: st.DataObject
) -> None:
    wire = _response(data, api_key, version)
    for cut in range(len(wire)):
        try:
            frame = decode_response(api_key, version, wire[:cut])
        except ProtocolError:
            continue
        # Only the KIP-511 ApiVersions fallback may find a shorter valid (v0) message.
        assert (api_key, frame.api_version) == (18, 0)


@pytest.mark.parametrize(("api_key", "version"), PAIRS, ids=PAIR_IDS)
@SETTINGS
@given(data=st.data())
def test_byte_flips_decode_or_raise_protocol_error(
    api_key: int, version: int, data: st.DataObject
) -> None:
    wire = bytearray(_request(data, api_key, version))
    flips = data.draw(st.lists(st.tuples(st.integers(0, len(wire) - 1), st.integers(1, 255))))
    for position, mask in flips:
        wire[position] ^= mask
    with contextlib.suppress(ProtocolError):
        decode_request(bytes(wire))
    response = bytearray(_response(data, api_key, version))
    position = data.draw(st.integers(0, len(response) - 1))
    response[position] ^= data.draw(st.integers(1, 255))
    with contextlib.suppress(ProtocolError):
        decode_response(api_key, version, bytes(response))


METADATA_V13 = bytes.fromhex("0003000d00000001ffff00")  # header v2, null client id
METADATA_V4 = bytes.fromhex("0003000400000001ffff")  # header v1
CREATE_TOPICS_V2 = bytes.fromhex("0013000200000001ffff")
SASL_AUTH_V0 = bytes.fromhex("0024000000000001ffff")
FETCH_SNAPSHOT_V0 = bytes.fromhex("003b000000000001ffff00")

ABSURD = {
    # A count a reader that trusts it would allocate for (a native reader once aborted).
    "compact count 2^32-2": METADATA_V13 + bytes.fromhex("ffffffff0f") + b"\x00" * 8,
    "compact count 2^31": METADATA_V13 + bytes.fromhex("8180808008") + b"\x00" * 8,
    "compact count over 5 bytes": METADATA_V13 + bytes.fromhex("ffffffffff01"),
    "legacy count 2^31-1": METADATA_V4 + bytes.fromhex("7fffffff") + b"\x00" * 8,
    "legacy count -2": METADATA_V4 + bytes.fromhex("fffffffe") + b"\x00\x00",
    "legacy count min": CREATE_TOPICS_V2 + bytes.fromhex("80000000") + b"\x00" * 8,
    "legacy string 32767": METADATA_V4 + bytes.fromhex("00000001 7fff 41".replace(" ", "")),
    "legacy string -2": METADATA_V4 + bytes.fromhex("00000001 fffe 41 00".replace(" ", "")),
    "bytes 2^31-1": SASL_AUTH_V0 + bytes.fromhex("7fffffff00"),
    "bytes -5": SASL_AUTH_V0 + bytes.fromhex("fffffffb00"),
    "compact string huge": METADATA_V13
    + bytes.fromhex("02 00000000000000000000000000000000 ffffff7f".replace(" ", "")),
    "tag count huge": METADATA_V13 + bytes.fromhex("000000 ffffff7f".replace(" ", "")),
    "tag size huge": METADATA_V13 + bytes.fromhex("000000 01 05 ffffff7f 00".replace(" ", "")),
    "tags descending": METADATA_V13 + bytes.fromhex("000000 02 05 00 04 00".replace(" ", "")),
    "known tag too long": FETCH_SNAPSHOT_V0
    + bytes.fromhex("ffffffff 7fffffff 01 01 00 03 0263 ff".replace(" ", "")),
    "known tag array huge": FETCH_SNAPSHOT_V0
    + bytes.fromhex("ffffffff 7fffffff 01 01 00 05 ffffffff0f".replace(" ", "")),
    "invalid utf-8": METADATA_V4 + bytes.fromhex("00000001 0002 fffe 00".replace(" ", "")),
}


@pytest.mark.parametrize("wire", ABSURD.values(), ids=ABSURD.keys())
def test_absurd_lengths_are_refused_without_allocating(wire: bytes) -> None:
    tracemalloc.start()
    try:
        with pytest.raises(MalformedMessageError):
            decode_request(wire)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20


@pytest.mark.parametrize("size", range(8))
def test_short_prefixes_are_malformed(size: int) -> None:
    with pytest.raises(MalformedMessageError):
        decode_request(bytes.fromhex("0012000300000001")[:size])
