"""The schema-driven message codec: wire rules, strictness, JSON view, and the generic
hypothesis strategy (``messages_of``) the record tests reuse."""

# kafka_field() returns a dataclasses.Field, which ruff cannot see for uuid-typed fields:
# ruff: noqa: RUF009

from __future__ import annotations

import contextlib
import struct
import uuid
from dataclasses import dataclass, replace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pykraft.errors import MessageDecodeError, MessageEncodeError, UnsupportedVersionError
from pykraft.ids import ZERO_UUID
from pykraft.messages import (
    MessageSchema,
    TaggedField,
    Versions,
    array,
    decode,
    decode_from,
    encode,
    kafka_field,
    message,
    schema_of,
    to_json_dict,
    unknown_tags,
)
from pykraft.messages.codec import generated_source
from pykraft.messages.schema import UNKNOWN_TAGS, ArrayOf, FieldType
from pykraft.messages.wire import Primitive

# --- generic strategies from the specs ----------------------------------------------------

_INT_RANGES = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "int64": (-(2**63), 2**63 - 1),
    "uint8": (0, 2**8 - 1),
    "uint16": (0, 2**16 - 1),
    "uint32": (0, 2**32 - 1),
    "uint64": (0, 2**64 - 1),
}


def primitive_values(primitive: Primitive) -> st.SearchStrategy[Any]:
    if primitive.name in _INT_RANGES:
        low, high = _INT_RANGES[primitive.name]
        return st.integers(low, high)
    simple: dict[str, st.SearchStrategy[Any]] = {
        "float64": st.floats(allow_nan=False),
        "bool": st.booleans(),
        "string": st.text(max_size=12),
        "bytes": st.binary(max_size=12),
        "uuid": st.just(ZERO_UUID) | st.uuids(),
    }
    return simple[primitive.name]


def values_of(
    field_type: FieldType, version: int, nullable: bool, unknown: bool = False
) -> st.SearchStrategy[Any]:
    values: st.SearchStrategy[Any]
    if isinstance(field_type, MessageSchema):
        values = schema_messages(field_type, version, unknown)
    elif isinstance(field_type, ArrayOf):
        element = values_of(field_type.element, version, False, unknown)
        values = st.lists(element, max_size=3).map(tuple)
    else:
        values = primitive_values(field_type)
    return st.none() | values if nullable else values


def schema_messages(
    schema: MessageSchema, version: int, unknown: bool = False
) -> st.SearchStrategy[Any]:
    """Instances with every field present in ``version`` drawn; absent ones stay default.
    ``unknown`` (a flexible version): structs that keep unknown tagged fields get some, with
    tags above those their schema defines."""
    present = {
        spec.attr: values_of(spec.type, version, version in spec.nullable_versions, unknown)
        for spec in schema.fields
        if version in spec.versions
    }
    if unknown and schema.keeps_unknown_tags:
        above = 1 + max((spec.tag for spec in schema.fields if spec.tag is not None), default=-1)
        tags = st.lists(st.integers(above, above + 300), max_size=2, unique=True)
        present[UNKNOWN_TAGS] = tags.flatmap(
            lambda drawn: st.tuples(*(st.tuples(st.just(tag), st.binary(max_size=3))
                                      for tag in sorted(drawn)))
        )
    return st.builds(schema.cls, **present)


def messages_of(cls: type, version: int) -> st.SearchStrategy[Any]:
    return schema_messages(schema_of(cls), version)


# --- a sample message exercising every feature ---------------------------------------------


@message()
@dataclass(frozen=True, slots=True)
class Item:
    key: str = kafka_field("string")
    weight: int = kafka_field("int16", default=7)
    note: str | None = kafka_field("string", versions="1+", nullable_versions="1+", default=None)


@message(versions="0-3", flexible="2+")
@dataclass(frozen=True, slots=True)
class Sample:
    id: int = kafka_field("int32", default=-1)
    flag: bool = kafka_field("bool", versions="1+")
    small: int = kafka_field("int8")
    port: int = kafka_field("uint16")
    big: int = kafka_field("int64")
    ratio: float = kafka_field("float64")
    name: str = kafka_field("string")
    label: str | None = kafka_field("string", nullable_versions="0+", default=None)
    blob: bytes = kafka_field("bytes")
    ident: uuid.UUID = kafka_field("uuid")
    numbers: tuple[int, ...] = kafka_field("[]int32")
    maybe: tuple[int, ...] | None = kafka_field(
        "[]int64", versions="1+", nullable_versions="1+", default=None
    )
    items: tuple[Item, ...] = kafka_field(array(Item))
    names: tuple[str, ...] = kafka_field("[]string")
    extra: int = kafka_field("int32", versions="2+", tag=3, tagged_versions="2+", default=-5)
    child: Item = kafka_field(Item, versions="3+", tag=1, tagged_versions="3+")
    later: tuple[uuid.UUID, ...] = kafka_field("[]uuid", versions="3+")


