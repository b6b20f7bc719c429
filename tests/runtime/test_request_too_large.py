"""A client connection that knows its peer's ``socket.request.max.bytes`` does not send a
larger request (the peer would close the connection on it): RequestTooLargeError, nothing
written, the connection still usable."""

from __future__ import annotations

import asyncio

import pytest

from pykraft.errors import RequestTooLargeError
from pykraft.messages.kafka.delete_topics_request import DeleteTopicsRequest, DeleteTopicState
from pykraft.messages.kafka.delete_topics_response import DeleteTopicsResponse
from pykraft.protocol.apis import ApiKey
from pykraft.protocol.codec import decode_request, encode_response
from pykraft.protocol.frame import encode_frame
from pykraft.runtime.kafka_client import ClientConnection
from pykraft.runtime.streams import FrameStream

VERSION = 6
LIMIT = 200


def _delete(count: int) -> DeleteTopicsRequest:
    return DeleteTopicsRequest(
        topics=(DeleteTopicState(name="some-topic"),) * count,
        timeout_ms=1000)


async def _exchange() -> tuple[list[int], DeleteTopicsResponse]:
    """A larger request refused, then a smaller one sent and answered; the sizes of the
    request frames the peer received."""
    received: list[int] = []

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        size = int.from_bytes(await reader.readexactly(4), "big")
        frame = await reader.readexactly(size)
        received.append(size)
        request = decode_request(frame)
        writer.write(encode_frame(encode_response(
            request.header.correlation_id, ApiKey.DELETE_TOPICS, VERSION,
            DeleteTopicsResponse(responses=()))))
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    async with server:
        stream = await FrameStream.connect("127.0.0.1", port)
        connection = ClientConnection(stream, "a-client", {ApiKey.DELETE_TOPICS: VERSION}, LIMIT)
        try:
            with pytest.raises(RequestTooLargeError, match=f"more than the {LIMIT}"):
                await connection.request(_delete(20))
            answer = await connection.request(_delete(2))
        finally:
            connection.close()
    return received, answer


def test_a_request_over_the_peers_limit_is_not_sent() -> None:
    received, answer = asyncio.run(_exchange())
    assert len(received) == 1 and received[0] <= LIMIT  # only the one that fits
    assert isinstance(answer, DeleteTopicsResponse)
