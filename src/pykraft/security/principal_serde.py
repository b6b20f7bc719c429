"""Kafka's principal serde: how a broker names a client's principal inside an Envelope.

Kafka's ``DefaultKafkaPrincipalBuilder`` writes a principal as a version-prefixed
``DefaultPrincipalData`` (an int16 version, then the flexible v0 body: type, name,
token_authenticated); the controller reads it back to authorize the forwarded request as
the client, not as the broker that forwarded it.
"""

from __future__ import annotations

import struct

from pykraft.errors import PyKraftError
from pykraft.messages import decode_from, encode
from pykraft.messages.kafka.default_principal_data import DefaultPrincipalData
from pykraft.security.session import KafkaPrincipal

PRINCIPAL_DATA_VERSION = 0
_VERSION = struct.Struct(">h")


class PrincipalDeserializationError(PyKraftError):
    """The bytes are not a principal Kafka's serde wrote (PRINCIPAL_DESERIALIZATION_FAILURE)."""


def serialize_principal(principal: KafkaPrincipal) -> bytes:
    """``principal`` as Kafka's ``DefaultKafkaPrincipalBuilder.serialize`` writes it."""
    data = DefaultPrincipalData(type=principal.principal_type, name=principal.name,
                                token_authenticated=principal.token_authenticated)
    return encode(data, PRINCIPAL_DATA_VERSION, _VERSION.pack(PRINCIPAL_DATA_VERSION))


def deserialize_principal(raw: bytes | None) -> KafkaPrincipal:
    """The principal ``raw`` names; raises :class:`PrincipalDeserializationError` for a
    null, a version other than 0 or bytes that do not parse, as Kafka's serde does (bytes
    after the principal are ignored, as Kafka's reader leaves them)."""
    if raw is None or len(raw) < _VERSION.size:
        raise PrincipalDeserializationError("no principal data in the envelope")
    (version,) = _VERSION.unpack_from(raw)
    if version != PRINCIPAL_DATA_VERSION:
        raise PrincipalDeserializationError(f"Invalid principal data version {version}")
    try:
        data, _ = decode_from(DefaultPrincipalData, version, raw, _VERSION.size)
    except PyKraftError as exc:
        raise PrincipalDeserializationError(f"unreadable principal data: {exc}") from None
    return KafkaPrincipal(data.type, data.name, data.token_authenticated)
