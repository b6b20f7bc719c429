"""Frames of the legacy controller RPCs (:mod:`pykraft.messages.legacy`: LeaderAndIsr,
StopReplica, UpdateMetadata, ControlledShutdown) for the one side pykraft plays: a migrating
KRaft controller sends the requests to ZooKeeper-mode brokers and reads their answers.

Kafka's header rules, as :mod:`pykraft.messages.rpc` applies them to the current apis: a
request header is v2 when the body's version is flexible, else v1; a response header v1 or
v0 alike. The servers decode with :func:`pykraft.messages.rpc.decode_request`, which does
not know these apis, so pykraft never serves them.
"""

from __future__ import annotations

import importlib
from functools import cache

from pykraft.errors import MessageDecodeError, UnsupportedVersionError
from pykraft.messages.codec import decode_from, encode
from pykraft.messages.legacy import LEGACY_API_MESSAGES
from pykraft.messages.rpc import (
    RequestHeader,
    ResponseFrame,
    ResponseHeader,
    decode_body,
    encode_body,
)
from pykraft.messages.schema import schema_of

__all__ = ["decode_legacy_response", "encode_legacy_request", "legacy_classes"]


@cache
def legacy_classes(api_key: int) -> tuple[type, type]:
    """The (request, response) classes of a legacy api."""
    names = LEGACY_API_MESSAGES.get(api_key)
    if names is None:
        raise UnsupportedVersionError(f"api key {api_key} is not a legacy api", api_key=api_key)
    name, stem = names
    package = "pykraft.messages.legacy"
    request = importlib.import_module(f"{package}.{stem}_request")
    response = importlib.import_module(f"{package}.{stem}_response")
    return getattr(request, f"{name}Request"), getattr(response, f"{name}Response")


def _flexible(cls: type, api_key: int, version: int) -> bool:
    schema = schema_of(cls)
    if schema.valid_versions is None or version not in schema.valid_versions:
        raise UnsupportedVersionError(
            f"{schema.name} v{version} does not exist (versions {schema.valid_versions})",
            api_key=api_key, api_version=version,
        )
    return schema.is_flexible(version)


def encode_legacy_request(header: RequestHeader, body: object) -> bytes:
    """A request frame (without its size prefix); ``body`` must be the api's request class."""
    api_key, version = header.request_api_key, header.request_api_version
    request_type = legacy_classes(api_key)[0]
    if type(body) is not request_type:
        raise TypeError(f"{type(body).__name__} is not a {request_type.__name__}")
    prefix = encode(header, 2 if _flexible(request_type, api_key, version) else 1)
    return encode_body(body, version, (), prefix)


def decode_legacy_response(api_key: int, api_version: int, frame: bytes) -> ResponseFrame:
    """The answer to a legacy request sent at ``api_version``; it must end with its body."""
    response_type = legacy_classes(api_key)[1]
    header_version = 1 if _flexible(response_type, api_key, api_version) else 0
    header, pos = decode_from(ResponseHeader, header_version, frame)
    body: object
    body, unknown, end = decode_body(response_type, api_version, frame, pos)
    if end != len(frame):
        raise MessageDecodeError(
            f"{response_type.__name__} v{api_version}: {len(frame) - end} trailing byte(s)",
            position=end,
        )
    return ResponseFrame(header.correlation_id, api_key, api_version, body, unknown)
