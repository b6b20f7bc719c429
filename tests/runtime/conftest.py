"""Sockets the runtime tests connect to: a port nothing listens on, and a listener that
never accepts (what a paused process looks like from outside)."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest


@pytest.fixture
def closed_port() -> int:
    """A port nothing listens on (bound once to pick it, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


@pytest.fixture
def silent_server() -> Iterator[int]:
    """A listener that accepts connections and never answers."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield sock.getsockname()[1]
