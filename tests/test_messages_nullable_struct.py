"""KIP-893 nullable structs in the schema codec: an int8 marker (-1 null, 1 present) before
the struct, as Kafka's generated readers and writers lay it out; the generated classes with a
nullable struct rely on it (ConsumerGroupHeartbeatResponse's Assignment)."""

# kafka_field() returns a dataclasses.Field, which ruff cannot see for struct-typed fields:
# ruff: noqa: RUF009

from __future__ import annotations

from dataclasses import dataclass

import pytest

from pykraft.errors import MessageDecodeError
from pykraft.messages import decode, encode, kafka_field, message


@message()
@dataclass(frozen=True, slots=True)
class Position:
    name: str = kafka_field("string")
    index: int = kafka_field("int32")


@message(versions="0-1", flexible="0+")
@dataclass(frozen=True, slots=True)
class Page:
    limit: int = kafka_field("int32")
    cursor: Position | None = kafka_field(Position, nullable_versions="1+", default=None)
    tail: int = kafka_field("int8")


def test_null_is_one_marker_byte() -> None:
    page = Page(limit=10, cursor=None, tail=3)
    wire = encode(page, 1)
    assert wire == bytes.fromhex("0000000a ff 03 00".replace(" ", ""))
    assert decode(Page, 1, wire) == page


def test_present_struct_follows_marker_one() -> None:
    page = Page(limit=10, cursor=Position(name="t", index=2), tail=3)
    wire = encode(page, 1)
    assert wire == bytes.fromhex("0000000a 01 0274 00000002 00 03 00".replace(" ", ""))
    assert decode(Page, 1, wire) == page


def test_any_negative_marker_reads_null() -> None:
    assert decode(Page, 1, bytes.fromhex("0000000a 80 03 00".replace(" ", ""))).cursor is None


def test_missing_marker_is_named() -> None:
    with pytest.raises(MessageDecodeError, match="Cursor: truncated nullable struct marker"):
        decode(Page, 1, bytes.fromhex("0000000a"))


def test_struct_is_not_nullable_where_the_schema_says_not() -> None:
    """v0 has no nullableVersions for Cursor: no marker, the struct is always there."""
    page = Page(limit=10, cursor=Position(name="t", index=2), tail=3)
    assert encode(page, 0) == bytes.fromhex("0000000a 0274 00000002 00 03 00".replace(" ", ""))
