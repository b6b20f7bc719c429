"""Metadata records: framing, every type at every version, Kafka's fixture bytes, traps."""

from __future__ import annotations

import contextlib
import struct
import uuid
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pykraft.errors import MetadataRecordError
from pykraft.messages import schema_of
from pykraft.records.batch import iter_batches
from pykraft.records.control import ControlType, SnapshotHeaderRecord, decode_control
from pykraft.records.metadata import (
    METADATA_RECORD_NAMES,
    METADATA_RECORD_TYPES,
    BrokerEndpoint,
    BrokerFeature,
    FeatureLevelRecord,
    MetadataRecord,
    PartitionChangeRecord,
    PartitionRecord,
    RegisterBrokerRecord,
    decode_metadata_record,
    encode_metadata_record,
)
from test_messages_codec import messages_of

TOPIC = uuid.UUID(int=0x0102030405060708090A0B0C0D0E0F10)


def _all_versions() -> list[tuple[int, int]]:
    cases: list[tuple[int, int]] = []
    for api_key, cls in METADATA_RECORD_TYPES.items():
        valid = schema_of(cls).valid_versions
        assert valid is not None and valid.high is not None
        cases.extend((api_key, version) for version in range(valid.low, valid.high + 1))
    return cases


def test_registry_matches_kafka_api_keys() -> None:
    assert sorted(METADATA_RECORD_TYPES) == [*range(0, 6), *range(7, 13), 14, 15, *range(17, 30)]
    assert METADATA_RECORD_NAMES[12] == "FEATURE_LEVEL_RECORD"
    assert METADATA_RECORD_NAMES[21] == "ZK_MIGRATION_STATE_RECORD"
    assert METADATA_RECORD_TYPES[0] is RegisterBrokerRecord
    assert METADATA_RECORD_NAMES[29] == "UNREGISTER_CONTROLLER_RECORD"
    assert len(_all_versions()) == 38  # 27 types; RegisterBroker 0-4, Partition(Change) 0-2, ...


@pytest.mark.parametrize(("api_key", "version"), _all_versions())
@settings(max_examples=40)
@given(data=st.data())
def test_every_type_and_version_round_trips(api_key: int, version: int, data: Any) -> None:
    msg = data.draw(messages_of(METADATA_RECORD_TYPES[api_key], version))
    value = encode_metadata_record(msg, version)
    assert value[:1] == b"\x01"
    record = decode_metadata_record(value)
    assert record == MetadataRecord(api_key, version, msg)
    assert encode_metadata_record(record.message, record.version) == value


def test_default_version_is_the_highest() -> None:
    value = encode_metadata_record(PartitionRecord(topic_id=TOPIC))
    assert decode_metadata_record(value).version == 2
    assert decode_metadata_record(encode_metadata_record(RegisterBrokerRecord())).version == 4


def test_bootstrap_checkpoint_fixture(kafka37_dir: Path) -> None:
    raw = (kafka37_dir / "bootstrap.checkpoint").read_bytes()
    batches = list(iter_batches(raw))
    assert len(batches) == 3
    header_batch, data_batch, footer_batch = batches

    (header,) = header_batch.records()
    control = decode_control(header.key, header.value)
    assert control.type is ControlType.SNAPSHOT_HEADER
    assert control.message == SnapshotHeaderRecord(version=0, last_contained_log_timestamp=0)

    (feature,) = data_batch.records()
    assert feature.key is None and feature.value is not None
    record = decode_metadata_record(feature.value)
    assert (record.api_key, record.version) == (12, 0)
    assert record.message == FeatureLevelRecord(name="metadata.version", feature_level=19)
    assert record.to_json_dict() == {
        "type": "FEATURE_LEVEL_RECORD",
        "version": 0,
        "data": {"name": "metadata.version", "featureLevel": 19},
    }
    assert encode_metadata_record(record.message, record.version) == feature.value

    (footer,) = footer_batch.records()
    assert decode_control(footer.key, footer.value).type is ControlType.SNAPSHOT_FOOTER


def test_register_broker_v2_is_migrating_zk_broker_is_second() -> None:
    msg = RegisterBrokerRecord(
        broker_id=1,
        is_migrating_zk_broker=True,
        incarnation_id=uuid.UUID(int=2),
        broker_epoch=3,
        end_points=(BrokerEndpoint("PLAINTEXT", "localhost", 9092, 0),),
        features=(BrokerFeature("metadata.version", 1, 19),),
        rack=None,
        fenced=True,
        in_controlled_shutdown=False,
    )
    expected = (
        b"\x01\x00\x02"  # frame 1, api key 0, version 2
        + b"\x00\x00\x00\x01"  # BrokerId
        + b"\x01"  # IsMigratingZkBroker, right after BrokerId
        + uuid.UUID(int=2).bytes
        + b"\x00\x00\x00\x00\x00\x00\x00\x03"
        + b"\x02" + b"\x0aPLAINTEXT" + b"\x0alocalhost" + b"\x23\x84" + b"\x00\x00" + b"\x00"
        + b"\x02" + b"\x11metadata.version" + b"\x00\x01" + b"\x00\x13" + b"\x00"
        + b"\x00"  # Rack null
        + b"\x01"  # Fenced
        + b"\x00"  # InControlledShutdown
        + b"\x00"  # tag buffer
    )  # fmt: skip
    assert encode_metadata_record(msg, 2) == expected
    assert decode_metadata_record(expected).message == msg
    # v0 has neither IsMigratingZkBroker nor InControlledShutdown
    assert encode_metadata_record(msg.__class__(broker_id=1, rack="r"), 0) == (
        b"\x01\x00\x00" + b"\x00\x00\x00\x01" + bytes(16) + bytes(8) + b"\x01\x01\x02r\x01\x00"
    )


