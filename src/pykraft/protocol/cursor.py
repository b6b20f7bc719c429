"""A bounded byte cursor over a frame: the request and response headers, TAG_BUFFERs.

Every read checks the bytes actually remaining first, so a lying length or count prefix
produces :class:`MalformedMessageError` naming the position, never an IndexError, a huge
allocation or a partial value.
"""

from __future__ import annotations

import struct

from pykraft.errors import CorruptRecordError, MalformedMessageError
from pykraft.messages.varint import decode_uvarint, encode_uvarint

_INT8 = struct.Struct(">b")
_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")


class Reader:
    """A cursor over ``buf[pos:end]``."""

    __slots__ = ("buf", "end", "pos")

    def __init__(self, buf: bytes, pos: int = 0, end: int | None = None) -> None:
        self.buf = buf
        self.pos = pos
        self.end = len(buf) if end is None else end

    @property
    def remaining(self) -> int:
        return self.end - self.pos

    def fail(self, what: str) -> MalformedMessageError:
        """The error to raise for a problem at the current position."""
        return MalformedMessageError(f"{what} at byte {self.pos}")

    def skip(self, size: int, what: str) -> None:
        if size < 0 or size > self.remaining:
            raise self.fail(f"{what} needs {size} bytes but {self.remaining} remain")
        self.pos += size

    def take(self, size: int, what: str) -> bytes:
        start = self.pos
        self.skip(size, what)
        return self.buf[start : self.pos]

    def _fixed(self, codec: struct.Struct, what: str) -> int:
        start = self.pos
        self.skip(codec.size, what)
        value: int = codec.unpack_from(self.buf, start)[0]
        return value

    def int8(self, what: str) -> int:
        return self._fixed(_INT8, what)

    def int16(self, what: str) -> int:
        return self._fixed(_INT16, what)

    def int32(self, what: str) -> int:
        return self._fixed(_INT32, what)

    def uvarint(self, what: str) -> int:
        try:
            value, self.pos = decode_uvarint(self.buf, self.pos, self.end)
        except CorruptRecordError as exc:
            raise MalformedMessageError(f"{what}: {exc} at byte {exc.position}") from None
        return value

    def legacy_nullable_string(self, what: str) -> str | None:
        """int16 length (-1 = null) then UTF-8."""
        size = self.int16(what)
        if size == -1:
            return None
        raw = self.take(size, what)
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            raise self.fail(f"{what} is not valid UTF-8") from None

    def tagged_fields(self, what: str) -> list[tuple[int, bytes]]:
        """A TAG_BUFFER as (tag, raw payload) pairs; tags must be strictly ascending."""
        count = self.uvarint(f"{what} count")
        if count > self.remaining:
            raise self.fail(f"{what}: {count} fields claimed, {self.remaining} bytes remain")
        fields: list[tuple[int, bytes]] = []
        for _ in range(count):
            tag = self.uvarint(f"{what} tag")
            if fields and tag <= fields[-1][0]:
                raise self.fail(f"{what}: tag {tag} does not ascend")
            size = self.uvarint(f"{what} tag {tag} size")
            fields.append((tag, self.take(size, f"{what} tag {tag}")))
        return fields


def encode_tagged_fields(fields: list[tuple[int, bytes]]) -> bytes:
    """A TAG_BUFFER from (tag, raw payload) pairs, sorted by tag as Kafka requires."""
    parts = [encode_uvarint(len(fields))]
    for tag, payload in sorted(fields):
        parts += [encode_uvarint(tag), encode_uvarint(len(payload)), payload]
    return b"".join(parts)
