"""Real ``pykraft server`` processes on 127.0.0.1, stopped by PID in every finalizer."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from process_harness import TEST_PROPERTIES

from pykraft.tools.local_cluster import LocalCluster


@pytest.fixture
def make_cluster(tmp_path: Path) -> Iterator[Callable[..., LocalCluster]]:
    created: list[LocalCluster] = []

    def make(controllers: int = 3) -> LocalCluster:
        cluster = LocalCluster.create(tmp_path / f"cluster-{len(created)}", controllers,
                                      TEST_PROPERTIES)
        created.append(cluster)
        return cluster

    yield make
    for cluster in created:
        for node_id in cluster.nodes:
            cluster.kill(node_id)