@message(versions="0", flexible="0+")
@dataclass(frozen=True, slots=True)
class Tiny:
    a: int = kafka_field("int32")
    b: int = kafka_field("int32", tag=0, tagged_versions="0+")
    c: str = kafka_field("string", tag=2, tagged_versions="0+")


@pytest.mark.parametrize("version", range(4))
@settings(max_examples=60)
@given(data=st.data())
def test_round_trip_every_version(version: int, data: st.DataObject) -> None:
    msg = data.draw(messages_of(Sample, version))
    raw = encode(msg, version)
    assert decode(Sample, version, raw) == msg
    assert encode(decode(Sample, version, raw), version) == raw


def test_classic_encodings_hand_computed() -> None:
    msg = Sample(id=1, name="ab", label=None, blob=b"\x09", numbers=(5,), names=("x",))
    raw = encode(msg, 0)
    expected = (
        struct.pack(">ibHqd", 1, 0, 0, 0, 0.0)
        + b"\x00\x02ab"  # int16 length string
        + b"\xff\xff"  # null string
        + b"\x00\x00\x00\x01\x09"  # int32 length bytes
        + bytes(16)
        + b"\x00\x00\x00\x01\x00\x00\x00\x05"  # int32 count array
        + b"\x00\x00\x00\x00"  # empty items
        + b"\x00\x00\x00\x01\x00\x01x"
    )
    assert raw == expected  # v0: no flag, no maybe, no tag buffer


def test_compact_encodings_hand_computed() -> None:
    msg = Sample(name="ab", numbers=(5,), maybe=None, items=(Item("k", 1),), extra=-5)
    raw = encode(msg, 2)
    expected = (
        struct.pack(">i?bHqd", -1, False, 0, 0, 0, 0.0)
        + b"\x03ab"  # uvarint(len + 1)
        + b"\x00"  # null compact string
        + b"\x01"  # empty compact bytes
        + bytes(16)
        + b"\x02\x00\x00\x00\x05"
        + b"\x00"  # null compact array
        + b"\x02\x02k\x00\x01\x00\x00"  # one item: key, weight, note=null, its tag buffer
        + b"\x01"  # empty names
        + b"\x00"  # extra equals its default -5: omitted, empty tag buffer
    )
    assert raw == expected
    assert decode(Sample, 2, raw) == msg


def test_tagged_fields_written_ascending_and_only_when_not_default() -> None:
    assert encode(Tiny(a=1), 0) == b"\x00\x00\x00\x01\x00"
    raw = encode(Tiny(a=1, b=2, c="z"), 0)
    assert raw == b"\x00\x00\x00\x01" + b"\x02" + b"\x00\x04\x00\x00\x00\x02" + b"\x02\x02\x02z"


def test_tagged_struct_has_its_own_tag_buffer() -> None:
    msg = Sample(child=Item("q", 2, "n"))
    raw = encode(msg, 3)
    child = b"\x02q\x00\x02\x02n\x00"  # key, weight, note, nested TAG_BUFFER
    assert raw.endswith(b"\x01" + b"\x01" + bytes([len(child)]) + child)
    assert decode(Sample, 3, raw) == msg


# Tiny's a=1, b=2, c="z" with two unknown tagged fields around c.
_WITH_UNKNOWN_TAGS = (
    b"\x00\x00\x00\x01"
    + b"\x04"
    + b"\x00\x04\x00\x00\x00\x02"  # tag 0 (b)
    + b"\x01\x03abc"  # tag 1: unknown
    + b"\x02\x02\x02z"  # tag 2 (c)
    + b"\x96\x01\x00"  # tag 150: unknown, empty
)


def test_unknown_tagged_fields_are_skipped_between_known_ones() -> None:
    """A class without ``unknown_tags()`` (hand-declared ones may leave it out) skips them."""
    assert decode(Tiny, 0, _WITH_UNKNOWN_TAGS) == Tiny(a=1, b=2, c="z")


