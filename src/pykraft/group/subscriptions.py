"""The consumer protocol's subscription and assignment, as Java consumers encode them inside
a classic group's member metadata (``clients/src/main/resources/common/message/
ConsumerProtocolSubscription.json`` and ``ConsumerProtocolAssignment.json``).

The coordinator itself treats these as opaque bytes; tools read them to print which topics
a member subscribes to and which partitions it owns. Both start with an ``int16`` version;
a version newer than the highest known is read with the highest's layout, ignoring what
follows, as Kafka's ``ConsumerProtocol`` does.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import TypeVar

from pykraft.errors import MessageDecodeError
from pykraft.messages import array, decode_from, kafka_field, message, schema_of

_VERSION = struct.Struct(">h")


@message()
@dataclass(frozen=True, slots=True)
class ConsumerTopicPartitions:
    """One topic and some of its partitions."""

    topic: str = kafka_field("string")
    partitions: tuple[int, ...] = kafka_field("[]int32")


@message(versions="0-3")
@dataclass(frozen=True, slots=True)
class ConsumerProtocolSubscription:
    topics: tuple[str, ...] = kafka_field("[]string")
    user_data: bytes | None = kafka_field("bytes", nullable_versions="0+", default=None)
    owned_partitions: tuple[ConsumerTopicPartitions, ...] = kafka_field(
        array(ConsumerTopicPartitions), versions="1+"
    )
    generation_id: int = kafka_field("int32", versions="2+", default=-1)
    rack_id: str | None = kafka_field("string", versions="3+", nullable_versions="3+", default=None)


@message(versions="0-3")
@dataclass(frozen=True, slots=True)
class ConsumerProtocolAssignment:
    assigned_partitions: tuple[ConsumerTopicPartitions, ...] = kafka_field(
        array(ConsumerTopicPartitions)
    )
    user_data: bytes | None = kafka_field("bytes", nullable_versions="0+", default=None)


M = TypeVar("M")


def read_consumer_protocol(cls: type[M], data: bytes) -> tuple[int, M]:
    """(version as written, message) of a version-prefixed subscription or assignment;
    malformed bytes raise :class:`~pykraft.errors.MessageDecodeError`."""
    if len(data) < _VERSION.size:
        raise MessageDecodeError(f"{cls.__name__} needs an int16 version", position=0)
    (version,) = _VERSION.unpack_from(data)
    if version < 0:
        raise MessageDecodeError(f"unsupported {cls.__name__} version {version}", position=0)
    readable = min(version, schema_of(cls).highest_version)
    return version, decode_from(cls, readable, bytes(data), _VERSION.size)[0]
