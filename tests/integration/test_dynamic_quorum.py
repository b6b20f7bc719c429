"""A dynamic (KIP-853) controller quorum of real processes, run with the CLI as an operator
would. Each test follows one runbook of docs/operations.md step by step."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from process_harness import (
    TEST_PROPERTIES,
    describe,
    leader_info,
    values_on_disk,
    wait_for,
    write_values,
)

from pykraft.ids import uuid_to_str
from pykraft.storage.meta_properties import read_meta_properties
from pykraft.tools.local_cluster import LocalCluster
from pykraft.tools.quorum_tool import QuorumInfo

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]
MakeCluster = Callable[..., LocalCluster]
VoterKey = tuple[int, str]


@pytest.fixture
def make_dynamic(tmp_path: Path) -> Iterator[MakeCluster]:
    """Configs for a dynamic cluster, left unformatted: the tests format with the CLI."""
    created: list[LocalCluster] = []

    def make(controllers: int = 3, properties: dict[str, str] | None = None, *,
             bench: bool = True) -> LocalCluster:
        """``bench`` runs the raft core alone with the append request (writes the tests can
        count); without it every controller runs the QuorumController, as in production."""
        base = {k: v for k, v in TEST_PROPERTIES.items()
                if bench or k != "pykraft.server.extension.class"}
        cluster = LocalCluster.create(tmp_path / f"cluster-{len(created)}", controllers,
                                      {**base, **(properties or {})},
                                      dynamic=True, format_nodes=False)
        created.append(cluster)
        return cluster

    yield make
    for cluster in created:
        for node_id in cluster.nodes:
            cluster.kill(node_id)


# -- operator steps -------------------------------------------------------------------------

def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pykraft", *args], capture_output=True,
                          text=True, timeout=120, check=False)


def ok(*args: str) -> str:
    result = cli(*args)
    assert result.returncode == 0, f"pykraft {' '.join(args)}: {result.stderr}"
    return result.stdout


def storage_format(cluster: LocalCluster, node_id: int, mode: str) -> str:
    """``pykraft storage format`` with ``--standalone`` or ``--no-initial-controllers``."""
    return ok("storage", "format", "--config", str(cluster.nodes[node_id].config),
              "--cluster-id", cluster.cluster_id, mode)


def quorum(cluster: LocalCluster, *args: str, via: list[int] | None = None) -> (
    subprocess.CompletedProcess[str]
):
    """``pykraft metadata-quorum --bootstrap-controller <running controllers> ...``."""
    nodes = via or [n for n in cluster.controllers if cluster.is_running(n)]
    bootstrap = ",".join(cluster.nodes[n].address for n in nodes)
    return cli("metadata-quorum", "--bootstrap-controller", bootstrap, *args)


def add_controller(cluster: LocalCluster, node_id: int) -> subprocess.CompletedProcess[str]:
    return quorum(cluster, "--command-config", str(cluster.nodes[node_id].config),
                  "add-controller")


def remove_controller(cluster: LocalCluster, node_id: int,
                      directory_id: str) -> subprocess.CompletedProcess[str]:
    return quorum(cluster, "remove-controller", "--controller-id", str(node_id),
                  "--controller-directory-id", directory_id)


def directory_id(cluster: LocalCluster, node_id: int) -> str:
    """The ``directory.id`` in the node's metadata directory (its replica directory id)."""
    meta = read_meta_properties(cluster.nodes[node_id].data / "meta.properties")
    assert meta.directory_id is not None
    return uuid_to_str(meta.directory_id)


def voter_keys(info: QuorumInfo) -> set[VoterKey]:
    return {(v.replica_id, v.directory_id) for v in info.voters}


def wait_for_voters(cluster: LocalCluster, expected: set[VoterKey]) -> QuorumInfo:
    def probe() -> QuorumInfo | None:
        info: QuorumInfo | None = describe(cluster)
        if info is None or info.high_watermark <= 0 or voter_keys(info) != expected:
            return None
        return info
    found: QuorumInfo = wait_for(f"voters {sorted(expected)}", probe)
    return found


