"""The reference procedure of ``docs/design/migration-reference/run.sh`` on the harness, done
by Kafka 3.9.1's own controllers: a ZooKeeper cluster (phase A), the controllers up in
migration mode (B1), the brokers rolled into migration mode until the load ran (B2); then
the brokers rolled to KRaft (C) and the controllers restarted without migration (D,
finalisation). 7 JVMs: ZooKeeper, 3 brokers (with a SCRAM listener besides run.sh's), 3
controllers.

The key check: pykraft reads the same ZooKeeper (``read_tree`` over ``runtime/zk_session``)
and loads it (``migration_load``), and its records equal those of Kafka's load in the
controller's metadata log (``kafka-dump-log --cluster-metadata-decoder``), normalised by
``metadata_dump``. The tree is read at the end of phase A, before the controllers start,
and the comparison leaves out each partition's leader, ISR, leader epoch and partition
epoch: the broker roll of phase B2 moves them (controlled shutdowns, ISR shrinks and
expansions) until the load, which runs the instant the last broker registers with the
controller (migration-plan §6), so no read from outside can be sure to see the states the
load saw; every other znode the load reads is the same from phase A to the load. The
states are still checked for what holds: each epoch Kafka loaded is at least the one read
after phase A (a zkVersion and a leader epoch only grow).
"""

from __future__ import annotations

import itertools
import random
import re
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from metadata_dump import (
    LogRecord,
    load_span,
    load_view,
    parse_dump,
    parse_records,
)
from reference_procedure import (
    CAPTURED,
    COMPLETED,
    DRIVER_STATES,
    MIGRATION_LINES,
    TRANSITION,
    Timeline,
    across_runs,
    alice_sees_t_rf3,
    phase_a,
    phase_b1,
    phase_b2,
    shown_migration_state,
)
from zk_cluster import (
    BROKER_IDS,
    CONSUMER_GROUPS,
    CONTROLLER_IDS,
    BrokerMode,
    ZkCluster,
    zk_cluster,
)

from pykraft.migration.load import MigrationLoad, completion_message, migration_load
from pykraft.migration.zk_reads import read_tree
from pykraft.migration.zk_tree import ZkTree

pytestmark = pytest.mark.timeout(1800)

_MANIFEST = re.compile(r"(\d+) records were generated in \d+ ms across (\d+) batches.*"
                       r"(The record types were \{.*?\})")


@dataclass
class Migrated:
    cluster: ZkCluster
    tree: ZkTree
    """pykraft's read of ZooKeeper at the end of phase A."""
    ours: MigrationLoad
    active: int
    completion: str
    log: list[LogRecord]
    """The active controller's metadata log right after the load."""
    timeline: Timeline


@pytest.fixture(scope="module")
def migrated(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Migrated]:
    timeline = Timeline()
    with zk_cluster(tmp_path_factory.mktemp("migration-reference"),
                    scram_listener=True) as cluster:
        with timeline.phase("A"):
            phase_a(cluster)
        with cluster.zk_session() as zk:
            tree = read_tree(zk)
        assert tree.cluster_id is not None
        with timeline.phase("B1"):
            phase_b1(cluster, tree.cluster_id)
        with timeline.phase("B2"):
            active, line = phase_b2(cluster)
        log = parse_dump(cluster.dump_metadata(active))
        yield Migrated(cluster, tree, migration_load(tree, random.Random(0)), active,
                       line[line.index(COMPLETED):line.rindex(" (")], log, timeline)


def test_kafkas_controllers_migrate_zookeeper(migrated: Migrated) -> None:
    """The active controller's driver went through Kafka's states in order, and loaded what
    the reference run loaded (``captured/``): 30 records of the same types in one batch, 3
    brokers seen; the same records once run-made ids and placements are set aside."""
    steps = TRANSITION.findall(migrated.cluster.controller(migrated.active).output())
    last = steps[-len(DRIVER_STATES) + 1:]
    assert last == list(itertools.pairwise(DRIVER_STATES)), steps
    assert "30 records were generated" in migrated.completion
    assert "across 1 batches" in migrated.completion
    assert migrated.completion.endswith("Saw 3 brokers in the migrated metadata [1, 2, 3].")
    reference = parse_records((CAPTURED / "metadata-D-finalised.records").read_text())
    assert across_runs(migrated.log) == across_runs(reference)
    # pykraft's tools read MIGRATION from Kafka's controllers' metadata log as from pykraft's
    assert shown_migration_state(migrated.cluster) == MIGRATION_LINES


