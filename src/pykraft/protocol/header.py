"""Request and response headers, and which header version each (api, version) uses.

Request header v0 = api_key, api_version, correlation_id; v1 adds client_id; v2 adds a
TAG_BUFFER. ``client_id`` is a classic int16-length nullable string in every version, even
v2 (Kafka's RequestHeader.json marks it ``flexibleVersions: none``). Response header v0 is the
correlation id; v1 adds a TAG_BUFFER.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from pykraft.protocol.apis import ApiKey
from pykraft.protocol.cursor import Reader

#: Not served by pykraft, but the one API whose v0 request uses request header v0.
CONTROLLED_SHUTDOWN_API_KEY = 7

_PREFIX = struct.Struct(">hhi")
_CORRELATION = struct.Struct(">i")
_INT16 = struct.Struct(">h")
_EMPTY_TAG_BUFFER = b"\x00"
_MAX_CLIENT_ID_BYTES = 0x7FFF


@dataclass(frozen=True, slots=True)
class RequestHeader:
    """The fields of any request header version (v0 has no client_id: it is None there)."""

    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None = None


def request_header_version(api_key: int, api_version: int, flexible: bool) -> int:
    """Header version for a request (Kafka's ``ApiMessageType.requestHeaderVersion``)."""
    if api_key == CONTROLLED_SHUTDOWN_API_KEY and api_version == 0:
        return 0
    return 2 if flexible else 1


def response_header_version(api_key: int, flexible: bool) -> int:
    """Header version for a response; ApiVersions always uses v0 (KIP-511) so that a client
    can read the reply before it knows which versions the server speaks."""
    if api_key == ApiKey.API_VERSIONS:
        return 0
    return 1 if flexible else 0


def encode_request_header(header: RequestHeader, version: int) -> bytes:
    prefix = _PREFIX.pack(header.api_key, header.api_version, header.correlation_id)
    if version == 0:
        if header.client_id is not None:
            raise ValueError("request header v0 has no client_id")
        return prefix
    if header.client_id is None:
        client_id = _INT16.pack(-1)
    else:
        raw = header.client_id.encode("utf-8")
        if len(raw) > _MAX_CLIENT_ID_BYTES:
            raise ValueError(
                f"client_id is {len(raw)} bytes, the maximum is {_MAX_CLIENT_ID_BYTES}"
            )
        client_id = _INT16.pack(len(raw)) + raw
    tags = _EMPTY_TAG_BUFFER if version == 2 else b""
    return prefix + client_id + tags


def read_request_prefix(reader: Reader) -> tuple[int, int, int]:
    """(api_key, api_version, correlation_id): the part common to all request headers, so a
    server can name the request in an error reply even when it cannot parse the rest."""
    return (
        reader.int16("request api_key"),
        reader.int16("request api_version"),
        reader.int32("request correlation_id"),
    )


def read_request_header_rest(
    reader: Reader, prefix: tuple[int, int, int], version: int
) -> RequestHeader:
    """Finish a request header after :func:`read_request_prefix`; unknown header tags are
    skipped (RequestHeader defines none)."""
    client_id = None
    if version >= 1:
        client_id = reader.legacy_nullable_string("request client_id")
    if version >= 2:
        reader.tagged_fields("request header tagged fields")
    return RequestHeader(*prefix, client_id=client_id)


def encode_response_header(correlation_id: int, version: int) -> bytes:
    tags = _EMPTY_TAG_BUFFER if version == 1 else b""
    return _CORRELATION.pack(correlation_id) + tags


def read_response_header(reader: Reader, version: int) -> int:
    """The correlation id; unknown header tags are skipped."""
    correlation_id = reader.int32("response correlation_id")
    if version == 1:
        reader.tagged_fields("response header tagged fields")
    return correlation_id