@message(versions="0-1", flexible="1+")
@dataclass(frozen=True, slots=True)
class Keeping:
    """Tiny's fields, keeping the unknown tags it reads (as the generated classes do)."""

    a: int = kafka_field("int32")
    b: int = kafka_field("int32", versions="1+", tag=0, tagged_versions="1+")
    c: str = kafka_field("string", versions="1+", tag=2, tagged_versions="1+")
    unknown_tagged_fields: tuple[TaggedField, ...] = unknown_tags()


def test_unknown_tagged_fields_are_kept_and_written_back_between_known_ones() -> None:
    raw = _WITH_UNKNOWN_TAGS
    kept = Keeping(a=1, b=2, c="z", unknown_tagged_fields=((1, b"abc"), (150, b"")))
    assert decode(Keeping, 1, raw) == kept
    assert encode(kept, 1) == raw
    assert decode(Keeping, 1, b"\x00\x00\x00\x01\x01\x07\x00") == Keeping(
        a=1, unknown_tagged_fields=((7, b""),)
    )
    assert Keeping(a=1) != replace(kept, b=0, c="")  # compared, as Kafka's equals does


@pytest.mark.parametrize(
    ("unknown", "fragment"),
    [
        (((2, b""),), "collides"),
        (((5, b""), (3, b"")), "ascending"),
        (((-1, b""),), "ascending"),
        (((5, "text"),), "pairs"),
    ],
)
def test_bad_unknown_tagged_fields_are_refused(unknown: object, fragment: str) -> None:
    with pytest.raises(MessageEncodeError, match=fragment):
        encode(Keeping(c="z", unknown_tagged_fields=unknown), 1)  # type: ignore[arg-type]


def test_unknown_tagged_fields_are_refused_where_the_version_has_none() -> None:
    """Kafka's writers throw UnsupportedVersionException; the default writes as before."""
    with pytest.raises(UnsupportedVersionError, match="no tagged fields"):
        encode(Keeping(unknown_tagged_fields=((7, b""),)), 0)
    assert encode(Keeping(a=3), 0) == b"\x00\x00\x00\x03"


@pytest.mark.parametrize(
    ("raw", "fragment"),
    [
        (b"\x00\x00\x00\x01\x02" + b"\x02\x02\x02z" + b"\x00\x04\x00\x00\x00\x02", "follows tag"),
        (b"\x00\x00\x00\x01\x02\x00\x04\x00\x00\x00\x02\x00\x04\x00\x00\x00\x02", "follows tag"),
        (b"\x00\x00\x00\x01\x01\x00\x05\x00\x00\x00\x02\x00", "declares 5 bytes"),
        (b"\x00\x00\x00\x01\x01\x00\x09\x00", "truncated tagged field 0"),
    ],
)
def test_bad_tag_buffers_are_rejected(raw: bytes, fragment: str) -> None:
    with pytest.raises(MessageDecodeError, match=fragment):
        decode(Tiny, 0, raw)


def test_absent_field_with_non_default_value_is_refused() -> None:
    with pytest.raises(UnsupportedVersionError, match="Flag"):
        encode(Sample(flag=True), 0)
    with pytest.raises(UnsupportedVersionError, match=r"Items\[0\]\.Note"):
        encode(Sample(items=(Item("a", note="x"),)), 0)
    assert decode(Sample, 0, encode(Sample(flag=False), 0)) == Sample()


@pytest.mark.parametrize(
    ("msg", "fragment"),
    [
        (Sample(id=2**31), "out of range for int32"),
        (Sample(port=-1), "out of range for uint16"),
        (Sample(name=None), "Name: null in a non-nullable string"),  # type: ignore[arg-type]
        (Sample(numbers=None), "Numbers: null in a non-nullable array"),  # type: ignore[arg-type]
        (Sample(numbers=("1",)), r"Numbers\[0\]: expected int32"),  # type: ignore[arg-type]
        (Sample(flag=1), "Flag: expected bool"),  # type: ignore[arg-type]
        (Sample(name="x" * 0x8000), "exceeds 32767"),
        (Sample(items=("no",)), r"Items\[0\]: expected Item"),  # type: ignore[arg-type]
    ],
)
def test_encode_rejects_bad_values(msg: Sample, fragment: str) -> None:
    with pytest.raises(MessageEncodeError, match=fragment):
        encode(msg, 2)


