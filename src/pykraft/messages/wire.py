"""Wire encodings of the Kafka primitive types, classic and compact (flexible).

Each primitive hands out a reader and a writer specialised for (flexible, nullable) once, at
schema-compile time, so decoding a field is one closure call with no per-field branching on
the type. Readers take ``(buf, pos, end)`` and return ``(value, next_pos)``; they never read
at or past ``end`` and never trust a length before checking it against ``end``.

Failures raise :class:`FieldDecodeError` / :class:`FieldEncodeError`, internal exceptions that
collect the field path while unwinding; the public codec turns them into the typed errors.
"""

from __future__ import annotations

import base64
import struct
import uuid
from collections.abc import Callable
from typing import Any

from pykraft.errors import CorruptRecordError
from pykraft.ids import ZERO_UUID, uuid_from_str, uuid_to_str
from pykraft.messages.splice import Splice, SplicedBuffer
from pykraft.messages.varint import decode_uvarint, encode_uvarint

FieldReader = Callable[[bytes, int, int], tuple[Any, int]]
FieldWriter = Callable[[bytearray, Any], None]

MAX_STRING_BYTES = 0x7FFF  # Kafka's generated code rejects longer strings on read and write
_MAX_UVARINT = 0xFFFFFFFF
_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
ZERO_UUID_BYTES = bytes(16)
_new_object = object.__new__
_set_slot = object.__setattr__
_SAFE_UNKNOWN = uuid.SafeUUID.unknown
_UUID_CACHE_SIZE = 4096
UUID_CACHE: dict[bytes, uuid.UUID] = {ZERO_UUID_BYTES: ZERO_UUID}
"""16 wire bytes -> UUID; generated readers try it inline before :func:`uuid_from_bytes`."""


class FieldDecodeError(Exception):
    """Internal: why and where decoding stopped; ``path`` is filled in by the enclosing
    structs and arrays as the exception unwinds (innermost element last)."""

    def __init__(self, reason: str, position: int) -> None:
        super().__init__(reason)
        self.reason = reason
        self.position = position
        self.path: list[str] = []


