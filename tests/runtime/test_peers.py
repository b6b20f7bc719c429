"""PeerConnection: reconnect with exponential backoff, timeouts close the connection."""

from __future__ import annotations

import asyncio
import random
from typing import Any

import pytest

from pykraft.errors import NetworkError
from pykraft.runtime.backoff import ExponentialBackoff
from pykraft.runtime.peers import PeerConnection


class FakeConnection:
    def __init__(self, delay_s: float = 0.0) -> None:
        self.delay_s = delay_s
        self.closed = False
        self.requests: list[Any] = []

    async def request(self, body: Any, client_id: str | None = None) -> Any:
        self.requests.append(body)
        await asyncio.sleep(self.delay_s)
        return ("answer", body)

    def close(self) -> None:
        self.closed = True


class Opener:
    """Fails the first ``failures`` connects, then hands out the given connections."""

    def __init__(self, failures: int, connections: list[FakeConnection]) -> None:
        self.failures = failures
        self.connections = connections
        self.calls = 0

    async def __call__(self, host: str, port: int) -> FakeConnection:
        self.calls += 1
        if self.calls <= self.failures:
            raise ConnectionRefusedError(f"refused {host}:{port}")
        return self.connections.pop(0)


def _peer(opener: Opener, *, timeout_ms: int = 500, initial_ms: int = 2,
          maximum_ms: int = 8) -> PeerConnection:
    backoff = ExponentialBackoff(initial_ms, maximum_ms, jitter=0.0, rng=random.Random(1))
    return PeerConnection(2, "127.0.0.1", 1, client_id="t", ours={},
                          request_timeout_ms=timeout_ms, backoff=backoff, opener=opener)


def test_backoff_doubles_up_to_the_maximum_and_resets() -> None:
    backoff = ExponentialBackoff(50, 500, jitter=0.0)
    assert [backoff.next_delay_ms() for _ in range(6)] == [50, 100, 200, 400, 500, 500]
    backoff.reset()
    assert backoff.next_delay_ms() == 50
    jittered = ExponentialBackoff(100, 1000, jitter=0.2, rng=random.Random(3))
    assert all(80 <= jittered.next_delay_ms() <= 120 for _ in range(1)) and jittered.failures == 1


def test_failed_connects_back_off_then_reconnect() -> None:
    connection = FakeConnection()
    opener = Opener(failures=3, connections=[connection])
    peer = _peer(opener)

    async def scenario() -> list[str]:
        outcomes = []
        for _ in range(4):
            try:
                await peer.send("vote")
                outcomes.append("ok")
            except NetworkError:
                outcomes.append("failed")
        return outcomes

    assert asyncio.run(scenario()) == ["failed", "failed", "failed", "ok"]
    assert (opener.calls, peer.connects, peer.failures) == (4, 1, 3)
    assert connection.requests == ["vote"]
    assert peer.connected


def test_request_timeout_closes_the_connection_and_the_next_send_reconnects() -> None:
    hung, healthy = FakeConnection(delay_s=5.0), FakeConnection()
    opener = Opener(failures=0, connections=[hung, healthy])
    peer = _peer(opener, timeout_ms=50)

    async def scenario() -> Any:
        with pytest.raises(NetworkError):
            await peer.send("fetch-1")
        assert hung.closed and not peer.connected
        return await peer.send("fetch-2")

    assert asyncio.run(scenario()) == ("answer", "fetch-2")
    assert (opener.calls, peer.connects) == (2, 2)


def test_backoff_longer_than_the_timeout_fails_without_connecting() -> None:
    opener = Opener(failures=1, connections=[FakeConnection()])
    peer = _peer(opener, timeout_ms=10, initial_ms=1000, maximum_ms=1000)

    async def scenario() -> None:
        for _ in range(2):
            with pytest.raises(NetworkError):
                await peer.send("vote")

    asyncio.run(scenario())
    assert opener.calls == 1  # the second send did not even try: still backing off


def test_a_connection_idle_past_the_client_limit_is_replaced() -> None:
    """Kafka's client drops a connection idle for 9 minutes, before the server's 10-minute
    idle expiry closes it under a request."""
    now = [0.0]
    opener = Opener(0, [FakeConnection(), FakeConnection()])
    peer = PeerConnection(2, "127.0.0.1", 1, client_id="t", ours={}, request_timeout_ms=500,
                          opener=opener, clock=lambda: now[0])

    async def scenario() -> None:
        await peer.send("a")
        now[0] += 539.0
        await peer.send("b")  # still in use
        now[0] += 541.0
        await peer.send("c")

    asyncio.run(scenario())
    assert opener.calls == 2

