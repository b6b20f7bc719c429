"""Control records: the non-data records of control batches (attribute bit 5).

Key = ``int16 version (0)`` + ``int16 type``. Value = the type's schema message at its
"current" version with **no** version prefix (the first field of the KRaft schemas is a data
field named ``Version``). Readers of unknown types must skip them, so decoding an unknown
type yields an :class:`UnknownControlRecord` rather than an error. The transaction markers
(ABORT/COMMIT) are never written by KRaft and are decoded only.
"""

# kafka_field() returns a dataclasses.Field, which ruff cannot see for uuid-typed fields:
# ruff: noqa: RUF009

from __future__ import annotations

import struct
import uuid
from dataclasses import dataclass
from enum import IntEnum
from typing import Any

from pykraft.errors import ControlRecordError, MessageDecodeError
from pykraft.messages import array, decode, decode_from, encode, kafka_field, message

CONTROL_KEY_VERSION = 0
_KEY = struct.Struct(">hh")


class ControlType(IntEnum):
    """Kafka's ``ControlRecordType`` ids."""

    UNKNOWN = -1
    ABORT = 0
    COMMIT = 1
    LEADER_CHANGE = 2
    SNAPSHOT_HEADER = 3
    SNAPSHOT_FOOTER = 4
    KRAFT_VERSION = 5
    KRAFT_VOTERS = 6


# --- value schemas (clients/src/main/resources/common/message) -----------------------------


@message()
@dataclass(frozen=True, slots=True)
class LeaderChangeVoter:
    voter_id: int = kafka_field("int32")
    voter_directory_id: uuid.UUID = kafka_field("uuid", versions="1+")


@message(versions="0-1", flexible="0+")
@dataclass(frozen=True, slots=True)
class LeaderChangeMessage:
    version: int = kafka_field("int16")
    leader_id: int = kafka_field("int32")
    voters: tuple[LeaderChangeVoter, ...] = kafka_field(array(LeaderChangeVoter))
    granting_voters: tuple[LeaderChangeVoter, ...] = kafka_field(array(LeaderChangeVoter))


@message(versions="0", flexible="0+")
@dataclass(frozen=True, slots=True)
class SnapshotHeaderRecord:
    version: int = kafka_field("int16")
    last_contained_log_timestamp: int = kafka_field("int64")


@message(versions="0", flexible="0+")
@dataclass(frozen=True, slots=True)
class SnapshotFooterRecord:
    version: int = kafka_field("int16")


@message(versions="0", flexible="0+")
@dataclass(frozen=True, slots=True)
class KRaftVersionRecord:
    version: int = kafka_field("int16")
    kraft_version: int = kafka_field("int16", name="KRaftVersion")


@message()
@dataclass(frozen=True, slots=True)
class VoterEndpoint:
    name: str = kafka_field("string")
    host: str = kafka_field("string")
    port: int = kafka_field("uint16")


@message()
@dataclass(frozen=True, slots=True)
class KRaftVersionFeature:
    min_supported_version: int = kafka_field("int16")
    max_supported_version: int = kafka_field("int16")


@message()
@dataclass(frozen=True, slots=True)
class Voter:
    voter_id: int = kafka_field("int32")
    voter_directory_id: uuid.UUID = kafka_field("uuid")
    endpoints: tuple[VoterEndpoint, ...] = kafka_field(array(VoterEndpoint))
    kraft_version_feature: KRaftVersionFeature = kafka_field(
        KRaftVersionFeature, name="KRaftVersionFeature"
    )


@message(versions="0", flexible="0+")
@dataclass(frozen=True, slots=True)
class VotersRecord:
    version: int = kafka_field("int16")
    voters: tuple[Voter, ...] = kafka_field(array(Voter))


@message(versions="0")
@dataclass(frozen=True, slots=True)
class EndTxnMarker:
    """ABORT/COMMIT value: classic ``int16 version, int32 coordinatorEpoch``."""

    version: int = kafka_field("int16")
    coordinator_epoch: int = kafka_field("int32")


@dataclass(frozen=True, slots=True)
class UnknownControlRecord:
    """A control record of a type this implementation does not know; kept raw."""

    type_id: int
    value: bytes | None


