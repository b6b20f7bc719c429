"""KRaft metadata records (``metadata/src/main/resources/common/metadata/*.json``) and their
framing inside a record value.

Framing (Kafka's ``AbstractApiMessageSerde``): ``uvarint frameVersion (=1)``, ``uvarint
apiKey``, ``uvarint version``, then the message. Every record type is flexible from v0.
Field lists follow Kafka trunk (late 2024) in wire order; where a list was taken from a
schema file that may predate a release, or a later addition is not confirmed, a comment says so.
"""

# kafka_field() returns a dataclasses.Field, which ruff cannot see for uuid-typed fields:
# ruff: noqa: RUF009

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

from pykraft.errors import MessageDecodeError, MetadataRecordError
from pykraft.messages import (
    array,
    decode_from,
    encode,
    kafka_field,
    message,
    schema_of,
    to_json_dict,
)
from pykraft.messages.varint import encode_uvarint
from pykraft.messages.wire import FieldDecodeError, read_uvarint

FRAME_VERSION = 1
_SHORT_MAX = 0x7FFF


# --- 0 RegisterBrokerRecord --------------------------------------------------------------


@message()
@dataclass(frozen=True, slots=True)
class BrokerEndpoint:
    name: str = kafka_field("string")
    host: str = kafka_field("string")
    port: int = kafka_field("uint16")
    security_protocol: int = kafka_field("int16")


@message()
@dataclass(frozen=True, slots=True)
class BrokerFeature:
    name: str = kafka_field("string")
    min_supported_version: int = kafka_field("int16")
    max_supported_version: int = kafka_field("int16")


@message(versions="0-4", flexible="0+")
@dataclass(frozen=True, slots=True)
class RegisterBrokerRecord:
    broker_id: int = kafka_field("int32")
    is_migrating_zk_broker: bool = kafka_field("bool", versions="2+")  # 2nd on the wire
    incarnation_id: uuid.UUID = kafka_field("uuid")
    broker_epoch: int = kafka_field("int64")
    end_points: tuple[BrokerEndpoint, ...] = kafka_field(array(BrokerEndpoint))
    features: tuple[BrokerFeature, ...] = kafka_field(array(BrokerFeature))
    rack: str | None = kafka_field("string", nullable_versions="0+", default=None)
    fenced: bool = kafka_field("bool", default=True)
    in_controlled_shutdown: bool = kafka_field("bool", versions="1+")
    log_dirs: tuple[uuid.UUID, ...] = kafka_field(
        "[]uuid", versions="3+", tag=0, tagged_versions="3+"
    )
    # v4 (KIP-1066, Kafka 4.3): tag number 1 is UNVERIFIED (next free tag, as in
    # BrokerHeartbeatRequest v2); check against the released schema before relying on it.
    cordoned_log_dirs: tuple[uuid.UUID, ...] | None = kafka_field(
        "[]uuid", versions="4+", nullable_versions="4+", tag=1, tagged_versions="4+", default=None
    )


# --- 1 .. 9 --------------------------------------------------------------------------------


@message(versions="0", flexible="0+")
@dataclass(frozen=True, slots=True)
class UnregisterBrokerRecord:
    broker_id: int = kafka_field("int32")
    broker_epoch: int = kafka_field("int64")


@message(versions="0", flexible="0+")
@dataclass(frozen=True, slots=True)
class TopicRecord:
    name: str = kafka_field("string")
    topic_id: uuid.UUID = kafka_field("uuid")


@message(versions="0-2", flexible="0+")
@dataclass(frozen=True, slots=True)
class PartitionRecord:
    partition_id: int = kafka_field("int32", default=-1)
    topic_id: uuid.UUID = kafka_field("uuid")
    replicas: tuple[int, ...] = kafka_field("[]int32")
    isr: tuple[int, ...] = kafka_field("[]int32")
    removing_replicas: tuple[int, ...] = kafka_field("[]int32")
    adding_replicas: tuple[int, ...] = kafka_field("[]int32")
    leader: int = kafka_field("int32", default=-1)
    leader_recovery_state: int = kafka_field("int8", tag=0, tagged_versions="0+")
    leader_epoch: int = kafka_field("int32", default=-1)
    partition_epoch: int = kafka_field("int32", default=-1)
    directories: tuple[uuid.UUID, ...] = kafka_field("[]uuid", versions="1+")
    eligible_leader_replicas: tuple[int, ...] | None = kafka_field(
        "[]int32", versions="2+", nullable_versions="2+", tag=1, tagged_versions="2+", default=None
    )
    last_known_elr: tuple[int, ...] | None = kafka_field(
        "[]int32", versions="2+", nullable_versions="2+", tag=2, tagged_versions="2+", default=None
    )


