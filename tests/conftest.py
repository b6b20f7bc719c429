"""Shared fixtures: paths to the real Kafka 3.7 files copied into the repository."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from pykraft.tools.local_cluster import PORT_RANGE_ENV
from worker_ports import EPHEMERAL_LOW, PORTS_LOW

# Tests assert behaviour, never timing: hypothesis's per-example deadline and its slow-data
# health check both fail a correct test on a loaded machine (seen on a 2-core CI run).
settings.register_profile("pykraft", deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("pykraft")

KAFKA37 = Path(__file__).parent / "fixtures" / "kafka-3.7-kraft"


@pytest.fixture
def kafka37_dir() -> Path:
    return KAFKA37


@pytest.fixture
def cluster_directory(tmp_path: Path) -> Iterator[Path]:
    """A directory for ``pykraft cluster up --dir``; whatever still runs there at the end
    is killed by PID (a failed test must not leave servers behind)."""
    from pykraft.tools.local_cluster import STATE_FILE, LocalCluster

    base = tmp_path / "cluster"
    yield base
    if (base / STATE_FILE).exists():
        cluster = LocalCluster.load(base)
        for node_id in cluster.nodes:
            cluster.kill(node_id)


def pytest_configure(config: pytest.Config) -> None:
    """Local clusters take their ports from a range of this worker's own, below the kernel's
    ephemeral ports (:data:`pykraft.tools.local_cluster.PORT_RANGE_ENV`)."""
    del config
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    index = int(os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw"))
    span = (EPHEMERAL_LOW - PORTS_LOW) // max(workers, 1)
    low = PORTS_LOW + index * span
    os.environ.setdefault(PORT_RANGE_ENV, f"{low}-{low + span - 1}")