def test_partition_change_leader_default_omitted_and_directories_tag_8() -> None:
    msg = PartitionChangeRecord(
        partition_id=0, topic_id=TOPIC, isr=(1, 2), directories=(uuid.UUID(int=9),)
    )
    body = b"\x00\x00\x00\x00" + TOPIC.bytes
    expected = (
        b"\x01\x05\x01"
        + body
        + b"\x02"  # two tagged fields: Leader -2 (default) is not written
        + b"\x00\x09\x03\x00\x00\x00\x01\x00\x00\x00\x02"  # tag 0 Isr
        + b"\x08\x11\x02"
        + uuid.UUID(int=9).bytes  # tag 8 Directories
    )
    assert encode_metadata_record(msg, 1) == expected
    assert decode_metadata_record(expected).message == msg
    with_leader = encode_metadata_record(PartitionChangeRecord(topic_id=TOPIC, leader=-1), 0)
    assert with_leader == b"\x01\x05\x00\xff\xff\xff\xff" + TOPIC.bytes + b"\x01\x01\x04" + (
        b"\xff\xff\xff\xff"
    )
    elr = PartitionChangeRecord(topic_id=TOPIC, eligible_leader_replicas=(3,), last_known_elr=())
    assert encode_metadata_record(elr, 2).endswith(
        b"\x02" + b"\x06\x05\x02\x00\x00\x00\x03" + b"\x07\x01\x01"
    )


def test_unknown_tagged_fields_are_kept_and_written_back() -> None:
    plain = encode_metadata_record(FeatureLevelRecord("metadata.version", 19), 0)
    assert plain.endswith(b"\x00")
    with_unknown = plain[:-1] + b"\x02" + b"\x05\x02\xab\xcd" + b"\x90\x03\x00"
    record = decode_metadata_record(with_unknown)
    assert record.message == FeatureLevelRecord(
        "metadata.version", 19, unknown_tagged_fields=((5, b"\xab\xcd"), (400, b""))
    )
    assert encode_metadata_record(record.message, 0) == with_unknown


def test_frame_version_0_is_rejected_with_the_preview_message() -> None:
    value = b"\x00" + encode_metadata_record(FeatureLevelRecord("x", 1))[1:]
    with pytest.raises(MetadataRecordError, match=r"frame version 0.*2\.8"):
        decode_metadata_record(value)
    with pytest.raises(MetadataRecordError, match="unknown metadata record frame version 2"):
        decode_metadata_record(b"\x02" + value[1:])


@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        (b"\x01\x0d\x00\x00", "unknown metadata record api key 13"),
        (b"\x01\x06\x00\x00", "unknown metadata record api key 6"),
        (b"\x01\x0c\x01\x00", "unsupported version 1 of FEATURE_LEVEL_RECORD"),
        (b"\x01\xff\xff\x03\x00", "api key 65535 is too large"),
        (b"\x01\x0c", "invalid version"),
        (b"", "invalid frame version"),
    ],
)
def test_bad_frames_name_what_is_wrong(value: bytes, fragment: str) -> None:
    with pytest.raises(MetadataRecordError, match=fragment):
        decode_metadata_record(value)


def test_trailing_garbage_is_rejected() -> None:
    value = encode_metadata_record(PartitionRecord(topic_id=TOPIC, replicas=(1,)), 1)
    with pytest.raises(
        MetadataRecordError, match=r"2 byte.*garbage after PARTITION_RECORD"
    ) as info:
        decode_metadata_record(value + b"\x00\x00")
    assert info.value.position == len(value)


_SAMPLES = [
    encode_metadata_record(
        RegisterBrokerRecord(
            broker_id=5,
            incarnation_id=uuid.UUID(int=77),
            end_points=(BrokerEndpoint("CONTROLLER", "h", 9093, 0),),
            features=(BrokerFeature("kraft.version", 0, 1),),
            rack="rack-a",
            log_dirs=(uuid.UUID(int=3),),
        ),
        3,
    ),
    encode_metadata_record(
        PartitionChangeRecord(topic_id=TOPIC, isr=(1,), leader=1, directories=(TOPIC,)), 2
    ),
    encode_metadata_record(PartitionRecord(topic_id=TOPIC, replicas=(1, 2), isr=(1,)), 2),
]


@pytest.mark.parametrize("value", _SAMPLES)
def test_every_truncation_raises_the_typed_error(value: bytes) -> None:
    for cut in range(len(value)):
        with pytest.raises(MetadataRecordError):
            decode_metadata_record(value[:cut])


@settings(max_examples=400)
@given(
    sample=st.sampled_from(_SAMPLES),
    flips=st.lists(st.tuples(st.integers(0), st.integers(1, 255)), min_size=1, max_size=4),
)
def test_random_byte_flips_only_raise_the_typed_error(
    sample: bytes, flips: list[tuple[int, int]]
) -> None:
    value = bytearray(sample)
    for where, mask in flips:
        value[where % len(value)] ^= mask
    with contextlib.suppress(MetadataRecordError):
        decode_metadata_record(bytes(value))


@settings(max_examples=300)
@given(body=st.binary(max_size=60), api_key=st.sampled_from(sorted(METADATA_RECORD_TYPES)))
def test_arbitrary_bodies_only_raise_the_typed_error(body: bytes, api_key: int) -> None:
    with contextlib.suppress(MetadataRecordError):
        decode_metadata_record(b"\x01" + bytes([api_key, 0]) + body)


def test_huge_array_count_does_not_allocate() -> None:
    value = b"\x01\x03\x00" + struct.pack(">i", 0) + TOPIC.bytes + b"\xff\xff\xff\xff\x0f"
    with pytest.raises(MetadataRecordError, match="Replicas: array of 4294967294 elements"):
        decode_metadata_record(value)