@message(versions="0", flexible="0+")
@dataclass(frozen=True, slots=True)
class ConfigRecord:
    resource_type: int = kafka_field("int8")
    resource_name: str = kafka_field("string")
    name: str = kafka_field("string")
    value: str | None = kafka_field("string", nullable_versions="0+")


@message(versions="0-2", flexible="0+")
@dataclass(frozen=True, slots=True)
class PartitionChangeRecord:
    """Everything after the ids is tagged; a field at its default means "no change"."""

    partition_id: int = kafka_field("int32", default=-1)
    topic_id: uuid.UUID = kafka_field("uuid")
    isr: tuple[int, ...] | None = kafka_field(
        "[]int32", nullable_versions="0+", tag=0, tagged_versions="0+", default=None
    )
    leader: int = kafka_field("int32", tag=1, tagged_versions="0+", default=-2)  # -2 = unchanged
    replicas: tuple[int, ...] | None = kafka_field(
        "[]int32", nullable_versions="0+", tag=2, tagged_versions="0+", default=None
    )
    removing_replicas: tuple[int, ...] | None = kafka_field(
        "[]int32", nullable_versions="0+", tag=3, tagged_versions="0+", default=None
    )
    adding_replicas: tuple[int, ...] | None = kafka_field(
        "[]int32", nullable_versions="0+", tag=4, tagged_versions="0+", default=None
    )
    leader_recovery_state: int = kafka_field("int8", tag=5, tagged_versions="0+", default=-1)
    directories: tuple[uuid.UUID, ...] | None = kafka_field(
        "[]uuid", versions="1+", nullable_versions="1+", tag=8, tagged_versions="1+", default=None
    )
    eligible_leader_replicas: tuple[int, ...] | None = kafka_field(
        "[]int32", versions="2+", nullable_versions="2+", tag=6, tagged_versions="2+", default=None
    )
    last_known_elr: tuple[int, ...] | None = kafka_field(
        "[]int32", versions="2+", nullable_versions="2+", tag=7, tagged_versions="2+", default=None
    )


@message(versions="0", flexible="0+")
@dataclass(frozen=True, slots=True)
class FenceBrokerRecord:
    id: int = kafka_field("int32")
    epoch: int = kafka_field("int64")


@message(versions="0", flexible="0+")
@dataclass(frozen=True, slots=True)
class UnfenceBrokerRecord:
    id: int = kafka_field("int32")
    epoch: int = kafka_field("int64")


@message(versions="0", flexible="0+")
@dataclass(frozen=True, slots=True)
class RemoveTopicRecord:
    topic_id: uuid.UUID = kafka_field("uuid")


# --- 10 .. 15 ------------------------------------------------------------------------------


@message(versions="0", flexible="0+")
@dataclass(frozen=True, slots=True)
class DelegationTokenRecord:
    # Field list from the apache/kafka schema file (Owner/Requester form, Kafka 3.6+);
    # not cross-checked against a release.
    owner: str = kafka_field("string")
    requester: str = kafka_field("string")
    renewers: tuple[str, ...] = kafka_field("[]string")
    issue_timestamp: int = kafka_field("int64")
    max_timestamp: int = kafka_field("int64")
    expiration_timestamp: int = kafka_field("int64")
    token_id: str = kafka_field("string")


@message(versions="0", flexible="0+")
@dataclass(frozen=True, slots=True)
class UserScramCredentialRecord:
    # Released (3.5+) form with StoredKey/ServerKey; an earlier draft used CredentialInfos.
    # Taken from a Kafka fork's copy of the schema, so marked unverified.
    name: str = kafka_field("string")
    mechanism: int = kafka_field("int8")
    salt: bytes = kafka_field("bytes")
    stored_key: bytes = kafka_field("bytes")
    server_key: bytes = kafka_field("bytes")
    iterations: int = kafka_field("int32")


