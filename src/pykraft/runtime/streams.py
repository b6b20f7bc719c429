"""Kafka frames over an asyncio stream: the one reader/writer every connection uses.

Reads go through :class:`~pykraft.protocol.frame.FrameDecoder`, so an oversized size prefix
is refused after four bytes (:class:`FrameTooLargeError`) instead of being buffered. A TLS
connection is the same stream after its handshake: :meth:`FrameStream.connect` with a client
context (the event loop's TLS), :meth:`FrameStream.accept_tls` on a server's accepted
connection. The server side runs TLS itself over memory buffers (:class:`ssl.SSLObject`),
not through the loop's ``start_tls``: that loses a ClientHello already read into the stream
and hangs on uvloop (MagicStack/uvloop#707, python/cpython#142352), and the loop's own TLS
accept drops a failed handshake silently, while a refusal must be logged.

A server's stream reports each read and write to ``on_activity``, which keeps the connection
from being closed as idle (``connections.max.idle.ms``).

A frame may hold splices (:class:`~pykraft.messages.splice.SplicedPayload`: a Fetch answer's
records left in the segment files): without TLS they go from the file to the socket with
``os.sendfile`` (Kafka's ``FileRecords.writeTo``), each call checked first that the file
still holds them; under TLS they are read and encrypted (Kafka has no zero copy there
either). A splice the file no longer holds raises :class:`~pykraft.errors.StorageError`
with the frame half sent: the caller closes the connection, as Kafka does.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import os
import socket
import ssl
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol, cast, runtime_checkable

from pykraft.errors import StorageError
from pykraft.messages.splice import Splice, SplicedPayload
from pykraft.protocol.frame import (
    DEFAULT_MAX_FRAME_SIZE,
    FrameDecoder,
    encode_frame,
    frame_size_prefix,
    join_frame,
)

_READ_CHUNK = 256 * 1024
#: An :class:`Inbox` holding more than this pauses reading (a StreamReader's default: twice
#: its 64 KiB limit), resumed at half of it.
_INBOX_PAUSE_BYTES = 128 * 1024
#: A frame at least this large is joined from its chunks by one connection at a time, and
#: the loop runs once after each: several 100 MB Produce requests completing together were
#: joined back to back (a memory copy of 100 MB each) in one loop turn, with no heartbeat,
#: timer or other connection served in between.
_LARGE_FRAME_BYTES = 8 * 1024 * 1024
#: A large frame is written this much at a time (see :meth:`FrameStream.write_frame`).
_WRITE_CHUNK = 1024 * 1024
#: How often a ``sendfile`` waiting for a full socket checks that its connection is open.
_WRITABLE_CHECK_S = 1.0
_ASSEMBLY: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Lock] = (
    weakref.WeakKeyDictionary())


def _assembly() -> asyncio.Lock:
    """The running loop's lock over large frame joins (a lock serves one loop only)."""
    loop = asyncio.get_running_loop()
    lock = _ASSEMBLY.get(loop)
    if lock is None:
        lock = _ASSEMBLY[loop] = asyncio.Lock()
    return lock


