"""Encode and decode schema messages, with a reader and a writer compiled per
(schema, version, flexibility) and cached.

Compiling resolves once which fields exist in the version, which are tagged, and the
specialised primitive codecs, so decoding a record is a loop over prepared closures: no
reflection per field. This is the hot path of metadata log replay.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import Any, TypeVar

from pykraft.errors import MessageDecodeError, MessageEncodeError, UnsupportedVersionError
from pykraft.messages.schema import ArrayOf, FieldType, MessageSchema, schema_of
from pykraft.messages.wire import (
    INT32,
    FieldDecodeError,
    FieldEncodeError,
    FixedPrimitive,
    Reader,
    Writer,
    format_path,
    read_uvarint,
    truncated,
    write_length,
)
from pykraft.records.varint import encode_uvarint

M = TypeVar("M")
_INT32 = INT32.struct

_READERS: dict[tuple[MessageSchema, int, bool], tuple[Reader, int]] = {}
_WRITERS: dict[tuple[MessageSchema, int, bool], Writer] = {}
_TOP_READERS: dict[tuple[type, int], Reader] = {}
_TOP_WRITERS: dict[tuple[type, int], Writer] = {}


def encode(msg: object, version: int) -> bytes:
    """Serialize a ``@message`` at ``version`` (flexible or classic as its schema says)."""
    write = _TOP_WRITERS.get((type(msg), version))
    if write is None:
        schema = schema_of(type(msg))
        if schema.valid_versions is None or version not in schema.valid_versions:
            raise UnsupportedVersionError(
                f"cannot write {schema.name} at version {version} "
                f"(valid versions: {schema.valid_versions or 'none, it is a nested struct'})",
                api_version=version,
            )
        write = struct_writer(schema, version, schema.is_flexible(version))
        _TOP_WRITERS[(type(msg), version)] = write
    out = bytearray()
    try:
        write(out, msg)
    except FieldEncodeError as exc:
        name = type(msg).__name__
        text = f"cannot encode {name} v{version}: {format_path(exc.path)}: {exc.reason}"
        if exc.unsupported:
            raise UnsupportedVersionError(text, api_version=version) from None
        raise MessageEncodeError(text) from None
    return bytes(out)


def decode(cls: type[M], version: int, data: bytes | bytearray | memoryview) -> M:
    """Parse exactly ``data`` as ``cls`` at ``version``; trailing bytes are an error."""
    buf = data if isinstance(data, bytes) else bytes(data)
    msg, pos = decode_from(cls, version, buf)
    if pos != len(buf):
        raise MessageDecodeError(
            f"{cls.__name__} v{version}: {len(buf) - pos} unexpected trailing byte(s)",
            position=pos,
        )
    return msg


def decode_from(
    cls: type[M],
    version: int,
    data: bytes | bytearray | memoryview,
    pos: int = 0,
    end: int | None = None,
) -> tuple[M, int]:
    """Parse ``cls`` embedded in ``data`` at ``pos`` (not past ``end``); returns the
    message and the position just after it."""
    read = _TOP_READERS.get((cls, version))
    if read is None:
        schema = schema_of(cls)
        if schema.valid_versions is None or version not in schema.valid_versions:
            valid = schema.valid_versions or "none, it is a nested struct"
            raise MessageDecodeError(
                f"{cls.__name__}: unsupported version {version} (valid: {valid})", position=pos
            )
        read = struct_reader(schema, version, schema.is_flexible(version))[0]
        _TOP_READERS[(cls, version)] = read
    buf = data if isinstance(data, bytes) else bytes(data)
    msg, nxt = run_reader(read, f"{cls.__name__} v{version}", buf, pos, end)
    result: M = msg
    return result, nxt


def run_reader(
    read: Reader, label: str, data: bytes, pos: int = 0, end: int | None = None
) -> tuple[Any, int]:
    """Run a compiled reader, turning an internal failure into :class:`MessageDecodeError`
    that names ``label`` and the field path."""
    limit = len(data) if end is None else min(end, len(data))
    try:
        return read(data, pos, limit)
    except FieldDecodeError as exc:
        path = format_path(exc.path)
        raise MessageDecodeError(
            f"{label}: {path or '<message>'}: {exc.reason} (at byte {exc.position})",
            path=path,
            position=exc.position,
        ) from None


def struct_reader(schema: MessageSchema, version: int, flexible: bool) -> tuple[Reader, int]:
    """(reader, minimum encoded size) of a struct at a version and flexibility."""
    key = (schema, version, flexible)
    cached = _READERS.get(key)
    if cached is not None:
        return cached
    steps: list[tuple[int, Reader, str]] = []
    tagged: dict[int, tuple[int, Reader, str]] = {}
    defaults: list[Any] = []
    min_size = 1 if flexible else 0
    for index, spec in enumerate(schema.fields):
        defaults.append(spec.default)
        if version not in spec.versions:
            continue
        read, size = field_reader(spec.type, version, flexible, version in spec.nullable_versions)
        if spec.is_tagged_in(version):
            if not flexible:
                raise TypeError(f"{schema.name}.{spec.kafka_name} is tagged in classic v{version}")
            assert spec.tag is not None
            tagged[spec.tag] = (index, read, spec.kafka_name)
        else:
            steps.append((index, read, spec.kafka_name))
            min_size += size
    build = schema.build()

    def read_struct(buf: bytes, pos: int, end: int) -> tuple[Any, int]:
        values = defaults.copy()
        for index, read, name in steps:
            try:
                values[index], pos = read(buf, pos, end)
            except FieldDecodeError as exc:
                exc.path.insert(0, name)
                raise
        if flexible:
            pos = _read_tag_buffer(buf, pos, end, tagged, values)
        return build(values), pos

    _READERS[key] = (read_struct, min_size)
    return read_struct, min_size


def _read_tag_buffer(
    buf: bytes,
    pos: int,
    end: int,
    tagged: dict[int, tuple[int, Reader, str]],
    values: list[Any],
) -> int:
    """Read a TAG_BUFFER into ``values``; unknown tags are skipped (forward compatibility),
    tags must be strictly ascending and a known field must fill exactly its declared size."""
    count, pos = read_uvarint(buf, pos, end)
    previous = -1
    for _ in range(count):  # each entry takes >= 2 bytes, so a huge count fails fast
        start = pos
        tag, pos = read_uvarint(buf, pos, end)
        size, pos = read_uvarint(buf, pos, end)
        if tag <= previous:
            raise FieldDecodeError(f"tagged field {tag} follows tag {previous}", start)
        previous = tag
        stop = pos + size
        if stop > end:
            raise truncated(f"tagged field {tag}", pos, size, end)
        known = tagged.get(tag)
        if known is not None:
            index, read, name = known
            try:
                values[index], used = read(buf, pos, stop)
                if used != stop:
                    raise FieldDecodeError(
                        f"tagged field {tag} declares {size} bytes but holds {used - pos}", used
                    )
            except FieldDecodeError as exc:
                exc.path.insert(0, name)
                raise
        pos = stop
    return pos


def field_reader(
    field_type: FieldType, version: int, flexible: bool, nullable: bool
) -> tuple[Reader, int]:
    """(reader, minimum encoded size) of one field type."""
    if isinstance(field_type, MessageSchema):
        return struct_reader(field_type, version, flexible)
    if isinstance(field_type, ArrayOf):
        return _array_reader(field_type, version, flexible, nullable), 1 if flexible else 4
    return field_type.reader(flexible, nullable), field_type.min_size(flexible)


def _array_reader(array: ArrayOf, version: int, flexible: bool, nullable: bool) -> Reader:
    read_item, item_size = field_reader(array.element, version, flexible, False)
    unit = max(1, item_size)
    element = array.element
    fixed = element if isinstance(element, FixedPrimitive) else None

    def read_array(buf: bytes, pos: int, end: int) -> tuple[Any, int]:
        if flexible:
            count, pos = read_uvarint(buf, pos, end)
            count -= 1
        else:
            if pos + 4 > end:
                raise truncated("array length", pos, 4, end)
            count = _INT32.unpack_from(buf, pos)[0]
            pos += 4
        if count < 0:
            if count == -1 and nullable:
                return None, pos
            reason = "null in a non-nullable array" if count == -1 else "negative array length"
            raise FieldDecodeError(f"{reason} ({count})", pos)
        if count * unit > end - pos:
            raise FieldDecodeError(
                f"array of {count} elements cannot fit in the {end - pos} remaining bytes", pos
            )
        if fixed is not None:
            return struct.unpack_from(f">{count}{fixed.code}", buf, pos), pos + count * unit
        items = []
        for index in range(count):
            try:
                item, pos = read_item(buf, pos, end)
            except FieldDecodeError as exc:
                exc.path.insert(0, f"[{index}]")
                raise
            items.append(item)
        return tuple(items), pos

    return read_array


def struct_writer(schema: MessageSchema, version: int, flexible: bool) -> Writer:
    """A writer of a struct at a version and flexibility."""
    key = (schema, version, flexible)
    cached = _WRITERS.get(key)
    if cached is not None:
        return cached
    regular: list[tuple[str, str, Writer]] = []
    tagged: list[tuple[int, str, str, Writer, Any]] = []
    absent: list[tuple[str, str, Any]] = []
    for spec in schema.fields:
        if version not in spec.versions:
            absent.append((spec.attr, spec.kafka_name, spec.default))
            continue
        write = field_writer(spec.type, version, flexible, version in spec.nullable_versions)
        if spec.is_tagged_in(version):
            assert spec.tag is not None
            tagged.append((spec.tag, spec.attr, spec.kafka_name, write, spec.default))
        else:
            regular.append((spec.attr, spec.kafka_name, write))
    tagged.sort(key=lambda entry: entry[0])
    cls = schema.cls

    def write_struct(out: bytearray, obj: Any) -> None:
        if not isinstance(obj, cls):
            raise FieldEncodeError(f"expected {schema.name}, got {type(obj).__name__}")
        for attr, name, default in absent:
            if getattr(obj, attr) != default:
                error = FieldEncodeError(
                    f"non-default value in a field absent from version {version}",
                    unsupported=True,
                )
                error.path.append(name)
                raise error
        for attr, name, write in regular:
            try:
                write(out, getattr(obj, attr))
            except FieldEncodeError as exc:
                exc.path.insert(0, name)
                raise
        if flexible:
            entries: list[tuple[int, bytearray]] = []
            for tag, attr, name, write, default in tagged:
                value = getattr(obj, attr)
                if value != default:
                    payload = bytearray()
                    try:
                        write(payload, value)
                    except FieldEncodeError as exc:
                        exc.path.insert(0, name)
                        raise
                    entries.append((tag, payload))
            _write_tag_buffer(out, entries)

    _WRITERS[key] = write_struct
    return write_struct


def _write_tag_buffer(out: bytearray, entries: Sequence[tuple[int, bytearray]]) -> None:
    out += encode_uvarint(len(entries))
    for tag, payload in entries:
        out += encode_uvarint(tag)
        out += encode_uvarint(len(payload))
        out += payload


def field_writer(field_type: FieldType, version: int, flexible: bool, nullable: bool) -> Writer:
    """A writer of one field type."""
    if isinstance(field_type, MessageSchema):
        return struct_writer(field_type, version, flexible)
    if isinstance(field_type, ArrayOf):
        return _array_writer(field_type, version, flexible, nullable)
    return field_type.writer(flexible, nullable)


def _array_writer(array: ArrayOf, version: int, flexible: bool, nullable: bool) -> Writer:
    write_item = field_writer(array.element, version, flexible, False)

    def write_array(out: bytearray, items: Any) -> None:
        if items is None:
            if not nullable:
                raise FieldEncodeError("null in a non-nullable array")
            write_length(out, -1, flexible, _INT32)
            return
        if not isinstance(items, tuple | list):
            raise FieldEncodeError(f"expected a tuple, got {type(items).__name__}")
        write_length(out, len(items), flexible, _INT32)
        for index, item in enumerate(items):
            try:
                write_item(out, item)
            except FieldEncodeError as exc:
                exc.path.insert(0, f"[{index}]")
                raise

    return write_array
