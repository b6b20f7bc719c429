"""The front door: forwards a node's traffic, knows which node connected, and cutting a
link resets its open connections and holds new ones silent until it heals."""

from __future__ import annotations

import contextlib
import os
import socket
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from pykraft.chaos.links import FrontDoor, Links, close
from pykraft.chaos.nodes import ChaosCluster
from pykraft.chaos.run import CLUSTER_PROPERTIES
from pykraft.tools.local_cluster import HOST, free_ports

sys.path.insert(0, str(Path(__file__).parent.parent / "integration"))
from process_harness import wait_for

TIMEOUT_S = 10.0
ME = 1  # this test process plays node 1
NODE = 2  # the front door's node


def _echo(listener: socket.socket) -> None:
    while True:
        try:
            conn, _ = listener.accept()
        except OSError:
            return
        threading.Thread(target=_echo_one, args=(conn,), daemon=True).start()


def _echo_one(conn: socket.socket) -> None:
    with contextlib.suppress(OSError):
        while data := conn.recv(1024):
            conn.sendall(data)
    close(conn)


@contextlib.contextmanager
def front_door(pids: dict[int, int]) -> Iterator[tuple[Links, int, FrontDoor]]:
    listener = socket.create_server((HOST, 0))
    threading.Thread(target=_echo, args=(listener,), daemon=True).start()
    links = Links(lambda: pids)
    (public,) = free_ports(1)
    door = FrontDoor(NODE, HOST, public, listener.getsockname()[1], links)
    try:
        yield links, public, door
    finally:
        door.close()
        close(listener)


def connect(port: int) -> socket.socket:
    return socket.create_connection((HOST, port), timeout=TIMEOUT_S)


def echoes(sock: socket.socket, data: bytes) -> bytes:
    sock.sendall(data)
    return sock.recv(1024)


@pytest.fixture
def from_a_node() -> Iterator[tuple[Links, int]]:
    with front_door({ME: os.getpid()}) as (links, public, _):
        yield links, public


def test_a_node_is_forwarded_and_identified(from_a_node: tuple[Links, int]) -> None:
    links, port = from_a_node
    with connect(port) as sock:
        assert echoes(sock, b"hello") == b"hello"
        assert links.identify(sock.getsockname()[1], port) == ME


def test_cutting_a_link_resets_its_open_connections(from_a_node: tuple[Links, int]) -> None:
    links, port = from_a_node
    with connect(port) as sock:
        assert echoes(sock, b"before") == b"before"
        links.cut(ME, NODE)
        assert links.cut_links() == [(ME, NODE)]
        with contextlib.suppress(ConnectionResetError):
            assert sock.recv(1024) == b""


def test_a_cut_link_holds_new_connections_silent_until_it_heals(
        from_a_node: tuple[Links, int]) -> None:
    links, port = from_a_node
    links.cut(NODE, ME)
    with connect(port) as held:
        held.sendall(b"lost")
        wait_for("the connection held", lambda: links.held() == 1 or None, TIMEOUT_S)
        links.heal(ME, NODE)
        with contextlib.suppress(ConnectionResetError):
            assert held.recv(1024) == b""  # closed at the heal, never answered
    assert links.cut_links() == []
    with connect(port) as sock:
        assert echoes(sock, b"after") == b"after"


def test_connections_from_outside_the_cluster_always_pass() -> None:
    with front_door({}) as (links, port, _):
        links.cut(ME, NODE)
        with connect(port) as sock:
            assert echoes(sock, b"client") == b"client"
            assert links.identify(sock.getsockname()[1], port) is None


def test_a_shut_door_refuses_connects_as_a_dead_node_does_until_it_opens() -> None:
    with front_door({}) as (_, port, door):
        door.shut()  # the node was killed: a connect is refused, not accepted then closed
        with pytest.raises(ConnectionRefusedError):
            connect(port)
        with socket.socket() as other, pytest.raises(OSError):
            other.bind((HOST, port))  # still the door's: nothing else takes the port
        door.open()  # the node starts again
        with connect(port) as sock:
            assert echoes(sock, b"again") == b"again"


def test_a_cut_between_real_nodes_holds_their_reconnections(tmp_path: Path) -> None:
    """The front doors tell the cluster's own processes apart: cutting the controller off
    from the broker resets the broker's fetch connection and holds its reconnection."""
    nodes = ChaosCluster.create(tmp_path / "cluster", controllers=1, brokers=1,
                                properties=CLUSTER_PROPERTIES)
    try:
        nodes.start_all()
        (controller,), (broker,) = nodes.cluster.controllers, nodes.cluster.brokers
        nodes.links.cut(controller, broker)
        wait_for("the broker's reconnection held", lambda: nodes.links.held() > 0 or None,
                 TIMEOUT_S * 3)
        nodes.links.heal(controller, broker)
        assert nodes.links.held() == 0
    finally:
        nodes.close()
