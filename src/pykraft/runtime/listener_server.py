"""A listener's TCP server: frames in, one request at a time per connection.

Like Kafka's SocketServer, a connection's next request is only read once the previous one
has been answered, so responses leave in request order even when the core parks a Fetch. An
oversized or malformed frame, or a request the listener does not serve, closes that one
connection; nothing a client sends can stop the process.

An SSL or SASL_SSL listener starts each connection with a TLS handshake; one that fails
(garbage, an untrusted certificate, none when ``ssl.client.auth=required``) closes that
connection and is logged once, as Kafka's "Failed authentication with /host". The session
every request carries names the listener, its protocol and the principal: the client
certificate's (mapped) DN on TLS, ``User:ANONYMOUS`` otherwise. A SASL_PLAINTEXT or
SASL_SSL listener then authenticates the connection
(:mod:`pykraft.runtime.sasl_authenticator`): its requests carry ``User:<SASL id>``; a
failed authentication is answered after ``connection.failed.authentication.delay.ms``.

The server runs its own accept loop so that it can stop accepting: it takes a connection
only when the node's :class:`~pykraft.runtime.connection_registry.ConnectionRegistry` has a
slot for the listener (``max.connections``, per listener, the open-file limit), else the
client waits in the kernel's backlog, as with Kafka's acceptor; a connection beyond the
creation rates holds the acceptor for its throttle time before it goes on. A connection from
an address beyond its ``connection_creation_rate`` quota is held open unread and closed
after its throttle time, as Kafka's acceptor does. A client throttled by its quota has its
connection muted (not read) for the throttle time after its response
(:mod:`pykraft.runtime.channel_mute`), and one whose request finds its side's request queue
full waits for a place before handling it (``queued.max.requests``:
:mod:`pykraft.runtime.request_queue`). A connection beyond ``max.connections.per.ip`` is
closed at once, an idle one after ``connections.max.idle.ms``. Running out of descriptors on
accept (EMFILE, ENFILE) is logged and waited out: nothing a client does can stop the
process.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import socket
import ssl
import time
from collections.abc import Callable

from pykraft.errors import FrameTooLargeError, ProtocolError, StorageError
from pykraft.runtime import handler_time
from pykraft.runtime.channel_mute import unmuted
from pykraft.runtime.connection_registry import Connection, ConnectionRegistry
from pykraft.runtime.listener_dispatch import CloseConnection, ListenerDispatcher
from pykraft.runtime.logfmt import event
from pykraft.runtime.request_metrics import RequestMetrics
from pykraft.runtime.request_queue import RequestQueue
from pykraft.runtime.sasl_authenticator import INVALID_RECEIVE_SIZE, SaslGate, SaslRefused
from pykraft.runtime.streams import FrameStream
from pykraft.runtime.tls import ServerTls
from pykraft.security.sasl_listener import SaslListener
from pykraft.security.session import ANONYMOUS, SecurityProtocol, Session
from pykraft.security.ssl_principal import NoMatchingRuleError

log = logging.getLogger("pykraft.server")
#: How long a client may take over its TLS handshake (Java's default: 10 s of handshake
#: inactivity; asyncio's own default is a minute).
TLS_HANDSHAKE_TIMEOUT_S = 10.0
#: The kernel's queue of connections not yet accepted (asyncio's default).
LISTEN_BACKLOG = 100
#: Accept failing (out of descriptors): try again when a connection closes, or after this
#: long.
ACCEPT_RETRY_S = 1.0
#: accept errors of one connection, not of the listener: the next accept is fine.
_CLIENT_GONE = frozenset({errno.ECONNABORTED, errno.EPROTO, errno.EINTR, errno.EAGAIN})


class ListenerServer:
    """Accepts connections on one endpoint and serves them with a
    :class:`ListenerDispatcher`."""

    def __init__(self, dispatcher: ListenerDispatcher, host: str, port: int,
                 max_frame_size: int, *,
                 listener_name: str = "PLAINTEXT",
                 protocol: SecurityProtocol = SecurityProtocol.PLAINTEXT,
                 tls: ServerTls | None = None, sasl: SaslListener | None = None,
                 connections: ConnectionRegistry | None = None,
                 requests: RequestMetrics | None = None,
                 queue: RequestQueue | None = None,
                 timed: Callable[[], bool] = lambda: False) -> None:
        if protocol.uses_tls != (tls is not None):
            raise ValueError(f"listener {listener_name} ({protocol.name}) "
                             f"{'needs' if protocol.uses_tls else 'takes no'} TLS settings")
        if protocol.uses_sasl != (sasl is not None):
            raise ValueError(f"listener {listener_name} ({protocol.name}) "
                             f"{'needs' if protocol.uses_sasl else 'takes no'} SASL settings")
        self._dispatcher = dispatcher
        self.listener_name = listener_name
        self.protocol = protocol
        self._tls = tls
        self._sasl = sasl
        self._host = host
        self._port = port
        self._max_frame_size = max_frame_size
        self._own_registry = connections is None
        self._registry = connections or ConnectionRegistry()
        self._socket: socket.socket | None = None
        self._acceptor: asyncio.Task[None] | None = None
        self._connections: set[asyncio.Task[None]] = set()
        self._throttled: dict[socket.socket, asyncio.TimerHandle] = {}
        """Connections held unread until their address's creation rate throttle ends."""
        self._requests = requests or RequestMetrics()
        """The process's request metrics (:mod:`pykraft.runtime.request_metrics`)."""
        self._queue = queue
        """Its side's ``queued.max.requests`` (:mod:`pykraft.runtime.request_queue`)."""
        self._timed = timed
        """Whether a request quota is in force: each request's handler time is then
        measured (:mod:`pykraft.runtime.handler_time`; some 10 us a request otherwise
        spent for nothing)."""

    async def start(self) -> None:
        self._socket = _listen(self._host, self._port)
        self._acceptor = asyncio.get_running_loop().create_task(self._accept_loop())

    @property
    def port(self) -> int:
        assert self._socket is not None
        port: int = self._socket.getsockname()[1]
        return port

    async def close(self) -> None:
        if self._acceptor is not None:
            self._acceptor.cancel()
            await asyncio.gather(self._acceptor, return_exceptions=True)
        if self._socket is not None:
            self._socket.close()
        for sock, timer in list(self._throttled.items()):
            timer.cancel()
            self._close_throttled(sock)
        for task in list(self._connections):
            task.cancel()
        if self._connections:
            await asyncio.gather(*self._connections, return_exceptions=True)
        if self._own_registry:
            await self._registry.close()

    async def _accept_loop(self) -> None:
        """Accept while the registry has a slot; never ends on a client's doing."""
        assert self._socket is not None
        loop = asyncio.get_running_loop()
        failing = False
        while True:
            await self._registry.slot(self.listener_name)
            try:
                sock, address = await loop.sock_accept(self._socket)
            except OSError as exc:
                if exc.errno in _CLIENT_GONE:
                    continue  # the client gave up before we took it
                if not failing:  # out of descriptors (EMFILE, ENFILE) or worse: logged once
                    failing = True
                    event(log, "accept_failed", level=logging.ERROR,
                          listener=self.listener_name, error=str(exc),
                          connections=self._registry.quotas.total)
                await self._registry.released(ACCEPT_RETRY_S)
                continue
            failing = False
            try:
                await self._creation_throttled()
            except asyncio.CancelledError:
                sock.close()
                raise
            ip = _peer_ip(address)
            throttle_ms = self._registry.ip_throttle_ms(self.listener_name, ip)
            if throttle_ms > 0:
                self._hold_then_close(sock, ip, throttle_ms)
                continue
            connection = self._registry.open(self.listener_name, ip, sock.close)
            if connection is None:
                sock.close()
                continue
            task = loop.create_task(self._accepted(sock, connection))
            self._connections.add(task)
            task.add_done_callback(self._connections.discard)

    async def _creation_throttled(self) -> None:
        """Kafka's acceptor past a creation rate: it waits the throttle time, and for a
        slot again, before going on with the connection it accepted and taking the next."""
        throttle_ms = self._registry.creation_throttle_ms(self.listener_name)
        if throttle_ms > 0:
            await asyncio.sleep(throttle_ms / 1000)
            await self._registry.slot(self.listener_name)

    def _hold_then_close(self, sock: socket.socket, ip: str, throttle_ms: int) -> None:
        """Kafka's answer to an address beyond its ``connection_creation_rate``: the
        connection stays open, never read nor counted, and is closed after the throttle
        time (the acceptor's ``DelayedCloseSocket``)."""
        event(log, "connection_throttled", level=logging.DEBUG, listener=self.listener_name,
              peer=ip, throttle_ms=throttle_ms)
        self._throttled[sock] = asyncio.get_running_loop().call_later(
            throttle_ms / 1000, self._close_throttled, sock)

    def _close_throttled(self, sock: socket.socket) -> None:
        self._throttled.pop(sock, None)
        sock.close()

    async def _accepted(self, sock: socket.socket, connection: Connection) -> None:
        stream: FrameStream | None = None
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            stream = await FrameStream.accept(sock, self._max_frame_size, connection.touch)
            connection.abort_with(stream.abort)
            # Kafka's channel id: unique for the node's life, though the kernel reuses ports
            await self._serve(stream, f"{stream.local}-{stream.peer}-{connection.key}")
        except asyncio.CancelledError:
            pass  # server shutdown; asyncio would report a cancelled handler as an error
        except OSError:
            pass  # gone before its stream was set up
        finally:
            connection.closed()
            if stream is None:
                sock.close()
            else:
                stream.close()

    def _refused(self, stream: FrameStream, channel_id: str, reason: str) -> None:
        """Log a refused connection once, with its reason (Kafka's "Failed authentication
        with /127.0.0.1 (channelId=...) (SSL handshake failed)")."""
        host = stream.peer.rsplit(":", 1)[0] if ":" in stream.peer else stream.peer
        event(log, "failed_authentication", level=logging.INFO, peer=f"/{host.strip('[]')}",
              channel_id=channel_id, listener=self.listener_name, reason=reason)

    async def _handshake(self, stream: FrameStream, channel_id: str) -> Session | None:
        """The connection's session; None when its TLS handshake failed (logged)."""
        peer = stream.peer
        principal = ANONYMOUS
        if self._tls is not None:
            try:
                der = await stream.accept_tls(self._tls.context, TLS_HANDSHAKE_TIMEOUT_S)
                principal = self._tls.principals.of_certificate(der)
            except ssl.SSLError as exc:
                reason = exc.reason or str(exc)
                if isinstance(exc, ssl.SSLCertVerificationError) and exc.verify_message:
                    reason += f" ({exc.verify_message})"  # why: expired, unknown issuer, ...
                if reason == "UNEXPECTED_EOF_WHILE_READING":  # the client gave no alert
                    reason += " (the client hung up: does it trust this listener's certificate?)"
                self._refused(stream, channel_id, f"SSL handshake failed: {reason}")
                return None
            except NoMatchingRuleError as exc:
                self._refused(stream, channel_id, str(exc))
                return None
            except EOFError:
                return None  # closed before saying anything (a port probe)
            except (OSError, TimeoutError) as exc:
                self._refused(stream, channel_id, "SSL handshake failed: "
                              f"{type(exc).__name__}: {exc}".rstrip(": "))
                return None
        return Session(principal, peer, self.listener_name, self.protocol)

    async def _serve(self, stream: FrameStream, channel_id: str) -> None:
        session = await self._handshake(stream, channel_id)
        if session is None:
            return
        try:
            await self._serve_session(stream, channel_id, session)
        finally:
            self._dispatcher.connection_closed(session)

    async def _serve_session(self, stream: FrameStream, channel_id: str,
                             session: Session) -> None:
        gate = None if self._sasl is None else SaslGate(
            self._sasl, session, self._registry.failed_authentication_delay_s)
        if self._sasl is not None:  # Kafka refuses a larger size prefix before reading on
            stream.max_frame_size = min(self._max_frame_size, self._sasl.max_receive_size)
        while True:
            try:
                frame = await stream.read_frame()
                if frame is None:
                    return
                if gate is not None and not await gate.admit(stream, frame):
                    if gate.authenticated:
                        stream.max_frame_size = self._max_frame_size
                    continue
                arrived = stream.arrived
                if self._queue is not None:  # full: this connection reads nothing meanwhile
                    await self._queue.admit()
                times, token = self._requests.begin(self._queue)
                served = session if gate is None else gate.session
                timed = handler_time.HandlerTime(served) if self._timed() else None
                timing = handler_time.CURRENT.set(timed)
                try:
                    started = time.monotonic()
                    respond = self._dispatcher.respond(frame, served)
                    response = await (respond if timed is None else timed.run(respond))
                    handled = time.monotonic()
                    if response:  # b"": a request answered with nothing (Produce acks=0)
                        write = stream.write_frame(response)
                        await (write if timed is None else timed.run(write))
                    self._requests.record(
                        int.from_bytes(frame[0:2]), int.from_bytes(frame[2:4]), times,
                        arrived=arrived, started=started, handled=handled,
                        sent=time.monotonic())
                    if timed is not None:
                        timed.finish()
                finally:
                    handler_time.CURRENT.reset(timing)
                    self._requests.end(token)
                await unmuted()  # a throttled client's connection reads nothing meanwhile
            except (CloseConnection, StorageError) as exc:  # StorageError: a Fetch answer's
                # records left its segment file while being sent (truncated or deleted)
                event(log, "connection_closed", level=logging.WARNING, channel_id=channel_id,
                      reason=str(exc))
                return
            except SaslRefused as exc:
                if exc.failed:
                    self._refused(stream, channel_id, str(exc))
                else:
                    event(log, "connection_closed", channel_id=channel_id, reason=str(exc))
                return
            except ProtocolError as exc:
                if isinstance(exc, FrameTooLargeError) and gate and not gate.authenticated:
                    self._refused(stream, channel_id, f"{INVALID_RECEIVE_SIZE} ({exc})")
                else:
                    event(log, "connection_closed", level=logging.WARNING,
                          channel_id=channel_id, reason=f"{type(exc).__name__}: {exc}")
                return
            except (OSError, EOFError):
                return


def _listen(host: str, port: int) -> socket.socket:
    """A non-blocking listening socket: ``host`` empty means every interface (IPv6 and
    IPv4 where the platform has both), as Kafka binds an empty host."""
    if host:
        family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]
        sock = socket.create_server((host, port), family=family, backlog=LISTEN_BACKLOG)
    elif socket.has_dualstack_ipv6():
        sock = socket.create_server(("", port), family=socket.AF_INET6, dualstack_ipv6=True,
                                    backlog=LISTEN_BACKLOG)
    else:
        sock = socket.create_server(("", port), backlog=LISTEN_BACKLOG)
    sock.setblocking(False)
    return sock


def _peer_ip(address: object) -> str:
    """The client's address as the per-IP limits name it (an IPv4 client of a dual-stack
    socket as its IPv4 address)."""
    ip = str(address[0]) if isinstance(address, tuple) else str(address)
    return ip.removeprefix("::ffff:")
