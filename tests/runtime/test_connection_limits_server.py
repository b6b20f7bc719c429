"""A listener under Kafka's connection limits, on real sockets: accepting waits at
``max.connections`` and resumes when a connection closes, one address beyond its count is
closed at once, accepting follows ``max.connection.creation.rate``, idle connections are
closed (one that finished TLS and never started SASL too), and failed logins are answered
only after the delay, without holding up the loop."""

from __future__ import annotations

import asyncio
import struct
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import cast

from sasl_fixtures import Versions, listener, serve_scenario
from tls_fixtures import pem_files, pki, trust_only

from pykraft.image.client_quotas import ClientQuotasImage
from pykraft.protocol.apis import ApiKey
from pykraft.protocol.codec import decode_response
from pykraft.protocol.errors import ErrorCode
from pykraft.runtime.connection_quotas import ConnectionLimits
from pykraft.runtime.connection_registry import ConnectionRegistry
from pykraft.runtime.dispatch import Dispatcher
from pykraft.runtime.listener_server import ListenerServer
from pykraft.runtime.tls import client_context, server_tls
from pykraft.security.plain import plain_client_token
from pykraft.security.session import SecurityProtocol

sys.path.insert(0, str(Path(__file__).parent.parent / "integration"))
from security_harness import request_frame

DEADLINE_S = 20.0
API_VERSIONS = request_frame(ApiKey.API_VERSIONS, 3, client_software_name="t",
                             client_software_version="1")
Streams = tuple[asyncio.StreamReader, asyncio.StreamWriter]


async def _read_frame(reader: asyncio.StreamReader) -> bytes | None:
    """The next response; None when the server closed the connection."""
    try:
        size = struct.unpack(">i", await reader.readexactly(4))[0]
        return await reader.readexactly(size)
    except (asyncio.IncompleteReadError, ConnectionError):
        return None


async def _versions(streams: Streams) -> bytes | None:
    reader, writer = streams
    writer.write(API_VERSIONS)
    await writer.drain()
    return await _read_frame(reader)


def _connect(port: int, source: str = "127.0.0.1") -> Awaitable[Streams]:
    return asyncio.open_connection("127.0.0.1", port, local_addr=(source, 0))


def _serve(limits: ConnectionLimits | ConnectionRegistry,
           scenario: Callable[[int], Awaitable[None]], *,
           protocol: SecurityProtocol = SecurityProtocol.PLAINTEXT,
           tmp_path: Path | None = None) -> None:
    async def run() -> None:
        registry = (limits if isinstance(limits, ConnectionRegistry)
                    else ConnectionRegistry(limits))
        tls = None if tmp_path is None else server_tls(
            pem_files(tmp_path, pki().server, pki().ca, "server"), protocol.name)
        server = ListenerServer(cast(Dispatcher, Versions()), "127.0.0.1", 0, 1 << 20,
                                listener_name=protocol.name, protocol=protocol, tls=tls,
                                sasl=listener() if protocol.uses_sasl else None,
                                connections=registry)
        try:
            await serve_scenario(server, scenario, DEADLINE_S)
        finally:
            await registry.close()
    asyncio.run(run())


def test_accepting_waits_at_max_connections_and_resumes_when_one_closes() -> None:
    async def scenario(port: int) -> None:
        held = [await _connect(port) for _ in range(3)]
        assert all([await _versions(streams) for streams in held])
        waiting = await _connect(port)  # the kernel's backlog takes it; the server does not
        answer = asyncio.ensure_future(_versions(waiting))
        done, _ = await asyncio.wait({answer}, timeout=0.5)
        assert not done
        held[0][1].close()
        assert await answer is not None  # accepted once a slot is free
        for _, writer in [*held[1:], waiting]:
            writer.close()

    _serve(ConnectionLimits(max_connections=3), scenario)


def test_a_raised_limit_lets_a_waiting_connection_in() -> None:
    registry = ConnectionRegistry(ConnectionLimits(max_connections=1))

    async def scenario(port: int) -> None:
        held = await _connect(port)
        assert await _versions(held) is not None
        answer = asyncio.ensure_future(_versions(await _connect(port)))
        done, _ = await asyncio.wait({answer}, timeout=0.5)
        assert not done
        registry.reconfigure(ConnectionLimits(max_connections=2))  # a dynamic config
        assert await answer is not None
        held[1].close()

    _serve(registry, scenario)