ControlMessage = (
    LeaderChangeMessage
    | SnapshotHeaderRecord
    | SnapshotFooterRecord
    | KRaftVersionRecord
    | VotersRecord
    | EndTxnMarker
    | UnknownControlRecord
)

# type -> (value class, version written and read)
_WRITTEN: dict[ControlType, tuple[type, int]] = {
    ControlType.LEADER_CHANGE: (LeaderChangeMessage, 0),  # v1 exists; Kafka writes v0
    ControlType.SNAPSHOT_HEADER: (SnapshotHeaderRecord, 0),
    ControlType.SNAPSHOT_FOOTER: (SnapshotFooterRecord, 0),
    ControlType.KRAFT_VERSION: (KRaftVersionRecord, 0),
    ControlType.KRAFT_VOTERS: (VotersRecord, 0),
}
_TYPE_OF: dict[type, ControlType] = {cls: kind for kind, (cls, _) in _WRITTEN.items()}
# What DumpLogSegments prints before the JSON value of the types it decodes.
_DUMP_NAMES = {
    ControlType.SNAPSHOT_HEADER: "SnapshotHeader",
    ControlType.SNAPSHOT_FOOTER: "SnapshotFooter",
    ControlType.KRAFT_VERSION: "KRaftVersion",
    ControlType.KRAFT_VOTERS: "KRaftVoters",
}


@dataclass(frozen=True, slots=True)
class ControlRecord:
    """A decoded control record: its type (``UNKNOWN`` keeps the raw id) and value."""

    type: ControlType
    type_id: int
    message: ControlMessage

    @property
    def dump_name(self) -> str:
        """Kafka's dump-log label: ``SnapshotHeader`` ... or ``LEADER_CHANGE(2)``."""
        return _DUMP_NAMES.get(self.type, f"{self.type.name}({self.type_id})")

    @property
    def version(self) -> int:
        """Schema version the value was read at (0 for unknown types)."""
        written = _WRITTEN.get(self.type)
        return written[1] if written else 0


def control_key(kind: ControlType) -> bytes:
    """The 4-byte key of a control record of ``kind``."""
    return _KEY.pack(CONTROL_KEY_VERSION, kind)


def encode_control(msg: Any) -> tuple[bytes, bytes]:
    """(key, value) of a KRaft control record, value at the version Kafka writes."""
    kind = _TYPE_OF.get(type(msg))
    if kind is None:
        raise TypeError(f"{type(msg).__name__} is not a control record KRaft writes")
    return control_key(kind), encode(msg, _WRITTEN[kind][1])


def decode_control(key: bytes | None, value: bytes | None) -> ControlRecord:
    """Parse a control record; malformed known types raise :class:`ControlRecordError`."""
    if key is None or len(key) < _KEY.size:
        size = "null" if key is None else f"{len(key)} bytes"
        raise ControlRecordError(f"control record key must have at least 4 bytes, got {size}")
    key_version, type_id = _KEY.unpack_from(key, 0)
    if key_version < 0:
        raise ControlRecordError(f"invalid control record key version {key_version}")
    try:
        kind = ControlType(type_id)
    except ValueError:
        kind = ControlType.UNKNOWN
    if kind is ControlType.UNKNOWN:
        return ControlRecord(kind, type_id, UnknownControlRecord(type_id, value))
    if value is None:
        raise ControlRecordError(f"{kind.name} control record has a null value")
    try:
        if kind in (ControlType.ABORT, ControlType.COMMIT):
            return ControlRecord(kind, type_id, _decode_end_txn_marker(value))
        cls, version = _WRITTEN[kind]
        return ControlRecord(kind, type_id, decode(cls, version, value))
    except MessageDecodeError as exc:
        raise ControlRecordError(
            f"invalid {kind.name} control record: {exc}", position=exc.position
        ) from exc


def _decode_end_txn_marker(value: bytes) -> EndTxnMarker:
    """Kafka reads newer marker versions as v0 and ignores what follows; v0 must be exact."""
    marker, end = decode_from(EndTxnMarker, 0, bytes(value))
    if marker.version < 0:
        raise ControlRecordError(f"invalid end transaction marker version {marker.version}")
    if marker.version == 0 and end != len(value):
        raise ControlRecordError(
            f"{len(value) - end} trailing byte(s) after a v0 end transaction marker",
            position=end,
        )
    return marker
