"""__consumer_offsets records: Kafka's byte layouts, round trips at every version, and
malformed input that only ever raises pykraft's decode error.

Expected bytes are built by hand from Kafka's schemas in
group-coordinator/src/main/resources/common/message/ (OffsetCommitKey.json,
OffsetCommitValue.json, GroupMetadataKey.json, GroupMetadataValue.json): an int16 version,
then the fields in JSON order, classic encoding (int16-length strings, -1 for null, int32
arrays and bytes) up to v3 and compact encoding with tagged-field buffers at v4.
"""

from __future__ import annotations

import contextlib
import dataclasses
import struct
import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pykraft.errors import MessageDecodeError
from pykraft.group.outcome import OffsetsRecord
from pykraft.group.records import (
    GroupMetadataKey,
    GroupMetadataValue,
    MemberMetadata,
    OffsetCommitKey,
    OffsetCommitValue,
    decode_key,
    decode_record,
    decode_value,
    group_metadata_record,
    offset_commit_floor,
    offset_commit_record,
)
from pykraft.messages import encode
from pykraft.records.batch import encode_batch


def _s(text: str) -> bytes:
    raw = text.encode()
    return struct.pack(">h", len(raw)) + raw


def _compact_s(text: str) -> bytes:
    raw = text.encode()
    assert len(raw) < 127
    return bytes([len(raw) + 1]) + raw


_NULL_S = b"\xff\xff"
_MEMBER = MemberMetadata(
    member_id="m-1",
    group_instance_id="i-1",
    client_id="c",
    client_host="/127.0.0.1",
    rebalance_timeout=300000,
    session_timeout=45000,
    subscription=b"\x00\x01",
    assignment=b"\x02",
)
_GROUP = GroupMetadataValue(
    protocol_type="consumer",
    generation=7,
    protocol="range",
    leader="m-1",
    current_state_timestamp=1700000000000,
    members=(_MEMBER,),
)


def test_offset_commit_record_layout_v4() -> None:
    """Kafka 4.4's: flexible v4, the topic's id as tagged field 0 (none when it is zero)."""
    topic_id = uuid.UUID(int=0x0102)
    record = offset_commit_record(
        OffsetCommitKey("g", "t", 5),
        OffsetCommitValue(offset=42, leader_epoch=3, metadata="md", commit_timestamp=1000,
                          topic_id=topic_id),
    )
    assert record.key == b"\x00\x01" + _s("g") + _s("t") + struct.pack(">i", 5)
    body = b"\x00\x04" + struct.pack(">q", 42) + struct.pack(">i", 3) + b"\x03md" + struct.pack(
        ">q", 1000)
    assert record.value == body + b"\x01" + b"\x00\x10" + topic_id.bytes
    unknown = offset_commit_record(OffsetCommitKey("g", "t", 5), OffsetCommitValue(
        offset=42, leader_epoch=3, metadata="md", commit_timestamp=1000))
    assert unknown.value == body + b"\x00"
    assert decode_record(record) == (OffsetCommitKey("g", "t", 5), OffsetCommitValue(
        offset=42, leader_epoch=3, metadata="md", commit_timestamp=1000, topic_id=topic_id))


def test_offset_commit_with_expiry_is_written_at_v1_without_leader_epoch() -> None:
    value = OffsetCommitValue(
        offset=42, leader_epoch=3, metadata="", commit_timestamp=1000, expire_timestamp=9000
    )
    record = offset_commit_record(OffsetCommitKey("g", "t", 0), value)
    assert record.value == (
        b"\x00\x01"
        + struct.pack(">q", 42)
        + _s("")
        + struct.pack(">q", 1000)
        + struct.pack(">q", 9000)
    )
    decoded = decode_record(record)
    assert decoded == (OffsetCommitKey("g", "t", 0), dataclasses.replace(value, leader_epoch=-1))


def test_group_metadata_record_layout_v3() -> None:
    record = group_metadata_record(GroupMetadataKey("grp"), _GROUP)
    assert record.key == b"\x00\x02" + _s("grp")
    member = (
        _s("m-1")
        + _s("i-1")
        + _s("c")
        + _s("/127.0.0.1")
        + struct.pack(">ii", 300000, 45000)
        + struct.pack(">i", 2)
        + b"\x00\x01"
        + struct.pack(">i", 1)
        + b"\x02"
    )
    assert record.value == (
        b"\x00\x03"
        + _s("consumer")
        + struct.pack(">i", 7)
        + _s("range")
        + _s("m-1")
        + struct.pack(">q", 1700000000000)
        + struct.pack(">i", 1)
        + member
    )


