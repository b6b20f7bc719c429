"""The local cluster's dynamic mode on disk (no processes): configs with bootstrap servers,
controller 1 formatted standalone and the others as joining controllers, new nodes."""

from __future__ import annotations

from pathlib import Path

import pytest

from pykraft.config.properties import load_properties
from pykraft.tools.cluster import ClusterError, LocalCluster
from pykraft.tools.quorum_tool import controller_identity

CHECKPOINT = "__cluster_metadata-0/00000000000000000000-0000000000.checkpoint"


def test_a_dynamic_cluster_uses_bootstrap_servers_and_one_standalone_voter(
    tmp_path: Path,
) -> None:
    cluster = LocalCluster.create(tmp_path / "c", 3, {"x.y": "1"}, dynamic=True)
    addresses = ",".join(cluster.nodes[n].address for n in (1, 2, 3))
    for node_id in (1, 2, 3):
        props = load_properties(cluster.nodes[node_id].config)
        assert props["controller.quorum.bootstrap.servers"] == addresses
        assert "controller.quorum.voters" not in props
        assert props["x.y"] == "1"
        identity = controller_identity(props)  # what add-controller will send
        assert identity.node_id == node_id
        assert [str(e) for e in identity.endpoints] == [
            f"CONTROLLER://{cluster.nodes[node_id].address}"]
    assert (cluster.nodes[1].data / CHECKPOINT).is_file()
    assert not (cluster.nodes[2].data / CHECKPOINT).exists()
    assert not (cluster.nodes[3].data / CHECKPOINT).exists()

    loaded = LocalCluster.load(tmp_path / "c")
    assert loaded.dynamic
    assert loaded.properties == {"x.y": "1"}


def test_unformatted_nodes_are_left_to_the_caller(tmp_path: Path) -> None:
    cluster = LocalCluster.create(tmp_path / "c", 2, dynamic=True, format_nodes=False)
    assert all(not n.data.exists() for n in cluster.nodes.values())
    assert "Formatting dynamic metadata voter directory" in cluster.format(1)[0]
    assert "Formatting dynamic metadata directory" in cluster.format(2)[0]


def test_a_new_controller_node_gets_the_next_id_and_is_not_formatted(tmp_path: Path) -> None:
    cluster = LocalCluster.create(tmp_path / "c", 3, dynamic=True)
    node = cluster.add_controller_node()
    assert node.node_id == 4
    assert cluster.controllers == [1, 2, 3, 4]
    assert not node.data.exists()
    props = load_properties(node.config)
    assert cluster.nodes[1].address in props["controller.quorum.bootstrap.servers"]
    assert LocalCluster.load(tmp_path / "c").controllers == [1, 2, 3, 4]


def test_a_static_cluster_keeps_its_voter_list_and_takes_no_new_controller(
    tmp_path: Path,
) -> None:
    cluster = LocalCluster.create(tmp_path / "c", 2)
    props = load_properties(cluster.nodes[2].config)
    assert props["controller.quorum.voters"] == ",".join(
        f"{n}@{cluster.nodes[n].address}" for n in (1, 2))
    assert "controller.quorum.bootstrap.servers" not in props
    with pytest.raises(ClusterError, match="only a dynamic quorum"):
        cluster.add_controller_node()
