"""ZooKeeper faults while pykraft controllers dual-write a real Kafka 3.9 ZooKeeper cluster
(issue 32's must-show; migration-plan §5, §7, §14 (g)): the reference procedure's A-B4 with
pykraft's controllers (``reference_procedure``), their ZooKeeper reached through a relay the
test can cut (:class:`~zk_cluster.ZkLink`), then

- run.sh's phase B5 (``captured/fault-zk-restart/``): ZooKeeper stopped, t-rf3's
  ``retention.ms`` changed through the controllers meanwhile, ZooKeeper restarted: the change
  reaches ZooKeeper once, which then holds what Kafka's controllers left;
- a session expiry: the relay cut until ZooKeeper (running on) expires the controllers'
  sessions, a change committed meanwhile, the relay mended: the active controller learns of
  the expiry, opens a new session and keeps its claim (``/controller`` and
  ``/controller_epoch`` are persistent: Kafka's driver re-claims nothing either), and that
  change and the next reach ZooKeeper once;
- a ZK broker SIGKILLed in the middle of the roll to KRaft (phase C) while Kafka's
  ``VerifiableProducer`` writes through it: it restarts as a KRaft broker and registers, the
  roll and the dual write go on, and every acknowledged message is there exactly once.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from process_harness import wait_for
from reference_procedure import (
    captured_znodes,
    comparable,
    phase_a,
    phase_b1,
    phase_b2,
    phase_b3,
    phase_b4,
    znodes,
)
from zk_cluster import (
    CONFIGS,
    CONTROLLER_IDS,
    BrokerMode,
    ZkCluster,
    ZkLink,
    acknowledged_values,
    zk_cluster,
)

from pykraft.migration.zk_tree import ZkRead

pytestmark = pytest.mark.timeout(1800)

FAULT_RUN = "fault-zk-restart"
SESSION_TIMEOUT_MS = 6000  # ZooKeeper's least (two ticks of its default 3 s)
#: the producer through the roll: about 40 s at 20 a second (a broker's roll takes 10-15 s)
THROUGH_ROLL, PER_SECOND, PREFIX = 800, 20, 9

Tree = dict[str, bytes | None]


@dataclass
class DualWriting:
    cluster: ZkCluster
    link: ZkLink


@pytest.fixture(scope="module")
def dual_writing(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DualWriting]:
    with zk_cluster(tmp_path_factory.mktemp("pykraft-zk-faults"), scram_listener=True,
                    pykraft_controllers=True,
                    controller_properties={"zookeeper.session.timeout.ms":
                                           str(SESSION_TIMEOUT_MS)}) as cluster:
        link = ZkLink(cluster.zk_port)
        try:
            cluster.extra_controller_properties["zookeeper.connect"] = link.address
            phase_a(cluster)
            phase_b1(cluster, cluster.cluster_id())
            active, _ = phase_b2(cluster)
            phase_b3(cluster)
            phase_b4(cluster, active)
            yield DualWriting(cluster, link)
        finally:
            link.close()


def test_zookeeper_restarted_while_dual_writing(dual_writing: DualWriting) -> None:
    """run.sh's B5: the change made with ZooKeeper down reaches it once it is back — the
    topic's config written once, one notification, nothing else rewritten — and ZooKeeper
    then holds what Kafka's controllers left in the reference fault run."""
    cluster = dual_writing.cluster
    before = tree(cluster)
    assert comparable(before) == captured_znodes("B4-failover", FAULT_RUN)
    version = config_version(cluster, "t-rf3")
    cluster.stop_zookeeper()
    # to the controllers: a ZK broker reads a topic's configs from ZooKeeper before altering
    cluster.tool(CONFIGS, "--bootstrap-controller", cluster.bootstrap_controllers, "--alter",
                 "--entity-type", "topics", "--entity-name", "t-rf3",
                 "--add-config", "retention.ms=5400000")
    cluster.start_zookeeper()
    after = written(cluster, {"t-rf3": "5400000"})
    assert changes(before, after) == {"/config/topics/t-rf3": 1, "topics/t-rf3": 1}
    assert config_version(cluster, "t-rf3") == version + 1  # written once
    assert comparable(after) == captured_znodes("B5-zk-restarted", FAULT_RUN)
    assert migrated_offset(after) > migrated_offset(before)
    cluster.wait_no_under_replicated()