@message(versions="0", flexible="0+")
@dataclass(frozen=True, slots=True)
class FeatureLevelRecord:
    name: str = kafka_field("string")
    feature_level: int = kafka_field("int16")


@message()
@dataclass(frozen=True, slots=True)
class EntityData:
    entity_type: str = kafka_field("string")
    entity_name: str | None = kafka_field("string", nullable_versions="0+")


@message(versions="0", flexible="0+")
@dataclass(frozen=True, slots=True)
class ClientQuotaRecord:
    entity: tuple[EntityData, ...] = kafka_field(array(EntityData))
    key: str = kafka_field("string")
    value: float = kafka_field("float64")
    remove: bool = kafka_field("bool")


@message(versions="0", flexible="0+")
@dataclass(frozen=True, slots=True)
class ProducerIdsRecord:
    broker_id: int = kafka_field("int32")
    broker_epoch: int = kafka_field("int64", default=-1)
    next_producer_id: int = kafka_field("int64")


# --- 17 .. 27 ------------------------------------------------------------------------------


@message(versions="0-2", flexible="0+")
@dataclass(frozen=True, slots=True)
class BrokerRegistrationChangeRecord:
    broker_id: int = kafka_field("int32")
    broker_epoch: int = kafka_field("int64")
    fenced: int = kafka_field("int8", tag=0, tagged_versions="0+")  # -1 unfenced, 1 fenced
    in_controlled_shutdown: int = kafka_field("int8", versions="1+", tag=1, tagged_versions="1+")
    log_dirs: tuple[uuid.UUID, ...] = kafka_field(
        "[]uuid", versions="2+", tag=2, tagged_versions="2+"
    )


@message(versions="0", flexible="0+")
@dataclass(frozen=True, slots=True)
class AccessControlEntryRecord:
    id: uuid.UUID = kafka_field("uuid")
    resource_type: int = kafka_field("int8")
    resource_name: str = kafka_field("string")
    pattern_type: int = kafka_field("int8")
    principal: str = kafka_field("string")
    host: str = kafka_field("string")
    operation: int = kafka_field("int8")
    permission_type: int = kafka_field("int8")


@message(versions="0", flexible="0+")
@dataclass(frozen=True, slots=True)
class RemoveAccessControlEntryRecord:
    id: uuid.UUID = kafka_field("uuid")


@message(versions="0", flexible="0+")
@dataclass(frozen=True, slots=True)
class NoOpRecord:
    pass


@message(versions="0", flexible="0+")
@dataclass(frozen=True, slots=True)
class ZkMigrationStateRecord:
    zk_migration_state: int = kafka_field("int8")  # 0 None, 2 Pre, 1 Migration, 3 Post


@message(versions="0", flexible="0+")
@dataclass(frozen=True, slots=True)
class RemoveUserScramCredentialRecord:
    name: str = kafka_field("string")
    mechanism: int = kafka_field("int8")


@message(versions="0", flexible="0+")
@dataclass(frozen=True, slots=True)
class BeginTransactionRecord:
    name: str | None = kafka_field(
        "string", nullable_versions="0+", tag=0, tagged_versions="0+", default=None
    )


@message(versions="0", flexible="0+")
@dataclass(frozen=True, slots=True)
class EndTransactionRecord:
    pass


@message(versions="0", flexible="0+")
@dataclass(frozen=True, slots=True)
class AbortTransactionRecord:
    reason: str | None = kafka_field(
        "string", nullable_versions="0+", tag=0, tagged_versions="0+", default=None
    )


@message(versions="0", flexible="0+")
@dataclass(frozen=True, slots=True)
class RemoveDelegationTokenRecord:
    token_id: str = kafka_field("string")


@message()
@dataclass(frozen=True, slots=True)
class ControllerEndpoint:
    name: str = kafka_field("string")
    host: str = kafka_field("string")
    port: int = kafka_field("uint16")
    security_protocol: int = kafka_field("int16")


@message()
@dataclass(frozen=True, slots=True)
class ControllerFeature:
    name: str = kafka_field("string")
    min_supported_version: int = kafka_field("int16")
    max_supported_version: int = kafka_field("int16")


