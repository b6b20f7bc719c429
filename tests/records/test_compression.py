"""The batch codecs read what kafka-python's codecs write, and the other way round."""

from __future__ import annotations

import os

import pytest
from kafka import codec as kafka_codec

from pykraft.records.compression import (
    GZIP,
    LZ4,
    SNAPPY,
    ZSTD,
    CodecError,
    compress,
    decompress,
)

DATA = os.urandom(3_000) + b"abc" * 40_000  # over one xerial / lz4 block
WRITERS = {
    GZIP: kafka_codec.gzip_encode,
    SNAPPY: kafka_codec.snappy_encode,
    LZ4: kafka_codec.lz4_encode,
    ZSTD: kafka_codec.zstd_encode,
}
READERS = {
    GZIP: kafka_codec.gzip_decode,
    SNAPPY: kafka_codec.snappy_decode,
    LZ4: kafka_codec.lz4_decode,
    ZSTD: kafka_codec.zstd_decode,
}


@pytest.mark.parametrize("codec", [GZIP, SNAPPY, LZ4, ZSTD])
def test_round_trip_and_interop_with_kafka_python(codec: int) -> None:
    assert decompress(codec, compress(codec, DATA)) == DATA
    assert decompress(codec, WRITERS[codec](DATA)) == DATA
    assert READERS[codec](compress(codec, DATA)) == DATA


def test_raw_snappy_as_librdkafka_may_write_it() -> None:
    assert decompress(SNAPPY, kafka_codec.snappy_encode(DATA, xerial_compatible=False)) == DATA


def test_snappy_is_xerial_framed_as_the_java_client_writes_it() -> None:
    assert compress(SNAPPY, b"x")[:8] == b"\x82SNAPPY\x00"


@pytest.mark.parametrize("codec", [GZIP, SNAPPY, LZ4, ZSTD])
def test_garbage_is_a_codec_error(codec: int) -> None:
    with pytest.raises(CodecError):
        decompress(codec, b"\x82SNAPPY\x00\x00\x00\x00\x01\x00\x00\x00\x01\x00\x00\x10\x00x")


def test_unknown_codec() -> None:
    with pytest.raises(CodecError, match="unknown compression codec 5"):
        decompress(5, b"")