def test_an_address_beyond_its_count_is_closed_at_once() -> None:
    async def scenario(port: int) -> None:
        first = await _connect(port, "127.0.0.2")
        assert await _versions(first) is not None
        assert await _versions(await _connect(port, "127.0.0.2")) is None
        other = await _connect(port)  # 127.0.0.1 has the default limit
        assert await _versions(other) is not None
        first[1].close()
        # served again once the server has seen the close (polled within the deadline)
        while await _versions(await _connect(port, "127.0.0.2")) is None:
            await asyncio.sleep(0.01)

    _serve(ConnectionLimits(per_ip_overrides={"127.0.0.2": 1}), scenario)


def test_an_address_beyond_its_creation_rate_is_held_unread_then_closed() -> None:
    quotas = ClientQuotasImage({(("ip", "127.0.0.2"),): {"connection_creation_rate": 2.0}})
    registry = ConnectionRegistry(ConnectionLimits(quota_window_num=2),
                                  client_quotas=lambda: quotas)

    async def scenario(port: int) -> None:
        limited = [await _connect(port, "127.0.0.2") for _ in range(4)]
        answers = [await _versions(each) for each in limited]
        # 2 a second over one window: the first 2 served, the others closed unanswered
        assert [answer is not None for answer in answers] == [True, True, False, False]
        assert registry.ip_throttled == 2
        assert registry.quotas.total == 2  # the throttled ones were never counted
        assert await _versions(await _connect(port)) is not None  # 127.0.0.1: no quota
        for _, writer in limited:
            writer.close()

    _serve(registry, scenario)


def test_accepting_follows_the_creation_rate() -> None:
    rate, count = 10, 20

    async def scenario(port: int) -> None:
        started = time.monotonic()
        connections = [await _connect(port) for _ in range(count)]  # the backlog takes them
        assert all(await asyncio.gather(*(_versions(c) for c in connections)))
        # with 2 quota windows, a second's worth at once (Kafka's Rate spans a window at
        # least), then one connection every 1/rate s as the acceptor waits out each throttle:
        # the last one cannot be served sooner (without the rate: all within milliseconds)
        assert time.monotonic() - started >= (count - rate) / rate * 0.9

    _serve(ConnectionLimits(creation_rate=rate, quota_window_num=2), scenario)


def test_an_idle_connection_is_closed() -> None:
    async def scenario(port: int) -> None:
        reader, _ = await _connect(port)
        assert await _read_frame(reader) is None  # closed by the server, not by us

    _serve(ConnectionLimits(max_idle_ms=200), scenario)


def test_a_connection_that_finished_tls_and_never_started_sasl_is_closed(tmp_path: Path
                                                                         ) -> None:
    async def scenario(port: int) -> None:
        context = client_context(trust_only(tmp_path, pki().ca, "client"))
        reader, _ = await asyncio.open_connection("127.0.0.1", port, ssl=context,
                                                  server_hostname="localhost")
        assert await _read_frame(reader) is None

    _serve(ConnectionLimits(max_idle_ms=300), scenario, protocol=SecurityProtocol.SASL_SSL,
           tmp_path=tmp_path)


async def _wrong_login(port: int) -> bytes | None:
    """One PLAIN login with a wrong password, on a new connection: the server's answer."""
    reader, writer = await _connect(port)
    writer.write(request_frame(ApiKey.SASL_HANDSHAKE, 1, mechanism="PLAIN"))
    await _read_frame(reader)
    writer.write(request_frame(ApiKey.SASL_AUTHENTICATE, 2,
                               auth_bytes=plain_client_token("alice", "wrong")))
    answer = await _read_frame(reader)
    writer.close()
    return answer


def test_failed_logins_are_answered_after_the_delay() -> None:
    delay_ms = 250
    window_s = 2.0

    async def scenario(port: int) -> None:
        attempts = 0
        end = time.monotonic() + window_s
        while time.monotonic() < end:
            answer = await _wrong_login(port)
            assert answer is not None
            assert decode_response(ApiKey.SASL_AUTHENTICATE, 2, answer).body.error_code == (
                ErrorCode.SASL_AUTHENTICATION_FAILED)
            attempts += 1
        # one client, one attempt per delay at most (before: hundreds in the window)
        assert 1 <= attempts <= window_s * 1000 / delay_ms + 1

    _serve(ConnectionLimits(failed_authentication_delay_ms=delay_ms), scenario,
           protocol=SecurityProtocol.SASL_PLAINTEXT)


def test_a_delayed_failure_holds_up_only_its_own_connection() -> None:
    async def scenario(port: int) -> None:
        failing = [asyncio.ensure_future(_wrong_login(port)) for _ in range(3)]
        assert await _versions(await _connect(port)) is not None
        assert not any(login.done() for login in failing)  # still within their delay
        assert all(await asyncio.gather(*failing))

    _serve(ConnectionLimits(failed_authentication_delay_ms=3000), scenario,
           protocol=SecurityProtocol.SASL_PLAINTEXT)
