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

A payload is read as a stream (:class:`PayloadStream`, Kafka's ``wrapForInput``): a few
kilobytes can expand to gigabytes, so readers pull bounded pieces and stop at the first
bad record instead of expanding the whole payload first. Writing is a stream too
(:class:`Compressor`), so a rebuilt batch never holds its uncompressed records at once.
"""

from __future__ import annotations

import gzip
import io
import struct
import zlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Final, Protocol, TypeVar

import cramjam
import lz4.frame
import zstandard

from pykraft.errors import PyKraftError

if TYPE_CHECKING:
    from _typeshed import WriteableBuffer

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
_GZIP_HEADER = bytes((0x1F, 0x8B, 8, 0, 0, 0, 0, 0, 0, 3))  # no name, mtime 0, OS Unix
_SNAPPY_MAX_RATIO = 22  # a 3-byte copy writes at most 64 bytes
_T = TypeVar("_T")
_PIECE = 256 * 1024  # what a reader pulls from a decompressor at a time


class CodecError(PyKraftError):
    """Compressed bytes that the batch's codec cannot decode, or an unknown codec id."""


class _Reader(Protocol):
    def read(self, size: int, /) -> bytes: ...


_ERRORS = (OSError, EOFError, RuntimeError, ValueError, zlib.error, zstandard.ZstdError,
           cramjam.DecompressionError)


class PayloadStream:
    """The decompressed records of a batch's compressed ``data``, read in bounded pieces.

    ``read(size)`` returns at most ``size`` bytes, ``b""`` at the end, and raises
    :class:`CodecError` when the bytes do not decode.
    """

    def __init__(self, codec: int, data: bytes | memoryview) -> None:
        self._codec = codec
        self._reader = self._guarded(lambda: _open(codec, data))

    def read(self, size: int) -> bytes:
        return self._guarded(lambda: bytes(self._reader.read(size)))

    def _guarded(self, action: Callable[[], _T]) -> _T:
        try:
            return action()
        except CodecError:
            raise
        except _ERRORS as exc:
            raise CodecError(f"{_name(self._codec)} payload does not decompress: {exc}"
                             ) from None


def payload_reader(codec: int, records: bytes | memoryview) -> Callable[[int], bytes]:
    """``read(size)`` over a batch's records (the bytes after its header), decompressed
    if ``codec`` is not none: at most ``size`` bytes a call, ``b""`` at the end."""
    if codec == NONE:
        return _View(records).read
    return PayloadStream(codec, records).read


def _open(codec: int, data: bytes | memoryview) -> _Reader:
    if codec == GZIP:
        return gzip.GzipFile(fileobj=_View(data), mode="rb")
    if codec == SNAPPY:
        return _SnappyReader(memoryview(data).cast("B"))
    if codec == LZ4:
        frames: _Reader = lz4.frame.LZ4FrameFile(_View(data), mode="rb")  # untyped library
        return frames
    if codec == ZSTD:
        return zstandard.ZstdDecompressor().stream_reader(memoryview(data),
                                                          read_across_frames=True)
    raise CodecError(f"unknown compression codec {codec}")


class _View(io.RawIOBase):
    """A read-only file over ``data`` that copies only what is read (``io.BytesIO``
    would copy the whole payload first)."""

    def __init__(self, data: bytes | memoryview) -> None:
        self._data = memoryview(data)
        self._pos = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: WriteableBuffer) -> int:
        target = memoryview(buffer).cast("B")
        piece = self._data[self._pos : self._pos + len(target)]
        target[: len(piece)] = piece
        self._pos += len(piece)
        return len(piece)


def decompress(codec: int, data: bytes) -> bytes:
    """The whole uncompressed payload of a batch compressed with ``codec`` (for readers of
    trusted, bounded data: tests and tools; brokers read a :class:`PayloadStream`)."""
    stream = PayloadStream(codec, data)
    return b"".join(iter(lambda: stream.read(_PIECE), b""))


class _Codec(Protocol):
    """A streaming compressor: output for each piece of input, then the rest."""

    def compress(self, data: bytes, /) -> bytes: ...
    def flush(self) -> bytes: ...


class _Identity:
    def compress(self, data: bytes) -> bytes:
        return data

    def flush(self) -> bytes:
        return b""


class _Gzip:
    """gzip as :func:`gzip.compress` writes it with ``mtime=0``: header, deflate, trailer."""

    def __init__(self) -> None:
        self._deflate = zlib.compressobj(_GZIP_LEVEL, zlib.DEFLATED, -zlib.MAX_WBITS)
        self._crc = 0
        self._length = 0
        self._header = _GZIP_HEADER

    def compress(self, data: bytes) -> bytes:
        self._crc = zlib.crc32(data, self._crc)
        self._length += len(data)
        header, self._header = self._header, b""
        return header + self._deflate.compress(data)

    def flush(self) -> bytes:
        trailer = struct.pack("<II", self._crc, self._length & 0xFFFFFFFF)
        return self.compress(b"") + self._deflate.flush() + trailer