def wait_for_caught_up_observer(cluster: LocalCluster, node_id: int, directory: str) -> None:
    """The runbook's check before add-controller: ``describe --replication`` lists the new
    controller as an Observer with its directory id and everything committed."""
    def probe() -> bool | None:
        info = describe(cluster)
        if info is None:
            return None
        row = next((o for o in info.observers
                    if (o.replica_id, o.directory_id) == (node_id, directory)), None)
        return True if row is not None and row.log_end_offset >= info.high_watermark else None
    wait_for(f"controller {node_id} to catch up as an observer", probe)


def added_line(cluster: LocalCluster, node_id: int) -> str:
    return (f"Added controller {node_id} with directory id {directory_id(cluster, node_id)} "
            f"and endpoints: CONTROLLER://{cluster.nodes[node_id].address}\n")


def build_dynamic_quorum(cluster: LocalCluster) -> dict[int, str]:
    """The runbook "Starting a dynamic quorum": controller 1 standalone, the others formatted
    without initial controllers, started as observers and added one at a time."""
    first, *others = cluster.controllers
    assert "Formatting dynamic metadata voter directory" in storage_format(
        cluster, first, "--standalone")
    for node_id in others:
        assert "Formatting dynamic metadata directory" in storage_format(
            cluster, node_id, "--no-initial-controllers")
    ids = {n: directory_id(cluster, n) for n in cluster.controllers}
    cluster.start_all()
    wait_for_voters(cluster, {(first, ids[first])})
    for node_id in others:
        wait_for_caught_up_observer(cluster, node_id, ids[node_id])
        added = add_controller(cluster, node_id)
        assert added.returncode == 0, added.stderr
        assert added.stdout == added_line(cluster, node_id)
    wait_for_voters(cluster, set(ids.items()))
    return ids


def committed_everywhere(cluster: LocalCluster, nodes: list[int], *groups: list[bytes]) -> None:
    """Once every voter of ``nodes`` has fetched up to the high watermark (a committed
    record needs only a majority: a follower may still be fetching the last ones), the
    cluster stopped, every acknowledged value of every group, in order, on each node's
    disk."""
    def caught_up() -> bool | None:
        info = describe(cluster)
        if info is None:
            return None
        ends = {v.replica_id: v.log_end_offset for v in info.voters}
        return True if all(ends.get(n, -1) >= info.high_watermark for n in nodes) else None
    wait_for(f"voters {nodes} caught up", caught_up)
    cluster.stop_all()
    for node_id in nodes:
        on_disk = values_on_disk(cluster, node_id)
        for group in groups:
            prefix = group[0].split(b"-")[0] + b"-"
            assert [v for v in on_disk if v.startswith(prefix)] == group, (
                f"node {node_id} lost committed records")


# -- the runbooks ---------------------------------------------------------------------------

def test_dynamic_quorum_from_a_standalone_controller_and_two_added(
    make_dynamic: MakeCluster,
) -> None:
    cluster = make_dynamic()
    ids = build_dynamic_quorum(cluster)

    status = quorum(cluster, "describe", "--status")
    assert status.returncode == 0, status.stderr
    voters_line = status.stdout.splitlines()[6]
    for node_id, directory in ids.items():
        assert (f'{{"id": {node_id}, "directoryId": "{directory}", "endpoints": '
                f'["CONTROLLER://{cluster.nodes[node_id].address}"]}}') in voters_line
    table = quorum(cluster, "describe", "--replication")
    rows = [[c.strip() for c in line.split("\t")] for line in table.stdout.splitlines()[1:]]
    assert {(int(r[0]), r[1]) for r in rows} == set(ids.items())
    assert sorted(r[6] for r in rows) == ["Follower", "Follower", "Leader"]
    as_json = json.loads(ok("metadata-quorum", "--bootstrap-controller", cluster.bootstrap,
                            "describe", "--status", "--json"))
    assert {(v["id"], v["directoryId"]) for v in as_json["voters"]} == set(ids.items())

    # Three real voters: the quorum survives losing the first (standalone) controller.
    first = leader_info(cluster)
    before = write_values(cluster, first.leader_id, [b"before-%d" % i for i in range(20)])
    assert len(before) == 20
    cluster.kill(first.leader_id)
    second = leader_info(cluster, min_epoch=first.leader_epoch + 1, exclude=first.leader_id)
    after = write_values(cluster, second.leader_id, [b"after-%d" % i for i in range(20)])
    assert len(after) == 20
    committed_everywhere(cluster, [n for n in ids if n != first.leader_id], before, after)


