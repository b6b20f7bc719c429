"""Encode and decode Kafka's RPC messages as the generated classes of
:mod:`pykraft.messages.kafka`: bodies at a version, and request and response frames (without
their 4-byte size prefix) with their headers.

The rules are Kafka's: a request's header is v2 when its body is flexible, else v1; a
response's header is v1 when its body is flexible, else v0, except ApiVersions' which is
always v0 so a client can read it before it knows what the server speaks (KIP-511), and a
client reads an ApiVersions response that does not parse at the version it asked again as v0
(a server that lacks that version answers in v0). Bytes after a request's body are kept
(Kafka ignores them and librdkafka sends some); a response must end with its body.
Tagged fields the schema does not define are kept by every struct that reads them (its
``unknown_tagged_fields``, the top level's also in the frame) and written back, so a message
re-encodes byte for byte. Every length and count is checked before anything is allocated:
hostile bytes raise :class:`~pykraft.errors.MessageDecodeError`.
"""

from __future__ import annotations

import dataclasses
import importlib
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, TypeVar, cast

from pykraft.errors import MessageDecodeError, MessageEncodeError, UnsupportedVersionError
from pykraft.messages.codec import decode_from, encode, encode_into
from pykraft.messages.kafka import API_MESSAGES
from pykraft.messages.kafka.request_header import RequestHeader
from pykraft.messages.kafka.response_header import ResponseHeader
from pykraft.messages.schema import (
    UNKNOWN_TAGS,
    MessageSchema,
    TaggedField,
    schema_of,
    unknown_tags_of,
)

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

__all__ = [
    "RequestFrame",
    "RequestHeader",
    "ResponseFrame",
    "ResponseHeader",
    "TaggedField",
    "decode_body",
    "decode_request",
    "decode_response",
    "encode_body",
    "encode_request",
    "encode_response",
    "request_class",
    "request_header_version",
    "response_class",
    "response_header_version",
]

M = TypeVar("M")

API_VERSIONS_KEY = 18
_PREFIX = struct.Struct(">hhi")


@dataclass(frozen=True, slots=True)
class RequestFrame:
    """A decoded request: its header, body (the api's ``...Request`` class) and what
    re-encoding it byte for byte needs."""

    header: RequestHeader
    body: object
    #: Top-level tagged fields the schema does not define, raw and in wire order (the
    #: body's ``unknown_tagged_fields``).
    unknown_tags: tuple[TaggedField, ...] = ()
    #: Bytes after the body, kept (Kafka ignores them).
    trailing: bytes = b""

    @property
    def api_key(self) -> int:
        return self.header.request_api_key

    @property
    def api_version(self) -> int:
        return self.header.request_api_version


@dataclass(frozen=True, slots=True)
class ResponseFrame:
    """A decoded response; ``api_version`` is 0 when an ApiVersions answer was read as v0."""

    correlation_id: int
    api_key: int
    api_version: int
    body: object
    unknown_tags: tuple[TaggedField, ...] = ()


@cache
def _classes(api_key: int) -> tuple[type, type]:
    names = API_MESSAGES.get(api_key)
    if names is None:
        raise UnsupportedVersionError(f"unknown api key {api_key}", api_key=api_key)
    name, stem = names
    request = importlib.import_module(f"pykraft.messages.kafka.{stem}_request")
    response = importlib.import_module(f"pykraft.messages.kafka.{stem}_response")
    request_type: type = getattr(request, f"{name}Request")
    response_type: type = getattr(response, f"{name}Response")
    return request_type, response_type


def request_class(api_key: int) -> type:
    """The generated request class of an api (its module is imported on first use)."""
    return _classes(api_key)[0]


def response_class(api_key: int) -> type:
    """The generated response class of an api."""
    return _classes(api_key)[1]


def _schema_at(cls: type, api_key: int, version: int, correlation_id: int | None) -> MessageSchema:
    schema = schema_of(cls)
    if schema.valid_versions is None or version not in schema.valid_versions:
        raise UnsupportedVersionError(
            f"{schema.name} v{version} does not exist (versions {schema.valid_versions})",
            api_key=api_key,
            api_version=version,
            correlation_id=correlation_id,
        )
    return schema


def request_header_version(api_key: int, api_version: int) -> int:
    """Kafka's ``ApiMessageType.requestHeaderVersion``."""
    schema = _schema_at(request_class(api_key), api_key, api_version, None)
    return 2 if schema.is_flexible(api_version) else 1


def response_header_version(api_key: int, api_version: int) -> int:
    """Kafka's ``ApiMessageType.responseHeaderVersion`` (ApiVersions: always v0)."""
    schema = _schema_at(response_class(api_key), api_key, api_version, None)
    if api_key == API_VERSIONS_KEY:
        return 0
    return 1 if schema.is_flexible(api_version) else 0


# --- bodies ---------------------------------------------------------------------------------


