"""Framing of KRaft metadata records inside a record value, and the registry by api key.

Framing (Kafka's ``AbstractApiMessageSerde``): ``uvarint frameVersion (=1)``, ``uvarint
apiKey``, ``uvarint version``, then the message. The record classes themselves are generated
from Kafka's schemas into :mod:`pykraft.records.metadata_records` and re-exported here, so
callers import every metadata record name from this one module.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

from pykraft.errors import MessageDecodeError, MetadataRecordError
from pykraft.messages import decode_from, encode, schema_of, to_json_dict
from pykraft.messages.varint import encode_uvarint
from pykraft.messages.wire import FieldDecodeError, read_uvarint
from pykraft.records.metadata_records import *  # noqa: F403  (re-exports the record classes)
from pykraft.records.metadata_records import RECORD_CLASSES

FRAME_VERSION = 1
_SHORT_MAX = 0x7FFF


# --- registry and framing ------------------------------------------------------------------

MetadataMessage = Any  # one of the generated record classes

METADATA_RECORD_TYPES: Mapping[int, type] = {key: cls for key, _, cls in RECORD_CLASSES}
"""Api key -> record class (keys 6, 13 and 16 are retired or unused in Kafka)."""
METADATA_RECORD_NAMES: Mapping[int, str] = {key: name for key, name, _ in RECORD_CLASSES}
"""Api key -> Kafka's ``MetadataRecordType`` enum name, as dump-log prints it."""
_API_KEYS: Mapping[type, int] = {cls: key for key, _, cls in RECORD_CLASSES}


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
