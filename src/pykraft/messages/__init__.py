"""Kafka schema messages: declare them as dataclasses, encode/decode them by version.

See :mod:`pykraft.messages.schema` for how a message is declared and
:mod:`pykraft.messages.codec` for the wire rules (classic vs compact encodings, tagged fields,
strict decoding that keeps or skips only unknown tags).
"""

from pykraft.messages.codec import decode, decode_from, encode
from pykraft.messages.jsonview import to_json_dict
from pykraft.messages.schema import (
    MessageSchema,
    TaggedField,
    array,
    kafka_field,
    message,
    schema_of,
    unknown_tags,
)
from pykraft.messages.versions import Versions

__all__ = [
    "MessageSchema",
    "TaggedField",
    "Versions",
    "array",
    "decode",
    "decode_from",
    "encode",
    "kafka_field",
    "message",
    "schema_of",
    "to_json_dict",
    "unknown_tags",
]