def encode_body(
    body: object, version: int, unknown_tags: Sequence[TaggedField] = (), prefix: bytes = b""
) -> bytes:
    """``prefix`` then ``body`` at ``version``, its top-level TAG_BUFFER holding the body's
    own unknown tagged fields and ``unknown_tags`` (the same field twice is written once),
    by tag as Kafka orders them."""
    out = bytearray(prefix)
    encode_body_into(out, body, version, unknown_tags)
    return bytes(out)


def encode_body_into(
    out: bytearray, body: object, version: int, unknown_tags: Sequence[TaggedField] = ()
) -> None:
    """:func:`encode_body` appending to ``out``."""
    if unknown_tags:
        own = unknown_tags_of(body)
        merged = tuple(sorted({*own, *((tag, bytes(payload)) for tag, payload in unknown_tags)}))
        if merged != own:
            if not schema_of(type(body)).keeps_unknown_tags:
                raise MessageEncodeError(f"{type(body).__name__} has no tagged fields")
            changes = {UNKNOWN_TAGS: merged}
            body = dataclasses.replace(cast("DataclassInstance", body), **changes)
    encode_into(out, body, version)


def decode_body(
    cls: type[M], version: int, data: bytes, pos: int = 0, end: int | None = None
) -> tuple[M, tuple[TaggedField, ...], int]:
    """(message, its unknown top-level tagged fields, position after it) of ``cls`` at
    ``version`` in ``data[pos:end]``."""
    message, nxt = decode_from(cls, version, data, pos, end)
    return message, unknown_tags_of(message), nxt


# --- frames ---------------------------------------------------------------------------------


def decode_request(frame: bytes) -> RequestFrame:
    """Parse a request frame. An api or version Kafka does not define raises
    :class:`UnsupportedVersionError` carrying the correlation id; bad bytes raise
    :class:`MessageDecodeError`."""
    buf = frame if isinstance(frame, bytes) else bytes(frame)
    if len(buf) < _PREFIX.size:
        raise MessageDecodeError(f"request of {len(buf)} bytes has no header", position=0)
    api_key, api_version, correlation_id = _PREFIX.unpack_from(buf)
    if api_key not in API_MESSAGES:
        raise UnsupportedVersionError(
            f"unknown api key {api_key}",
            api_key=api_key,
            api_version=api_version,
            correlation_id=correlation_id,
        )
    cls = request_class(api_key)
    schema = _schema_at(cls, api_key, api_version, correlation_id)
    header_version = 2 if schema.is_flexible(api_version) else 1
    header, pos = decode_from(RequestHeader, header_version, buf)
    body: object
    body, unknown, pos = decode_body(cls, api_version, buf, pos)
    return RequestFrame(header, body, unknown, buf[pos:])


def encode_request(
    header: RequestHeader,
    body: object,
    unknown_tags: Sequence[TaggedField] = (),
    trailing: bytes = b"",
) -> bytes:
    """A request frame; ``body`` must be the request class of the header's api."""
    api_key, api_version = header.request_api_key, header.request_api_version
    _check_body(body, request_class(api_key))
    prefix = encode(header, request_header_version(api_key, api_version))
    return encode_body(body, api_version, unknown_tags, prefix) + trailing


def decode_response(api_key: int, api_version: int, frame: bytes) -> ResponseFrame:
    """Parse the response to a request we sent as ``api_key`` v``api_version``."""
    buf = frame if isinstance(frame, bytes) else bytes(frame)
    header, pos = decode_from(
        ResponseHeader, response_header_version(api_key, api_version), buf
    )
    cls = response_class(api_key)
    try:
        body, unknown = _whole_body(cls, api_version, buf, pos)
    except MessageDecodeError:
        if api_key != API_VERSIONS_KEY or api_version == 0:
            raise
        api_version = 0
        body, unknown = _whole_body(cls, 0, buf, pos)
    return ResponseFrame(header.correlation_id, api_key, api_version, body, unknown)


def _whole_body(
    cls: type, version: int, buf: bytes, pos: int
) -> tuple[object, tuple[TaggedField, ...]]:
    body: object
    body, unknown, end = decode_body(cls, version, buf, pos)
    if end != len(buf):
        raise MessageDecodeError(
            f"{cls.__name__} v{version}: {len(buf) - end} trailing byte(s)", position=end
        )
    return body, unknown


def encode_response(
    correlation_id: int,
    api_key: int,
    api_version: int,
    body: object,
    unknown_tags: Sequence[TaggedField] = (),
) -> bytes:
    """A response frame; ``body`` must be the response class of the api."""
    _check_body(body, response_class(api_key))
    header = encode(
        ResponseHeader(correlation_id), response_header_version(api_key, api_version)
    )
    return encode_body(body, api_version, unknown_tags, header)


def _check_body(body: object, expected: type) -> None:
    """Refuse a body of another api (a caller bug the bytes would not reveal)."""
    if type(body) is not expected:
        raise TypeError(f"{type(body).__name__} is not a {expected.__name__}")
