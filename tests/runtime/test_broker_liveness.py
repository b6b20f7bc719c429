"""The active controller's probe of a broker whose heartbeat connection closed: only a
refusal on every listener the broker registered is evidence that its process is gone; a
paused broker (its kernel still accepts into the backlog), a black-holed or unreachable
listener (a timeout), or one listener of several still accepting is not."""

from __future__ import annotations

import asyncio
import socket
import uuid
from collections.abc import Iterator

import pytest

from pykraft.image.cluster_image import BrokerRegistration
from pykraft.records.metadata import BrokerEndpoint
from pykraft.runtime.broker_liveness import BrokerLiveness

CLIENT = "127.0.0.1:50000"


@pytest.fixture
def black_hole_port() -> Iterator[int]:
    """A listener whose accept queue is full: the kernel drops further SYNs, so a connect
    times out as across a partition or a lossy link (not refused)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(0)
        port: int = sock.getsockname()[1]
        queued: list[socket.socket] = []
        try:
            for _ in range(8):  # backlog 0 queues one or two, then drops
                client = socket.socket()
                queued.append(client)
                client.settimeout(0.2)
                try:
                    client.connect(("127.0.0.1", port))
                except TimeoutError:
                    break
            else:
                pytest.skip("the kernel kept accepting into a full backlog")
            yield port
        finally:
            for client in queued:
                client.close()


def broker(*endpoints: tuple[str, int], fenced: bool = False,
           broker_id: int = 1) -> BrokerRegistration:
    return BrokerRegistration(
        broker_id=broker_id, epoch=7, incarnation_id=uuid.UUID(int=1),
        listeners=tuple(BrokerEndpoint(name=f"L{i}", host=host, port=port,
                                       security_protocol=0)
                        for i, (host, port) in enumerate(endpoints)),
        features=(), rack=None, fenced=fenced, in_controlled_shutdown=False)


def reports(registration: BrokerRegistration, *, heartbeat: bool = True) -> list[tuple[int, int]]:
    """What the probe reported after the heartbeat connection (``CLIENT``) closed."""
    reported: list[tuple[int, int]] = []

    def report(broker_id: int, epoch: int) -> bool:
        reported.append((broker_id, epoch))
        return True

    async def scenario() -> None:
        liveness = BrokerLiveness({1: registration}.get, report, rounds=2, spacing_s=0.01,
                                  connect_timeout_s=0.2)
        if heartbeat:
            liveness.heartbeat_from(CLIENT, 1)
        liveness.closed(CLIENT)
        await liveness.settled()
        liveness.close()

    asyncio.run(scenario())
    return reported


def test_every_listener_refusing_is_reported_with_the_epoch(closed_port: int) -> None:
    assert reports(broker(("127.0.0.1", closed_port))) == [(1, 7)]


def test_a_paused_broker_is_not_reported(silent_server: int) -> None:
    """A listener that never accepts: a SIGSTOPped broker, as the kernel sees it."""
    assert reports(broker(("127.0.0.1", silent_server))) == []


def test_a_black_holed_listener_is_not_reported(black_hole_port: int) -> None:
    assert reports(broker(("127.0.0.1", black_hole_port))) == []


def test_one_listener_still_accepting_is_not_reported(closed_port: int,
                                                      silent_server: int) -> None:
    assert reports(broker(("127.0.0.1", closed_port), ("127.0.0.1", silent_server))) == []


def test_a_connection_nobody_heartbeated_on_is_not_probed(closed_port: int) -> None:
    assert reports(broker(("127.0.0.1", closed_port)), heartbeat=False) == []


def test_an_already_fenced_broker_is_not_probed(closed_port: int) -> None:
    assert reports(broker(("127.0.0.1", closed_port), fenced=True)) == []


def overdue_report(registration: BrokerRegistration, alive_port: int, *,
                   heartbeats: bool) -> tuple[int, int]:
    """What the overdue watch reports first; broker 2 (paused: listening, never accepting)
    heartbeats and starts the watch, broker 1 (``registration``) heartbeats once if
    ``heartbeats``, then both go silent."""
    alive = broker(("127.0.0.1", alive_port), broker_id=2)

    async def scenario() -> tuple[int, int]:
        reported: asyncio.Future[tuple[int, int]] = asyncio.get_running_loop().create_future()

        def report(broker_id: int, epoch: int) -> bool:
            if not reported.done():
                reported.set_result((broker_id, epoch))
            return True

        liveness = BrokerLiveness({1: registration, 2: alive}.get, report,
                                  unfenced=lambda: (1, 2), overdue_s=0.05, rounds=1)
        liveness.heartbeat_from("127.0.0.1:50001", 2)
        if heartbeats:
            liveness.heartbeat_from(CLIENT, 1)
        try:
            async with asyncio.timeout(10):
                return await reported
        finally:
            liveness.close()

    return asyncio.run(scenario())


def test_overdue_heartbeats_are_probed_without_a_closed_connection(
        closed_port: int, silent_server: int) -> None:
    """A broker whose connection's end the controller did not see (heartbeats just stop)."""
    dead = broker(("127.0.0.1", closed_port))
    assert overdue_report(dead, silent_server, heartbeats=True) == (1, 7)


def test_a_broker_that_never_heartbeats_to_this_controller_is_probed(
        closed_port: int, silent_server: int) -> None:
    """It died with the previous active controller (a combined node): never heard from."""
    dead = broker(("127.0.0.1", closed_port))
    assert overdue_report(dead, silent_server, heartbeats=False) == (1, 7)
