"""Issue 26 item 4: Kafka and pykraft controllers in one KRaft quorum.

Static quorums of 2 Kafka + 1 pykraft and 1 Kafka + 2 pykraft controllers (each with a
broker of either kind) elect leaders of both kinds (the leader is SIGKILLed and restarted
until each kind has led) and serve topics under each; every controller holds the same
committed metadata log, byte for byte. Dynamic quorums (kraft.version 1): a standalone
leader of one kind snapshots and drops its log's prefix, a controller of the other kind
restarted empty catches up from that snapshot (FetchSnapshot), is added as a voter by one
kind's ``metadata-quorum add-controller`` and removed by the other kind's
``remove-controller``. Kafka's nodes must log no ERROR about any of it.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial
from signal import SIGKILL

import pytest
from kafka_brokers_harness import wait_until
from oracle_cluster import (
    KAFKA,
    MIXED_RELEASE_VERSION,
    PYKRAFT,
    ClusterSpec,
    KafkaInstall,
    Kind,
    Node,
    OracleCluster,
    running,
)
from quorum_harness import (
    DynamicCluster,
    committed_batches,
    directory_id,
    dynamic_running,
    kafka_problems,
    kafka_quorum_tool,
    quorum,
    settled_leader,
)
from typer.testing import CliRunner, Result

from pykraft.storage.bootstrap import METADATA_LOG_DIR_NAME
from pykraft.tools.local_cluster import CONTROLLER

BOOTSTRAP_CHECKPOINT = "00000000000000000000-0000000000.checkpoint"
FIRST_SEGMENT = "00000000000000000000.log"
SNAPSHOT_PROPERTIES = {
    "metadata.log.max.record.bytes.between.snapshots": "2048",
    "internal.metadata.log.segment.bytes": "4096",  # segments roll, so a prefix can go
    "metadata.max.retention.bytes": "1",  # keep only the newest snapshot: the start moves
    "metadata.max.idle.interval.ms": "100",  # NoOps fill the log of an idle quorum
}


#: What Kafka's nodes also log without pykraft, beyond kafka_brokers_harness.KAFKA_OWN_ERRORS:
KAFKA_ONLY_PROBLEMS = (
    # this test's DescribeCluster (pykraft's metadata-quorum client, as Kafka's admin would)
    # reaching a controller restarted a moment ago, before it loaded a metadata.version
    r"ERROR \[ControllerApis nodeId=\d+\] Unexpected error handling request "
    r"RequestHeader\(apiKey=DESCRIBE_CLUSTER.*\n.*There is no finalized MetadataVersion",
)


def pykraft_tool(*args: str, stdin: str | None = None) -> Result:
    from pykraft.cli.main import app

    return CliRunner().invoke(app, list(args), input=stdin)


@pytest.fixture(scope="module")
def static(kafka: KafkaInstall, tmp_path_factory: pytest.TempPathFactory,
           ) -> Iterator[list[OracleCluster]]:
    specs = [ClusterSpec(controllers=controllers, brokers=(KAFKA, PYKRAFT),
                         release_version=MIXED_RELEASE_VERSION)
             for controllers in ((KAFKA, KAFKA, PYKRAFT), (KAFKA, PYKRAFT, PYKRAFT))]
    with running(tmp_path_factory.mktemp("static"), kafka, *specs) as clusters:
        yield clusters


@pytest.fixture(scope="module")
def dynamic(kafka: KafkaInstall, tmp_path_factory: pytest.TempPathFactory,
            ) -> Iterator[list[DynamicCluster]]:
    """A Kafka standalone controller with a pykraft observer, and the reverse."""
    specs = [ClusterSpec(controllers=controllers, properties=SNAPSHOT_PROPERTIES,
                         release_version=MIXED_RELEASE_VERSION)
             for controllers in ((KAFKA, PYKRAFT), (PYKRAFT, KAFKA))]
    with dynamic_running(tmp_path_factory.mktemp("dynamic"), kafka, *specs) as clusters:
        yield clusters


def serve_a_topic(cluster: OracleCluster, name: str) -> None:
    """Create a topic on both brokers and produce and consume through it. It is created
    through the pykraft broker: a Kafka broker forwards CreateTopics in an Envelope (API
    58), which a pykraft controller does not serve (issue 26 item 1)."""
    bootstrap = ("--bootstrap-server", cluster.bootstrap_servers)
    pykraft_broker = next(n for n in cluster.brokers if n.kind == PYKRAFT)
    created = pykraft_tool("topics", "--bootstrap-server", pykraft_broker.address,
                           "--create", "--topic", name,
                           "--partitions", "2", "--replication-factor", "2")
    assert created.exit_code == 0, created.output
    lines = [f"{name}-{i}" for i in range(4)]
    produced = pykraft_tool("console-producer", *bootstrap, "--topic", name,
                            stdin="".join(f"{line}\n" for line in lines))
    assert produced.exit_code == 0, produced.output
    consumed = pykraft_tool("console-consumer", *bootstrap, "--topic", name,
                            "--from-beginning", "--max-messages", str(len(lines)),
                            "--timeout-ms", "60000")
    assert consumed.exit_code == 0, consumed.output
    assert sorted(consumed.stdout.splitlines()) == lines


def new_leader(cluster: OracleCluster, old: Node) -> Node:
    """The controller that leads after ``old`` (which is down)."""
    found: list[Node] = []

    def elected() -> bool:
        info = quorum(cluster, timeout_s=5.0)
        if info is None or info.leader_id in (-1, old.node_id):
            return False
        found[:] = [cluster.nodes[info.leader_id]]
        return True
    wait_until(f"a leader after node {old.node_id} in {cluster.base.name}", elected)
    return found[0]


def crash_leader(cluster: OracleCluster, leader: Node, wanted: Kind) -> Node:
    """SIGKILL the leader and restart it once another controller leads. When that one is
    not of the ``wanted`` kind, it is SIGKILLed too before the first comes back: the third
    controller then holds the newest log (it followed the second leader, the restarted one
    did not), so it must win, whatever the two kinds' election timing; the second comes
    back after. The leader elected last."""
    assert cluster.kill(leader) == -SIGKILL
    successor = new_leader(cluster, leader)
    if successor.kind != wanted:
        third = next(n for n in cluster.controllers if n not in (leader, successor))
        assert cluster.kill(successor) == -SIGKILL
        cluster.start(leader)
        assert new_leader(cluster, successor) == third
        leader, successor = successor, third
    cluster.start(leader)
    return successor


def test_each_kind_leads_a_static_quorum(static: list[OracleCluster]) -> None:
    """Leaders of both kinds: the first elected, then one of the other kind after a crash;
    topics are created and served under each."""
    for cluster in static:
        leader = settled_leader(cluster)
        serve_a_topic(cluster, f"under-{leader.kind}-{leader.node_id}")
        other: Kind = PYKRAFT if leader.kind == KAFKA else KAFKA
        crash_leader(cluster, leader, other)
        leader = settled_leader(cluster)
        assert leader.kind == other
        serve_a_topic(cluster, f"under-{leader.kind}-{leader.node_id}")


def test_static_controllers_hold_one_committed_log(static: list[OracleCluster]) -> None:
    for cluster in static:
        settled_leader(cluster)
        info = quorum(cluster)
        assert info is not None
        for node in cluster.brokers + cluster.controllers:
            cluster.stop(node)
        logs = {node.node_id: committed_batches(node, info.high_watermark)
                for node in cluster.controllers}
        leader_log = logs[info.leader_id]
        assert sum(len(batch) for batch in leader_log) > 0
        assert logs == {node_id: leader_log for node_id in logs}, cluster.base.name
    assert kafka_problems(static, KAFKA_ONLY_PROBLEMS) == []


def snapshotted(node: Node) -> bool:
    """Whether a controller's metadata log starts at a snapshot of its own (not the
    bootstrap ``0-0`` checkpoint) and no longer at offset 0."""
    log = node.data / METADATA_LOG_DIR_NAME
    return (any(path.name != BOOTSTRAP_CHECKPOINT for path in log.glob("*.checkpoint"))
            and not (log / FIRST_SEGMENT).exists())


def empty_metadata_log(node: Node) -> None:
    """Remove what the metadata log holds (segments, indexes, snapshots), keeping what
    formatting wrote there, as a controller that lost its log but not its identity."""
    for path in (node.data / METADATA_LOG_DIR_NAME).iterdir():
        if path.name not in (BOOTSTRAP_CHECKPOINT, "partition.metadata"):
            path.unlink()


def caught_up_observer(cluster: OracleCluster, node: Node) -> bool:
    info = quorum(cluster, timeout_s=5.0)
    return info is not None and any(
        o.replica_id == node.node_id and o.log_end_offset >= info.high_watermark
        for o in info.observers)


def has_voters(cluster: OracleCluster, voters: set[int]) -> bool:
    info = quorum(cluster, timeout_s=5.0)
    return info is not None and {v.replica_id for v in info.voters} == voters


def test_catch_up_from_the_other_kinds_snapshot(dynamic: list[DynamicCluster]) -> None:
    """Each standalone leader's log prefix gives way to a snapshot; the observer of the
    other kind, restarted with an empty log, catches up from it (FetchSnapshot)."""
    for cluster in dynamic:
        leader, observer = cluster.controllers
        wait_until(f"node {leader.node_id} ({leader.kind}) to snapshot and drop its "
                 "first segment", partial(snapshotted, leader))
        cluster.stop(observer)
        empty_metadata_log(observer)
        cluster.start(observer)
    for cluster in dynamic:
        leader, observer = cluster.controllers
        wait_until(f"node {observer.node_id} ({observer.kind}) caught up from node "
                 f"{leader.node_id}'s snapshot",
                 lambda c=cluster, n=observer: snapshotted(n) and caught_up_observer(c, n))


def test_each_tool_adds_and_removes_the_other_kind(dynamic: list[DynamicCluster]) -> None:
    """Kafka's ``kafka-metadata-quorum add-controller`` makes the pykraft observer a voter
    of the Kafka quorum and ``pykraft metadata-quorum remove-controller`` removes it; on the
    pykraft quorum, pykraft's tool adds the Kafka controller and Kafka's removes it."""
    for cluster in dynamic:
        leader, joiner = cluster.controllers
        bootstrap = leader.listener(CONTROLLER)
        if leader.kind == KAFKA:
            added = kafka_quorum_tool(cluster, leader, "--command-config", str(joiner.config),
                                      "add-controller")
            assert added.returncode == 0, added.stderr
        else:
            added_here = pykraft_tool("metadata-quorum", "--bootstrap-controller", bootstrap,
                                      "--command-config", str(joiner.config),
                                      "add-controller")
            assert added_here.exit_code == 0, added_here.output
        wait_until(f"node {joiner.node_id} a voter", partial(
            has_voters, cluster, {leader.node_id, joiner.node_id}))
        status = kafka_quorum_tool(cluster, leader, "describe", "--status")
        assert status.returncode == 0, status.stderr
        assert f"LeaderId:               {leader.node_id}" in status.stdout, status.stdout
        assert f'"id": {joiner.node_id}' in status.stdout, status.stdout
        remove = ("remove-controller", "--controller-id", str(joiner.node_id),
                  "--controller-directory-id", directory_id(joiner))
        if leader.kind == KAFKA:
            removed_here = pykraft_tool("metadata-quorum", "--bootstrap-controller", bootstrap,
                                        *remove)
            assert removed_here.exit_code == 0, removed_here.output
        else:
            removed = kafka_quorum_tool(cluster, leader, *remove)
            assert removed.returncode == 0, removed.stderr
        wait_until(f"node {joiner.node_id} removed", partial(
            has_voters, cluster, {leader.node_id}))
    for cluster in dynamic:
        cluster.stop_all()
    assert kafka_problems(dynamic, KAFKA_ONLY_PROBLEMS) == []
