"""Compression bombs for the tests and benches: a few kilobytes of batch that expand to
gigabytes.

Written by the codec libraries directly, in pieces (an independent writer: a test never
holds the expansion either). A bomb of NUL bytes alone is an invalid record (length 0);
:func:`huge_record` frames a valid record around them.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Callable

import cramjam
import lz4.frame
import zstandard

from pykraft.messages.varint import encode_varint
from pykraft.records.batch import assemble_batch
from pykraft.records.compression import GZIP, LZ4, ZSTD

MiB = 1 << 20
NOW = 1_700_000_000_000
XERIAL = b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1)
_ZEROS = bytes(MiB)

Writer = tuple[bytes, Callable[[bytes], bytes], Callable[[], bytes]]


def _writer(codec: int) -> Writer:
    """The codec's streaming writer: (its first bytes, compress a piece, finish)."""
    if codec == GZIP:
        gzip = zlib.compressobj(6, zlib.DEFLATED, 31)
        return b"", gzip.compress, gzip.flush
    if codec == ZSTD:
        zstd = zstandard.ZstdCompressor().compressobj()
        return b"", zstd.compress, zstd.flush
    if codec == LZ4:
        frame = lz4.frame.LZ4FrameCompressor(block_size=lz4.frame.BLOCKSIZE_MAX64KB)
        return frame.begin(), frame.compress, frame.flush

    def xerial(data: bytes) -> bytes:  # pieces are whole 32 KiB blocks but the last
        return b"".join(struct.pack(">i", len(block)) + block for block in (
            bytes(cramjam.snappy.compress_raw(data[at : at + 32 * 1024]))
            for at in range(0, len(data), 32 * 1024)))
    return XERIAL, xerial, lambda: b""


def bomb(codec: int, head: bytes, zeros: int, tail: bytes = b"") -> bytes:
    """``head``, ``zeros`` NUL bytes (whole MiB) and ``tail`` compressed with ``codec``
    (snappy's ``head`` is its own block)."""
    first, write, finish = _writer(codec)
    out = [first, write(head)]
    out += (write(_ZEROS) for _ in range(zeros // MiB))
    out += (write(tail), finish())
    return b"".join(out)


def batch(codec: int, payload: bytes, *, timestamp: int = NOW, offset: int = 0,
          records: int = 1) -> bytes:
    """A producer's batch of ``records`` around a compressed ``payload``."""
    return assemble_batch(payload, base_offset=offset, partition_leader_epoch=-1,
                          attributes=codec, last_offset_delta=records - 1,
                          base_timestamp=timestamp, max_timestamp=timestamp,
                          records_count=records)


def huge_record(value_size: int, key: bytes | None = None, offset_delta: int = 0
                ) -> tuple[bytes, bytes]:
    """A valid record's bytes before and after its ``value_size`` NUL bytes of value."""
    key_field = b"\x01" if key is None else encode_varint(len(key)) + key
    body = (b"\x00\x00" + encode_varint(offset_delta) + key_field  # attributes, deltas
            + encode_varint(value_size))
    return encode_varint(len(body) + value_size + 1) + body, b"\x00"  # no headers
