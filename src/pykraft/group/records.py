"""The classic group coordinator's records in ``__consumer_offsets``, in Kafka's formats.

Key and value are each an ``int16 version`` followed by a struct (Kafka's
``group-coordinator/src/main/resources/common/message/*.json``). The key's version names the
record type: 0 and 1 an :class:`OffsetCommitKey`, 2 a :class:`GroupMetadataKey`, 3 and up
the KIP-848 and share-group records this module skips (:func:`decode_record` returns None).
The value's version is the version of its schema: ``OffsetCommitValue`` and
``GroupMetadataValue`` define 0-4, classic up to 3 and flexible at 4. Kafka 4.4 writes
offsets at v4, with the topic's id tagged (v1 when the commit carries an explicit expire
timestamp), and groups at v3, and so do we; every version is read. A null value is a
tombstone: the offset or group is deleted.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, replace

from pykraft.errors import MessageDecodeError
from pykraft.group.outcome import OffsetsRecord
from pykraft.ids import ZERO_UUID
from pykraft.messages import array, decode, encode, kafka_field, message
from pykraft.records.batch import HEADER_SIZE

OFFSET_COMMIT_KEY_VERSION = 1
"""Key version written for offsets (0 is the same layout and still read)."""
GROUP_METADATA_KEY_VERSION = 2
OFFSET_COMMIT_VALUE_VERSION = 4
OFFSET_COMMIT_VALUE_VERSION_WITH_EXPIRY = 1
"""The only version with ``expireTimestamp`` (OffsetCommit v2-4 retention)."""
GROUP_METADATA_VALUE_VERSION = 3

_VERSION = struct.Struct(">h")


@message(versions="0")
@dataclass(frozen=True, slots=True)
class OffsetCommitKey:
    """Which committed offset a record holds (key versions 0 and 1)."""

    group: str = kafka_field("string")
    topic: str = kafka_field("string")
    partition: int = kafka_field("int32")


@message(versions="0-4", flexible="4+")
@dataclass(frozen=True, slots=True)
class OffsetCommitValue:
    """A committed offset; ``expire_timestamp`` exists only at v1 (-1: none), the topic's
    id from v4 (tagged: absent when zero, a topic the cluster does not know)."""

    offset: int = kafka_field("int64")
    leader_epoch: int = kafka_field("int32", versions="3+", default=-1)
    metadata: str = kafka_field("string")
    commit_timestamp: int = kafka_field("int64")
    expire_timestamp: int = kafka_field("int64", versions="1", default=-1)
    topic_id: uuid.UUID = kafka_field(  # noqa: RUF009 (a spec, as every field's)
        "uuid", versions="4+", tag=0, tagged_versions="4+", default=ZERO_UUID)


@message(versions="0")
@dataclass(frozen=True, slots=True)
class GroupMetadataKey:
    """A classic group's metadata record (key version 2)."""

    group: str = kafka_field("string")


@message()
@dataclass(frozen=True, slots=True)
class MemberMetadata:
    """One member as persisted. At value v0 there is no ``rebalance_timeout`` (read as 0;
    Kafka then uses the session timeout) and before v3 no ``group_instance_id``."""

    member_id: str = kafka_field("string")
    group_instance_id: str | None = kafka_field(
        "string", versions="3+", nullable_versions="3+", default=None
    )
    client_id: str = kafka_field("string")
    client_host: str = kafka_field("string")
    rebalance_timeout: int = kafka_field("int32", versions="1+")
    session_timeout: int = kafka_field("int32")
    subscription: bytes = kafka_field("bytes")
    assignment: bytes = kafka_field("bytes")


@message(versions="0-4", flexible="4+")
@dataclass(frozen=True, slots=True)
class GroupMetadataValue:
    """A classic group after a rebalance (or emptied): generation, protocol, members."""

    protocol_type: str = kafka_field("string")
    generation: int = kafka_field("int32")
    protocol: str | None = kafka_field("string", nullable_versions="0+", default=None)
    leader: str | None = kafka_field("string", nullable_versions="0+", default=None)
    current_state_timestamp: int = kafka_field("int64", versions="2+", default=-1)
    members: tuple[MemberMetadata, ...] = kafka_field(array(MemberMetadata))


OffsetsKey = OffsetCommitKey | GroupMetadataKey
OffsetsValue = OffsetCommitValue | GroupMetadataValue

