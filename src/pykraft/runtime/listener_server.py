"""The controller listener's TCP server: frames in, one request at a time per connection.

Like Kafka's SocketServer, a connection's next request is only read once the previous one
has been answered, so responses leave in request order even when the core parks a Fetch. An
oversized or malformed frame, or a request the listener does not serve, closes that one
connection; nothing a client sends can stop the process.
"""

from __future__ import annotations

import asyncio
import logging

from pykraft.errors import ProtocolError
from pykraft.runtime.dispatch import CloseConnection, Dispatcher
from pykraft.runtime.logfmt import event
from pykraft.runtime.streams import FrameStream
from pykraft.security.session import anonymous

log = logging.getLogger("pykraft.server")


class ListenerServer:
    """Accepts connections on one endpoint and serves them with a :class:`Dispatcher`."""

    def __init__(self, dispatcher: Dispatcher, host: str, port: int, max_frame_size: int) -> None:
        self._dispatcher = dispatcher
        self._host = host
        self._port = port
        self._max_frame_size = max_frame_size
        self._server: asyncio.Server | None = None
        self._connections: set[asyncio.Task[None]] = set()

    async def start(self) -> None:
        self._server = await asyncio.start_server(
            self._accept, self._host or None, self._port, reuse_address=True
        )

    @property
    def port(self) -> int:
        assert self._server is not None
        port: int = self._server.sockets[0].getsockname()[1]
        return port

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._connections):
            task.cancel()
        if self._connections:
            await asyncio.gather(*self._connections, return_exceptions=True)

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._connections.add(task)
        stream = FrameStream(reader, writer, self._max_frame_size)
        try:
            await self._serve(stream)
        except asyncio.CancelledError:
            pass  # server shutdown; asyncio would report a cancelled handler as an error
        finally:
            self._connections.discard(task)
            stream.close()

    async def _serve(self, stream: FrameStream) -> None:
        peer = stream.peer
        session = anonymous(peer)
        while True:
            try:
                frame = await stream.read_frame()
                if frame is None:
                    return
                response = await self._dispatcher.handle(frame, session)
                if response:  # b"": a request answered with nothing (Produce acks=0)
                    await stream.write_frame(response)
            except CloseConnection as exc:
                event(log, "connection_closed", level=logging.WARNING, peer=peer,
                      reason=str(exc))
                return
            except ProtocolError as exc:
                event(log, "connection_closed", level=logging.WARNING, peer=peer,
                      reason=f"{type(exc).__name__}: {exc}")
                return
            except (OSError, EOFError):
                return
