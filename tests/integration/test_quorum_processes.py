"""A 3-controller static quorum of real processes: election, failover, restart, shutdown."""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import Callable

import pytest
from process_harness import (
    describe,
    leader_info,
    values_on_disk,
    wait_for,
    write_values,
)

from pykraft.tools.local_cluster import LocalCluster

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]
MakeCluster = Callable[..., LocalCluster]


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pykraft", *args], capture_output=True,
                          text=True, timeout=60, check=False)


def test_three_controllers_elect_a_leader_and_describe_it(make_cluster: MakeCluster) -> None:
    cluster = make_cluster()
    cluster.start_all()
    info = leader_info(cluster)
    assert info.leader_id in cluster.nodes
    assert {v.replica_id for v in info.voters} == set(cluster.nodes)
    caught_up = wait_for("all voters at the leader's log end", lambda: (
        (i := describe(cluster)) is not None and i.leader is not None
        and all(v.log_end_offset == i.leader.log_end_offset for v in i.voters) and i) or None)

    status = _cli("metadata-quorum", "--bootstrap-controller", cluster.bootstrap,
                  "describe", "--status")
    assert status.returncode == 0, status.stderr
    lines = status.stdout.splitlines()
    assert lines[0] == f"ClusterId:              {cluster.cluster_id}"
    assert lines[1].startswith("LeaderId:               ")
    assert int(lines[2].split()[1]) >= caught_up.leader_epoch
    assert [line.split(":")[0] for line in lines] == [
        "ClusterId", "LeaderId", "LeaderEpoch", "HighWatermark", "MaxFollowerLag",
        "MaxFollowerLagTimeMs", "CurrentVoters", "CurrentObservers"]
    for node in cluster.nodes.values():
        assert f'{{"id": {node.node_id}, "directoryId": null, "endpoints": ' \
               f'["CONTROLLER://{node.address}"]}}' in lines[6]
    assert lines[7] == "CurrentObservers:       []"

    table = _cli("metadata-quorum", "--bootstrap-controller", cluster.bootstrap,
                 "describe", "--replication", "--human-readable")
    assert table.returncode == 0, table.stderr
    rows = [line.split("\t") for line in table.stdout.splitlines()]
    assert [c.strip() for c in rows[0]] == ["NodeId", "DirectoryId", "LogEndOffset", "Lag",
                                            "LastFetchTimestamp", "LastCaughtUpTimestamp",
                                            "Status", ""]
    assert [r[6].strip() for r in rows[1:]] == ["Leader", "Follower", "Follower"]
    assert all(r[4].strip().endswith(" ms ago") for r in rows[1:])
    assert len({len(line) for line in table.stdout.splitlines()}) == 1  # padded columns


def test_leader_crash_elects_a_new_leader_and_loses_no_committed_record(
    make_cluster: MakeCluster,
) -> None:
    cluster = make_cluster()
    cluster.start_all()
    first = leader_info(cluster)
    before = write_values(cluster, first.leader_id, [b"before-%d" % i for i in range(30)])
    assert len(before) == 30

    cluster.kill(first.leader_id)
    second = leader_info(cluster, min_epoch=first.leader_epoch + 1, exclude=first.leader_id)
    assert second.leader_id != first.leader_id
    after = write_values(cluster, second.leader_id, [b"after-%d" % i for i in range(30)])
    assert len(after) == 30

    cluster.start(first.leader_id)  # the old leader rejoins and must catch up
    def rejoined() -> bool | None:
        info = describe(cluster)
        if info is None or info.leader is None:
            return None
        old = next(v for v in info.voters if v.replica_id == first.leader_id)
        return True if old.log_end_offset == info.leader.log_end_offset else None
    wait_for("the old leader to catch up", rejoined)

    codes = cluster.stop_all()
    assert set(codes.values()) == {0}
    for node_id in cluster.nodes:
        on_disk = values_on_disk(cluster, node_id)
        assert on_disk[: len(before)] == before, f"node {node_id} lost committed records"
        assert [v for v in on_disk if v.startswith(b"after-")] == after


def test_full_restart_resumes_with_the_data(make_cluster: MakeCluster) -> None:
    cluster = make_cluster()
    cluster.start_all()
    first = leader_info(cluster)
    acked = write_values(cluster, first.leader_id, [b"v-%d" % i for i in range(20)])
    for node_id in cluster.nodes:
        cluster.kill(node_id)

    cluster.start_all()
    again = leader_info(cluster, min_epoch=first.leader_epoch + 1)
    assert again.high_watermark > first.high_watermark + len(acked) - 1
    more = write_values(cluster, again.leader_id, [b"w-0"])
    assert more == [b"w-0"]
    cluster.stop_all()
    for node_id in cluster.nodes:
        on_disk = values_on_disk(cluster, node_id)
        assert on_disk[: len(acked)] == acked


def test_sigterm_resigns_with_end_quorum_epoch_and_exits_zero(
    make_cluster: MakeCluster,
) -> None:
    cluster = make_cluster()
    cluster.start_all()
    for _ in range(3):  # the leader asked for may lose its leadership before the signal
        first = leader_info(cluster)
        wait_for("every voter fetching", lambda: (
            (i := describe(cluster)) is not None
            and all(v.last_fetch_ms > 0 for v in i.voters) and i) or None)
        cluster.signal(first.leader_id, signal.SIGTERM)
        assert cluster.wait(first.leader_id, 15) == 0
        log = cluster.nodes[first.leader_id].log.read_text()
        if "event=shutdown_begin state=Leader" in log:
            break
        cluster.start(first.leader_id)  # an election came between: ask the new leader
    assert "event=shutdown_complete resigned_and_acked=True exit_code=0" in log
    followers = [n for n in cluster.nodes if n != first.leader_id]
    assert any("event=end_quorum_epoch_received" in cluster.nodes[n].log.read_text()
               for n in followers)
    second = leader_info(cluster, min_epoch=first.leader_epoch + 1, exclude=first.leader_id)
    assert second.leader_id in followers