def test_encode_rejects_out_of_range_version() -> None:
    with pytest.raises(UnsupportedVersionError):
        encode(Sample(), 4)
    with pytest.raises(UnsupportedVersionError):
        encode(Item(), 0)  # a nested struct is not a message on its own


def test_decode_out_of_range_version_is_typed() -> None:
    with pytest.raises(MessageDecodeError, match="unsupported version 9"):
        decode(Sample, 9, encode(Sample(), 3))


def test_trailing_bytes_are_rejected_but_decode_from_allows_embedding() -> None:
    raw = encode(Tiny(a=3), 0)
    with pytest.raises(MessageDecodeError, match="1 unexpected trailing byte"):
        decode(Tiny, 0, raw + b"\x00")
    msg, end = decode_from(Tiny, 0, b"xx" + raw + b"yy", 2)
    assert (msg, end) == (Tiny(a=3), 2 + len(raw))
    with pytest.raises(MessageDecodeError, match="past the end"):
        decode_from(Tiny, 0, raw, 0, len(raw) - 1)


@pytest.mark.parametrize("version", range(4))
def test_every_truncation_raises_the_typed_error(version: int) -> None:
    msg = Sample(
        flag=version > 0,
        name="name",
        label="l",
        blob=b"bb",
        ident=uuid.UUID(int=5),
        numbers=(1, 2),
        items=(Item("k", 3),),
        names=("a", "b"),
        extra=9 if version >= 2 else -5,
        child=Item("c") if version >= 3 else Item(),
    )
    raw = encode(msg, version)
    for cut in range(len(raw)):
        with pytest.raises(MessageDecodeError) as info:
            decode(Sample, version, raw[:cut])
        assert info.value.position is not None
        assert info.value.position <= cut


@pytest.mark.parametrize(
    ("version", "raw", "path", "fragment"),
    [
        (0, struct.pack(">ibHqd", 1, 0, 0, 0, 0) + b"\xff\xfe", "Name", "negative length"),
        (0, struct.pack(">ibHqd", 1, 0, 0, 0, 0) + b"\xff\xff", "Name", "non-nullable"),
        (2, struct.pack(">i?bHqd", 1, 0, 0, 0, 0, 0) + b"\x03\xff\xfe", "Name", "UTF-8"),
        (2, struct.pack(">i?bHqd", 1, 0, 0, 0, 0, 0) + b"\xff\xff\x03", "Name", "exceeds"),
        (2, struct.pack(">i?bHqd", 1, 0, 0, 0, 0, 0) + b"\xff\xff\xff\xff\x7f", "Name", "32"),
    ],
)
def test_bad_lengths_name_the_field(version: int, raw: bytes, path: str, fragment: str) -> None:
    with pytest.raises(MessageDecodeError, match=fragment) as info:
        decode(Sample, version, raw)
    assert info.value.path == path


def test_array_count_is_checked_before_allocating() -> None:
    head = struct.pack(">i?bHqd", 1, 0, 0, 0, 0, 0) + b"\x01\x00\x01" + bytes(16)
    with pytest.raises(MessageDecodeError, match="cannot fit") as info:
        decode(Sample, 2, head + b"\xff\xff\xff\xff\x0f")  # 4294967294 int32 elements
    assert info.value.path == "Numbers"
    classic = struct.pack(">ibHqd", 1, 0, 0, 0, 0) + b"\x00\x00\xff\xff\x00\x00\x00\x00"
    with pytest.raises(MessageDecodeError, match="cannot fit"):
        decode(Sample, 0, classic + bytes(16) + b"\x7f\xff\xff\xff")
    with pytest.raises(MessageDecodeError, match="negative array length"):
        decode(Sample, 0, classic + bytes(16) + b"\xff\xff\xff\xf0")


def test_nested_error_paths() -> None:
    raw = bytearray(encode(Sample(items=(Item("a"), Item("b"))), 2))
    at = raw.index(b"\x02b")
    raw[at + 1] = 0xFF  # invalid UTF-8 inside the second item's key
    with pytest.raises(MessageDecodeError) as info:
        decode(Sample, 2, bytes(raw))
    assert info.value.path == "Items[1].Key"
    assert "Sample v2: Items[1].Key: invalid UTF-8" in str(info.value)


