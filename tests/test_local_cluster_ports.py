"""Where local clusters take their ports: the kernel's choice, or PYKRAFT_PORT_RANGE."""

from __future__ import annotations

import collections
import os
import socket

import pytest

from pykraft.tools import local_cluster
from pykraft.tools.local_cluster import HOST, PORT_RANGE_ENV, ClusterError, free_ports
from worker_ports import EPHEMERAL_LOW, PORTS_LOW


def _bound_range(monkeypatch: pytest.MonkeyPatch, size: int) -> tuple[socket.socket, range]:
    """A range of ``size`` ports, every one free now, inside this worker's own
    ``PYKRAFT_PORT_RANGE`` (below the kernel's ephemeral ports, so no outgoing connection of
    another test takes one meanwhile: a window of ephemeral ports once had one taken)."""
    bounds = os.environ.get(PORT_RANGE_ENV) or f"{PORTS_LOW}-{EPHEMERAL_LOW - 1}"
    first, _, last = bounds.partition("-")
    low = next(start for start in range(int(first), int(last) - size + 2, size)
               if all(_free(port) for port in range(start, start + size)))
    monkeypatch.setenv(PORT_RANGE_ENV, f"{low}-{low + size - 1}")
    # what earlier tests of this process handed out (maybe of this window) is forgotten
    monkeypatch.setattr(local_cluster, "_HANDED_OUT", collections.deque(maxlen=128))
    taken = socket.socket()
    taken.bind((HOST, low))  # one port of the range is in use: it must be skipped
    return taken, range(low, low + size)


def _free(port: int) -> bool:
    with socket.socket() as probe:
        try:
            probe.bind((HOST, port))
        except OSError:
            return False
    return True


def test_ports_come_from_the_range_distinct_and_skip_a_bound_one(
        monkeypatch: pytest.MonkeyPatch) -> None:
    taken, ports = _bound_range(monkeypatch, 40)
    with taken:
        chosen = free_ports(5)
    assert len(set(chosen)) == 5
    assert all(port in ports[1:] for port in chosen)


def test_ports_handed_out_lately_are_not_handed_out_again(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Clusters made one after another bind their ports only when they start: the second
    must not be given the first's (two oracle clusters once got the same port)."""
    taken, _ = _bound_range(monkeypatch, 9)
    with taken:
        first, second = free_ports(4), free_ports(4)
    assert not set(first) & set(second)


def test_a_range_without_enough_free_ports_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    taken, _ = _bound_range(monkeypatch, 3)
    with taken, pytest.raises(ClusterError, match=PORT_RANGE_ENV):
        free_ports(3)


def test_without_a_range_the_kernel_picks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(PORT_RANGE_ENV, raising=False)
    assert len(set(free_ports(4))) == 4