def test_pykrafts_read_and_load_of_zookeeper_are_kafkas(migrated: Migrated) -> None:
    """pykraft's load of the tree read after phase A equals Kafka's load record for record
    (as sets where Kafka's orders are hash orders), modulo the partition states the roll
    moved, in as many batches; its completion line names the same records and brokers."""
    kafka = load_span(migrated.log)
    ours = [LogRecord.of(offset, record.to_json_dict())
            for offset, record in enumerate(migrated.ours.records)]
    assert len(ours) == len(kafka) == 30
    assert load_view(ours, partition_states=False) == load_view(kafka, partition_states=False)
    (kafka_manifest,) = _MANIFEST.findall(migrated.completion)
    ours_line = completion_message(migrated.ours, duration_ms=0, batch_wait_ms=0, offset=0,
                                   epoch=0)
    assert _MANIFEST.findall(ours_line) == [kafka_manifest]
    assert ours_line.endswith(migrated.completion[migrated.completion.index("Saw "):])
    loaded = {(r.data["topicId"], r.data["partitionId"]): r.data for r in kafka
              if r.type == "PARTITION_RECORD"}
    moved = 0
    for record in ours:
        if record.type == "PARTITION_RECORD":
            theirs = loaded[(record.data["topicId"], record.data["partitionId"])]
            assert record.data["leaderEpoch"] <= theirs["leaderEpoch"]
            assert record.data["partitionEpoch"] <= theirs["partitionEpoch"]
            moved += record.data != theirs
    print(f"[migration reference] {len(ours)} load records equal; {moved} of "
          f"{len(loaded)} partition states moved between phase A and the load", flush=True)


def test_finalisation(migrated: Migrated) -> None:
    """Phases C and D: the brokers rolled to KRaft mode on their log dirs, the controllers
    restarted without migration; the active one writes POST_MIGRATION; the messages, the
    group's committed offsets and alice's SCRAM credential are all still there."""
    cluster, timeline = migrated.cluster, migrated.timeline
    with timeline.phase("C"):
        for broker in BROKER_IDS:
            cluster.roll_broker(broker, BrokerMode.KRAFT)
            cluster.wait_no_under_replicated()
    with timeline.phase("D"):
        for controller in CONTROLLER_IDS:
            cluster.restart_controller(controller, migration=False)
        cluster.wait_no_under_replicated()
        leader = cluster.quorum_leader()
        log = parse_dump(cluster.dump_metadata(leader))
    states = [r.data["zkMigrationState"] for r in log if r.type == "ZK_MIGRATION_STATE_RECORD"]
    assert states == [2, 1, 3], states  # PRE_MIGRATION, MIGRATION, POST_MIGRATION
    assert shown_migration_state(cluster) == []
    values = cluster.consume("t-rf3", timeout_ms=20000)
    assert len(values) == len(set(values)) == 30
    described = cluster.admin(CONSUMER_GROUPS, "--describe", "--group", "g1")
    offsets = [int(line.split()[3]) for line in described.splitlines()
               if line.split()[1:2] == ["t-rf3"]]
    assert sum(offsets) == 30, described
    assert alice_sees_t_rf3(cluster, "alice-secret")
    assert not alice_sees_t_rf3(cluster, "not-alices")
    out_of_memory = [name for name, process in cluster.processes.items()
                     if "OutOfMemoryError" in process.log.read_text(errors="replace")]
    assert not out_of_memory
    print(f"[migration reference] phases: {timeline.seconds}", flush=True)