def test_session_expiry_while_dual_writing(dual_writing: DualWriting) -> None:
    """The controllers' ZooKeeper sessions expire on the server (the relay cut past their
    timeout); the active controller logs the expiry, opens a new session and keeps its claim:
    the change committed while it had none and the one after reach ZooKeeper, once each."""
    cluster, link = dual_writing.cluster, dual_writing.link
    active = cluster.quorum_leader()
    sessions = cluster.zk_sessions(link.local_ports())
    assert len(sessions) == len(CONTROLLER_IDS), sessions
    expired = cluster.controller(active).scan("Session has expired")
    before = tree(cluster)
    versions = {topic: config_version(cluster, topic) for topic in ("t-rf3", "t-new")}
    assert sessions <= listed_sessions(cluster)
    link.cut()
    wait_for("ZooKeeper to expire the controllers' sessions",
             lambda: not sessions & listed_sessions(cluster) or None, 120.0)
    alter_topic(cluster, "t-rf3", "retention.ms=7200000")
    link.mend()
    wait_for(f"controller {active} to log its session's expiry", expired.found, 120.0)
    alter_topic(cluster, "t-new", "retention.ms=3600000")
    after = written(cluster, {"t-rf3": "7200000", "t-new": "3600000"})
    assert changes(before, after) == {"/config/topics/t-rf3": 1, "topics/t-rf3": 1,
                                      "/config/topics/t-new": 1, "topics/t-new": 1}
    assert {topic: config_version(cluster, topic) for topic in versions} == {
        topic: version + 1 for topic, version in versions.items()}  # each written once
    assert after["/controller"] == before["/controller"]  # the claim kept
    assert after["/controller_epoch"] == before["/controller_epoch"]
    renewed = cluster.zk_sessions(link.local_ports())
    assert renewed and not renewed & sessions


def test_a_zk_broker_killed_mid_roll(dual_writing: DualWriting) -> None:
    """Phase C with broker 2, still a migrating ZK broker, SIGKILLed between the rolls of
    1 and 3 and started as a KRaft broker: it registers, the roll and the dual write go on,
    and every value the idempotent acks=all producer was told of is in t-rf3 once (one it
    was not told of may be there, once at most)."""
    cluster = dual_writing.cluster
    producer = cluster.start_verifiable_producer("t-rf3", THROUGH_ROLL, per_second=PER_SECOND,
                                                 prefix=PREFIX)
    try:
        cluster.roll_broker(1, BrokerMode.KRAFT)
        cluster.wait_no_under_replicated()
        cluster.broker(2).kill()
        cluster.start_broker(2, BrokerMode.KRAFT)
        cluster.wait_broker(2)
        cluster.wait_no_under_replicated()
        cluster.roll_broker(3, BrokerMode.KRAFT)
        cluster.wait_no_under_replicated()
    finally:
        producer.await_stop()
    acknowledged = acknowledged_values(producer)
    assert len(acknowledged) == THROUGH_ROLL
    values = [v for v in cluster.consume("t-rf3", timeout_ms=20000) if v.startswith(f"{PREFIX}.")]
    assert len(values) == len(set(values))
    assert set(values) >= set(acknowledged)
    alter_topic(cluster, "t-compact", "retention.ms=3600000")  # still dual-writing
    written(cluster, {"t-compact": "3600000"})


def tree(cluster: ZkCluster) -> Tree:
    with cluster.zk_session() as zk:
        found: Tree = znodes(zk)
    return found


def listed_sessions(cluster: ZkCluster) -> set[str]:
    """The session ids ZooKeeper's ``dump`` lists (its session tracker's, then the owners
    of ephemeral znodes)."""
    return set(re.findall(r"0x[0-9a-f]+", cluster.four_letter("dump")))


def config_version(cluster: ZkCluster, topic: str) -> int:
    """The zkVersion of the topic's config znode."""
    with cluster.zk_session() as zk:
        read: ZkRead | None = zk.get(f"/config/topics/{topic}")
    assert read is not None
    return read.version


def alter_topic(cluster: ZkCluster, topic: str, config: str) -> None:
    cluster.admin(CONFIGS, "--alter", "--entity-type", "topics", "--entity-name", topic,
                  "--add-config", config)


def written(cluster: ZkCluster, retentions: dict[str, str]) -> Tree:
    """ZooKeeper's tree once each topic's config znode holds its ``retention.ms``."""
    def found() -> Tree | None:
        now = tree(cluster)
        return now if all(
            json.loads(now.get(f"/config/topics/{topic}") or b"{}").get("config", {})
            .get("retention.ms") == value for topic, value in retentions.items()) else None
    done: Tree = wait_for(f"{retentions} in ZooKeeper", found, 120.0)
    return done


def changes(before: Tree, after: Tree) -> dict[str, int]:
    """What changed between two trees as another run sees it (``comparable``): each
    changed znode once, and the new config change notifications by the entity they name."""
    old, new = comparable(before), comparable(after)
    found: dict[str, int] = {}
    for path in old.keys() | new.keys():
        if old.get(path) == new.get(path):
            continue
        if path.startswith("/config/changes/") and path not in old:
            entity = json.loads(after[path] or b"{}")["entity_path"]
            found[entity] = found.get(entity, 0) + 1
        else:
            found[path] = found.get(path, 0) + 1
    return found


def migrated_offset(nodes: Tree) -> int:
    return int(json.loads(nodes["/migration"] or b"{}")["kraft_metadata_offset"])
