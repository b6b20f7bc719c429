"""The local cluster's dynamic mode on disk (no processes): configs with bootstrap servers,
controller 1 formatted standalone and the others as joining controllers, new nodes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from pykraft.config.properties import load_properties
from pykraft.tools.local_cluster import ClusterError, LocalCluster
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


def test_a_stopped_cluster_reopens_only_with_the_options_it_was_made_with(
    tmp_path: Path,
) -> None:
    made = LocalCluster.create(tmp_path / "c", 2, {"x.y": "1"})
    again = LocalCluster.reopen(tmp_path / "c", 2, {"x.y": "1"})
    assert (again.cluster_id, again.nodes) == (made.cluster_id, made.nodes)
    for controllers, properties, dynamic in ((3, {"x.y": "1"}, False), (2, {}, False),
                                             (2, {"x.y": "1"}, True)):
        with pytest.raises(ClusterError, match=r"holds a static cluster of 2 controllers and "
                                               r"0 brokers .*pykraft cluster delete"):
            LocalCluster.reopen(tmp_path / "c", controllers, properties, dynamic=dynamic)


def test_a_recorded_pid_that_is_no_server_is_neither_running_nor_signalled(
    tmp_path: Path,
) -> None:
    """After a reboot the PID in cluster.json may belong to anyone (here: this test)."""
    made = LocalCluster.create(tmp_path / "c", 1)
    made.pids[1] = os.getpid()
    made.save()
    loaded = LocalCluster.load(tmp_path / "c")
    assert loaded.running() == []
    assert LocalCluster.reopen(tmp_path / "c", 1).cluster_id == made.cluster_id
    assert loaded.stop_all() == {1: None}  # and this process is still alive to assert it


def test_delete_removes_the_cluster_and_its_data_but_nothing_else(tmp_path: Path) -> None:
    cluster = LocalCluster.create(tmp_path / "c", 2)
    (tmp_path / "c" / "notes.txt").write_text("mine")
    cluster.delete()
    assert [p.name for p in (tmp_path / "c").iterdir()] == ["notes.txt"]
    LocalCluster.create(tmp_path / "d", 1).delete()
    assert not (tmp_path / "d").exists()


#: A stand-in server: exits ``delay`` s after its first SIGTERM, with the number of further
#: SIGTERMs it received as its exit code.
_SLOW_STOPPER = """
import signal, sys, time
hits = []
signal.signal(signal.SIGTERM, lambda *_: hits.append(1))
print("ready", flush=True)
while not hits:
    time.sleep(0.01)
time.sleep(float(sys.argv[1]))
sys.exit(len(hits) - 1)
"""


def test_stop_all_sends_one_sigterm_per_node(tmp_path: Path) -> None:
    """stop_all signalled every node, then signalled each again while waiting for it: a
    node still shutting down when its turn came got a second SIGTERM (a real server, after
    its event loop closed, died of it: exit -15 instead of 0)."""
    cluster = LocalCluster.create(tmp_path / "c", 2, format_nodes=False)
    for node_id, delay in ((1, "0.3"), (2, "1.5")):  # node 2 still stops when node 1 is done
        child = subprocess.Popen([sys.executable, "-c", _SLOW_STOPPER, delay],
                                 stdout=subprocess.PIPE)
        assert child.stdout is not None and child.stdout.readline() == b"ready\n"
        cluster._children[node_id] = child
        cluster.pids[node_id] = child.pid
    assert cluster.stop_all() == {1: 0, 2: 0}