@message(versions="0", flexible="0+")
@dataclass(frozen=True, slots=True)
class RegisterControllerRecord:
    controller_id: int = kafka_field("int32")
    incarnation_id: uuid.UUID = kafka_field("uuid")
    zk_migration_ready: bool = kafka_field("bool")
    end_points: tuple[ControllerEndpoint, ...] = kafka_field(array(ControllerEndpoint))
    features: tuple[ControllerFeature, ...] = kafka_field(array(ControllerFeature))


# --- registry and framing ------------------------------------------------------------------

MetadataMessage = Any  # one of the record classes above

_TYPES: tuple[tuple[int, str, type], ...] = (
    (0, "REGISTER_BROKER_RECORD", RegisterBrokerRecord),
    (1, "UNREGISTER_BROKER_RECORD", UnregisterBrokerRecord),
    (2, "TOPIC_RECORD", TopicRecord),
    (3, "PARTITION_RECORD", PartitionRecord),
    (4, "CONFIG_RECORD", ConfigRecord),
    (5, "PARTITION_CHANGE_RECORD", PartitionChangeRecord),
    (7, "FENCE_BROKER_RECORD", FenceBrokerRecord),
    (8, "UNFENCE_BROKER_RECORD", UnfenceBrokerRecord),
    (9, "REMOVE_TOPIC_RECORD", RemoveTopicRecord),
    (10, "DELEGATION_TOKEN_RECORD", DelegationTokenRecord),
    (11, "USER_SCRAM_CREDENTIAL_RECORD", UserScramCredentialRecord),
    (12, "FEATURE_LEVEL_RECORD", FeatureLevelRecord),
    (14, "CLIENT_QUOTA_RECORD", ClientQuotaRecord),
    (15, "PRODUCER_IDS_RECORD", ProducerIdsRecord),
    (17, "BROKER_REGISTRATION_CHANGE_RECORD", BrokerRegistrationChangeRecord),
    (18, "ACCESS_CONTROL_ENTRY_RECORD", AccessControlEntryRecord),
    (19, "REMOVE_ACCESS_CONTROL_ENTRY_RECORD", RemoveAccessControlEntryRecord),
    (20, "NO_OP_RECORD", NoOpRecord),
    (21, "ZK_MIGRATION_STATE_RECORD", ZkMigrationStateRecord),
    (22, "REMOVE_USER_SCRAM_CREDENTIAL_RECORD", RemoveUserScramCredentialRecord),
    (23, "BEGIN_TRANSACTION_RECORD", BeginTransactionRecord),
    (24, "END_TRANSACTION_RECORD", EndTransactionRecord),
    (25, "ABORT_TRANSACTION_RECORD", AbortTransactionRecord),
    (26, "REMOVE_DELEGATION_TOKEN_RECORD", RemoveDelegationTokenRecord),
    (27, "REGISTER_CONTROLLER_RECORD", RegisterControllerRecord),
)

METADATA_RECORD_TYPES: Mapping[int, type] = {key: cls for key, _, cls in _TYPES}
"""Api key -> record class (keys 6, 13 and 16 are retired or unused in Kafka)."""
METADATA_RECORD_NAMES: Mapping[int, str] = {key: name for key, name, _ in _TYPES}
"""Api key -> Kafka's ``MetadataRecordType`` enum name, as dump-log prints it."""
_API_KEYS: Mapping[type, int] = {cls: key for key, _, cls in _TYPES}


@dataclass(frozen=True, slots=True)
class MetadataRecord:
    """A decoded metadata record value: its type, the version it was written at, the body."""

    api_key: int
    version: int
    message: MetadataMessage

    @property
    def type_name(self) -> str:
        return METADATA_RECORD_NAMES[self.api_key]

    def to_json_dict(self) -> dict[str, Any]:
        """Dump-log's payload form: ``{"type": ..., "version": ..., "data": {...}}``."""
        return {
            "type": self.type_name,
            "version": self.version,
            "data": to_json_dict(self.message, self.version),
        }


def api_key_of(record_class: type) -> int:
    """The metadata api key of a record class."""
    try:
        return _API_KEYS[record_class]
    except KeyError:
        raise TypeError(f"{record_class.__name__} is not a metadata record type") from None


