"""Structural pre-scan of a message body against its kio schema, before kio parses it.

Two reasons. kio 0.6.5's native reader trusts some compact array counts and aborts the whole
process on the allocation (seen with a count of 2^32-2), so every length and count is checked
here against the bytes really remaining first; like Kafka's generated readers, a collection
may not claim more elements than bytes are left. And kio silently drops unknown tagged fields,
so the scan hands back the top-level ones, which lets a decoded request be re-encoded
byte-for-byte (librdkafka sends an empty tag 0 in Metadata v13 that no schema defines).
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

from pykraft.protocol.cursor import Reader

Scan = Callable[[Reader], None]
TaggedField = tuple[int, bytes]

_FIXED_SIZES = {
    "bool": 1,
    "int8": 1,
    "int16": 2,
    "uint16": 2,
    "error_code": 2,
    "int32": 4,
    "timedelta_i32": 4,
    "int64": 8,
    "timedelta_i64": 8,
    "datetime_i64": 8,
    "float64": 8,
    "uuid": 16,
}


def _skip_compact_bytes(reader: Reader) -> None:
    size_plus_one = reader.uvarint("compact length")
    if size_plus_one:
        reader.skip(size_plus_one - 1, "compact string/bytes")


def _skip_legacy_string(reader: Reader) -> None:
    size = reader.int16("string length")
    if size != -1:
        reader.skip(size, "string")


def _skip_legacy_bytes(reader: Reader) -> None:
    size = reader.int32("bytes length")
    if size != -1:
        reader.skip(size, "bytes")


def _primitive(kafka_type: str, flexible: bool) -> tuple[Scan, int]:
    """Scanner and fixed size (0 when variable) of one primitive value."""
    if kafka_type in _FIXED_SIZES:
        size = _FIXED_SIZES[kafka_type]
        return (lambda reader: reader.skip(size, kafka_type)), size
    if flexible:
        return _skip_compact_bytes, 0
    if kafka_type == "string":
        return _skip_legacy_string, 0
    return _skip_legacy_bytes, 0


def _array_count(reader: Reader, flexible: bool) -> int:
    """Element count, 0 for a null array; never more than the bytes remaining."""
    count = reader.uvarint("compact array count") - 1 if flexible else reader.int32("array count")
    if count < -1:
        raise reader.fail(f"negative array count {count}")
    if count > reader.remaining:
        raise reader.fail(f"array claims {count} elements but {reader.remaining} bytes remain")
    return max(count, 0)


def _array(element: Scan, element_size: int, flexible: bool) -> Scan:
    def scan(reader: Reader) -> None:
        count = _array_count(reader, flexible)
        if element_size:
            reader.skip(count * element_size, "array elements")
            return
        for _ in range(count):
            element(reader)

    return scan


def _nullable_struct(struct_scan: Scan) -> Scan:
    """KIP-893 nullable struct: an int8 marker, negative = null."""

    def scan(reader: Reader) -> None:
        if reader.int8("nullable struct marker") >= 0:
            struct_scan(reader)

    return scan


def _unwrap(annotation: object) -> tuple[object, bool, bool]:
    """(inner type, is_array, is_optional) of a kio field annotation."""
    optional = False
    if typing.get_origin(annotation) in (types.UnionType, typing.Union):
        args = [arg for arg in typing.get_args(annotation) if arg is not types.NoneType]
        annotation, optional = args[0], True
    if typing.get_origin(annotation) is tuple:
        return typing.get_args(annotation)[0], True, optional
    return annotation, False, optional


def _field_scan(field: dataclasses.Field[object], flexible: bool, tagged: bool) -> Scan:
    inner, is_array, optional = _unwrap(field.type)
    if dataclasses.is_dataclass(inner):
        element: Scan = _entity_scanner(typing.cast(type, inner))
        element_size = 0
        if optional and not is_array and not tagged:
            return _nullable_struct(element)
    else:
        element, element_size = _primitive(field.metadata["kafka_type"], flexible)
    if is_array:
        return _array(element, element_size, flexible)
    return element


def _tag_buffer(reader: Reader, schema: dict[int, Scan]) -> tuple[list[TaggedField], ...]:
    """Check a TAG_BUFFER, returning its (known, unknown) fields; a known tag must hold
    exactly one value of its field."""
    known: list[TaggedField] = []
    unknown: list[TaggedField] = []
    for tag, payload in reader.tagged_fields("tagged fields"):
        scan = schema.get(tag)
        if scan is None:
            unknown.append((tag, payload))
            continue
        value = Reader(payload)
        scan(value)
        if value.remaining:
            raise reader.fail(f"tag {tag} has {value.remaining} bytes beyond its value")
        known.append((tag, payload))
    return known, unknown


@cache
def _compile(entity_type: type) -> tuple[tuple[Scan, ...], dict[int, Scan], bool]:
    flexible = bool(getattr(entity_type, "__flexible__", False))
    fields: list[Scan] = []
    tagged: dict[int, Scan] = {}
    for field in dataclasses.fields(entity_type):
        tag = field.metadata.get("tag")
        if tag is None:
            fields.append(_field_scan(field, flexible, tagged=False))
        else:
            tagged[int(tag)] = _field_scan(field, flexible, tagged=True)
    return tuple(fields), tagged, flexible


@cache
def _entity_scanner(entity_type: type) -> Scan:
    """Nested structs: scanned like a top-level one; their unknown tags are just skipped."""

    def scan(reader: Reader) -> None:
        scan_entity(entity_type, reader)

    return scan


@dataclass(frozen=True, slots=True)
class ScanResult:
    #: Fields of the top-level TAG_BUFFER that the schema defines, raw.
    known_tags: tuple[TaggedField, ...]
    #: Fields of the top-level TAG_BUFFER that the schema does not define, raw.
    unknown_tags: tuple[TaggedField, ...]
    #: Where the top-level TAG_BUFFER starts; None for a non-flexible message.
    tags_start: int | None


def scan_entity(entity_type: type, reader: Reader) -> ScanResult:
    """Advance ``reader`` over one ``entity_type`` value, checking every length and count.

    Raises :class:`~pykraft.errors.MalformedMessageError` on any inconsistency.
    """
    fields, tagged, flexible = _compile(entity_type)
    for scan in fields:
        scan(reader)
    if not flexible:
        return ScanResult((), (), None)
    tags_start = reader.pos
    known, unknown = _tag_buffer(reader, tagged)
    return ScanResult(tuple(known), tuple(unknown), tags_start)
