"""A dynamic (KIP-853) controller quorum run as real processes on 127.0.0.1.

Controller 1 is formatted ``--standalone``; controllers 2 and 3 ``--no-initial-controllers``
and find the quorum through ``controller.quorum.bootstrap.servers``. They run as observers
until AddRaftVoter (sent over the wire) makes them voters. Snapshot thresholds are tiny, so
a replica that starts (or comes back) far behind must catch up with FetchSnapshot.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from process_harness import TEST_PROPERTIES, describe, wait_for, write_values

from pykraft.config.properties import load_properties
from pykraft.ids import uuid_to_str
from pykraft.messages.kafka import describe_cluster_request as dc_req
from pykraft.protocol.api_versions import listener_ranges
from pykraft.protocol.apis import Listener
from pykraft.protocol.errors import ErrorCode
from pykraft.raft import rpc
from pykraft.raft.log import OffsetAndEpoch
from pykraft.records.batch import iter_batches
from pykraft.runtime.committed_counter import records_in_snapshot
from pykraft.runtime.kafka_client import open_with_timeout
from pykraft.storage.meta_properties import read_meta_properties
from pykraft.tools.local_cluster import LocalCluster, free_ports
from pykraft.tools.quorum_tool import (
    QuorumInfo,
    add_controller,
    controller_identity,
    parse_host_port,
    remove_controller,
)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

#: A snapshot every few KiB of committed records, and the log cleaned right behind it.
SNAPSHOT_PROPERTIES = {
    **TEST_PROPERTIES,
    "metadata.log.max.record.bytes.between.snapshots": "4096",
    "metadata.max.retention.bytes": "1",
}
PARTITION_DIR = "__cluster_metadata-0"


@pytest.fixture
def dynamic_cluster(tmp_path: Path) -> Iterator[LocalCluster]:
    cluster = LocalCluster.create(tmp_path / "cluster", 3, SNAPSHOT_PROPERTIES, dynamic=True)
    yield cluster
    for node_id in cluster.nodes:
        cluster.kill(node_id)


def directory_id(cluster: LocalCluster, node_id: int) -> uuid.UUID:
    meta = read_meta_properties(cluster.nodes[node_id].data / "meta.properties")
    assert meta.directory_id is not None
    return meta.directory_id


def quorum(cluster: LocalCluster, check: Callable[[QuorumInfo], bool], what: str) -> QuorumInfo:
    """Wait until the quorum, as the leader describes it, passes ``check``."""
    def probe() -> QuorumInfo | None:
        info = describe(cluster)
        return info if info is not None and check(info) else None
    found: QuorumInfo = wait_for(what, probe)
    return found


def add_voter(cluster: LocalCluster, node_id: int) -> None:
    """AddRaftVoter for ``node_id`` at the active controller, answered once committed."""
    identity = controller_identity(load_properties(cluster.nodes[node_id].config))
    bootstrap = [parse_host_port(cluster.nodes[n].address) for n in cluster.controllers]
    asyncio.run(add_controller(bootstrap, identity, timeout_s=60.0))


def snapshots_on_disk(cluster: LocalCluster, node_id: int) -> list[OffsetAndEpoch]:
    """Snapshot ids in a node's partition directory, skipping the 0-0 bootstrap checkpoint."""
    ids = []
    for path in (cluster.nodes[node_id].data / PARTITION_DIR).glob("*.checkpoint"):
        offset, epoch = path.stem.split("-")
        if int(offset) > 0:
            ids.append(OffsetAndEpoch(int(offset), int(epoch)))
    return sorted(ids)


def counted_records(cluster: LocalCluster, node_id: int, snapshot_id: OffsetAndEpoch) -> int:
    name = f"{snapshot_id.offset:020d}-{snapshot_id.epoch:010d}.checkpoint"
    data = (cluster.nodes[node_id].data / PARTITION_DIR / name).read_bytes()
    return records_in_snapshot(list(iter_batches(data)), snapshot_id)


def values(count: int, tag: str) -> list[bytes]:
    return [f"{tag}-{i:05d}-".encode().ljust(100, b"x") for i in range(count)]