def test_voter_changes_under_the_active_controller(make_dynamic: MakeCluster) -> None:
    """The same quorum without the append request: every controller runs the QuorumController
    (its NoOpRecord every 500 ms is the metadata write), and all of them survive adding two
    voters and removing the active one (the raft core's VotersRecords between its writes)."""
    cluster = make_dynamic(bench=False)
    ids = build_dynamic_quorum(cluster)

    def settle() -> QuorumInfo:
        settled: QuorumInfo = leader_info(cluster)
        wait_for("the controllers' NoOpRecords to commit past the voter change", lambda: (
            (i := describe(cluster)) is not None
            and i.high_watermark >= settled.high_watermark + 4) or None)
        return settled

    leader = settle()
    removed = remove_controller(cluster, leader.leader_id, ids[leader.leader_id])
    assert removed.returncode == 0, removed.stderr
    wait_for_voters(cluster, {(n, d) for n, d in ids.items() if n != leader.leader_id})
    settle()
    fatal = {n: cluster.nodes[n].log.read_text().count("event=fatal") for n in ids}
    assert fatal == dict.fromkeys(ids, 0)
    assert all(cluster.is_running(n) for n in ids)


def test_replacing_a_failed_controller_disk(make_dynamic: MakeCluster) -> None:
    """Runbook "Replacing a failed controller disk" (the seeds' disk-failure recovery)."""
    cluster = make_dynamic()
    ids = build_dynamic_quorum(cluster)
    leader = leader_info(cluster)
    victim = next(n for n in cluster.controllers if n != leader.leader_id)
    before = write_values(cluster, leader.leader_id, [b"before-%d" % i for i in range(20)])
    assert len(before) == 20

    # 1. The disk dies: the process is gone and so is its metadata directory.
    cluster.kill(victim)
    shutil.rmtree(cluster.nodes[victim].data)
    # 2. Format the new disk without initial controllers: a new directory id.
    assert "Formatting dynamic metadata directory" in storage_format(
        cluster, victim, "--no-initial-controllers")
    new_id = directory_id(cluster, victim)
    assert new_id != ids[victim]
    # 3. Start it: it joins as an observer and catches up from the leader.
    cluster.start(victim)
    wait_for_caught_up_observer(cluster, victim, new_id)
    # 4. Adding it while its old replica is still a voter is refused: one voter per id.
    refused = add_controller(cluster, victim)
    assert refused.returncode == 1
    assert "DUPLICATE_VOTER" in refused.stderr
    # 5. Remove the old (id, directory id), then add the new one.
    removed = remove_controller(cluster, victim, ids[victim])
    assert removed.returncode == 0, removed.stderr
    assert removed.stdout == (f"Removed  KRaft controller {victim} with directory id "
                              f"{ids[victim]}\n")
    added = add_controller(cluster, victim)
    assert added.returncode == 0, added.stderr
    assert added.stdout == added_line(cluster, victim)
    info = wait_for_voters(cluster, {*((n, d) for n, d in ids.items() if n != victim),
                                     (victim, new_id)})

    after = write_values(cluster, info.leader_id, [b"after-%d" % i for i in range(20)])
    assert len(after) == 20
    committed_everywhere(cluster, cluster.controllers, before, after)


