"""Control records: key layout, every KRaft type round-tripped, markers, unknown types."""

from __future__ import annotations

import contextlib
import uuid
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pykraft.errors import ControlRecordError, UnsupportedVersionError
from pykraft.messages import to_json_dict
from pykraft.records.control import (
    ControlRecord,
    ControlType,
    EndTxnMarker,
    KRaftVersionFeature,
    KRaftVersionRecord,
    LeaderChangeMessage,
    LeaderChangeVoter,
    SnapshotFooterRecord,
    SnapshotHeaderRecord,
    UnknownControlRecord,
    Voter,
    VoterEndpoint,
    VotersRecord,
    control_key,
    decode_control,
    encode_control,
)
from test_messages_codec import messages_of

WRITTEN = [
    (ControlType.LEADER_CHANGE, LeaderChangeMessage),
    (ControlType.SNAPSHOT_HEADER, SnapshotHeaderRecord),
    (ControlType.SNAPSHOT_FOOTER, SnapshotFooterRecord),
    (ControlType.KRAFT_VERSION, KRaftVersionRecord),
    (ControlType.KRAFT_VOTERS, VotersRecord),
]


@pytest.mark.parametrize(("kind", "cls"), WRITTEN)
@settings(max_examples=80)
@given(data=st.data())
def test_every_kraft_control_type_round_trips(kind: ControlType, cls: type, data: Any) -> None:
    msg = data.draw(messages_of(cls, 0))  # every type is written at version 0
    key, value = encode_control(msg)
    assert key == bytes([0, 0, 0, kind])
    record = decode_control(key, value)
    assert record == ControlRecord(kind, int(kind), msg)
    assert encode_control(record.message) == (key, value)


def test_leader_change_is_written_at_v0_without_directory_ids() -> None:
    msg = LeaderChangeMessage(
        version=0,
        leader_id=1,
        voters=(LeaderChangeVoter(1), LeaderChangeVoter(2)),
        granting_voters=(LeaderChangeVoter(1),),
    )
    key, value = encode_control(msg)
    assert key == b"\x00\x00\x00\x02"
    assert value == (
        b"\x00\x00"  # Version
        + b"\x00\x00\x00\x01"  # LeaderId
        + b"\x03" + b"\x00\x00\x00\x01\x00" + b"\x00\x00\x00\x02\x00"  # Voters (no dir ids)
        + b"\x02" + b"\x00\x00\x00\x01\x00"  # GrantingVoters
        + b"\x00"
    )  # fmt: skip
    with pytest.raises(UnsupportedVersionError, match=r"Voters\[0\]\.VoterDirectoryId"):
        encode_control(LeaderChangeMessage(voters=(LeaderChangeVoter(1, uuid.UUID(int=5)),)))


def test_voters_record_bytes_and_json() -> None:
    voter = Voter(
        voter_id=1,
        voter_directory_id=uuid.UUID(int=1),
        endpoints=(VoterEndpoint("CONTROLLER", "localhost", 9093),),
        kraft_version_feature=KRaftVersionFeature(0, 1),
    )
    key, value = encode_control(VotersRecord(version=0, voters=(voter,)))
    assert key == b"\x00\x00\x00\x06"
    assert value == (
        b"\x00\x00" + b"\x02"
        + b"\x00\x00\x00\x01" + uuid.UUID(int=1).bytes
        + b"\x02" + b"\x0bCONTROLLER" + b"\x0alocalhost" + b"\x23\x85" + b"\x00"
        + b"\x00\x00\x00\x01\x00"  # KRaftVersionFeature {0, 1} + its tag buffer
        + b"\x00"  # Voter tag buffer
        + b"\x00"
    )  # fmt: skip
    record = decode_control(key, value)
    assert record.dump_name == "KRaftVoters"
    assert to_json_dict(record.message, record.version) == {
        "version": 0,
        "voters": [
            {
                "voterId": 1,
                "voterDirectoryId": "AAAAAAAAAAAAAAAAAAAAAQ",
                "endpoints": [{"name": "CONTROLLER", "host": "localhost", "port": 9093}],
                "kRaftVersionFeature": {"minSupportedVersion": 0, "maxSupportedVersion": 1},
            }
        ],
    }


def test_kraft_version_json_and_dump_names() -> None:
    record = decode_control(*encode_control(KRaftVersionRecord(version=0, kraft_version=1)))
    assert to_json_dict(record.message, 0) == {"version": 0, "kRaftVersion": 1}
    names = {kind: decode_control(*encode_control(cls())).dump_name for kind, cls in WRITTEN}
    assert names == {
        ControlType.LEADER_CHANGE: "LEADER_CHANGE(2)",
        ControlType.SNAPSHOT_HEADER: "SnapshotHeader",
        ControlType.SNAPSHOT_FOOTER: "SnapshotFooter",
        ControlType.KRAFT_VERSION: "KRaftVersion",
        ControlType.KRAFT_VOTERS: "KRaftVoters",
    }


