"""The KIP-848 records of ``__consumer_offsets``: Kafka's bytes, round trips, tombstones,
and refusal of malformed input."""

from __future__ import annotations

import uuid

import pytest

from pykraft.errors import MessageDecodeError
from pykraft.group.consumer_records import (
    ConsumerGroupCurrentMemberAssignmentKey,
    ConsumerGroupCurrentMemberAssignmentValue,
    ConsumerGroupMemberMetadataKey,
    ConsumerGroupMemberMetadataValue,
    ConsumerGroupMetadataKey,
    ConsumerGroupMetadataValue,
    ConsumerGroupPartitionMetadataKey,
    ConsumerGroupPartitionMetadataValue,
    ConsumerGroupTargetAssignmentMemberKey,
    ConsumerGroupTargetAssignmentMemberValue,
    ConsumerGroupTargetAssignmentMetadataKey,
    ConsumerGroupTargetAssignmentMetadataValue,
    ConsumerKey,
    ConsumerValue,
    PartitionMetadata,
    TopicMetadata,
    TopicPartitions,
    consumer_record,
    decode_consumer_record,
)
from pykraft.group.outcome import OffsetsRecord

TOPIC = uuid.UUID(int=0x1234)
SAMPLES: list[tuple[ConsumerKey, ConsumerValue]] = [
    (ConsumerGroupMetadataKey("g"), ConsumerGroupMetadataValue(7)),
    (
        ConsumerGroupPartitionMetadataKey("g"),
        ConsumerGroupPartitionMetadataValue(
            (TopicMetadata(TOPIC, "foo", 3, (PartitionMetadata(0, ("r1",)),)),)
        ),
    ),
    (
        ConsumerGroupMemberMetadataKey("g", "m"),
        ConsumerGroupMemberMetadataValue(
            instance_id="i", rack_id=None, client_id="c", client_host="/127.0.0.1",
            subscribed_topic_names=("foo",), subscribed_topic_regex="b.*",
            rebalance_timeout_ms=300_000, server_assignor="range",
        ),
    ),
    (ConsumerGroupTargetAssignmentMetadataKey("g"), ConsumerGroupTargetAssignmentMetadataValue(7)),
    (
        ConsumerGroupTargetAssignmentMemberKey("g", "m"),
        ConsumerGroupTargetAssignmentMemberValue((TopicPartitions(TOPIC, (0, 2)),)),
    ),
    (
        ConsumerGroupCurrentMemberAssignmentKey("g", "m"),
        ConsumerGroupCurrentMemberAssignmentValue(
            7, 6, 1, (TopicPartitions(TOPIC, (0,)),), (TopicPartitions(TOPIC, (2,)),)
        ),
    ),
]


@pytest.mark.parametrize(("key", "value"), SAMPLES)
def test_records_round_trip_with_their_key_versions(key: ConsumerKey, value: ConsumerValue) -> None:
    record = consumer_record(key, value)
    assert decode_consumer_record(record) == (key, value)
    assert record.value is not None and record.value[:2] == b"\x00\x00"
    tombstone = consumer_record(key, None)
    assert tombstone.key == record.key and tombstone.value is None
    assert decode_consumer_record(tombstone) == (key, None)


def test_key_versions_are_kafkas() -> None:
    assert [consumer_record(k, v).key[:2] for k, v in SAMPLES] == [
        bytes([0, n]) for n in range(3, 9)
    ]


def test_group_epoch_bytes_are_kafkas() -> None:
    """Key: version 3, a classic string; value: version 0, a flexible struct (int32 epoch,
    no tagged fields)."""
    record = consumer_record(ConsumerGroupMetadataKey("grp"), ConsumerGroupMetadataValue(5))
    assert record.key == b"\x00\x03\x00\x03grp"
    assert record.value == b"\x00\x00\x00\x00\x00\x05\x00"


def test_a_classic_member_tag_written_by_kafka_is_skipped() -> None:
    key, value = SAMPLES[2]
    record = consumer_record(key, value)
    assert record.value is not None
    # Replace the empty tagged-field section with one tag 0 of 3 opaque bytes.
    tagged = record.value[:-1] + b"\x01\x00\x03abc"
    decoded = decode_consumer_record(OffsetsRecord(record.key, tagged))
    assert decoded == (key, value)


def test_other_key_versions_are_not_consumer_records() -> None:
    for version in (0, 1, 2, 9, 10):
        record = OffsetsRecord(bytes([0, version]) + b"\x00\x01g", None)
        assert decode_consumer_record(record) is None


@pytest.mark.parametrize(
    "record",
    [
        OffsetsRecord(b"\x00", None),
        OffsetsRecord(b"\x00\x03\x00\x09g", None),
        OffsetsRecord(b"\x00\x03\x00\x01g", b"\x00"),
        OffsetsRecord(b"\x00\x03\x00\x01g", b"\x00\x01\x00\x00\x00\x05\x00"),
        OffsetsRecord(b"\x00\x03\x00\x01g", b"\x00\x00\x00\x00"),
        OffsetsRecord(b"\x00\x03\x00\x01g", b"\x00\x00\x00\x00\x00\x05\x00\xff"),
    ],
)
def test_malformed_records_raise_decode_errors(record: OffsetsRecord) -> None:
    with pytest.raises(MessageDecodeError):
        decode_consumer_record(record)


def test_a_value_of_another_record_type_is_refused() -> None:
    with pytest.raises(TypeError):
        consumer_record(
            ConsumerGroupMetadataKey("g"), ConsumerGroupTargetAssignmentMetadataValue(1)
        )