def test_empty_group_metadata_has_null_protocol_and_leader() -> None:
    value = GroupMetadataValue(protocol_type="", generation=1, current_state_timestamp=5)
    record = group_metadata_record(GroupMetadataKey("g"), value)
    assert record.value == (
        b"\x00\x03"
        + _s("")
        + struct.pack(">i", 1)
        + _NULL_S
        + _NULL_S
        + struct.pack(">q", 5)
        + struct.pack(">i", 0)
    )
    assert decode_record(record) == (GroupMetadataKey("g"), value)


def test_tombstones_keep_the_key_and_have_no_value() -> None:
    offsets = offset_commit_record(OffsetCommitKey("g", "t", 1), None)
    group = group_metadata_record(GroupMetadataKey("g"), None)
    assert offsets.value is None and group.value is None
    assert decode_record(offsets) == (OffsetCommitKey("g", "t", 1), None)
    assert decode_record(group) == (GroupMetadataKey("g"), None)


def test_key_version_0_is_read_as_an_offset_commit_key() -> None:
    key = b"\x00\x00" + _s("g") + _s("t") + struct.pack(">i", 2)
    assert decode_key(key) == (0, OffsetCommitKey("g", "t", 2))


def test_flexible_v4_values_are_read() -> None:
    offset_v4 = (
        b"\x00\x04"
        + struct.pack(">q", 9)
        + struct.pack(">i", 1)
        + _compact_s("x")
        + struct.pack(">q", 77)
        + b"\x00"
    )
    key = OffsetCommitKey("g", "t", 0)
    assert decode_value(key, offset_v4) == (
        4,
        OffsetCommitValue(offset=9, leader_epoch=1, metadata="x", commit_timestamp=77),
    )
    member = (
        _compact_s("m")
        + b"\x00"
        + _compact_s("c")
        + _compact_s("h")
        + struct.pack(">ii", 10, 20)
        + b"\x01"
        + b"\x02"
        + b"\xaa"
        + b"\x00"
    )
    group_v4 = (
        b"\x00\x04"
        + _compact_s("consumer")
        + struct.pack(">i", 2)
        + b"\x00"
        + b"\x00"
        + struct.pack(">q", -1)
        + b"\x02"
        + member
        + b"\x00"
    )
    expected_member = MemberMetadata("m", None, "c", "h", 10, 20, b"", b"\xaa")
    assert decode_value(GroupMetadataKey("g"), group_v4) == (
        4,
        GroupMetadataValue("consumer", 2, None, None, -1, (expected_member,)),
    )


@pytest.mark.parametrize("version", [3, 4, 5, 8, 0x7FFF])
def test_newer_key_versions_are_skipped(version: int) -> None:
    record = OffsetsRecord(struct.pack(">h", version) + b"whatever", b"\x00\x00")
    assert decode_record(record) is None


@pytest.mark.parametrize(
    ("key", "value"),
    [
        (b"", None),
        (b"\x00", None),
        (b"\xff\xff" + _s("g"), None),
        (b"\x00\x02" + _s("g") + b"\x00", None),  # trailing byte
        (b"\x00\x01" + _s("g") + _s("t"), None),  # partition missing
        (b"\x00\x02" + _s("g"), b"\x00"),
        (b"\x00\x02" + _s("g"), b"\x00\x05" + _s("consumer")),  # unknown value version
        (b"\x00\x02" + _s("g"), b"\xff\xff"),
        (b"\x00\x01" + _s("g") + _s("t") + b"\x00\x00\x00\x00", b"\x00\x03\x00"),
    ],
)
def test_malformed_records_raise_a_decode_error(key: bytes, value: bytes | None) -> None:
    with pytest.raises(MessageDecodeError):
        decode_record(OffsetsRecord(key, value))


# --- properties ----------------------------------------------------------------------------

_text = st.text(st.characters(codec="utf-8"), max_size=20)
_i32 = st.integers(-(2**31), 2**31 - 1)
_i64 = st.integers(-(2**63), 2**63 - 1)
_blob = st.binary(max_size=16)

_offset_values = st.builds(
    OffsetCommitValue,
    offset=_i64,
    leader_epoch=_i32,
    metadata=_text,
    commit_timestamp=_i64,
    expire_timestamp=_i64,
)
_members = st.builds(
    MemberMetadata,
    member_id=_text,
    group_instance_id=st.none() | _text,
    client_id=_text,
    client_host=_text,
    rebalance_timeout=_i32,
    session_timeout=_i32,
    subscription=_blob,
    assignment=_blob,
)
_group_values = st.builds(
    GroupMetadataValue,
    protocol_type=_text,
    generation=_i32,
    protocol=st.none() | _text,
    leader=st.none() | _text,
    current_state_timestamp=_i64,
    members=st.lists(_members, max_size=3).map(tuple),
)