def test_observers_join_as_voters_and_catch_up_from_a_snapshot(
        dynamic_cluster: LocalCluster) -> None:
    cluster = dynamic_cluster
    cluster.start(1)
    info = quorum(cluster, lambda i: i.leader_id == 1 and i.high_watermark > 0,
                  "the standalone controller to lead")
    assert [v.replica_id for v in info.voters] == [1]
    # Enough records for several snapshots: the log start moves past offset 0.
    assert len(write_values(cluster, 1, values(300, "early"))) == 300
    wait_for("a snapshot on controller 1", lambda: snapshots_on_disk(cluster, 1) or None)

    cluster.start(2)
    cluster.start(3)
    info = quorum(cluster, lambda i: {o.replica_id for o in i.observers} >= {2, 3},
                  "controllers 2 and 3 fetching as observers")
    assert [v.replica_id for v in info.voters] == [1]

    add_voter(cluster, 2)
    add_voter(cluster, 3)
    info = quorum(cluster, lambda i: len(i.voters) == 3, "three voters")
    assert {(v.replica_id, v.directory_id) for v in info.voters} == {
        (n, uuid_to_str(directory_id(cluster, n))) for n in (1, 2, 3)}
    # DescribeQuorum v2 nodes come from the voter set in the log, not from any config.
    assert info.endpoints == {n: (f"CONTROLLER://{cluster.nodes[n].address}",)
                              for n in (1, 2, 3)}

    # Controllers 2 and 3 never saw offset 0 of the log: they started from a snapshot.
    for node_id in (2, 3):
        fetched = wait_for(f"a snapshot on controller {node_id}",
                           lambda n=node_id: snapshots_on_disk(cluster, n) or None)
        assert counted_records(cluster, node_id, fetched[0]) >= 1

    # The three-voter quorum commits, and every voter replicates.
    assert len(write_values(cluster, 1, values(20, "late"))) == 20
    hwm = quorum(cluster, lambda i: i.high_watermark > 0, "a high watermark").high_watermark
    quorum(cluster, lambda i: all(v.log_end_offset >= hwm for v in i.voters),
           "every voter at the high watermark")


def request_once(cluster: LocalCluster, node_id: int, body: Any) -> Any:
    """One request to ``node_id``'s controller listener; its latest-version answer."""
    async def send() -> Any:
        host, port = parse_host_port(cluster.nodes[node_id].address)
        connection = await open_with_timeout(host, port, client_id="test",
                                             ours=listener_ranges(Listener.CONTROLLER),
                                             timeout_s=10.0)
        try:
            return await connection.request(body)
        finally:
            connection.close()
    return asyncio.run(send())


def controllers_described(cluster: LocalCluster, node_id: int) -> dict[int, str]:
    """DescribeCluster (controller endpoints) as ``node_id`` answers it."""
    response = request_once(cluster, node_id, dc_req.DescribeClusterRequest(endpoint_type=2))
    assert response.error_code == ErrorCode.NONE
    return {b.broker_id: f"{b.host}:{b.port}" for b in response.brokers}


def test_add_raft_voter_with_a_wrong_cluster_id_is_refused(
        dynamic_cluster: LocalCluster) -> None:
    cluster = dynamic_cluster
    cluster.start(1)
    quorum(cluster, lambda i: i.leader_id == 1 and i.high_watermark > 0, "a leader")
    identity = controller_identity(load_properties(cluster.nodes[2].config))
    response = request_once(cluster, 1, rpc.add_voter_request(
        "not-the-cluster", identity.node_id, identity.directory_id,
        [(e.name, e.host, e.port) for e in identity.endpoints], 5000))
    assert response.error_code == ErrorCode.INCONSISTENT_CLUSTER_ID


def three_voters(cluster: LocalCluster) -> QuorumInfo:
    """Start every controller and add 2 and 3 as voters; the quorum once it has three."""
    cluster.start_all()
    quorum(cluster, lambda i: i.leader_id == 1 and i.high_watermark > 0, "a leader")
    add_voter(cluster, 2)
    add_voter(cluster, 3)
    return quorum(cluster, lambda i: len(i.voters) == 3 and i.high_watermark > 0,
                  "three voters")


def test_a_voter_far_behind_catches_up_from_a_snapshot(dynamic_cluster: LocalCluster) -> None:
    cluster = dynamic_cluster
    three_voters(cluster)
    assert cluster.stop(3) == 0
    before = set(snapshots_on_disk(cluster, 3))
    assert len(write_values(cluster, 1, values(200, "while-3-is-down"))) == 200
    newest = wait_for("the leader to snapshot past node 3's log",
                      lambda: [s for s in snapshots_on_disk(cluster, 1) if s not in before]
                      or None)
    cluster.start(3)
    fetched = wait_for("node 3 to fetch a newer snapshot", lambda: [
        s for s in snapshots_on_disk(cluster, 3) if s not in before
        and s.offset >= newest[0].offset] or None)
    # the leader snapshots where a threshold passed, somewhere inside the 200 values
    assert 0 < counted_records(cluster, 3, fetched[-1]) <= 200
    info = quorum(cluster, lambda i: i.high_watermark > fetched[-1].offset, "progress")
    quorum(cluster, lambda i: next(v for v in i.voters if v.replica_id == 3).log_end_offset
           >= info.high_watermark, "node 3 caught up")


