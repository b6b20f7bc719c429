"""Reading the consumer protocol's subscription and assignment, as Java consumers encode them
inside a classic group's member metadata (Kafka's ``ConsumerProtocolSubscription`` and
``ConsumerProtocolAssignment``, the generated classes of :mod:`pykraft.messages.kafka`).

The coordinator itself treats these as opaque bytes; tools read them to print which topics
a member subscribes to and which partitions it owns. Both start with an ``int16`` version;
a version newer than the highest known is read with the highest's layout, ignoring what
follows, as Kafka's ``ConsumerProtocol`` does.
"""

from __future__ import annotations

import struct
from typing import TypeVar

from pykraft.errors import MessageDecodeError
from pykraft.messages import decode_from, schema_of

_VERSION = struct.Struct(">h")

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
