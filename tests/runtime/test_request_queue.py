"""``queued.max.requests``: a side's requests read and not yet answered or parked never
exceed it; connections with a request wait (nothing dropped, answers in order per
connection), and a request parked in a purgatory leaves the queue."""

from __future__ import annotations

import asyncio
import struct
from collections.abc import Awaitable, Callable
from typing import cast

import pytest
from sasl_fixtures import serve_scenario

from pykraft.messages.kafka.api_versions_request import ApiVersionsRequest
from pykraft.protocol.api_versions import api_versions_response
from pykraft.protocol.apis import ApiKey, Listener
from pykraft.protocol.codec import decode_request, encode_request, encode_response
from pykraft.protocol.frame import encode_frame
from pykraft.protocol.header import RequestHeader
from pykraft.runtime.dispatch import Dispatcher
from pykraft.runtime.listener_server import ListenerServer
from pykraft.runtime.request_metrics import parked
from pykraft.runtime.request_queue import RequestQueue
from pykraft.security.session import Session

DEADLINE_S = 20.0
CONNECTIONS = 6
PIPELINED = 10


def _frame(correlation_id: int, client_id: str = "t") -> bytes:
    return encode_frame(encode_request(
        RequestHeader(ApiKey.API_VERSIONS, 3, correlation_id, client_id),
        ApiVersionsRequest(client_software_name="t", client_software_version="1")))


async def _until(condition: Callable[[], bool]) -> None:
    """Until ``condition()`` holds (bounded by the scenario's deadline)."""
    while not condition():
        await asyncio.sleep(0.005)


class Held:
    """Answers ApiVersions once :attr:`gate` opens; a ``parker`` client's request waits in
    a purgatory (:func:`parked`) until :attr:`unpark` is set. Counts requests being handled
    outside a purgatory at once."""

    def __init__(self) -> None:
        self.gate = asyncio.Event()
        self.unpark = asyncio.Event()
        self.handling = 0
        self.most = 0
        self.parked = 0

    async def respond(self, frame: bytes, session: Session) -> bytes:
        request = decode_request(frame)
        if request.header.client_id == "parker":
            self.parked += 1
            with parked():
                await self.unpark.wait()
        else:
            self.handling += 1
            self.most = max(self.most, self.handling)
            await self.gate.wait()
            self.handling -= 1
        return encode_response(request.header.correlation_id, ApiKey.API_VERSIONS,
                               request.api_version,
                               api_versions_response(Listener.BROKER, request.api_version))

    def connection_closed(self, session: Session) -> None:
        """Nothing watches connections here."""


async def _answers(reader: asyncio.StreamReader, count: int) -> list[int]:
    """The correlation ids of the next ``count`` responses, in the order they came."""
    ids = []
    for _ in range(count):
        size = struct.unpack(">i", await reader.readexactly(4))[0]
        ids.append(struct.unpack(">i", (await reader.readexactly(size))[:4])[0])
    return ids


def _serve(queue: RequestQueue, dispatcher: Held,
           scenario: Callable[[int], Awaitable[None]]) -> None:
    server = ListenerServer(cast(Dispatcher, dispatcher), "127.0.0.1", 0, 1 << 20, queue=queue)
    asyncio.run(serve_scenario(server, scenario, DEADLINE_S))


def test_many_pipelined_connections_never_hold_more_than_the_bound() -> None:
    queue = RequestQueue(2)
    held = Held()

    async def scenario(port: int) -> None:
        streams = [await asyncio.open_connection("127.0.0.1", port)
                   for _ in range(CONNECTIONS)]
        for index, (_, writer) in enumerate(streams):
            writer.write(b"".join(_frame(index * 100 + n) for n in range(PIPELINED)))
            await writer.drain()
        # two requests handled, every other connection waiting with one read
        await _until(lambda: queue.size == 2 and queue.waited >= CONNECTIONS - 2)
        assert held.handling == 2
        held.gate.set()
        answers = await asyncio.gather(*(_answers(reader, PIPELINED) for reader, _ in streams))
        for index, ids in enumerate(answers):
            assert ids == [index * 100 + n for n in range(PIPELINED)]
        for _, writer in streams:
            writer.close()
        assert queue.size == 0

    _serve(queue, held, scenario)
    assert queue.peak == 2
    assert held.most == 2


def test_a_parked_request_leaves_the_queue() -> None:
    queue = RequestQueue(1)
    held = Held()
    held.gate.set()

    async def scenario(port: int) -> None:
        parkers = [await asyncio.open_connection("127.0.0.1", port) for _ in range(3)]
        for index, (_, writer) in enumerate(parkers):
            writer.write(_frame(index, "parker"))
        await _until(lambda: held.parked == 3)
        assert queue.size == 0
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(_frame(7) + _frame(8))
        assert await _answers(reader, 2) == [7, 8]  # answered while three are parked
        held.unpark.set()
        for index, (parker_reader, _) in enumerate(parkers):
            assert await _answers(parker_reader, 1) == [index]
        for _, each in (*parkers, (reader, writer)):
            each.close()

    _serve(queue, held, scenario)
    assert queue.peak == 1


def test_waiters_are_admitted_in_order_and_a_cancelled_one_passes_its_place_on() -> None:
    async def run() -> list[str]:
        queue = RequestQueue(1)
        await queue.admit()
        order: list[str] = []

        async def waiter(name: str) -> None:
            await queue.admit()
            order.append(name)

        first, second, third = (asyncio.create_task(waiter(n)) for n in ("a", "b", "c"))
        await asyncio.sleep(0)
        assert queue.waited == 3
        second.cancel()
        queue.leave()
        await first
        queue.leave()
        await asyncio.gather(second, return_exceptions=True)
        await third
        assert queue.size == 1
        return order

    assert asyncio.run(run()) == ["a", "c"]


def test_a_bound_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="must be at least 1"):
        RequestQueue(0)