class FieldEncodeError(Exception):
    """Internal: why a value cannot be written; ``unsupported`` marks a field that has a
    non-default value in a version that lacks it (Kafka's UnsupportedVersionException)."""

    def __init__(self, reason: str, *, unsupported: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.unsupported = unsupported
        self.path: list[str] = []


def format_path(parts: list[str]) -> str:
    """``["EndPoints", "[1]", "Host"]`` -> ``EndPoints[1].Host``."""
    text = ""
    for part in parts:
        text += part if part.startswith("[") or not text else "." + part
    return text


def read_uvarint(buf: bytes, pos: int, end: int) -> tuple[int, int]:
    """:func:`~pykraft.messages.varint.decode_uvarint` failing as a field does. Its one-byte
    case is repeated inline (as the generated readers do): a call less on the hot path of
    metadata replay, three per record frame."""
    if pos < end and (first := buf[pos]) < 0x80:
        return first, pos + 1
    try:
        return decode_uvarint(buf, pos, end)
    except CorruptRecordError as exc:
        raise FieldDecodeError(str(exc), pos) from None


def uuid_from_bytes(raw: bytes) -> uuid.UUID:
    """``uuid.UUID(bytes=raw)`` for exactly 16 bytes, shared through :data:`UUID_CACHE`.

    Topic and directory ids repeat across the records of a log, and UUIDs are immutable, so
    one object per id serves them all; a miss skips ``UUID.__init__``'s argument parsing (a
    third of its cost) by setting the two slots it sets. The zero id is ``ZERO_UUID``."""
    value = UUID_CACHE.get(raw)
    if value is None:
        value = _new_object(uuid.UUID)
        _set_slot(value, "int", int.from_bytes(raw))
        _set_slot(value, "is_safe", _SAFE_UNKNOWN)
        if len(UUID_CACHE) >= _UUID_CACHE_SIZE:
            UUID_CACHE.clear()
            UUID_CACHE[ZERO_UUID_BYTES] = ZERO_UUID
        UUID_CACHE[raw] = value
    return value


def truncated(what: str, pos: int, need: int, end: int) -> FieldDecodeError:
    return FieldDecodeError(f"truncated {what}: needs {need} bytes, {max(end - pos, 0)} left", pos)


class Primitive:
    """A Kafka primitive type: its name, Kafka default, minimum wire size and codecs."""

    nullable_ok = False  # only variable-length types may be nullable in Kafka schemas

    def __init__(self, name: str, default: object) -> None:
        self.name = name
        self.default = default

    def min_size(self, flexible: bool) -> int:
        raise NotImplementedError

    def reader(self, flexible: bool, nullable: bool) -> FieldReader:
        raise NotImplementedError

    def writer(self, flexible: bool, nullable: bool) -> FieldWriter:
        raise NotImplementedError

    def to_json(self, value: Any) -> Any:
        """The value as Kafka's JSON converters print it."""
        return value

    def from_json(self, value: Any) -> Any:
        """The inverse of :meth:`to_json`."""
        return value

    def __repr__(self) -> str:
        return f"<kafka type {self.name}>"


class FixedPrimitive(Primitive):
    """Fixed-width big-endian numbers; ``code`` is the ``struct`` format character, which
    also lets arrays of them be unpacked in one call."""

    def __init__(self, name: str, code: str, default: object = 0) -> None:
        super().__init__(name, default)
        self.code = code
        self.struct = struct.Struct(">" + code)
        self.size = self.struct.size

    def min_size(self, flexible: bool) -> int:
        return self.size

    def reader(self, flexible: bool, nullable: bool) -> FieldReader:
        size, unpack, name = self.size, self.struct.unpack_from, self.name

        def read(buf: bytes, pos: int, end: int) -> tuple[Any, int]:
            nxt = pos + size
            if nxt > end:
                raise truncated(name, pos, size, end)
            return unpack(buf, pos)[0], nxt

        return read

    def writer(self, flexible: bool, nullable: bool) -> FieldWriter:
        pack, name = self.struct.pack, self.name
        accepted: tuple[type, ...] = (int, float) if self.code == "d" else (int,)

        def write(out: bytearray, value: Any) -> None:
            if isinstance(value, bool) or not isinstance(value, accepted):
                raise FieldEncodeError(f"expected {name}, got {type(value).__name__}")
            try:
                out += pack(value)
            except struct.error as exc:
                raise FieldEncodeError(f"{value!r} is out of range for {name}") from exc

        return write


class BoolPrimitive(Primitive):
    """One byte; any non-zero byte reads as true, as in Kafka's ``readByte() != 0``."""

    def __init__(self) -> None:
        super().__init__("bool", False)

    def min_size(self, flexible: bool) -> int:
        return 1

    def reader(self, flexible: bool, nullable: bool) -> FieldReader:
        def read(buf: bytes, pos: int, end: int) -> tuple[Any, int]:
            if pos >= end:
                raise truncated("bool", pos, 1, end)
            return buf[pos] != 0, pos + 1

        return read

    def writer(self, flexible: bool, nullable: bool) -> FieldWriter:
        def write(out: bytearray, value: Any) -> None:
            if value is not True and value is not False:
                raise FieldEncodeError(f"expected bool, got {type(value).__name__}")
            out.append(1 if value else 0)

        return write


class UuidPrimitive(Primitive):
    """16 bytes, most significant half first; shown as Kafka's base64 text in JSON."""

    def __init__(self) -> None:
        super().__init__("uuid", ZERO_UUID)

    def min_size(self, flexible: bool) -> int:
        return 16

    def reader(self, flexible: bool, nullable: bool) -> FieldReader:
        def read(buf: bytes, pos: int, end: int) -> tuple[Any, int]:
            nxt = pos + 16
            if nxt > end:
                raise truncated("uuid", pos, 16, end)
            return uuid_from_bytes(buf[pos:nxt]), nxt

        return read

    def writer(self, flexible: bool, nullable: bool) -> FieldWriter:
        def write(out: bytearray, value: Any) -> None:
            if not isinstance(value, uuid.UUID):
                raise FieldEncodeError(f"expected uuid.UUID, got {type(value).__name__}")
            out += value.bytes

        return write

    def to_json(self, value: Any) -> Any:
        return uuid_to_str(value)

    def from_json(self, value: Any) -> Any:
        return uuid_from_str(value)


def _read_length(
    compact: bool, classic: struct.Struct
) -> Callable[[bytes, int, int], tuple[int, int]]:
    """Length prefix: uvarint(n + 1) when compact, else a signed classic integer; -1 = null."""
    if compact:

        def read_compact(buf: bytes, pos: int, end: int) -> tuple[int, int]:
            value, nxt = read_uvarint(buf, pos, end)
            return value - 1, nxt

        return read_compact
    size, unpack = classic.size, classic.unpack_from

    def read_classic(buf: bytes, pos: int, end: int) -> tuple[int, int]:
        if pos + size > end:
            raise truncated("length", pos, size, end)
        return unpack(buf, pos)[0], pos + size

    return read_classic


def write_length(out: bytearray, length: int, compact: bool, classic: struct.Struct) -> None:
    """Mirror of :func:`_read_length`; ``length=-1`` writes null."""
    if compact:
        out += encode_uvarint(length + 1)
    else:
        try:
            out += classic.pack(length)
        except struct.error as exc:
            raise FieldEncodeError(f"length {length} does not fit the length prefix") from exc


class VariablePrimitive(Primitive):
    """Length-prefixed ``string`` and ``bytes``: classic int16/int32 prefix or compact
    uvarint(len + 1); null is -1 / 0. ``classic_only`` pins the classic form even in
    flexible versions (RequestHeader.ClientId)."""

    nullable_ok = True

    def __init__(
        self, name: str, classic: struct.Struct, *, text: bool, classic_only: bool = False
    ) -> None:
        super().__init__(name, "" if text else b"")
        self.classic = classic
        self.text = text
        self.classic_only = classic_only

    def min_size(self, flexible: bool) -> int:
        return 1 if flexible and not self.classic_only else self.classic.size

    def reader(self, flexible: bool, nullable: bool) -> FieldReader:
        read_len = _read_length(flexible and not self.classic_only, self.classic)
        name, text = self.name, self.text
        limit = MAX_STRING_BYTES if text else _MAX_UVARINT

        def read(buf: bytes, pos: int, end: int) -> tuple[Any, int]:
            length, pos = read_len(buf, pos, end)
            if length < 0:
                if length == -1 and nullable:
                    return None, pos
                reason = "null in a non-nullable field" if length == -1 else "negative length"
                raise FieldDecodeError(f"{name} {reason} ({length})", pos)
            if length > limit:
                raise FieldDecodeError(f"{name} length {length} exceeds {limit}", pos)
            nxt = pos + length
            if nxt > end:
                raise truncated(name, pos, length, end)
            if not text:
                return buf[pos:nxt], nxt
            try:
                return buf[pos:nxt].decode("utf-8"), nxt
            except UnicodeDecodeError as exc:
                raise FieldDecodeError(f"invalid UTF-8 in string: {exc.reason}", pos) from None

        return read

    def writer(self, flexible: bool, nullable: bool) -> FieldWriter:
        compact = flexible and not self.classic_only
        classic, name, text = self.classic, self.name, self.text

        def write(out: bytearray, value: Any) -> None:
            if value is None:
                if not nullable:
                    raise FieldEncodeError(f"null in a non-nullable {name} field")
                write_length(out, -1, compact, classic)
                return
            if text:
                if not isinstance(value, str):
                    raise FieldEncodeError(f"expected str, got {type(value).__name__}")
                try:
                    data = value.encode("utf-8")
                except UnicodeEncodeError as exc:
                    raise FieldEncodeError(f"string is not encodable as UTF-8: {exc}") from exc
                if len(data) > MAX_STRING_BYTES:
                    raise FieldEncodeError(
                        f"string of {len(data)} bytes exceeds {MAX_STRING_BYTES}"
                    )
            elif isinstance(value, bytes | bytearray | memoryview):
                data = bytes(value)
            else:
                raise FieldEncodeError(f"expected bytes, got {type(value).__name__}")
            write_length(out, len(data), compact, classic)
            out += data

        return write

    def to_json(self, value: Any) -> Any:
        if self.text or value is None:
            return value
        return base64.b64encode(value).decode("ascii")  # Jackson's BinaryNode form

    def from_json(self, value: Any) -> Any:
        if self.text or value is None:
            return value
        return base64.b64decode(value, validate=True)


class RecordsPrimitive(VariablePrimitive):
    """A ``records`` field: ``bytes`` on the wire, whose value may also be a
    :class:`~pykraft.messages.splice.Splice` when the output is a
    :class:`~pykraft.messages.splice.SplicedBuffer` (a Fetch response's file regions)."""

    def __init__(self) -> None:
        super().__init__("bytes", _INT32, text=False)

    def writer(self, flexible: bool, nullable: bool) -> FieldWriter:
        write_bytes = super().writer(flexible, nullable)
        classic = self.classic

        def write(out: bytearray, value: Any) -> None:
            if not isinstance(value, Splice):
                write_bytes(out, value)
                return
            if not isinstance(out, SplicedBuffer):
                raise FieldEncodeError("records in a file need a spliced encoding")
            write_length(out, value.length, flexible, classic)
            out.splice(value)

        return write


class MappedPrimitive(Primitive):
    """A base primitive whose values are converted on the way in and out (used to read
    classes of other libraries that wrap plain ints, e.g. enums)."""

    def __init__(
        self,
        name: str,
        base: Primitive,
        decode: Callable[[Any], Any],
        encode: Callable[[Any], Any],
        default: object,
    ) -> None:
        super().__init__(name, default)
        self.base = base
        self.nullable_ok = base.nullable_ok
        self.decode = decode
        self.encode = encode

    def min_size(self, flexible: bool) -> int:
        return self.base.min_size(flexible)

    def reader(self, flexible: bool, nullable: bool) -> FieldReader:
        base_read, convert, name = self.base.reader(flexible, nullable), self.decode, self.name

        def read(buf: bytes, pos: int, end: int) -> tuple[Any, int]:
            raw, nxt = base_read(buf, pos, end)
            try:
                return convert(raw), nxt
            except (ValueError, TypeError, OverflowError) as exc:
                raise FieldDecodeError(f"invalid {name} {raw!r}: {exc}", pos) from None

        return read

    def writer(self, flexible: bool, nullable: bool) -> FieldWriter:
        base_write, convert = self.base.writer(flexible, nullable), self.encode

        def write(out: bytearray, value: Any) -> None:
            base_write(out, convert(value))

        return write


INT8 = FixedPrimitive("int8", "b")
INT16 = FixedPrimitive("int16", "h")
INT32 = FixedPrimitive("int32", "i")
INT64 = FixedPrimitive("int64", "q")
UINT8 = FixedPrimitive("uint8", "B")
UINT16 = FixedPrimitive("uint16", "H")
UINT32 = FixedPrimitive("uint32", "I")
UINT64 = FixedPrimitive("uint64", "Q")
FLOAT64 = FixedPrimitive("float64", "d", 0.0)
BOOL = BoolPrimitive()
UUID = UuidPrimitive()
STRING = VariablePrimitive("string", _INT16, text=True)
BYTES = VariablePrimitive("bytes", _INT32, text=False)
CLASSIC_STRING = VariablePrimitive("string", _INT16, text=True, classic_only=True)

PRIMITIVES: dict[str, Primitive] = {
    p.name: p
    for p in (INT8, INT16, INT32, INT64, UINT8, UINT16, UINT32, UINT64, FLOAT64, BOOL, UUID)
}
PRIMITIVES["string"] = STRING
PRIMITIVES["bytes"] = BYTES
PRIMITIVES["records"] = RecordsPrimitive()  # on the wire a records field is a bytes field
