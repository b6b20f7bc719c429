"""The record batch codecs, byte-compatible with Kafka's Java clients and brokers.

Attribute bits 0-2 of a v2 batch name the codec of everything after its 61-byte header:

* gzip (1): the standard library's gzip, level 6 like Java's ``Deflater.DEFAULT_COMPRESSION``;
* snappy (2): Kafka's Java client writes xerial's stream framing (a 16-byte header, then
  blocks of ``int32 length + raw snappy``); librdkafka may write one raw snappy block, which
  xerial's reader also accepts, so :func:`decompress` accepts both (``cramjam`` underneath);
* lz4 (3): the LZ4 frame format with independent 64 KiB blocks, as Kafka's
  ``Lz4BlockOutputStream`` writes (``lz4.frame``);
* zstd (4): one zstd frame, level 3 (``zstandard``); the reader does not need the content
  size in the frame header (Java's streaming writer leaves it out).

Decoding errors raise :class:`CodecError` so a validator can answer as Kafka does.
"""

from __future__ import annotations

import gzip
import struct
import zlib
from typing import Final

import cramjam
import lz4.frame
import zstandard

from pykraft.errors import PyKraftError

NONE: Final = 0
GZIP: Final = 1
SNAPPY: Final = 2
LZ4: Final = 3
ZSTD: Final = 4

CODECS: Final = {"none": NONE, "gzip": GZIP, "snappy": SNAPPY, "lz4": LZ4, "zstd": ZSTD}

_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = _XERIAL_MAGIC + struct.pack(">ii", 1, 1)
_XERIAL_BLOCK = 32 * 1024  # xerial SnappyOutputStream's default block size
_GZIP_LEVEL = 6
_ZSTD_LEVEL = 3
_INT32 = struct.Struct(">i")


class CodecError(PyKraftError):
    """Compressed bytes that the batch's codec cannot decode, or an unknown codec id."""


def decompress(codec: int, data: bytes) -> bytes:
    """The uncompressed payload of a batch compressed with ``codec``."""
    try:
        if codec == GZIP:
            return gzip.decompress(data)
        if codec == SNAPPY:
            return _snappy_decompress(data)
        if codec == LZ4:
            return bytes(lz4.frame.decompress(data))
        if codec == ZSTD:
            with zstandard.ZstdDecompressor().stream_reader(data, read_across_frames=True) as r:
                return r.read()
    except CodecError:
        raise
    except (OSError, EOFError, RuntimeError, ValueError, zlib.error, zstandard.ZstdError,
            cramjam.DecompressionError) as exc:
        raise CodecError(f"{_name(codec)} payload does not decompress: {exc}") from None
    raise CodecError(f"unknown compression codec {codec}")


def compress(codec: int, data: bytes) -> bytes:
    """``data`` compressed with ``codec`` the way Kafka's Java producer and broker do."""
    if codec == GZIP:
        return gzip.compress(data, compresslevel=_GZIP_LEVEL, mtime=0)
    if codec == SNAPPY:
        parts = [_XERIAL_HEADER]
        for start in range(0, len(data), _XERIAL_BLOCK):
            block = bytes(cramjam.snappy.compress_raw(data[start : start + _XERIAL_BLOCK]))
            parts += (_INT32.pack(len(block)), block)
        return b"".join(parts)
    if codec == LZ4:
        return bytes(lz4.frame.compress(
            data, block_size=lz4.frame.BLOCKSIZE_MAX64KB, block_linked=False,
            content_checksum=False,
        ))
    if codec == ZSTD:
        return zstandard.ZstdCompressor(level=_ZSTD_LEVEL).compress(data)
    raise CodecError(f"unknown compression codec {codec}")


def _snappy_decompress(data: bytes) -> bytes:
    if not data.startswith(_XERIAL_MAGIC):
        return bytes(cramjam.snappy.decompress_raw(data))
    out: list[bytes] = []
    pos = len(_XERIAL_HEADER)
    while pos < len(data):
        if pos + 4 > len(data):
            raise CodecError("snappy (xerial) block length runs past the payload")
        size, = _INT32.unpack_from(data, pos)
        pos += 4
        if size < 0 or pos + size > len(data):
            raise CodecError(f"snappy (xerial) block of {size} bytes runs past the payload")
        out.append(bytes(cramjam.snappy.decompress_raw(data[pos : pos + size])))
        pos += size
    return b"".join(out)


def _name(codec: int) -> str:
    return next((name for name, code in CODECS.items() if code == codec), str(codec))
