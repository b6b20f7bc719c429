"""``pykraft cluster up|down|delete`` as ``make cluster`` runs them, twice in a row.

The first ``make cluster`` worked and every later one refused ("already holds a cluster")
even after ``cluster down``. A stopped cluster now restarts on its data (its leader epoch
keeps growing); only a running one is refused; ``--fresh`` and ``delete`` start anew.
"""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest
from process_harness import leader_info

from pykraft.tools.local_cluster import LocalCluster

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pykraft", "cluster", *args],
                          capture_output=True, text=True, timeout=120, check=False)


@pytest.fixture
def directory(cluster_directory: Path) -> Path:
    return cluster_directory


def test_up_down_up_restarts_the_stopped_cluster_on_its_data(directory: Path) -> None:
    first = cli("up", "--detach", "--dir", str(directory))
    assert first.returncode == 0, first.stderr
    assert first.stdout.startswith("Started 3 controllers")
    before = leader_info(LocalCluster.load(directory))

    running = cli("up", "--detach", "--dir", str(directory))
    assert running.returncode == 1
    assert running.stderr.startswith(f"Error: the cluster in {directory} is running (node 1 ")

    down = cli("down", "--dir", str(directory))
    assert down.returncode == 0, down.stderr
    assert LocalCluster.load(directory).running() == []

    second = cli("up", "--detach", "--dir", str(directory))
    assert second.returncode == 0, second.stderr
    assert second.stdout.startswith(f"Restarted 3 controllers and 0 brokers of cluster "
                                    f"{before.cluster_id};")
    after = leader_info(LocalCluster.load(directory), min_epoch=before.leader_epoch + 1)
    assert after.cluster_id == before.cluster_id
    assert after.high_watermark > before.high_watermark  # the old log is still there

    assert cli("up", "--detach", "--fresh", "--dir", str(directory)).returncode == 1
    assert cli("down", "--dir", str(directory)).returncode == 0
    fresh = cli("up", "--detach", "--fresh", "--dir", str(directory))
    assert fresh.returncode == 0, fresh.stderr
    assert fresh.stdout.startswith("Started 3 controllers")
    assert LocalCluster.load(directory).cluster_id != before.cluster_id

    deleted = cli("delete", "--dir", str(directory))
    assert deleted.returncode == 0, deleted.stderr
    assert not directory.exists()


def test_up_detach_returns_once_brokers_serve_clients(directory: Path) -> None:
    """A new user's next command (a producer, kcat) ran into a refused connection: the
    broker opens its client listener only once the controller unfences it."""
    up = cli("up", "--detach", "--controllers", "1", "--brokers", "1", "--dir", str(directory))
    assert up.returncode == 0, up.stderr
    cluster = LocalCluster.load(directory)
    (broker,) = cluster.brokers
    socket.create_connection(("127.0.0.1", cluster.nodes[broker].port), timeout=5).close()
    assert cli("delete", "--dir", str(directory)).returncode == 0
