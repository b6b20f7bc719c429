"""A bench-only RPC: append one data record on the leader, answer once it is committed.

Off by default (``pykraft.bench.append.enable``), and then the api key is as unknown as any
other unserved one. It uses Kafka framing and a v1 request header (non-flexible, like any
old Kafka API) so a load generator can reuse the normal connection code. Body layouts:

* request: ``value: int32 length + bytes``
* response (header v0): ``error_code: int16, leader_id: int32, offset: int64``

NOT_LEADER_OR_FOLLOWER carries the leader id the node knows (-1 if none), so a client can
redirect.
"""

from __future__ import annotations

import itertools
import struct
from dataclasses import dataclass

from pykraft.errors import NetworkError, ProtocolError
from pykraft.protocol.cursor import Reader
from pykraft.protocol.header import (
    RequestHeader,
    encode_request_header,
    encode_response_header,
    read_request_header_rest,
    read_request_prefix,
    read_response_header,
)
from pykraft.runtime.streams import FrameStream

#: Outside every range Kafka has assigned; int16 like any api key.
BENCH_APPEND_API_KEY = 32001
BENCH_APPEND_VERSION = 0
_RESPONSE = struct.Struct(">hiq")
_LENGTH = struct.Struct(">i")


@dataclass(frozen=True, slots=True)
class BenchAppendResult:
    error_code: int
    leader_id: int
    offset: int


def encode_bench_request(correlation_id: int, value: bytes, client_id: str = "bench") -> bytes:
    header = RequestHeader(BENCH_APPEND_API_KEY, BENCH_APPEND_VERSION, correlation_id, client_id)
    return encode_request_header(header, 1) + _LENGTH.pack(len(value)) + value


def decode_bench_request(frame: bytes) -> tuple[RequestHeader, bytes]:
    """Header and value; raises MalformedMessageError on anything that does not fit."""
    reader = Reader(frame)
    header = read_request_header_rest(reader, read_request_prefix(reader), 1)
    length = reader.int32("bench value length")
    if length < 0 or length != reader.remaining:
        raise reader.fail(f"bench value length {length} but {reader.remaining} bytes follow")
    return header, reader.take(length, "bench value")


def encode_bench_response(correlation_id: int, result: BenchAppendResult) -> bytes:
    return encode_response_header(correlation_id, 0) + _RESPONSE.pack(
        result.error_code, result.leader_id, result.offset
    )


def decode_bench_response(frame: bytes) -> tuple[int, BenchAppendResult]:
    reader = Reader(frame)
    correlation_id = read_response_header(reader, 0)
    if reader.remaining != _RESPONSE.size:
        raise reader.fail(f"bench response body is {reader.remaining} bytes, "
                          f"expected {_RESPONSE.size}")
    error, leader, offset = _RESPONSE.unpack(reader.take(_RESPONSE.size, "bench response"))
    return correlation_id, BenchAppendResult(error, leader, offset)


class BenchClient:
    """One connection sending bench appends, one at a time (a load generator's worker)."""

    def __init__(self, stream: FrameStream) -> None:
        self._stream = stream
        self._correlation = itertools.count(1)

    @classmethod
    async def connect(cls, host: str, port: int) -> BenchClient:
        return cls(await FrameStream.connect(host, port))

    async def append(self, value: bytes) -> BenchAppendResult:
        correlation_id = next(self._correlation)
        await self._stream.write_frame(encode_bench_request(correlation_id, value))
        frame = await self._stream.read_frame()
        if frame is None:
            raise NetworkError("the server closed the connection (bench appends disabled?)")
        answered, result = decode_bench_response(frame)
        if answered != correlation_id:
            raise ProtocolError(f"correlation id {answered}, expected {correlation_id}")
        return result

    def close(self) -> None:
        self._stream.close()