def test_replacing_a_failed_controller_node(make_dynamic: MakeCluster) -> None:
    """Runbook "Replacing a failed controller node": controller 4 on a new machine finds the
    quorum through its bootstrap servers, is added, then the dead controller 3 removed."""
    cluster = make_dynamic()
    ids = build_dynamic_quorum(cluster)
    leader = leader_info(cluster)
    dead = next(n for n in reversed(cluster.controllers) if n != leader.leader_id)
    before = write_values(cluster, leader.leader_id, [b"before-%d" % i for i in range(20)])
    assert len(before) == 20

    cluster.kill(dead)
    new = cluster.add_controller_node()
    assert "controller.quorum.bootstrap.servers=" in new.config.read_text()
    storage_format(cluster, new.node_id, "--no-initial-controllers")
    new_id = directory_id(cluster, new.node_id)
    cluster.start(new.node_id)
    wait_for_caught_up_observer(cluster, new.node_id, new_id)

    added = add_controller(cluster, new.node_id)
    assert added.returncode == 0, added.stderr
    assert added.stdout == added_line(cluster, new.node_id)
    removed = remove_controller(cluster, dead, ids[dead])
    assert removed.returncode == 0, removed.stderr
    info = wait_for_voters(cluster, {*((n, d) for n, d in ids.items() if n != dead),
                                     (new.node_id, new_id)})

    after = write_values(cluster, info.leader_id, [b"after-%d" % i for i in range(20)])
    assert len(after) == 20
    committed_everywhere(cluster, [n for n in cluster.controllers if n != dead],
                         before, after)


def test_removing_the_leader(make_dynamic: MakeCluster) -> None:
    """Runbook "Removing a controller", applied to the active one: it answers once the
    removal commits (so it led until then), then resigns and another voter takes over."""
    cluster = make_dynamic()
    ids = build_dynamic_quorum(cluster)
    leader = leader_info(cluster)
    before = write_values(cluster, leader.leader_id, [b"before-%d" % i for i in range(20)])
    assert len(before) == 20

    removed = remove_controller(cluster, leader.leader_id, ids[leader.leader_id])
    assert removed.returncode == 0, removed.stderr
    assert removed.stdout == (f"Removed  KRaft controller {leader.leader_id} with directory "
                              f"id {ids[leader.leader_id]}\n")
    rest = {(n, d) for n, d in ids.items() if n != leader.leader_id}
    info = wait_for_voters(cluster, rest)
    wait_for("the removed controller to replicate as an observer", lambda: (
        (i := describe(cluster)) is not None
        and any((o.replica_id, o.directory_id) == (leader.leader_id, ids[leader.leader_id])
                for o in i.observers)) or None)
    new_leader = leader_info(cluster, min_epoch=leader.leader_epoch + 1,
                             exclude=leader.leader_id)
    assert new_leader.leader_id in {n for n, _ in rest}
    assert info.leader_id != leader.leader_id

    after = write_values(cluster, new_leader.leader_id, [b"after-%d" % i for i in range(20)])
    assert len(after) == 20
    committed_everywhere(cluster, [n for n, _ in rest], before, after)


def test_a_majority_lost_then_restarted_with_its_disks(make_dynamic: MakeCluster) -> None:
    """Runbook "A majority of controllers is lost": no leader can commit without a majority;
    restarting the lost controllers on their own disks brings the quorum back intact."""
    cluster = make_dynamic()
    build_dynamic_quorum(cluster)
    leader = leader_info(cluster)
    before = write_values(cluster, leader.leader_id, [b"before-%d" % i for i in range(20)])
    assert len(before) == 20

    lost = [n for n in cluster.controllers if n != leader.leader_id]
    for node_id in lost:
        cluster.kill(node_id)
    # Check-quorum: the lone leader resigns; nobody is active while the majority is gone.
    wait_for("the lone leader to resign", lambda: True if describe(
        cluster, leader.leader_id) is None else None)
    assert write_values(cluster, leader.leader_id, [b"lost-0"]) == []  # refused: not leader

    for node_id in lost:
        cluster.start(node_id)
    again = leader_info(cluster, min_epoch=leader.leader_epoch + 1)
    after = write_values(cluster, again.leader_id, [b"after-%d" % i for i in range(20)])
    assert len(after) == 20
    committed_everywhere(cluster, cluster.controllers, before, after)


def test_an_observer_controller_auto_joins(make_dynamic: MakeCluster) -> None:
    """With ``controller.quorum.auto.join.enable=true`` a controller formatted without
    initial controllers adds itself: no add-controller step."""
    cluster = make_dynamic(2, {"controller.quorum.auto.join.enable": "true"})
    storage_format(cluster, 1, "--standalone")
    storage_format(cluster, 2, "--no-initial-controllers")
    ids = {n: directory_id(cluster, n) for n in cluster.controllers}
    cluster.start_all()
    wait_for_voters(cluster, set(ids.items()))


