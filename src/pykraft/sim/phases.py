"""Scenario building blocks: elect, wait for a new leader, require progress.

A phase that does not finish within ``PHASE_MS`` of simulated time is a Liveness violation.
"""

from __future__ import annotations

from pykraft.sim.simulated_cluster import Cluster

PHASE_MS = 30_000
PROGRESS = 10  # committed offsets each phase must add


def progress(cluster: Cluster, nodes: list[int] | None = None, what: str = "progress") -> None:
    """Every listed (default: live) node commits PROGRESS more offsets than anyone had."""
    ids = nodes if nodes is not None else [i for i in cluster.nodes if cluster.is_alive(i)]
    target = max(cluster.committed(i) for i in cluster.nodes) + PROGRESS
    cluster.run_until(lambda: cluster.all_committed(target, ids), PHASE_MS,
                      what=f"{what}: nodes {ids} commit offset {target}")


def elect(cluster: Cluster) -> int:
    cluster.start_all()
    cluster.schedule_appends()
    cluster.run_until(lambda: cluster.leader_id() is not None, PHASE_MS, what="first leader")
    progress(cluster, what="initial commits")
    leader = cluster.leader_id()
    assert leader is not None
    return leader


def new_leader(cluster: Cluster, old: int, what: str) -> int:
    cluster.run_until(lambda: cluster.leader_id() not in (None, old), PHASE_MS, what=what)
    leader = cluster.leader_id()
    assert leader is not None
    return leader
