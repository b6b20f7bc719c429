"""Brokers in a dynamic quorum: they know only ``controller.quorum.bootstrap.servers`` and
reach the active controller wherever the metadata log (or a Fetch answer) says it is."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from broker_harness import PROPERTIES, fenced_brokers, wait_for, wait_for_brokers

from pykraft.tools.local_cluster import LocalCluster
from pykraft.tools.quorum_tool import QuorumInfo, describe_quorum, parse_bootstrap


def _leader(cluster: LocalCluster, controllers: list[int]) -> int:
    bootstrap = parse_bootstrap(",".join(cluster.nodes[n].address for n in controllers))
    info: QuorumInfo = asyncio.run(describe_quorum(*bootstrap))
    return info.leader_id


def test_brokers_register_and_follow_the_active_controller_of_a_dynamic_quorum(
        tmp_path: Path) -> None:
    cluster = LocalCluster.create(tmp_path / "dynamic", 3, PROPERTIES, brokers=2, dynamic=True)
    try:
        config = cluster.nodes[cluster.brokers[0]].config.read_text()
        assert "controller.quorum.bootstrap.servers=" in config
        assert "controller.quorum.voters" not in config
        cluster.start_all()
        cluster.add_voters()
        wait_for_brokers(cluster, 2)

        leader = _leader(cluster, cluster.controllers)
        cluster.kill(leader)
        survivors = [n for n in cluster.controllers if n != leader]
        wait_for("a new active controller",
                 lambda: True if _leader(cluster, survivors) != leader else None)
        # The brokers heartbeat to the new active controller: two session timeouts after
        # the kill, both are still registered and unfenced.
        expiry = time.monotonic() + 2 * int(PROPERTIES["broker.session.timeout.ms"]) / 1000
        unfenced = dict.fromkeys(cluster.brokers, False)
        wait_for("the brokers to stay unfenced past two session timeouts", lambda: True if (
            time.monotonic() > expiry
            and all(fenced_brokers(cluster, b) == unfenced for b in cluster.brokers))
            else None)
    finally:
        for node_id in cluster.nodes:
            cluster.kill(node_id)
