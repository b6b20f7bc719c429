"""KIP-848 consumer group records in ``__consumer_offsets`` (key versions 3-8), Kafka's formats.

As for the classic records, key and value are each an ``int16 version`` and a struct. The
key version names the record type; the key struct is not flexible. Every value is at
version 0 and flexible (compact strings, tagged fields). A null value is a tombstone. The
``ClassicMemberMetadata`` tagged field of a member's value (members that joined with the
classic protocol) is not written; when read from Kafka's log it is skipped as an unknown tag.

Which record says what (Kafka's ``GroupCoordinatorRecordHelpers``):

* 3 group epoch, 4 the subscribed topics' metadata (ids, partition counts),
* 5 a member's subscription, 6 the target assignment's epoch,
* 7 a member's target assignment, 8 a member's current assignment (epochs, state,
  assigned partitions, partitions pending revocation).
"""

# kafka_field() returns a dataclasses.Field, which ruff cannot see for uuid-typed fields:
# ruff: noqa: RUF009

from __future__ import annotations

import struct
import uuid
from dataclasses import dataclass

from pykraft.errors import MessageDecodeError
from pykraft.group.outcome import OffsetsRecord
from pykraft.ids import ZERO_UUID
from pykraft.messages import array, decode, encode, kafka_field, message

_VERSION = struct.Struct(">h")
VALUE_VERSION = 0


@message(versions="3")
@dataclass(frozen=True, slots=True)
class ConsumerGroupMetadataKey:
    group_id: str = kafka_field("string")


@message(versions="0", flexible="0+")
@dataclass(frozen=True, slots=True)
class ConsumerGroupMetadataValue:
    epoch: int = kafka_field("int32")


@message(versions="4")
@dataclass(frozen=True, slots=True)
class ConsumerGroupPartitionMetadataKey:
    group_id: str = kafka_field("string")


@message()
@dataclass(frozen=True, slots=True)
class PartitionMetadata:
    partition: int = kafka_field("int32")
    racks: tuple[str, ...] = kafka_field("[]string")


@message()
@dataclass(frozen=True, slots=True)
class TopicMetadata:
    topic_id: uuid.UUID = kafka_field("uuid", default=ZERO_UUID)
    topic_name: str = kafka_field("string")
    num_partitions: int = kafka_field("int32")
    partition_metadata: tuple[PartitionMetadata, ...] = kafka_field(array(PartitionMetadata))


@message(versions="0", flexible="0+")
@dataclass(frozen=True, slots=True)
class ConsumerGroupPartitionMetadataValue:
    topics: tuple[TopicMetadata, ...] = kafka_field(array(TopicMetadata))


@message(versions="5")
@dataclass(frozen=True, slots=True)
class ConsumerGroupMemberMetadataKey:
    group_id: str = kafka_field("string")
    member_id: str = kafka_field("string")


@message(versions="0", flexible="0+")
@dataclass(frozen=True, slots=True)
class ConsumerGroupMemberMetadataValue:
    instance_id: str | None = kafka_field("string", nullable_versions="0+", default=None)
    rack_id: str | None = kafka_field("string", nullable_versions="0+", default=None)
    client_id: str = kafka_field("string")
    client_host: str = kafka_field("string")
    subscribed_topic_names: tuple[str, ...] = kafka_field("[]string")
    subscribed_topic_regex: str | None = kafka_field(
        "string", nullable_versions="0+", default=None
    )
    rebalance_timeout_ms: int = kafka_field("int32", default=-1)
    server_assignor: str | None = kafka_field("string", nullable_versions="0+", default=None)


@message(versions="6")
@dataclass(frozen=True, slots=True)
class ConsumerGroupTargetAssignmentMetadataKey:
    group_id: str = kafka_field("string")


@message(versions="0", flexible="0+")
@dataclass(frozen=True, slots=True)
class ConsumerGroupTargetAssignmentMetadataValue:
    assignment_epoch: int = kafka_field("int32")


@message(versions="7")
@dataclass(frozen=True, slots=True)
class ConsumerGroupTargetAssignmentMemberKey:
    group_id: str = kafka_field("string")
    member_id: str = kafka_field("string")


@message()
@dataclass(frozen=True, slots=True)
class TopicPartitions:
    topic_id: uuid.UUID = kafka_field("uuid", default=ZERO_UUID)
    partitions: tuple[int, ...] = kafka_field("[]int32")