class _XerialSnappy:
    """xerial's framing: its header, then each 32 KiB of input as one length-prefixed
    raw snappy block."""

    def __init__(self) -> None:
        self._pending = bytearray()
        self._header = _XERIAL_HEADER

    def compress(self, data: bytes) -> bytes:
        self._pending += data
        return self._blocks(whole_only=True)

    def flush(self) -> bytes:
        return self._blocks(whole_only=False)

    def _blocks(self, *, whole_only: bool) -> bytes:
        out = [self._header]
        self._header = b""
        while len(self._pending) >= (_XERIAL_BLOCK if whole_only else 1):
            block = bytes(cramjam.snappy.compress_raw(bytes(self._pending[:_XERIAL_BLOCK])))
            del self._pending[:_XERIAL_BLOCK]
            out += (_INT32.pack(len(block)), block)
        return b"".join(out)


class _Lz4:
    """The LZ4 frame with independent 64 KiB blocks and no content size, as Kafka's
    ``Lz4BlockOutputStream`` writes it."""

    def __init__(self) -> None:
        self._frame = lz4.frame.LZ4FrameCompressor(
            block_size=lz4.frame.BLOCKSIZE_MAX64KB, block_linked=False, content_checksum=False)
        self._header: bytes | None = None

    def compress(self, data: bytes) -> bytes:
        header = self._header if self._header is not None else bytes(self._frame.begin())
        self._header = b""
        return header + bytes(self._frame.compress(data))

    def flush(self) -> bytes:
        return self.compress(b"") + bytes(self._frame.flush())


def _codec_writer(codec: int) -> _Codec:
    if codec == NONE:
        return _Identity()
    if codec == GZIP:
        return _Gzip()
    if codec == SNAPPY:
        return _XerialSnappy()
    if codec == LZ4:
        return _Lz4()
    if codec == ZSTD:
        return zstandard.ZstdCompressor(level=_ZSTD_LEVEL).compressobj()
    raise CodecError(f"unknown compression codec {codec}")


class Compressor:
    """Compresses a payload written in pieces, as Kafka's ``wrapForOutput`` streams do;
    ``size`` counts the compressed bytes so far, so a writer can stop at a size limit."""

    def __init__(self, codec: int) -> None:
        self._codec = _codec_writer(codec)
        self._out: list[bytes] = []
        self.size = 0

    def write(self, data: bytes) -> None:
        """Compress the next ``data`` of the payload."""
        self._emit(self._codec.compress(data))

    def finish(self) -> bytes:
        """The whole compressed payload (call once)."""
        self._emit(self._codec.flush())
        return b"".join(self._out)

    def _emit(self, data: bytes) -> None:
        if data:
            self._out.append(data)
            self.size += len(data)


def compress(codec: int, data: bytes) -> bytes:
    """``data`` compressed with ``codec`` the way Kafka's Java producer and broker do."""
    compressor = Compressor(codec)
    compressor.write(data)
    return compressor.finish()


class _SnappyReader:
    """Snappy in xerial's framing block by block (one block's output at a time), or one
    raw block (librdkafka's) whole: a raw block expands at most about 21 times, since
    snappy's longest copy (64 bytes) takes 3 bytes."""

    def __init__(self, data: memoryview) -> None:
        self._data = data
        self._pos = len(_XERIAL_HEADER) if data[: len(_XERIAL_MAGIC)] == _XERIAL_MAGIC else 0
        self._block = memoryview(b"")
        if not self._pos:
            self._block = memoryview(_snappy_block(data))
            self._pos = len(data)

    def read(self, size: int) -> bytes:
        while not self._block and self._pos < len(self._data):
            self._block = memoryview(_snappy_block(self._next_block()))
        piece, self._block = self._block[:size], self._block[size:]
        return bytes(piece)

    def _next_block(self) -> memoryview:
        data, pos = self._data, self._pos
        if pos + 4 > len(data):
            raise CodecError("snappy (xerial) block length runs past the payload")
        size, = _INT32.unpack_from(data, pos)
        pos += 4
        if size < 0 or pos + size > len(data):
            raise CodecError(f"snappy (xerial) block of {size} bytes runs past the payload")
        self._pos = pos + size
        return data[pos : pos + size]


def _snappy_block(block: memoryview) -> bytes:
    """One raw snappy block, refused before any allocation when it declares more output
    than its bytes can hold (the declared length is what the decoder would allocate)."""
    declared = int(cramjam.snappy.decompress_raw_len(block))
    if declared > _SNAPPY_MAX_RATIO * len(block):
        raise CodecError(f"snappy block of {len(block)} bytes declares {declared} bytes "
                         "uncompressed, more than snappy can expand it to")
    return bytes(cramjam.snappy.decompress_raw(block))


def _name(codec: int) -> str:
    return next((name for name, code in CODECS.items() if code == codec), str(codec))
