"""``pykraft metadata-quorum --bootstrap-server <broker>``: as with Kafka 4, the broker
forwards DescribeQuorum, AddRaftVoter and RemoveRaftVoter to the active controller, so an
operator who can reach only the brokers can describe and change the controller quorum."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from broker_harness import PROPERTIES, wait_for, wait_for_brokers
from process_harness import describe

from pykraft.ids import uuid_to_str
from pykraft.storage.meta_properties import read_meta_properties
from pykraft.tools.local_cluster import LocalCluster
from pykraft.tools.quorum_tool import removed_message

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


def quorum_via(broker: str, *args: str) -> str:
    result = subprocess.run(
        [sys.executable, "-m", "pykraft", "metadata-quorum", "--bootstrap-server", broker,
         *args], capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    return result.stdout


def voters(cluster: LocalCluster) -> set[int] | None:
    info = describe(cluster, min(cluster.controllers))
    return None if info is None else {v.replica_id for v in info.voters}


def test_describe_add_and_remove_a_controller_through_a_broker(tmp_path: Path) -> None:
    cluster = LocalCluster.create(tmp_path / "cluster", 1, PROPERTIES, brokers=1, dynamic=True)
    try:
        cluster.start_all()
        wait_for_brokers(cluster, 1)
        broker = cluster.nodes[cluster.brokers[0]].address

        status = quorum_via(broker, "describe", "--status").splitlines()
        assert status[0] == f"ClusterId:              {cluster.cluster_id}"
        assert "LeaderId:               1" in status

        node = cluster.add_controller_node()
        cluster.format(node.node_id)
        cluster.start(node.node_id)
        directory = read_meta_properties(node.data / "meta.properties").directory_id
        assert directory is not None

        def caught_up() -> bool | None:
            info = describe(cluster, 1)
            row = None if info is None else next(
                (o for o in info.observers if o.replica_id == node.node_id), None)
            return True if info and row and row.log_end_offset >= info.high_watermark else None
        wait_for("the new controller to catch up as an observer", caught_up)

        added = quorum_via(broker, "--command-config", str(node.config), "add-controller")
        assert added.startswith(f"Added controller {node.node_id} with directory id "
                                f"{uuid_to_str(directory)}")
        wait_for("two voters", lambda: True if voters(cluster) == {1, node.node_id} else None)

        removed = quorum_via(broker, "remove-controller", "--controller-id", str(node.node_id),
                             "--controller-directory-id", uuid_to_str(directory))
        assert removed == removed_message(node.node_id, directory, dry_run=False) + "\n"
        wait_for("one voter again", lambda: True if voters(cluster) == {1} else None)
    finally:
        for node_id in cluster.nodes:
            cluster.kill(node_id)