_PREFIXES: dict[tuple[type, int | None], tuple[bytes, int]] = {}


def _frame_prefix(record_class: type, version: int | None) -> tuple[bytes, int]:
    """(frame version + api key + version bytes, version) of a record class, computed once."""
    cached = _PREFIXES.get((record_class, version))
    if cached is None:
        api_key = api_key_of(record_class)
        resolved = schema_of(record_class).highest_version if version is None else version
        prefix = encode_uvarint(FRAME_VERSION) + encode_uvarint(api_key)
        cached = prefix + encode_uvarint(resolved), resolved
        _PREFIXES[(record_class, version)] = cached
    return cached


def encode_metadata_record(msg: MetadataMessage, version: int | None = None) -> bytes:
    """Frame and serialize a record; ``version`` defaults to the highest the type has."""
    prefix, version = _frame_prefix(type(msg), version)
    return prefix + encode(msg, version)


@cache
def _known_frame(api_key: int, version: int) -> tuple[type, str] | None:
    """(class, name) when (api key, version) is a record pykraft knows, else None."""
    record_class = METADATA_RECORD_TYPES.get(api_key)
    if record_class is None:
        return None
    valid = schema_of(record_class).valid_versions
    if valid is None or version not in valid:
        return None
    return record_class, METADATA_RECORD_NAMES[api_key]


def decode_metadata_record(value: bytes | bytearray | memoryview) -> MetadataRecord:
    """Parse a record value; any problem raises :class:`MetadataRecordError` naming it."""
    buf = value if isinstance(value, bytes) else bytes(value)
    # Fast path: the three frame fields are one byte each for every record Kafka defines.
    if len(buf) >= 3 and buf[0] == FRAME_VERSION and buf[1] < 0x80 and buf[2] < 0x80:
        known = _known_frame(buf[1], buf[2])
        if known is not None:
            return _decode_body(buf, buf[1], buf[2], 3, *known)
    pos = 0
    frame_version, pos = _read_short(buf, pos, "frame version")
    if frame_version == 0:
        raise MetadataRecordError(
            "could not deserialize metadata record with frame version 0: upgrades from the "
            "preview release of KRaft in Kafka 2.8 are not supported",
            position=0,
        )
    if frame_version != FRAME_VERSION:
        raise MetadataRecordError(
            f"unknown metadata record frame version {frame_version} "
            f"(only frame version {FRAME_VERSION} is supported)",
            position=0,
        )
    api_key, pos = _read_short(buf, pos, "api key")
    version, pos = _read_short(buf, pos, "version")
    record_class = METADATA_RECORD_TYPES.get(api_key)
    if record_class is None:
        raise MetadataRecordError(f"unknown metadata record api key {api_key}", position=pos)
    valid = schema_of(record_class).valid_versions
    if valid is None or version not in valid:
        raise MetadataRecordError(
            f"unsupported version {version} of {METADATA_RECORD_NAMES[api_key]} "
            f"(api key {api_key}, valid versions {valid})",
            position=pos,
        )
    return _decode_body(buf, api_key, version, pos, record_class, METADATA_RECORD_NAMES[api_key])


def _decode_body(
    buf: bytes, api_key: int, version: int, pos: int, record_class: type, name: str
) -> MetadataRecord:
    body: MetadataMessage
    try:
        body, end = decode_from(record_class, version, buf, pos)
    except MessageDecodeError as exc:
        raise MetadataRecordError(f"invalid {name}: {exc}", position=exc.position) from exc
    if end != len(buf):
        raise MetadataRecordError(
            f"found {len(buf) - end} byte(s) of garbage after {name} v{version}", position=end
        )
    return MetadataRecord(api_key, version, body)


def _read_short(buf: bytes, pos: int, what: str) -> tuple[int, int]:
    """A frame field: unsigned varint that must fit in a Java short."""
    try:
        value, nxt = read_uvarint(buf, pos, len(buf))
    except FieldDecodeError as exc:
        raise MetadataRecordError(f"invalid {what}: {exc.reason}", position=pos) from None
    if value > _SHORT_MAX:
        raise MetadataRecordError(f"{what} {value} is too large", position=pos)
    return value, nxt