def _offset_at(value: OffsetCommitValue, version: int) -> OffsetCommitValue:
    """What survives a trip through ``version``: absent fields come back as defaults."""
    return dataclasses.replace(
        value,
        leader_epoch=value.leader_epoch if version >= 3 else -1,
        expire_timestamp=value.expire_timestamp if version == 1 else -1,
    )


def _group_at(value: GroupMetadataValue, version: int) -> GroupMetadataValue:
    members = tuple(
        dataclasses.replace(
            m,
            group_instance_id=m.group_instance_id if version >= 3 else None,
            rebalance_timeout=m.rebalance_timeout if version >= 1 else 0,
        )
        for m in value.members
    )
    return dataclasses.replace(
        value,
        current_state_timestamp=value.current_state_timestamp if version >= 2 else -1,
        members=members,
    )


@settings(max_examples=60)
@given(value=_offset_values, version=st.integers(0, 4))
def test_offset_values_round_trip_at_every_version(value: OffsetCommitValue, version: int) -> None:
    data = struct.pack(">h", version) + encode(_offset_at(value, version), version)
    assert decode_value(OffsetCommitKey("g", "t", 0), data) == (version, _offset_at(value, version))


@settings(max_examples=60)
@given(value=_group_values, version=st.integers(0, 4))
def test_group_values_round_trip_at_every_version(value: GroupMetadataValue, version: int) -> None:
    data = struct.pack(">h", version) + encode(_group_at(value, version), version)
    assert decode_value(GroupMetadataKey("g"), data) == (version, _group_at(value, version))


@settings(max_examples=60)
@given(
    group=_text,
    topic=_text,
    partition=_i32,
    value=st.none() | _offset_values,
    group_value=st.none() | _group_values,
)
def test_written_records_decode_to_what_was_written(
    group: str,
    topic: str,
    partition: int,
    value: OffsetCommitValue | None,
    group_value: GroupMetadataValue | None,
) -> None:
    key = OffsetCommitKey(group, topic, partition)
    written = None if value is None else _offset_at(value, 3 if value.expire_timestamp == -1 else 1)
    assert decode_record(offset_commit_record(key, value)) == (key, written)
    group_key = GroupMetadataKey(group)
    expected = None if group_value is None else _group_at(group_value, 3)
    assert decode_record(group_metadata_record(group_key, group_value)) == (group_key, expected)


def _decodes_or_raises_decode_error(record: OffsetsRecord) -> None:
    with contextlib.suppress(MessageDecodeError):
        decode_record(record)


@settings(max_examples=200)
@given(key=st.binary(max_size=40), value=st.none() | st.binary(max_size=60))
def test_random_bytes_only_raise_decode_errors(key: bytes, value: bytes | None) -> None:
    _decodes_or_raises_decode_error(OffsetsRecord(key, value))


@settings(max_examples=60)
@given(
    value=_group_values,
    version=st.integers(0, 4),
    cut=st.integers(0, 200),
    flip=st.tuples(st.integers(0, 200), st.integers(0, 255)),
)
def test_damaged_group_values_only_raise_decode_errors(
    value: GroupMetadataValue, version: int, cut: int, flip: tuple[int, int]
) -> None:
    data = bytearray(struct.pack(">h", version) + encode(_group_at(value, version), version))
    if data:
        data[flip[0] % len(data)] = flip[1]
    record = OffsetsRecord(group_metadata_record(GroupMetadataKey("g"), None).key, bytes(data))
    _decodes_or_raises_decode_error(record)
    truncated = OffsetsRecord(record.key, bytes(data[: cut % (len(data) + 1)]))
    _decodes_or_raises_decode_error(truncated)


@given(group=st.text(max_size=20), topics=st.lists(st.tuples(
    st.text(max_size=20), st.lists(st.text(max_size=10), min_size=1, max_size=5)),
    min_size=1, max_size=4), expiring=st.booleans())
def test_the_commit_floor_never_exceeds_the_batch_it_bounds(
        group: str, topics: list[tuple[str, list[str]]], expiring: bool) -> None:
    """A coordinator refuses a commit above the floor unbuilt: no batch it could have built
    may be smaller."""
    records = [offset_commit_record(
        OffsetCommitKey(group, topic, index),
        OffsetCommitValue(offset=index, metadata=metadata, commit_timestamp=1,
                          expire_timestamp=5 if expiring else -1))
        for topic, metadatas in topics for index, metadata in enumerate(metadatas)]
    batch = encode_batch(0, [(r.key, r.value) for r in records], partition_leader_epoch=0,
                         timestamp=1_700_000_000_000)
    floor = offset_commit_floor(group, [(topic, len(m)) for topic, m in topics])
    assert floor <= len(batch)