@message(versions="0", flexible="0+")
@dataclass(frozen=True, slots=True)
class ConsumerGroupTargetAssignmentMemberValue:
    topic_partitions: tuple[TopicPartitions, ...] = kafka_field(array(TopicPartitions))


@message(versions="8")
@dataclass(frozen=True, slots=True)
class ConsumerGroupCurrentMemberAssignmentKey:
    group_id: str = kafka_field("string")
    member_id: str = kafka_field("string")


@message(versions="0", flexible="0+")
@dataclass(frozen=True, slots=True)
class ConsumerGroupCurrentMemberAssignmentValue:
    member_epoch: int = kafka_field("int32")
    previous_member_epoch: int = kafka_field("int32")
    state: int = kafka_field("int8")
    assigned_partitions: tuple[TopicPartitions, ...] = kafka_field(array(TopicPartitions))
    partitions_pending_revocation: tuple[TopicPartitions, ...] = kafka_field(
        array(TopicPartitions)
    )


ConsumerKey = (
    ConsumerGroupMetadataKey
    | ConsumerGroupPartitionMetadataKey
    | ConsumerGroupMemberMetadataKey
    | ConsumerGroupTargetAssignmentMetadataKey
    | ConsumerGroupTargetAssignmentMemberKey
    | ConsumerGroupCurrentMemberAssignmentKey
)
ConsumerValue = (
    ConsumerGroupMetadataValue
    | ConsumerGroupPartitionMetadataValue
    | ConsumerGroupMemberMetadataValue
    | ConsumerGroupTargetAssignmentMetadataValue
    | ConsumerGroupTargetAssignmentMemberValue
    | ConsumerGroupCurrentMemberAssignmentValue
)

_TYPES: dict[int, tuple[type[ConsumerKey], type[ConsumerValue]]] = {
    3: (ConsumerGroupMetadataKey, ConsumerGroupMetadataValue),
    4: (ConsumerGroupPartitionMetadataKey, ConsumerGroupPartitionMetadataValue),
    5: (ConsumerGroupMemberMetadataKey, ConsumerGroupMemberMetadataValue),
    6: (ConsumerGroupTargetAssignmentMetadataKey, ConsumerGroupTargetAssignmentMetadataValue),
    7: (ConsumerGroupTargetAssignmentMemberKey, ConsumerGroupTargetAssignmentMemberValue),
    8: (ConsumerGroupCurrentMemberAssignmentKey, ConsumerGroupCurrentMemberAssignmentValue),
}
_KEY_VERSIONS: dict[type, int] = {key: version for version, (key, _) in _TYPES.items()}


def consumer_record(key: ConsumerKey, value: ConsumerValue | None) -> OffsetsRecord:
    """The record of ``key`` holding ``value``, or its tombstone when ``value`` is None."""
    version = _KEY_VERSIONS[type(key)]
    key_bytes = _VERSION.pack(version) + encode(key, version)
    if value is None:
        return OffsetsRecord(key_bytes, None)
    if not isinstance(value, _TYPES[version][1]):
        raise TypeError(f"{type(value).__name__} is not the value of {type(key).__name__}")
    return OffsetsRecord(key_bytes, _VERSION.pack(VALUE_VERSION) + encode(value, VALUE_VERSION))


def decode_consumer_record(
    record: OffsetsRecord,
) -> tuple[ConsumerKey, ConsumerValue | None] | None:
    """(key, value or None for a tombstone) of a consumer group record; None when the key
    version is not 3-8 (offsets, classic groups, share groups). Malformed bytes raise
    :class:`~pykraft.errors.MessageDecodeError`."""
    key_version, key_body = _split(record.key, "key")
    types = _TYPES.get(key_version)
    if types is None:
        return None
    key = decode(types[0], key_version, key_body)
    if record.value is None:
        return key, None
    value_version, value_body = _split(record.value, "value")
    if value_version != VALUE_VERSION:
        # Kafka defines only version 0; a newer writer would be a newer Kafka.
        raise MessageDecodeError(
            f"{types[1].__name__}: unsupported version {value_version} (valid: 0)", position=0
        )
    return key, decode(types[1], value_version, value_body)


def _split(data: bytes, what: str) -> tuple[int, bytes]:
    if len(data) < _VERSION.size:
        raise MessageDecodeError(
            f"a __consumer_offsets {what} must start with an int16 version, "
            f"got {len(data)} byte(s)",
            position=0,
        )
    return _VERSION.unpack_from(data)[0], bytes(data[_VERSION.size :])