def test_killed_leader_is_replaced_and_rejoins(dynamic_cluster: LocalCluster) -> None:
    cluster = dynamic_cluster
    info = three_voters(cluster)
    old = info.leader_id
    cluster.kill(old)
    new = quorum(cluster, lambda i: i.leader_id not in (-1, old) and i.high_watermark > 0
                 and i.leader_epoch > info.leader_epoch, "a new leader")
    assert len(new.voters) == 3  # the voter set lives in the log, not in any config
    assert len(write_values(cluster, new.leader_id, values(5, "after-failover"))) == 5
    cluster.start(old)
    quorum(cluster, lambda i: next(v for v in i.voters if v.replica_id == old).log_end_offset
           >= i.high_watermark > 0, "the old leader caught up as a follower")


def test_removed_voter_leaves_the_voter_set(dynamic_cluster: LocalCluster) -> None:
    cluster = dynamic_cluster
    three_voters(cluster)
    bootstrap = [parse_host_port(cluster.nodes[n].address) for n in cluster.controllers]
    asyncio.run(remove_controller(bootstrap, 3, directory_id(cluster, 3), timeout_s=60.0))
    info = quorum(cluster, lambda i: [v.replica_id for v in i.voters] == [1, 2],
                  "voters 1 and 2")
    # DescribeCluster's controllers follow the voter set in the log, on every controller
    expected = {n: cluster.nodes[n].address for n in (1, 2)}
    for node_id in (1, 2, 3):
        wait_for(f"controller {node_id} to list voters 1 and 2", lambda n=node_id: (
            controllers_described(cluster, n) == expected) or None)
    assert len(write_values(cluster, info.leader_id, values(5, "two-voters"))) == 5


def test_observer_with_auto_join_becomes_a_voter(tmp_path: Path) -> None:
    cluster = LocalCluster.create(tmp_path / "cluster", 2, {
        **TEST_PROPERTIES, "controller.quorum.auto.join.enable": "true"}, dynamic=True)
    try:
        cluster.start_all()
        info = quorum(cluster, lambda i: len(i.voters) == 2, "controller 2 to join by itself")
        assert {(v.replica_id, v.directory_id) for v in info.voters} == {
            (n, uuid_to_str(directory_id(cluster, n))) for n in (1, 2)}
    finally:
        for node_id in cluster.nodes:
            cluster.kill(node_id)


def test_dynamic_quorum_runs_the_controller(tmp_path: Path) -> None:
    """Without the bench request the processes run the real controller on the raft core."""
    cluster = LocalCluster.create(tmp_path / "cluster", 3, {
        "pykraft.shutdown.timeout.ms": "3000"}, dynamic=True)
    try:
        info = three_voters(cluster)
        assert {v.replica_id for v in info.voters} == {1, 2, 3}
        # the controller commits a NoOpRecord every 500 ms: every voter gets past this point
        quorum(cluster, lambda i: all(v.log_end_offset >= info.high_watermark
                                      for v in i.voters), "every voter replicating")
    finally:
        for node_id in cluster.nodes:
            cluster.kill(node_id)


def test_voter_restarted_on_a_new_port_updates_its_entry(dynamic_cluster: LocalCluster) -> None:
    """UpdateRaftVoter: the voter set (and so every peer's route to it) follows the move."""
    cluster = dynamic_cluster
    three_voters(cluster)
    assert cluster.stop(3) == 0
    moved = f"127.0.0.1:{free_ports(1)[0]}"
    cluster.start(3, "--override", f"listeners=CONTROLLER://{moved}")
    info = quorum(cluster, lambda i: i.endpoints.get(3) == (f"CONTROLLER://{moved}",),
                  "node 3's entry to name its new listener")
    assert {v.replica_id for v in info.voters} == {1, 2, 3}
    for node_id in (1, 2):
        wait_for(f"controller {node_id} to list node 3 at {moved}", lambda n=node_id: (
            controllers_described(cluster, n).get(3) == moved) or None)
    # with another voter down, commits need the moved node 3 (2 of 3): it is a full voter
    leader = info.leader_id
    other = ({1, 2} - {leader}).pop()
    cluster.kill(other)
    assert len(write_values(cluster, leader, values(3, "via-moved-node"))) == 3


def test_full_restart_resumes_with_the_voter_set_from_the_log(
        dynamic_cluster: LocalCluster) -> None:
    cluster = dynamic_cluster
    before = three_voters(cluster)
    acked = write_values(cluster, before.leader_id, values(10, "before-restart"))
    assert len(acked) == 10
    assert set(cluster.stop_all().values()) == {0}
    cluster.start_all()
    after = quorum(cluster, lambda i: i.leader_id >= 0 and i.high_watermark > 0
                   and i.leader_epoch > before.leader_epoch, "a leader after the restart")
    assert {v.replica_id for v in after.voters} == {1, 2, 3}
    assert len(write_values(cluster, after.leader_id, values(5, "after-restart"))) == 5
