"""Every controller registers itself with the active controller (KIP-919): its listeners
and features end up as RegisterControllerRecords in the image."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from process_harness import TEST_PROPERTIES, leader_info, wait_for

from pykraft.tools.local_cluster import LocalCluster

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


def registered_controllers(cluster: LocalCluster, node_id: int) -> set[str] | None:
    metadata = cluster.nodes[node_id].data / "__cluster_metadata-0"
    shell = subprocess.run(
        [sys.executable, "-m", "pykraft", "metadata-shell", "--directory", str(metadata),
         "--", "ls", "/image/cluster/controllers"],
        capture_output=True, text=True, timeout=60, check=False)
    return set(shell.stdout.split()) if shell.returncode == 0 else None


def test_each_controller_registers_with_the_active_one(tmp_path: Path) -> None:
    properties = {k: v for k, v in TEST_PROPERTIES.items()
                  if k != "pykraft.server.extension.class"}  # run the QuorumController
    cluster = LocalCluster.create(tmp_path / "c", 3, properties)
    try:
        cluster.start_all()
        leader_info(cluster)
        wait_for("every controller to log its registration", lambda: True if all(
            "event=controller_registered" in cluster.nodes[n].log.read_text()
            for n in cluster.controllers) else None)
        wait_for("the registrations in node 1's committed image", lambda: True if (
            registered_controllers(cluster, 1) == {"1", "2", "3"}) else None)
    finally:
        for node_id in cluster.nodes:
            cluster.kill(node_id)