class FrameStream:
    """Whole frames in, whole frames out, over one TCP connection."""

    def __init__(
        self, reader: asyncio.StreamReader | Inbox, writer: asyncio.StreamWriter,
        max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
        on_activity: Callable[[], None] | None = None,
    ) -> None:
        self._reader = reader
        self._writer = writer
        self._decoder = FrameDecoder(max_frame_size)
        self._frames: collections.deque[list[bytes]] = collections.deque()
        self._tls: _MemoryTls | None = None
        self._on_activity = on_activity

    @classmethod
    async def accept(cls, sock: socket.socket, max_frame_size: int,
                     on_activity: Callable[[], None] | None = None) -> FrameStream:
        """The stream of a connection a server accepted itself."""
        loop = asyncio.get_running_loop()
        protocol = _InboxProtocol(loop)
        transport, _ = await loop.connect_accepted_socket(lambda: protocol, sock)
        return cls(protocol.inbox, protocol.writer(transport), max_frame_size, on_activity)

    @classmethod
    async def connect(
        cls, host: str, port: int, max_frame_size: int = DEFAULT_MAX_FRAME_SIZE, *,
        tls: ssl.SSLContext | None = None,
    ) -> FrameStream:
        """Connect, with a TLS handshake first when ``tls`` is given (the certificate
        checked against ``host`` when the context checks host names)."""
        loop = asyncio.get_running_loop()
        protocol = _InboxProtocol(loop)
        transport, _ = await loop.create_connection(
            lambda: protocol, host, port, ssl=tls,
            server_hostname=host if tls is not None else None)
        return cls(protocol.inbox, protocol.writer(transport), max_frame_size)

    async def accept_tls(self, context: ssl.SSLContext, timeout_s: float) -> bytes | None:
        """The server's side of a TLS handshake; returns the client's certificate (DER),
        None when it sent none. Raises :class:`ssl.SSLError` when the handshake fails
        (after sending the alert), EOFError when the peer hung up before sending anything,
        TimeoutError or OSError when the client is slow or gone."""
        tls = _MemoryTls.server(context)
        async with asyncio.timeout(timeout_s):
            first = await self._read()
            if not first:  # a port probe, not a client: nothing to refuse
                raise EOFError("closed before the TLS handshake")
            tls.incoming.write(first)
            while True:
                try:
                    tls.session.do_handshake()
                    break
                except ssl.SSLWantReadError:
                    await self._flush(tls)
                    await self._feed(tls)
                except ssl.SSLError:
                    with contextlib.suppress(OSError):
                        await self._flush(tls)  # the alert tells the client why
                    raise
        await self._flush(tls)
        self._tls = tls
        der: bytes | None = tls.session.getpeercert(binary_form=True)
        return der

    async def _read(self) -> bytes:
        data = await self._reader.read(_READ_CHUNK)
        if data and self._on_activity is not None:
            self._on_activity()
        return data

    async def _feed(self, tls: _MemoryTls) -> None:
        data = await self._read()
        if data:
            tls.incoming.write(data)
        else:
            tls.incoming.write_eof()

    async def _flush(self, tls: _MemoryTls) -> None:
        pending = tls.outgoing.read()
        if pending:
            self._writer.write(pending)
            await self._writer.drain()

    async def _receive(self) -> bytes:
        """The next bytes from the peer, decrypted on TLS; b"" at the end of the stream."""
        tls = self._tls
        if tls is None:
            return await self._read()
        while True:
            try:
                return tls.session.read(_READ_CHUNK)
            except ssl.SSLWantReadError:
                await self._flush(tls)
                await self._feed(tls)
            except (ssl.SSLZeroReturnError, ssl.SSLEOFError):
                return b""

    @property
    def max_frame_size(self) -> int:
        return self._decoder.max_frame_size

    @max_frame_size.setter
    def max_frame_size(self, size: int) -> None:
        """Refuse later size prefixes above ``size`` (a SASL listener's limit before
        authentication)."""
        self._decoder.max_frame_size = size

    @property
    def peer(self) -> str:
        return self._address("peername")

    @property
    def local(self) -> str:
        """This end's host:port (the listener's)."""
        return self._address("sockname")

    def _address(self, which: str) -> str:
        address = self._writer.get_extra_info(which)
        return f"{address[0]}:{address[1]}" if isinstance(address, tuple) else str(address)

    @property
    def arrived(self) -> float:
        """When the connection's latest bytes came (``time.monotonic()``; now for a
        client's stream, whose reader keeps no such time)."""
        reader = self._reader
        return reader.arrived if isinstance(reader, Inbox) else time.monotonic()

    async def read_frame(self) -> bytes | None:
        """The next frame, or None at a clean end of stream between frames."""
        while not self._frames:
            data = await self._receive()
            if not data:
                if self._decoder.buffered:
                    raise asyncio.IncompleteReadError(b"", None)
                return None
            self._frames.extend(self._decoder.feed_parts(data))
        parts = self._frames.popleft()
        if sum(len(part) for part in parts) < _LARGE_FRAME_BYTES:
            return join_frame(parts)
        async with _assembly():
            frame = join_frame(parts)
            await asyncio.sleep(0)  # the loop runs before the next large join
        return frame

    async def write_frame(self, payload: bytes | SplicedPayload) -> None:
        """Send ``payload`` with its size prefix. A large one goes in chunks, each drained
        before the next: joined to its prefix, then held whole by the transport's buffer, a
        39 MB answer was in memory three times at once. The caller writes one frame at a
        time (the server answers in order, a client holds its write lock)."""
        if self._on_activity is not None:
            self._on_activity()
        if isinstance(payload, SplicedPayload):
            await self._write(frame_size_prefix(payload.size))
            for part in payload.parts:
                await (self._write_chunks(part) if isinstance(part, bytes)
                       else self._write_splice(part))
            return
        if len(payload) < _LARGE_FRAME_BYTES:
            await self._write(encode_frame(payload))
            return
        await self._write(frame_size_prefix(len(payload)))
        await self._write_chunks(payload)

    async def _write_chunks(self, data: bytes) -> None:
        view = memoryview(data)
        for at in range(0, len(view), _WRITE_CHUNK):
            await self._write(view[at:at + _WRITE_CHUNK])

    async def _write_splice(self, splice: Splice) -> None:
        """A splice's bytes: read and encrypted under TLS, else sent from its file."""
        if self._tls is not None:
            for at in range(0, splice.length, _WRITE_CHUNK):
                await self._write(splice.read(at, min(_WRITE_CHUNK, splice.length - at)))
            return
        await self._flushed()
        self._check_open()
        # a duplicate of the socket's descriptor: the loop refuses to watch a transport's
        # own, and once the transport closes its number may name another connection
        out = os.dup(self._writer.get_extra_info("socket").fileno())
        try:
            sent = 0
            while sent < splice.length:
                self._check_open()  # aborted while waiting (idle, evicted)?
                source, position = splice.source(sent)  # checked, no await before the send
                try:
                    count = os.sendfile(out, source, position, splice.length - sent)
                except BlockingIOError:
                    await _writable(out)
                    continue
                if not count:
                    raise StorageError(f"the file ended {splice.length - sent} bytes before "
                                       "its region did")
                sent += count
                if self._on_activity is not None:
                    self._on_activity()
        finally:
            os.close(out)

    def _check_open(self) -> None:
        if self._writer.transport.is_closing():
            raise ConnectionResetError("the connection closed while a frame was being sent")

    async def _flushed(self) -> None:
        """Wait until the transport has handed everything it holds to the socket, so that
        bytes sent past it follow them."""
        transport = self._writer.transport
        if not transport.get_write_buffer_size():
            return
        low, high = transport.get_write_buffer_limits()
        transport.set_write_buffer_limits(high=0)  # drain waits for an empty buffer
        try:
            await self._writer.drain()
        finally:
            transport.set_write_buffer_limits(high=high, low=low)

    async def _write(self, data: bytes | memoryview) -> None:
        if self._tls is not None:
            self._tls.session.write(data)
            await self._flush(self._tls)
            return
        self._writer.write(data)
        await self._writer.drain()

    def close(self) -> None:
        self._writer.close()

    def abort(self) -> None:
        """Close at once, dropping what is unsent (an idle or evicted connection): a read
        in progress ends as at the end of the stream."""
        self._writer.transport.abort()