_KEY_TYPES: dict[int, type[OffsetCommitKey] | type[GroupMetadataKey]] = {
    0: OffsetCommitKey,
    1: OffsetCommitKey,
    2: GroupMetadataKey,
}
_VALUE_TYPES: dict[type, type[OffsetCommitValue] | type[GroupMetadataValue]] = {
    OffsetCommitKey: OffsetCommitValue,
    GroupMetadataKey: GroupMetadataValue,
}


def _prefixed(version: int, body: bytes) -> bytes:
    return _VERSION.pack(version) + body


def offset_commit_record(key: OffsetCommitKey, value: OffsetCommitValue | None) -> OffsetsRecord:
    """The record of a committed offset, or its tombstone when ``value`` is None."""
    key_bytes = _prefixed(OFFSET_COMMIT_KEY_VERSION, encode(key, 0))
    if value is None:
        return OffsetsRecord(key_bytes, None)
    if value.expire_timestamp == -1:
        version = OFFSET_COMMIT_VALUE_VERSION
    else:
        # v1 has no leader epoch nor topic id; Kafka drops them (ignorable), so do we.
        version = OFFSET_COMMIT_VALUE_VERSION_WITH_EXPIRY
        value = replace(value, leader_epoch=-1, topic_id=ZERO_UUID)
    return OffsetsRecord(key_bytes, _prefixed(version, encode(value, version)))


#: The fewest bytes around one record in a v2 batch (length, attributes, timestamp and
#: offset deltas, key and value lengths, header count: a byte each) and of a committed
#: offset's value apart from its metadata string (v4: version, offset, leader epoch, compact
#: metadata length, commit timestamp, tagged-field count).
_RECORD_FRAMING_MIN = 7
_OFFSET_VALUE_MIN = 2 + 8 + 4 + 1 + 8 + 1


def offset_commit_floor(group: str, partitions_by_topic: Iterable[tuple[str, int]]) -> int:
    """The fewest bytes a batch of the records committing these offsets can take
    (``partitions_by_topic``: topic names with their number of partitions committed): a
    coordinator refuses a commit that cannot fit its batch before it builds a record, as
    Kafka checks the size of an atomic write before replaying it."""
    group_bytes = len(group.encode())
    total = HEADER_SIZE
    for topic, count in partitions_by_topic:
        key = 2 + 2 + group_bytes + 2 + len(topic.encode()) + 4  # version, group, topic, index
        total += count * (_RECORD_FRAMING_MIN + key + _OFFSET_VALUE_MIN)
    return total


def group_metadata_record(key: GroupMetadataKey, value: GroupMetadataValue | None) -> OffsetsRecord:
    """The record of a group's metadata, or its tombstone when ``value`` is None."""
    key_bytes = _prefixed(GROUP_METADATA_KEY_VERSION, encode(key, 0))
    if value is None:
        return OffsetsRecord(key_bytes, None)
    version = GROUP_METADATA_VALUE_VERSION
    return OffsetsRecord(key_bytes, _prefixed(version, encode(value, version)))


def _split_version(data: bytes, what: str) -> tuple[int, bytes]:
    if len(data) < _VERSION.size:
        raise MessageDecodeError(
            f"{what} must start with an int16 version, got {len(data)} byte(s)", position=0
        )
    return _VERSION.unpack_from(data)[0], data[_VERSION.size :]


def decode_key(data: bytes) -> tuple[int, OffsetsKey] | None:
    """(key version, key) of a record key; None for key versions of records this module
    does not know (KIP-848 and share groups, 3+). Malformed keys raise
    :class:`~pykraft.errors.MessageDecodeError`."""
    version, body = _split_version(bytes(data), "a __consumer_offsets key")
    if version < 0:
        raise MessageDecodeError(f"invalid __consumer_offsets key version {version}", position=0)
    key_type = _KEY_TYPES.get(version)
    if key_type is None:
        return None
    return version, decode(key_type, 0, body)


def decode_value(key: OffsetsKey, data: bytes) -> tuple[int, OffsetsValue]:
    """(value version, value) of the non-null value of a record with ``key``."""
    version, body = _split_version(bytes(data), "a __consumer_offsets value")
    return version, decode(_VALUE_TYPES[type(key)], version, body)


def decode_record(record: OffsetsRecord) -> tuple[OffsetsKey, OffsetsValue | None] | None:
    """(key, value or None for a tombstone), or None for a record type this module skips."""
    decoded = decode_key(record.key)
    if decoded is None:
        return None
    key = decoded[1]
    if record.value is None:
        return key, None
    return key, decode_value(key, record.value)[1]
