"""A killed active controller restarts from its own metadata snapshot: the core hands the
restarted, resigned former leader the snapshot right after telling it that it led the
epoch, and the controller must load it instead of stopping."""

from __future__ import annotations

from pathlib import Path

import pytest
from process_harness import TEST_PROPERTIES, leader_info, wait_for

from pykraft.tools.local_cluster import LocalCluster

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


def test_the_killed_active_controller_restarts_from_its_snapshot(tmp_path: Path) -> None:
    properties = {k: v for k, v in TEST_PROPERTIES.items()
                  if k != "pykraft.server.extension.class"}
    properties["metadata.log.max.record.bytes.between.snapshots"] = "500"  # NoOps suffice
    cluster = LocalCluster.create(tmp_path / "c", 3, properties)
    try:
        cluster.start_all()
        leader = leader_info(cluster).leader_id
        metadata = cluster.nodes[leader].data / "__cluster_metadata-0"
        wait_for("a snapshot on the active controller", lambda: True if any(
            metadata.glob("*.checkpoint")) else None)
        cluster.kill(leader)
        cluster.start(leader)
        log = cluster.nodes[leader].log
        wait_for("the restarted controller to load its snapshot", lambda: True if (
            "event=snapshot_loaded" in log.read_text()) else None)
        leader_info(cluster)
        wait_for("the restarted controller to keep running past its start", lambda: True if (
            log.read_text().count("event=state_change") >= 2) else None)
        assert cluster.is_running(leader)
        assert "event=fatal" not in log.read_text()
    finally:
        for node_id in cluster.nodes:
            cluster.kill(node_id)
