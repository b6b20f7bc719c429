"""Request/response codec: header + kio message body, without the 4-byte size prefix.

``decode_*`` take a frame as :class:`~pykraft.protocol.frame.FrameDecoder` yields it;
``encode_*`` return bytes for :func:`~pykraft.protocol.frame.encode_frame`. Bodies are the
generated classes of :mod:`pykraft.messages.kafka` for the APIs of
:data:`~pykraft.protocol.apis.GENERATED_APIS` (one class for every version, coded by
:mod:`pykraft.messages.rpc`), and kio entities for the others (one class per version, e.g.
``kio.schema.metadata.v12.request.MetadataRequest``). Headers are this package's either way.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

from kio.index import load_request_schema, load_response_schema
from kio.static.constants import EntityType

from pykraft.errors import MalformedMessageError, UnsupportedVersionError
from pykraft.messages import rpc
from pykraft.messages.kio_adapter import KioBody, TaggedField, decode_kio_body, encode_kio
from pykraft.protocol.apis import GENERATED_APIS, ApiKey, ApiSpec, api_spec
from pykraft.protocol.cursor import Reader, encode_tagged_fields
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

Body = Any
"""A request or response body: a generated class or a kio entity, as the API's migration
stands (:data:`~pykraft.protocol.apis.GENERATED_APIS`)."""


@dataclass(frozen=True, slots=True)
class RequestFrame:
    header: RequestHeader
    body: Body
    api_key: int
    api_version: int
    #: Top-level tagged fields no schema defines; kept so the request re-encodes identically.
    unknown_tags: tuple[TaggedField, ...] = ()
    #: Bytes after the body. Kafka ignores them, and librdkafka 2.16 sends some (Metadata
    #: v13 "all topics" ends with 3 extra bytes), so they are accepted and kept.
    trailing: bytes = b""


@dataclass(frozen=True, slots=True)
class ResponseFrame:
    correlation_id: int
    body: Body
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


@cache
def _body_type(api_key: int, api_version: int, kind: EntityType) -> type:
    if api_key in GENERATED_APIS:
        if kind is EntityType.request:
            return rpc.request_class(api_key)
        return rpc.response_class(api_key)
    if kind is EntityType.request:
        return load_request_schema(api_key, api_version)
    return load_response_schema(api_key, api_version)


def request_type(api_key: int, api_version: int) -> type[Any]:
    """The request class of the version (the generated class of every version, or kio's of
    that one), cached (kio resolves the module by name on every call, a few percent of a
    node's CPU when done per request)."""
    return _body_type(api_key, api_version, EntityType.request)


def response_type(api_key: int, api_version: int) -> type[Any]:
    """The response class of the version, cached like :func:`request_type`."""
    return _body_type(api_key, api_version, EntityType.response)


@cache
def _generated_api_keys() -> dict[type, int]:
    return {cls: key for key in GENERATED_APIS
            for cls in (rpc.request_class(key), rpc.response_class(key))}


def api_key_of(body: Body) -> int:
    """The api key of a request or response body, generated or kio's."""
    key = _generated_api_keys().get(type(body))
    return int(body.__api_key__) if key is None else key


def _decode_body(reader: Reader, body_type: type, api_key: int,
                 api_version: int) -> tuple[Body, tuple[TaggedField, ...]]:
    """One bounds-checked pass over the body (see :mod:`pykraft.messages.rpc` and
    :mod:`pykraft.messages.kio_adapter`); the reader is left after it."""
    if api_key in GENERATED_APIS:
        body: Body
        body, unknown, reader.pos = rpc.decode_body(body_type, api_version, reader.buf,
                                                    reader.pos, reader.end)
        return body, unknown
    decoded: KioBody[Body] = decode_kio_body(body_type, reader.buf, reader.pos, reader.end)
    reader.pos = decoded.end
    return decoded.entity, decoded.unknown_tags


def _encode_body(body: Body, api_key: int, api_version: int,
                 unknown_tags: Sequence[TaggedField], header: bytes) -> bytes:
    """``header`` then the body's bytes."""
    if api_key in GENERATED_APIS:
        return rpc.encode_body(body, api_version, unknown_tags, header)
    if not unknown_tags:
        return encode_kio(body, header)
    encoded = encode_kio(body)
    # The top-level TAG_BUFFER is the last thing in a flexible body: find it and merge.
    tags_start = decode_kio_body(type(body), encoded).tags_start
    if tags_start is None:
        raise ValueError(f"{type(body).__name__} is not flexible: it has no tagged fields")
    known = Reader(encoded, tags_start).tagged_fields("tagged fields")
    if {tag for tag, _ in known} & {tag for tag, _ in unknown_tags}:
        raise ValueError("an unknown tag collides with a tag the schema defines")
    return header + encoded[:tags_start] + encode_tagged_fields([*known, *unknown_tags])


def _check_body(body: Body, kind: EntityType, api_key: int, api_version: int) -> None:
    """Refuse a body whose schema is not the one the header announces (a caller bug)."""
    body_type = type(body)
    if body_type is not _body_type(api_key, api_version, kind):
        raise ValueError(
            f"{body_type.__name__} is not the {kind.name} of api {api_key} v{api_version}"
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
    body, unknown = _decode_body(
        reader, _body_type(api_key, api_version, EntityType.request), api_key, api_version)
    trailing = reader.take(reader.remaining, "trailing bytes")
    return RequestFrame(header, body, api_key, api_version, unknown, trailing)


def encode_request(
    header: RequestHeader,
    body: Body,
    unknown_tags: Sequence[TaggedField] = (),
    trailing: bytes = b"",
) -> bytes:
    spec = _spec_for(header.api_key, header.api_version)
    _check_body(body, EntityType.request, header.api_key, header.api_version)
    version = request_header_version(
        header.api_key, header.api_version, spec.is_flexible(header.api_version)
    )
    return _encode_body(body, header.api_key, header.api_version, unknown_tags,
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
    body_type = _body_type(api_key, api_version, EntityType.response)
    body, unknown = _decode_body(reader, body_type, api_key, api_version)
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
    spec = _spec_for(api_key, api_version)
    _check_body(body, EntityType.response, api_key, api_version)
    version = response_header_version(api_key, spec.is_flexible(api_version))
    return _encode_body(body, api_key, api_version, unknown_tags,
                        encode_response_header(correlation_id, version))
