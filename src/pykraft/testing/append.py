"""The append request of tests and benchmarks: append one data record on the leader, answer
once it is committed.

A server extension (:mod:`pykraft.runtime.extension`): a process serves it only when started
with :data:`APPEND_PROPERTIES`, and then runs the Raft core alone (the records it appends are
no metadata records a controller could replay), so the integration tests and the quorum
benchmark write opaque records and count them on every disk afterwards. It uses Kafka
framing and a v1 request header (non-flexible, like any old Kafka API) so a load generator
can reuse the normal connection code. Body layouts:

* request: ``value: int32 length + bytes``
* response (header v0): ``error_code: int16, leader_id: int32, offset: int64``

NOT_LEADER_OR_FOLLOWER carries the leader id the node knows (-1 if none), so a client can
redirect.
"""

from __future__ import annotations

import itertools
import struct
from collections.abc import Mapping
from dataclasses import dataclass

from pykraft.errors import NetworkError, NotLeaderError, ProtocolError
from pykraft.protocol.cursor import Reader
from pykraft.protocol.errors import ErrorCode
from pykraft.protocol.header import (
    RequestHeader,
    encode_request_header,
    encode_response_header,
    read_request_header_rest,
    read_request_prefix,
    read_response_header,
)
from pykraft.runtime.extension import EXTENSION_KEY, RequestHandler
from pykraft.runtime.node import RaftNode
from pykraft.runtime.streams import FrameStream

APPEND_API_KEY = 32001
APPEND_VERSION = 0
#: The properties that make ``pykraft server`` serve the append request.
APPEND_PROPERTIES = {EXTENSION_KEY: "pykraft.testing.append:AppendExtension"}
_RESPONSE = struct.Struct(">hiq")
_LENGTH = struct.Struct(">i")


@dataclass(frozen=True, slots=True)
class AppendResult:
    error_code: int
    leader_id: int
    offset: int


def encode_append_request(correlation_id: int, value: bytes, client_id: str = "bench") -> bytes:
    header = RequestHeader(APPEND_API_KEY, APPEND_VERSION, correlation_id, client_id)
    return encode_request_header(header, 1) + _LENGTH.pack(len(value)) + value


def decode_append_request(frame: bytes) -> tuple[RequestHeader, bytes]:
    """Header and value; raises MalformedMessageError on anything that does not fit."""
    reader = Reader(frame)
    header = read_request_header_rest(reader, read_request_prefix(reader), 1)
    length = reader.int32("append value length")
    if length < 0 or length != reader.remaining:
        raise reader.fail(f"append value length {length} but {reader.remaining} bytes follow")
    return header, reader.take(length, "append value")


def encode_append_response(correlation_id: int, result: AppendResult) -> bytes:
    return encode_response_header(correlation_id, 0) + _RESPONSE.pack(
        result.error_code, result.leader_id, result.offset
    )


def decode_append_response(frame: bytes) -> tuple[int, AppendResult]:
    reader = Reader(frame)
    correlation_id = read_response_header(reader, 0)
    if reader.remaining != _RESPONSE.size:
        raise reader.fail(f"append response body is {reader.remaining} bytes, "
                          f"expected {_RESPONSE.size}")
    error, leader, offset = _RESPONSE.unpack(reader.take(_RESPONSE.size, "append response"))
    return correlation_id, AppendResult(error, leader, offset)


class AppendExtension:
    """The :class:`~pykraft.runtime.extension.ServerExtension` serving the append request."""

    replaces_controller = True

    def handlers(self, node: RaftNode) -> Mapping[int, RequestHandler]:
        async def append(frame: bytes) -> bytes:
            header, value = decode_append_request(frame)
            return encode_append_response(header.correlation_id, await _append(node, value))

        return {APPEND_API_KEY: append}


async def _append(node: RaftNode, value: bytes) -> AppendResult:
    """The committed offset, or NOT_LEADER_OR_FOLLOWER if this node is no leader or stopped
    being one before the record committed (its fate is then unknown here)."""
    try:
        offset = await node.append(value)
    except NotLeaderError:
        return _not_leader(node)
    if await node.machine.wait_committed(offset):
        return AppendResult(ErrorCode.NONE, node.settings.node_id, offset)
    return _not_leader(node)


def _not_leader(node: RaftNode) -> AppendResult:
    leader = node.core.leader_and_epoch.leader_id
    return AppendResult(ErrorCode.NOT_LEADER_OR_FOLLOWER, -1 if leader is None else leader, -1)


class AppendClient:
    """One connection sending appends, one at a time (a load generator's worker)."""

    def __init__(self, stream: FrameStream) -> None:
        self._stream = stream
        self._correlation = itertools.count(1)

    @classmethod
    async def connect(cls, host: str, port: int) -> AppendClient:
        return cls(await FrameStream.connect(host, port))

    async def append(self, value: bytes) -> AppendResult:
        correlation_id = next(self._correlation)
        await self._stream.write_frame(encode_append_request(correlation_id, value))
        frame = await self._stream.read_frame()
        if frame is None:
            raise NetworkError("the server closed the connection (started without "
                               "APPEND_PROPERTIES?)")
        answered, result = decode_append_response(frame)
        if answered != correlation_id:
            raise ProtocolError(f"correlation id {answered}, expected {correlation_id}")
        return result

    def close(self) -> None:
        self._stream.close()