def test_cluster_up_dynamic_adds_every_controller(tmp_path: Path) -> None:
    """What ``pykraft cluster up --dynamic`` does after starting the processes."""
    cluster = LocalCluster.create(tmp_path / "c", 3, TEST_PROPERTIES, dynamic=True)
    try:
        cluster.start_all()
        lines = cluster.add_voters()
        assert lines == [added_line(cluster, 2).rstrip("\n"),
                         added_line(cluster, 3).rstrip("\n")]
        wait_for_voters(cluster, {(n, directory_id(cluster, n)) for n in (1, 2, 3)})
    finally:
        for node_id in cluster.nodes:
            cluster.kill(node_id)


def features(cluster: LocalCluster, *args: str) -> subprocess.CompletedProcess[str]:
    """``pykraft features --bootstrap-controller <running controllers> ...``."""
    bootstrap = ",".join(cluster.nodes[n].address for n in cluster.controllers
                         if cluster.is_running(n))
    return cli("features", "--bootstrap-controller", bootstrap, *args)


def kraft_version_line(cluster: LocalCluster) -> str:
    described = features(cluster, "describe")
    assert described.returncode == 0, described.stderr
    return next(line for line in described.stdout.splitlines()
                if line.startswith("Feature: kraft.version\t"))


def test_upgrading_a_static_quorum_to_a_dynamic_one(tmp_path: Path) -> None:
    """Runbook "Upgrading a static quorum to a dynamic one": kraft.version 0 -> 1 with
    ``pykraft features upgrade``, after which controllers can be added and removed; the
    controllers keep their controller.quorum.voters configs and survive a restart."""
    base = {k: v for k, v in TEST_PROPERTIES.items() if k != "pykraft.server.extension.class"}
    cluster = LocalCluster.create(tmp_path / "static", 3, base)
    try:
        ids = {n: directory_id(cluster, n) for n in cluster.controllers}
        cluster.start_all()
        leader_info(cluster)
        assert "FinalizedVersionLevel: 0" in kraft_version_line(cluster)
        refused = remove_controller(cluster, 3, ids[3])  # a static quorum cannot change
        assert refused.returncode == 1 and "UNSUPPORTED_VERSION" in refused.stderr

        # 1. Validate, then finalize kraft.version 1 (answered once it commits).
        dry = features(cluster, "upgrade", "--feature", "kraft.version=1", "--dry-run")
        assert dry.returncode == 0, dry.stderr
        assert dry.stdout == "kraft.version can be upgraded to 1.\n"
        assert "FinalizedVersionLevel: 0" in kraft_version_line(cluster)
        upgraded = features(cluster, "upgrade", "--feature", "kraft.version=1")
        assert upgraded.returncode == 0, upgraded.stderr
        assert upgraded.stdout == "kraft.version was upgraded to 1.\n"
        # 2. The voters now carry their directory ids.
        assert "FinalizedVersionLevel: 1" in kraft_version_line(cluster)
        wait_for_voters(cluster, set(ids.items()))
        status = quorum(cluster, "describe", "--status")
        assert status.returncode == 0 and f'"directoryId": "{ids[1]}"' in status.stdout

        # 3. A new controller joins through the bootstrap servers and is added.
        cluster.dynamic = True
        new = cluster.add_controller_node()
        storage_format(cluster, new.node_id, "--no-initial-controllers")
        ids[new.node_id] = directory_id(cluster, new.node_id)
        cluster.start(new.node_id)
        wait_for_caught_up_observer(cluster, new.node_id, ids[new.node_id])
        added = add_controller(cluster, new.node_id)
        assert added.returncode == 0, added.stderr
        wait_for_voters(cluster, set(ids.items()))

        # 4. An old controller restarts with its static config: the log's voters win.
        cluster.stop(2)
        cluster.start(2)
        removed = remove_controller(cluster, 3, ids[3])
        assert removed.returncode == 0, removed.stderr
        wait_for_voters(cluster, {(n, d) for n, d in ids.items() if n != 3})
        fatal = {n: cluster.nodes[n].log.read_text().count("event=fatal") for n in ids}
        assert fatal == dict.fromkeys(ids, 0)
    finally:
        for node_id in cluster.nodes:
            cluster.kill(node_id)