@runtime_checkable
class _Reading(Protocol):
    """What an :class:`Inbox` needs of its transport."""

    def pause_reading(self) -> None: ...

    def resume_reading(self) -> None: ...

    def is_closing(self) -> bool: ...


class Inbox:
    """The chunks a connection received, handed out as they came: asyncio's StreamReader
    copies each byte into its buffer and out of it again, 9 % of a broker's Python time
    under a produce load (py-spy). Reading pauses while more than
    :data:`_INBOX_PAUSE_BYTES` wait, as the StreamReader's does past twice its limit; the
    chunks received before an error are read before it is raised."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._chunks: collections.deque[bytes] = collections.deque()
        self._held = 0
        self._ended = False
        self._error: BaseException | None = None
        self._waiter: asyncio.Future[None] | None = None
        self._transport: _Reading | None = None
        self._paused = False
        self.arrived = time.monotonic()
        """When the last chunk came (``time.monotonic()``): the request metrics' queue
        time starts there."""

    def attach(self, transport: object) -> None:
        """The transport to pause (uvloop's are no asyncio.ReadTransport, but read alike)."""
        self._transport = transport if isinstance(transport, _Reading) else None

    def put(self, data: bytes) -> None:
        if not data:
            return
        self.arrived = time.monotonic()
        self._chunks.append(data)
        self._held += len(data)
        self._wake()
        if self._held > _INBOX_PAUSE_BYTES and not self._paused:
            self._pause(True)

    def end(self, error: BaseException | None = None) -> None:
        """No more chunks: the peer's end of the stream, or the connection's ``error``."""
        self._ended = True
        if error is not None:
            self._error = error
        self._wake()

    async def read(self, _size: int = -1) -> bytes:
        """The next chunk whatever its size (StreamReader's ``read`` with ``_size`` the
        most it would return); b"" at the end of the stream; the connection's error."""
        while not self._chunks:
            if self._error is not None:
                raise self._error
            if self._ended:
                return b""
            self._pause(False)  # nothing held: never wait while paused
            self._waiter = self._loop.create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None
        chunk = self._chunks.popleft()
        self._held -= len(chunk)
        if self._paused and self._held <= _INBOX_PAUSE_BYTES // 2:
            self._pause(False)
        return chunk

    def _wake(self) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    def _pause(self, paused: bool) -> None:
        transport = self._transport
        if paused == self._paused or transport is None:
            return
        self._paused = paused
        if transport.is_closing():
            return
        if paused:
            transport.pause_reading()
        else:
            transport.resume_reading()


class _InboxProtocol(asyncio.StreamReaderProtocol):
    """asyncio's stream protocol (a StreamWriter's flow control and close) whose received
    bytes go to an :class:`Inbox` instead of a StreamReader's buffer."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        # the writer's (its drain raises the connection's error); the base holds it weakly
        self._closing_reader = asyncio.StreamReader(loop=loop)
        super().__init__(self._closing_reader, loop=loop)
        self._inbox_loop = loop
        self.inbox = Inbox(loop)

    def writer(self, transport: asyncio.BaseTransport) -> asyncio.StreamWriter:
        # uvloop's transports write alike without being asyncio.WriteTransport instances
        return asyncio.StreamWriter(cast(asyncio.WriteTransport, transport), self,
                                    self._closing_reader, self._inbox_loop)

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        self.inbox.attach(transport)

    def data_received(self, data: bytes) -> None:
        self.inbox.put(data)

    def eof_received(self) -> bool | None:
        self.inbox.end()
        return super().eof_received()

    def connection_lost(self, exc: Exception | None) -> None:
        self.inbox.end(exc)
        super().connection_lost(exc)


async def _writable(fd: int) -> None:
    """Wait until the socket ``fd`` takes more bytes, or :data:`_WRITABLE_CHECK_S` passed
    (the caller checks its connection was not closed meanwhile)."""
    loop = asyncio.get_running_loop()
    ready: asyncio.Future[None] = loop.create_future()

    def wake() -> None:
        if not ready.done():
            ready.set_result(None)

    loop.add_writer(fd, wake)
    try:
        await asyncio.wait({ready}, timeout=_WRITABLE_CHECK_S)
    finally:
        loop.remove_writer(fd)
        ready.cancel()


@dataclass(frozen=True, slots=True)
class _MemoryTls:
    """One server-side TLS session over memory buffers: raw bytes in through ``incoming``,
    out through ``outgoing``."""

    session: ssl.SSLObject
    incoming: ssl.MemoryBIO
    outgoing: ssl.MemoryBIO

    @classmethod
    def server(cls, context: ssl.SSLContext) -> _MemoryTls:
        incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
        return cls(context.wrap_bio(incoming, outgoing, server_side=True), incoming, outgoing)
