"""``dump-log --offsets-decoder``: a ``__consumer_offsets`` record as Kafka's
``DumpLogSegments.OffsetsMessageParser`` prints it.

The key is ``{"type": "<key version>", "data": {...}}``, the value
``{"version": "<value version>", "data": {...}}`` or ``<DELETE>`` for a tombstone, both as
Kafka's generated JSON converters write them. A classic consumer group's member
subscriptions and assignments are shown decoded, as Kafka shows them. A record that cannot
be read is named in the key with no payload, and the dump goes on.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pykraft.errors import CorruptRecordError, PyKraftError
from pykraft.group.consumer_records import decode_consumer_record
from pykraft.group.outcome import OffsetsRecord
from pykraft.group.records import GroupMetadataValue, OffsetsValue, decode_key, decode_value
from pykraft.group.subscriptions import read_consumer_protocol
from pykraft.messages import schema_of, to_json_dict
from pykraft.messages.kafka.consumer_protocol_assignment import ConsumerProtocolAssignment
from pykraft.messages.kafka.consumer_protocol_subscription import ConsumerProtocolSubscription
from pykraft.records.batch import Record

Decoded = Callable[[bytes, bytes | None, int], dict[str, Any]]
"""A coordinator topic's (key, value, offset) as dump-log prints them."""


def offsets_contents(record: Record) -> dict[str, Any]:
    """The ``key`` and ``payload`` dump-log prints for ``record``."""
    return coordinator_contents(record, _decoded)


def coordinator_contents(record: Record, decoded: Decoded) -> dict[str, Any]:
    """A coordinator record's ``key`` and ``payload`` (Kafka's
    ``CoordinatorRecordMessageParser``): a record without key is an error, one that does
    not decode is named in the key and the dump goes on."""
    if record.key is None:
        raise CorruptRecordError(
            f"Failed to decode message at offset {record.offset} using the specified decoder "
            "(message had a missing key)"
        )
    try:
        return decoded(record.key, record.value, record.offset)
    except PyKraftError as exc:
        return {"key": f"Error at offset {record.offset}, skipping. {exc}"}


def _decoded(key_bytes: bytes, value_bytes: bytes | None, offset: int) -> dict[str, Any]:
    decoded = decode_key(key_bytes)
    if decoded is not None:
        key_version, key = decoded
        contents: dict[str, Any] = {"key": typed(key_version, to_json_dict(key, 0))}
        if value_bytes is None:
            return contents | {"payload": "<DELETE>"}
        version, value = decode_value(key, value_bytes)
        return contents | {"payload": versioned(version, _classic_value_json(value, version))}
    kind = int.from_bytes(key_bytes[:2], "big", signed=True)
    consumer = decode_consumer_record(OffsetsRecord(key_bytes, value_bytes))
    if consumer is None:
        return {"key": f"Unknown record type {kind} at offset {offset}, skipping."}
    consumer_key, consumer_value = consumer
    contents = {"key": typed(kind, to_json_dict(consumer_key, kind))}
    if consumer_value is None:
        return contents | {"payload": "<DELETE>"}
    return contents | {"payload": versioned(0, to_json_dict(consumer_value, 0))}


def typed(kind: int, data: dict[str, Any]) -> dict[str, Any]:
    """A key's JSON: its record type and its fields."""
    return {"type": str(kind), "data": data}


def versioned(version: int, data: dict[str, Any]) -> dict[str, Any]:
    """A value's JSON: its version and its fields."""
    return {"version": str(version), "data": data}


def _classic_value_json(value: OffsetsValue, version: int) -> dict[str, Any]:
    """The value's JSON; a consumer group's member subscriptions and assignments decoded
    (kept as base64 when they do not parse)."""
    data = to_json_dict(value, version)
    if isinstance(value, GroupMetadataValue) and value.protocol_type == "consumer":
        for member, shown in zip(value.members, data["members"], strict=True):
            _decoded_field(shown, "subscription", ConsumerProtocolSubscription, member.subscription)
            _decoded_field(shown, "assignment", ConsumerProtocolAssignment, member.assignment)
    return data


def _decoded_field(
    shown: dict[str, Any],
    name: str,
    kind: type[ConsumerProtocolSubscription] | type[ConsumerProtocolAssignment],
    data: bytes,
) -> None:
    try:
        version, message = read_consumer_protocol(kind, data)
    except PyKraftError:
        return
    shown[name] = to_json_dict(message, min(version, schema_of(kind).highest_version))
