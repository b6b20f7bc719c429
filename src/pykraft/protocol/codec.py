"""Request/response codec: header + message body, without the 4-byte size prefix.

``decode_*`` take a frame as :class:`~pykraft.protocol.frame.FrameDecoder` yields it;
``encode_*`` return bytes for :func:`~pykraft.protocol.frame.encode_frame`. Bodies are the
generated classes of :mod:`pykraft.messages.kafka` (one class for every version, coded by
:mod:`pykraft.messages.rpc`); headers are this package's. What this adds to
:mod:`pykraft.messages.rpc`: pykraft's API table (a version Kafka defines but pykraft does
not serve is refused) and its typed errors for every malformed input.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any, TypeVar

from pykraft.errors import MalformedMessageError, UnsupportedVersionError
from pykraft.messages import rpc
from pykraft.messages.rpc import TaggedField
from pykraft.protocol.apis import API_SPECS, ApiKey, ApiSpec, api_spec
from pykraft.protocol.cursor import Reader
from pykraft.protocol.header import (
    RequestHeader,
    encode_request_header,
    encode_response_header,
    read_request_header_rest,
    read_request_prefix,
    read_response_header,
    request_header_version,
    response_header_version,
)
from pykraft.protocol.version_fit import fitted

Body = object
"""A request or response body: an instance of a generated class of
:mod:`pykraft.messages.kafka` (``object``, as :mod:`pykraft.messages.rpc` types them: they
share no base class; :func:`api_key_of` tells which API one is)."""

DecodedBody = Any
"""A decoded response frame's body: a :data:`Body`, left ``Any`` for the clients that read
answers by attribute (a request frame's body is typed: :meth:`RequestFrame.body_as`)."""

_Request = TypeVar("_Request")


@dataclass(frozen=True, slots=True)
class RequestFrame:
    """A decoded request: ``body`` is the generated class of its API (one for every version),
    which a handler routed by ``api_key`` takes with :meth:`body_as`."""

    header: RequestHeader
    body: object
    api_key: int
    api_version: int
    #: Top-level tagged fields no schema defines; kept so the request re-encodes identically.
    unknown_tags: tuple[TaggedField, ...] = ()
    #: Bytes after the body. Kafka ignores them, and librdkafka 2.16 sends some (Metadata
    #: v13 "all topics" ends with 3 extra bytes), so they are accepted and kept.
    trailing: bytes = b""
    #: The frame's length (header and body, without its size prefix): Kafka's
    #: ``request.sizeInBytes``, what a producer's byte rate quota counts.
    size: int = 0

    def body_as(self, cls: type[_Request]) -> _Request:
        """The body as ``cls``, the class its API key names; a TypeError if routed wrongly."""
        if not isinstance(self.body, cls):
            raise TypeError(f"api {self.api_key} carries {type(self.body).__name__}, "
                            f"not {cls.__name__}")
        return self.body


@dataclass(frozen=True, slots=True)
class ResponseFrame:
    correlation_id: int
    body: DecodedBody
    api_key: int
    api_version: int
    unknown_tags: tuple[TaggedField, ...] = ()


def _spec_for(api_key: int, api_version: int, correlation_id: int | None = None) -> ApiSpec:
    spec = api_spec(api_key)
    if spec is None:
        raise UnsupportedVersionError(
            f"unknown api key {api_key}",
            api_key=api_key,
            api_version=api_version,
            correlation_id=correlation_id,
        )
    if not spec.supports(api_version):
        raise UnsupportedVersionError(
            f"{spec.key.name} v{api_version} is not supported"
            f" (versions {spec.min_version}-{spec.max_version})",
            api_key=api_key,
            api_version=api_version,
            correlation_id=correlation_id,
        )
    return spec


def request_type(api_key: int, api_version: int) -> type:
    """The request class of ``api_key`` (one for every version), once pykraft is known to
    serve ``api_version`` of it (:class:`UnsupportedVersionError` otherwise)."""
    _spec_for(api_key, api_version)
    return rpc.request_class(api_key)


def response_type(api_key: int, api_version: int) -> type:
    """The response class, checked like :func:`request_type`."""
    _spec_for(api_key, api_version)
    return rpc.response_class(api_key)


@cache
def _api_keys() -> dict[type, int]:
    return {cls: key for key in API_SPECS
            for cls in (rpc.request_class(key), rpc.response_class(key))}


def api_key_of(body: Body) -> int:
    """The api key of a request or response body."""
    key = _api_keys().get(type(body))
    if key is None:
        raise TypeError(f"{type(body).__name__} is no request or response pykraft serves")
    return key


def _decode_body(reader: Reader, body_type: type,
                 api_version: int) -> tuple[Body, tuple[TaggedField, ...]]:
    """One bounds-checked pass over the body (see :mod:`pykraft.messages.rpc`); the reader
    is left after it."""
    body: Body
    body, unknown, reader.pos = rpc.decode_body(body_type, api_version, reader.buf,
                                                reader.pos, reader.end)
    return body, unknown


def _check_body(body: Body, expected: type, api_key: int, api_version: int) -> None:
    """Refuse a body whose class is not the one the header announces (a caller bug)."""
    if type(body) is not expected:
        raise ValueError(
            f"{type(body).__name__} is not {expected.__name__} (api {api_key} v{api_version})"
        )


def decode_request(frame: bytes) -> RequestFrame:
    """Parse a request frame.

    Raises :class:`UnsupportedVersionError` (with ``correlation_id`` set) for an api or
    version we do not speak, and :class:`MalformedMessageError` for bytes that do not parse.
    """
    reader = Reader(bytes(frame))
    prefix = read_request_prefix(reader)
    api_key, api_version, correlation_id = prefix
    spec = _spec_for(api_key, api_version, correlation_id)
    flexible = spec.is_flexible(api_version)
    header = read_request_header_rest(
        reader, prefix, request_header_version(api_key, api_version, flexible)
    )
    body, unknown = _decode_body(reader, rpc.request_class(api_key), api_version)
    trailing = reader.take(reader.remaining, "trailing bytes")
    return RequestFrame(header, body, api_key, api_version, unknown, trailing, len(frame))


def encode_request(
    header: RequestHeader,
    body: Body,
    unknown_tags: Sequence[TaggedField] = (),
    trailing: bytes = b"",
) -> bytes:
    spec = _spec_for(header.api_key, header.api_version)
    _check_body(body, rpc.request_class(header.api_key), header.api_key, header.api_version)
    version = request_header_version(
        header.api_key, header.api_version, spec.is_flexible(header.api_version)
    )
    return rpc.encode_body(body, header.api_version, unknown_tags,
                           encode_request_header(header, version)) + trailing


def decode_response(api_key: int, api_version: int, frame: bytes) -> ResponseFrame:
    """Parse a response frame to a request we sent as ``api_key`` v``api_version``.

    Like Kafka's client, an ApiVersions response that does not parse at the version we asked
    for is read again as v0: a server that lacks our version answers in v0 format (KIP-511),
    and the returned frame then says ``api_version=0``. Unlike requests, trailing bytes are
    refused: a response is either exactly the expected message or a peer we should not trust.
    """
    spec = _spec_for(api_key, api_version)
    reader = Reader(bytes(frame))
    correlation_id = read_response_header(
        reader, response_header_version(api_key, spec.is_flexible(api_version))
    )
    body_start = reader.pos
    try:
        body, unknown = _decode_whole_body(reader, api_key, api_version)
    except MalformedMessageError:
        if api_key != ApiKey.API_VERSIONS or api_version == 0:
            raise
        reader.pos, api_version = body_start, 0
        body, unknown = _decode_whole_body(reader, api_key, 0)
    return ResponseFrame(correlation_id, body, api_key, api_version, unknown)


def _decode_whole_body(
    reader: Reader, api_key: int, api_version: int
) -> tuple[Body, tuple[TaggedField, ...]]:
    body_type = rpc.response_class(api_key)
    body, unknown = _decode_body(reader, body_type, api_version)
    if reader.remaining:
        raise reader.fail(f"{reader.remaining} trailing bytes after {body_type.__name__}")
    return body, unknown


def encode_response(
    correlation_id: int,
    api_key: int,
    api_version: int,
    body: Body,
    unknown_tags: Sequence[TaggedField] = (),
) -> bytes:
    out = bytearray()
    encode_response_into(out, correlation_id, api_key, api_version, body, unknown_tags)
    return bytes(out)


def encode_response_into(
    out: bytearray,
    correlation_id: int,
    api_key: int,
    api_version: int,
    body: Body,
    unknown_tags: Sequence[TaggedField] = (),
) -> None:
    """:func:`encode_response` appending to ``out`` (a
    :class:`~pykraft.messages.splice.SplicedBuffer` for a Fetch answer served from files)."""
    spec = _spec_for(api_key, api_version)
    _check_body(body, rpc.response_class(api_key), api_key, api_version)
    body = fitted(body, api_version)
    version = response_header_version(api_key, spec.is_flexible(api_version))
    out += encode_response_header(correlation_id, version)
    rpc.encode_body_into(out, body, api_version, unknown_tags)
