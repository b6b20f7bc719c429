"""Kafka's varints: LEB128 groups of 7 bits, signed values zig-zag encoded.

Records inside a batch use signed (zig-zag) varints; the metadata record frame and the
flexible protocol encodings use unsigned ones. This is the one decoder of them all: the
message codec (:func:`pykraft.messages.wire.read_uvarint`), the frame cursor
(:class:`pykraft.protocol.cursor.Reader`) and the record batch reader call these functions and
turn :class:`CorruptRecordError` into their own error. Small values are served from a table
because every record carries several of them and this is the hot path of batch writing.
"""

from __future__ import annotations

from pykraft.errors import CorruptRecordError

_MAX_VARINT_BYTES = 5
"""Kafka's ``readUnsignedVarint``/``readVarint`` accept at most 5 bytes (32 bits)."""
_MAX_VARLONG_BYTES = 10


def encode_uvarint(value: int) -> bytes:
    """Unsigned LEB128."""
    if value < 0:
        raise ValueError(f"unsigned varint cannot encode {value}")
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _zigzag_slow(value: int) -> bytes:
    return encode_uvarint((value << 1) ^ (value >> 63))


_CACHE_LOW = -1
_CACHE_HIGH = 1 << 14
_ZIGZAG_CACHE = [_zigzag_slow(v) for v in range(_CACHE_LOW, _CACHE_HIGH)]


def encode_varint(value: int) -> bytes:
    """Signed zig-zag varint (Kafka's ``ByteUtils.writeVarint``/``writeVarlong``)."""
    if _CACHE_LOW <= value < _CACHE_HIGH:
        return _ZIGZAG_CACHE[value - _CACHE_LOW]
    return _zigzag_slow(value)


def decode_uvarint(buf: bytes | memoryview, pos: int, limit: int) -> tuple[int, int]:
    """Kafka's ``readUnsignedVarint`` at ``pos``: at most 5 bytes, a value that fits in 32
    bits; returns (value, next position). The one-byte case, nearly every one, comes first."""
    if pos < limit and (first := buf[pos]) < 0x80:
        return first, pos + 1
    raw, nxt = _decode_leb128(buf, pos, limit, _MAX_VARINT_BYTES)
    if raw >> 32:
        raise CorruptRecordError(f"unsigned varint {raw} does not fit in 32 bits", position=pos)
    return raw, nxt


def _decode_leb128(
    buf: bytes | memoryview, pos: int, limit: int, max_bytes: int
) -> tuple[int, int]:
    """Read LEB128 groups at ``pos``, at most ``max_bytes``; returns (value, next position)."""
    result = 0
    shift = 0
    for i in range(max_bytes):
        if pos >= limit:
            raise CorruptRecordError("varint runs past the end of its buffer", position=pos)
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7
        if i == max_bytes - 1:
            break
    raise CorruptRecordError(f"varint longer than {max_bytes} bytes", position=pos)


def decode_varint(buf: bytes | memoryview, pos: int, limit: int) -> tuple[int, int]:
    """Read a signed 32-bit zig-zag varint at ``pos``."""
    raw, pos = decode_uvarint(buf, pos, limit)
    return (raw >> 1) ^ -(raw & 1), pos


def decode_varlong(buf: bytes | memoryview, pos: int, limit: int) -> tuple[int, int]:
    """Read a signed 64-bit zig-zag varlong at ``pos``."""
    raw, pos = _decode_leb128(buf, pos, limit, _MAX_VARLONG_BYTES)
    if raw >> 64:
        raise CorruptRecordError("varlong does not fit in 64 bits", position=pos)
    return (raw >> 1) ^ -(raw & 1), pos
