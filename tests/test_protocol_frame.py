"""Size-prefixed framing: incremental decoding, limits checked before buffering."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pykraft.errors import FrameTooLargeError
from pykraft.protocol.frame import DEFAULT_MAX_FRAME_SIZE, FrameDecoder, encode_frame


def test_encode_frame_prefixes_big_endian_size() -> None:
    assert encode_frame(b"abc") == b"\x00\x00\x00\x03abc"
    assert encode_frame(b"") == b"\x00\x00\x00\x00"


def test_default_max_is_kafka_socket_request_max_bytes() -> None:
    assert DEFAULT_MAX_FRAME_SIZE == 104857600
    assert FrameDecoder().max_frame_size == DEFAULT_MAX_FRAME_SIZE


@given(
    payloads=st.lists(st.binary(max_size=300), max_size=8),
    cuts=st.lists(st.integers(min_value=0, max_value=3000), max_size=20),
)
def test_any_chunking_yields_the_same_frames(payloads: list[bytes], cuts: list[int]) -> None:
    stream = b"".join(encode_frame(payload) for payload in payloads)
    points = sorted({min(cut, len(stream)) for cut in cuts} | {0, len(stream)})
    decoder = FrameDecoder(max_frame_size=300)
    frames: list[bytes] = []
    for start, end in itertools.pairwise(points):
        frames += decoder.feed(stream[start:end])
    assert frames == payloads
    assert decoder.buffered == 0


def test_partial_frame_stays_buffered() -> None:
    decoder = FrameDecoder()
    assert decoder.feed(b"\x00\x00\x00\x05ab") == []
    assert decoder.buffered == 2
    assert decoder.feed(b"cde\x00\x00") == [b"abcde"]
    assert decoder.buffered == 2


@pytest.mark.parametrize("prefix", ["00000065", "7fffffff", "ffffffff", "80000000"])
def test_bad_size_prefix_is_refused_after_four_bytes(prefix: str) -> None:
    decoder = FrameDecoder(max_frame_size=100)
    with pytest.raises(FrameTooLargeError):
        decoder.feed(bytes.fromhex(prefix))
    assert decoder.buffered == 0
    with pytest.raises(FrameTooLargeError):  # the stream stays unusable
        decoder.feed(b"\x00\x00\x00\x01x")


def test_frame_at_exactly_the_maximum_is_accepted() -> None:
    decoder = FrameDecoder(max_frame_size=4)
    assert decoder.feed(encode_frame(b"abcd")) == [b"abcd"]


def test_oversized_prefix_is_refused_even_with_data_following() -> None:
    decoder = FrameDecoder(max_frame_size=10)
    with pytest.raises(FrameTooLargeError, match="11"):
        decoder.feed(encode_frame(b"x" * 11))


def test_negative_maximum_is_a_configuration_error() -> None:
    with pytest.raises(ValueError):
        FrameDecoder(max_frame_size=-1)
