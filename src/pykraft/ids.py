"""Kafka's identifiers: UUIDs (16 bytes on the wire, URL-safe base64 without padding as
text), the reserved topics' names, and a partition's (topic, partition).

Kafka reserves the zero UUID ("no id") and the one UUID (the metadata topic id), and never
hands out a random id whose text starts with ``-`` (it would read as a CLI flag).
"""

from __future__ import annotations

import base64
import binascii
import uuid
from collections.abc import Callable
from typing import NamedTuple

from pykraft.errors import PyKraftError

ZERO_UUID = uuid.UUID(int=0)
ONE_UUID = uuid.UUID(int=1)
METADATA_TOPIC_ID = ONE_UUID
METADATA_TOPIC_NAME = "__cluster_metadata"
OFFSETS_TOPIC_NAME = "__consumer_offsets"
#: A producer epoch is an int16: the coordinator stops bumping it here.
MAX_PRODUCER_EPOCH = 32767
#: Kafka's ``Topic.INTERNAL_TOPICS``: shown as internal, never matched by a regex subscription,
#: never auto-created, written only by the broker or an admin client.
TRANSACTION_STATE_TOPIC_NAME = "__transaction_state"
INTERNAL_TOPICS = frozenset({OFFSETS_TOPIC_NAME, TRANSACTION_STATE_TOPIC_NAME,
                             "__share_group_state"})


class TopicPartition(NamedTuple):
    """Kafka's ``TopicPartition``: which partition of which topic (a plain tuple to compare
    and hash, so ``(topic, partition)`` finds the same dict entry)."""

    topic: str
    partition: int


class InvalidUuidError(PyKraftError, ValueError):
    """Text that is not a 22-character Kafka base64 UUID."""


def uuid_to_str(value: uuid.UUID) -> str:
    """Kafka's text form of a UUID (``Uuid.toString``)."""
    return base64.urlsafe_b64encode(value.bytes).decode("ascii").rstrip("=")


def uuid_from_str(text: str) -> uuid.UUID:
    """Parse Kafka's text form; raises :class:`InvalidUuidError` with the offending text."""
    if len(text) != 22:
        raise InvalidUuidError(f"invalid Kafka UUID {text!r}: expected 22 base64 characters")
    try:
        raw = base64.urlsafe_b64decode(text + "==")
    except (binascii.Error, ValueError) as exc:
        raise InvalidUuidError(f"invalid Kafka UUID {text!r}: {exc}") from None
    if len(raw) != 16 or uuid_to_str(uuid.UUID(bytes=raw)) != text:
        raise InvalidUuidError(f"invalid Kafka UUID {text!r}: not a canonical encoding")
    return uuid.UUID(bytes=raw)


def random_uuid(source: Callable[[], uuid.UUID] = uuid.uuid4) -> uuid.UUID:
    """A random UUID that Kafka would also accept as freshly generated (``Uuid.randomUuid``)."""
    while True:
        candidate = source()
        if candidate in (ZERO_UUID, ONE_UUID) or uuid_to_str(candidate).startswith("-"):
            continue
        return candidate