@settings(max_examples=300)
@given(data=st.binary(max_size=80), version=st.integers(0, 3))
def test_arbitrary_bytes_only_raise_the_typed_error(data: bytes, version: int) -> None:
    with contextlib.suppress(MessageDecodeError):
        decode(Sample, version, data)


@settings(max_examples=200)
@given(msg=messages_of(Sample, 3), flips=st.lists(st.tuples(st.integers(0), st.integers(1, 255))))
def test_byte_flips_only_raise_the_typed_error(msg: Sample, flips: list[tuple[int, int]]) -> None:
    raw = bytearray(encode(msg, 3))
    for where, mask in flips:
        raw[where % len(raw)] ^= mask
    with contextlib.suppress(MessageDecodeError):
        decode(Sample, 3, bytes(raw))


def test_to_json_dict_follows_kafka_json_converter() -> None:
    ident = uuid.UUID(int=1)
    msg = Sample(id=4, name="n", blob=b"\x00\xff", ident=ident, maybe=None, extra=-5)
    json_v0 = to_json_dict(msg, 0)
    assert list(json_v0)[:3] == ["id", "small", "port"]  # wire order, "flag" absent in v0
    assert json_v0["ident"] == "AAAAAAAAAAAAAAAAAAAAAQ"
    assert json_v0["blob"] == "AP8="
    assert "maybe" not in json_v0 and "extra" not in json_v0
    json_v3 = to_json_dict(replace(msg, extra=1, items=(Item("k"),)), 3)
    assert json_v3["maybe"] is None
    assert json_v3["extra"] == 1  # tagged: printed because it differs from the default
    assert "child" not in json_v3  # tagged and default
    assert json_v3["items"] == [{"key": "k", "weight": 7, "note": None}]


def test_versions_notation() -> None:
    assert str(Versions.parse("0+")) == "0+"
    assert 5 in Versions.parse("1-5") and 6 not in Versions.parse("1-5")
    assert Versions.parse("none").is_empty and 0 not in Versions.parse("none")
    assert str(Versions.parse("3")) == "3"
    with pytest.raises(ValueError, match="invalid version range"):
        Versions.parse("x+")
    with pytest.raises(ValueError, match="empty version range"):
        Versions.parse("3-1")


def test_declaration_errors_are_caught_at_import_time() -> None:
    with pytest.raises(TypeError, match="cannot be nullable"):

        @message(versions="0")
        @dataclass(frozen=True, slots=True)
        class BadNullable:
            x: int = kafka_field("int32", nullable_versions="0+")

    with pytest.raises(TypeError, match="not declared with kafka_field"):

        @message(versions="0")
        @dataclass(frozen=True, slots=True)
        class Undeclared:
            x: int = 0

    with pytest.raises(TypeError, match="unknown Kafka type"):
        kafka_field("int33")


def test_generated_source_shows_the_compiled_reader_and_writer() -> None:
    text = generated_source(Sample, 3)
    assert "def read(buf, pos, end):  # <pykraft.messages reader Sample v3 flexible>" in text
    assert "def write(out, obj):  # <pykraft.messages writer Sample v3 flexible>" in text
    assert "f_numbers" in text and "exc.path.insert(0, 'Numbers')" in text
    assert "flexible>" not in generated_source(Sample, 0)
    assert "reader Item v3 flexible" in generated_source(Item, 3, flexible=True)


@message(versions="0", flexible="0+")
@dataclass(frozen=True, slots=True)
class Normalised:
    name: str = kafka_field("string")

    def __post_init__(self) -> None:
        object.__setattr__(self, "name", self.name.lower())


def test_decoding_runs_the_post_init_of_a_message_that_has_one() -> None:
    raw = b"\x04ABC\x00"
    assert encode(Normalised("abc"), 0) == raw.lower()
    assert decode(Normalised, 0, raw).name == "abc"


def test_decoded_messages_are_plain_instances() -> None:
    msg = Sample(id=3, ident=uuid.UUID(int=9), items=(Item("k", 1),))
    decoded = decode(Sample, 2, encode(msg, 2))
    assert type(decoded) is Sample and type(decoded.items[0]) is Item
    assert decoded == msg and hash(decoded) == hash(msg)
    with pytest.raises(AttributeError):
        decoded.id = 4  # type: ignore[misc]
    assert decode(Sample, 2, encode(Sample(), 2)).ident is ZERO_UUID
