"""Scripted controller listeners on 127.0.0.1 for the tools' client tests: each answers
ApiVersions itself (as a controller listener does, with ZkMigrationReady as told) and every
other request through a handler, on an event loop thread of its own so that a tool's
``asyncio.run`` can reach it."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from pykraft.protocol.api_versions import api_versions_response
from pykraft.protocol.apis import ApiKey, Listener
from pykraft.protocol.codec import decode_request, encode_response
from pykraft.runtime.streams import FrameStream

#: A scripted answer: the latest-version response body, or None to hang up unanswered.
Handler = Callable[[int, Any], Any]


@dataclass
class FakeController:
    """A controller listener that answers ApiVersions itself and everything else through
    ``handler``, on its own event loop thread so the CLI's ``asyncio.run`` can reach it."""

    node_id: int
    handler: Handler
    seen: list[tuple[int, Any]] = field(default_factory=list)
    port: int = 0
    zk_migration_ready: bool = False

    def start(self) -> None:
        ready = threading.Event()
        self._loop = asyncio.new_event_loop()

        async def serve() -> None:
            self._server = await asyncio.start_server(self._connection, "127.0.0.1", 0)
            self.port = self._server.sockets[0].getsockname()[1]
            ready.set()

        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._thread.start()
        asyncio.run_coroutine_threadsafe(serve(), self._loop)
        assert ready.wait(10)

    def stop(self) -> None:
        """Close the listener and every open connection, then end the loop's thread."""
        if not self._thread.is_alive():
            return

        async def shutdown() -> None:
            self._server.close()
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        asyncio.run_coroutine_threadsafe(shutdown(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()

    @property
    def address(self) -> tuple[str, int]:
        return ("127.0.0.1", self.port)

    async def _connection(self, reader: asyncio.StreamReader,
                          writer: asyncio.StreamWriter) -> None:
        stream = FrameStream(reader, writer)
        try:
            while (frame := await stream.read_frame()) is not None:
                request = decode_request(frame)
                body: Any
                if request.api_key == ApiKey.API_VERSIONS:
                    body = dataclasses.replace(
                        api_versions_response(Listener.CONTROLLER, request.api_version),
                        zk_migration_ready=self.zk_migration_ready)
                else:
                    self.seen.append((request.api_key, request.body))
                    answer = self.handler(request.api_key, request.body)
                    if answer is None:
                        return
                    body = answer
                await stream.write_frame(encode_response(
                    request.header.correlation_id, request.api_key, request.api_version, body))
        finally:
            stream.close()

    def requests(self, api_key: int) -> list[Any]:
        return [body for key, body in self.seen if key == api_key]


@contextlib.contextmanager
def fake_controllers() -> Iterator[Callable[..., FakeController]]:
    """``make(node_id, handler, **fields)`` starts one; all are stopped on exit."""
    started: list[FakeController] = []

    def make(node_id: int, handler: Handler, **fields: Any) -> FakeController:
        controller = FakeController(node_id, handler, **fields)
        controller.start()
        started.append(controller)
        return controller

    try:
        yield make
    finally:
        for controller in started:
            controller.stop()