@pytest.mark.parametrize(("type_id", "kind"), [(0, ControlType.ABORT), (1, ControlType.COMMIT)])
def test_transaction_markers_decode(type_id: int, kind: ControlType) -> None:
    key = bytes([0, 0, 0, type_id])
    record = decode_control(key, b"\x00\x00\x00\x00\x00\x07")
    assert record.type is kind
    assert record.message == EndTxnMarker(version=0, coordinator_epoch=7)
    assert record.dump_name == f"{kind.name}({type_id})"
    # a newer marker version may carry more fields: Kafka reads it as v0
    newer = decode_control(key, b"\x00\x01\x00\x00\x00\x07\xaa\xbb")
    assert newer.message == EndTxnMarker(version=1, coordinator_epoch=7)
    with pytest.raises(ControlRecordError, match="trailing"):
        decode_control(key, b"\x00\x00\x00\x00\x00\x07\xaa")
    with pytest.raises(ControlRecordError, match="marker version -1"):
        decode_control(key, b"\xff\xff\x00\x00\x00\x07")
    with pytest.raises(ControlRecordError, match="truncated"):
        decode_control(key, b"\x00\x00\x00\x00")


def test_markers_are_not_encodable() -> None:
    with pytest.raises(TypeError, match="not a control record KRaft writes"):
        encode_control(EndTxnMarker())


def test_unknown_types_are_values_not_errors() -> None:
    record = decode_control(b"\x00\x00\x00\x63", b"whatever")
    assert record == ControlRecord(ControlType.UNKNOWN, 99, UnknownControlRecord(99, b"whatever"))
    assert record.dump_name == "UNKNOWN(99)"
    assert decode_control(b"\x00\x00\xff\xfe", None).type is ControlType.UNKNOWN
    # a newer key version is accepted, as Kafka does
    assert (
        decode_control(b"\x00\x01\x00\x04\x00", b"\x00\x00\x00").type is ControlType.SNAPSHOT_FOOTER
    )


@pytest.mark.parametrize(
    ("key", "value", "fragment"),
    [
        (None, b"", "at least 4 bytes, got null"),
        (b"\x00\x00\x00", b"", "got 3 bytes"),
        (b"\xff\xff\x00\x03", b"", "key version -1"),
        (b"\x00\x00\x00\x03", None, "SNAPSHOT_HEADER control record has a null value"),
        (b"\x00\x00\x00\x04", b"\x00\x00\x00\x00", "trailing"),
        (b"\x00\x00\x00\x05", b"\x00\x00\x00\x01\x01\x05\x03\x00", "truncated tagged field 5"),
    ],
)
def test_malformed_control_records(key: bytes | None, value: bytes | None, fragment: str) -> None:
    with pytest.raises(ControlRecordError, match=fragment):
        decode_control(key, value)


@pytest.mark.parametrize(("kind", "cls"), WRITTEN)
def test_every_truncation_raises_the_typed_error(kind: ControlType, cls: type) -> None:
    sample = {
        ControlType.LEADER_CHANGE: LeaderChangeMessage(0, 3, (LeaderChangeVoter(3),), ()),
        ControlType.SNAPSHOT_HEADER: SnapshotHeaderRecord(0, 1700000000000),
        ControlType.SNAPSHOT_FOOTER: SnapshotFooterRecord(0),
        ControlType.KRAFT_VERSION: KRaftVersionRecord(0, 1),
        ControlType.KRAFT_VOTERS: VotersRecord(
            0, (Voter(1, uuid.UUID(int=4), (VoterEndpoint("C", "h", 1),)),)
        ),
    }[kind]
    key, value = encode_control(sample)
    for cut in range(len(value)):
        with pytest.raises(ControlRecordError):
            decode_control(key, value[:cut])


@settings(max_examples=300)
@given(
    type_id=st.integers(0, 6),
    value=st.binary(max_size=40),
)
def test_arbitrary_values_only_raise_the_typed_error(type_id: int, value: bytes) -> None:
    with contextlib.suppress(ControlRecordError):
        decode_control(bytes([0, 0, 0, type_id]), value)


def test_control_key_layout() -> None:
    assert control_key(ControlType.KRAFT_VERSION) == b"\x00\x00\x00\x05"
