"""Issue 32 item 3: the ZooKeeper-mode brokers of a migration rolled to **pykraft** brokers
on their own ``log.dirs`` (migration-plan §9), the migration itself done by Kafka 3.9.1's
KRaft controllers as in ``test_zk_migration_reference.py`` (phases A, B1, B2 are that
module's). Phase C rolls the migrating Kafka brokers one by one to ``pykraft server`` (same
id, ``process.roles=broker``, the quorum, no ``zookeeper.*``); while one rolls, the others
are still ZK brokers fed by the controllers' legacy RPCs. Phase D restarts the controllers
without migration (finalisation).

Checked on real processes: every partition has its leader and its full ISR back after each
roll; idempotent acks=all messages produced before, between and after the rolls are each
read back exactly once; group g1's committed offsets are unchanged; each broker's
``meta.properties`` is left as Kafka 3.9 leaves it (version 0, byte for byte as before);
after finalisation the cluster still serves.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from metadata_dump import parse_dump
from reference_procedure import (
    CAPTURED,
    Timeline,
    assert_every_partition_served,
    committed_offsets,
    phase_a,
    phase_b1,
    phase_b2,
)
from zk_cluster import (
    BROKER_IDS,
    CONTROLLER_IDS,
    ZkCluster,
    acknowledged_values,
    zk_cluster,
)

from pykraft.ids import uuid_to_str
from pykraft.storage.meta_properties import META_PROPERTIES, parse_meta_properties

pytestmark = pytest.mark.timeout(2400)

TOPIC = "t-rf3"
BATCH = 10  # messages produced at each step of the roll
#: the background producer through the roll: about 60 s at 20 a second (a roll takes 10-15 s)
THROUGH_ROLL, PER_SECOND, PREFIX = 1200, 20, 7


@dataclass
class Rolled:
    """What phase C left for the checks."""

    cluster: ZkCluster
    produced: list[str]
    """Every value acknowledged to t-rf3 (the console producer exits non-zero otherwise,
    the verifiable producer prints each acknowledgement)."""
    through_roll: int
    """How many of them the producer running through the roll had acknowledged."""
    offsets_before: dict[tuple[str, int], int]
    meta_before: dict[int, bytes]
    timeline: Timeline


def produce(cluster: ZkCluster, produced: list[str], tag: str) -> None:
    """BATCH idempotent acks=all values tagged ``tag`` to t-rf3, remembered as acknowledged."""
    cluster.produce(TOPIC, BATCH, tag)
    produced.extend(f"{tag}-{i}" for i in range(1, BATCH + 1))


def meta_properties(cluster: ZkCluster, broker: int) -> bytes:
    data: bytes = (cluster.broker_data(broker) / META_PROPERTIES).read_bytes()
    return data


@pytest.fixture(scope="module")
def rolled(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Rolled]:
    """Phases A-B2 (Kafka's migration), then C: each migrating broker rolled to pykraft,
    produce before, between and after the rolls."""
    timeline = Timeline()
    with zk_cluster(tmp_path_factory.mktemp("rolled-to-pykraft"),
                    scram_listener=True) as cluster:
        with timeline.phase("A"):
            phase_a(cluster)
        cluster_id = cluster.cluster_id()
        with timeline.phase("B1"):
            phase_b1(cluster, cluster_id)
        with timeline.phase("B2"):
            phase_b2(cluster)
        produced = [f"A-{i}" for i in range(1, 31)]  # phase A's 30
        offsets_before = committed_offsets(cluster, "g1")
        meta_before = {broker: meta_properties(cluster, broker) for broker in BROKER_IDS}
        with timeline.phase("C"):
            produce(cluster, produced, "B")
            producer = cluster.start_verifiable_producer(TOPIC, THROUGH_ROLL,
                                                         per_second=PER_SECOND, prefix=PREFIX)
            try:
                for broker in BROKER_IDS:
                    cluster.roll_broker_to_pykraft(broker)
                    assert_every_partition_served(cluster)
                    produce(cluster, produced, f"C{broker}")
            finally:
                producer.await_stop()
            acknowledged = acknowledged_values(producer)
            produced.extend(acknowledged)
        yield Rolled(cluster, produced, len(acknowledged), offsets_before, meta_before,
                     timeline)


def test_rolled_brokers_serve_every_partition(rolled: Rolled) -> None:
    """After the roll every partition is led with its full ISR by the pykraft brokers, and
    every acknowledged message is there exactly once: those produced between the rolls and
    those of the producer running through them (idempotent: one it was not told of may be
    there, once at most); the compacted topic keeps its 10 keys."""
    assert rolled.cluster.pykraft_brokers == set(BROKER_IDS)
    assert rolled.through_roll == THROUGH_ROLL
    assert_every_partition_served(rolled.cluster)
    values = rolled.cluster.consume(TOPIC, timeout_ms=20000)
    assert len(values) == len(set(values))
    assert set(values) >= set(rolled.produced)
    assert all(v.startswith(f"{PREFIX}.") for v in set(values) - set(rolled.produced))
    compacted = rolled.cluster.consume("t-compact", timeout_ms=20000)
    assert sorted(compacted) == sorted(f"A-{i}" for i in range(1, BATCH + 1))


def test_registrations_and_directories_as_kafkas(rolled: Rolled) -> None:
    """In the controllers' log, as Kafka 3.9's KRaft brokers left it in the reference run
    (migration-plan §9): each rolled broker registered again, not as a migrating ZK broker,
    with its one log dir's ``directory.id`` from ``meta.properties``; then its
    AssignReplicasToDirs gave every partition it hosts that directory in its slot."""
    cluster = rolled.cluster
    log = parse_dump(cluster.dump_metadata(cluster.quorum_leader()))
    replicas = {(r.data["topicId"], r.data["partitionId"]): r.data["replicas"] for r in log
                if r.type == "PARTITION_RECORD"}
    for broker in BROKER_IDS:
        meta = parse_meta_properties(rolled.meta_before[broker].decode("latin-1"), "meta")
        assert meta.directory_id is not None
        directory = uuid_to_str(meta.directory_id)
        (registration,) = [r.data for r in log if r.type == "REGISTER_BROKER_RECORD"
                           and r.data["brokerId"] == broker
                           and not r.data["isMigratingZkBroker"]]
        assert registration["logDirs"] == [directory]
        assigned = {(r.data["topicId"], r.data["partitionId"]) for r in log
                    if r.type == "PARTITION_CHANGE_RECORD" and directory in
                    r.data.get("directories", ())}
        hosted = {key for key, on in replicas.items() if broker in on}
        assert assigned == hosted, broker


def test_group_offsets_unchanged(rolled: Rolled) -> None:
    offsets = committed_offsets(rolled.cluster, "g1")
    assert offsets == rolled.offsets_before
    assert sum(v for (topic, _), v in offsets.items() if topic == TOPIC) == 30


def test_meta_properties_left_as_kafka_leaves_them(rolled: Rolled) -> None:
    """Kafka 3.9's KRaft broker keeps the migrating broker's version 0 file as it is
    (``captured/meta.properties-b*-after-kraft``); so does pykraft's."""
    for broker in BROKER_IDS:
        after = meta_properties(rolled.cluster, broker)
        assert after == rolled.meta_before[broker]
        ours = parse_meta_properties(after.decode("latin-1"), f"b{broker}")
        kafkas = parse_meta_properties(
            (CAPTURED / f"meta.properties-b{broker}-after-kraft").read_text(), "captured")
        assert (ours.version, ours.node_id) == (kafkas.version, kafkas.node_id) == (0, broker)
        assert ours.directory_id is not None and ours.cluster_id is not None


def test_finalised_cluster_still_serves(rolled: Rolled) -> None:
    """Phase D: the controllers restarted without migration; the active one writes
    POST_MIGRATION; the pykraft brokers serve every partition, take and give messages."""
    cluster = rolled.cluster
    with rolled.timeline.phase("D"):
        for controller in CONTROLLER_IDS:
            cluster.restart_controller(controller, migration=False)
        assert_every_partition_served(cluster)
        log = parse_dump(cluster.dump_metadata(cluster.quorum_leader()))
    states = [r.data["zkMigrationState"] for r in log if r.type == "ZK_MIGRATION_STATE_RECORD"]
    assert states == [2, 1, 3], states  # PRE_MIGRATION, MIGRATION, POST_MIGRATION
    produce(cluster, rolled.produced, "D")
    values = cluster.consume(TOPIC, timeout_ms=20000)
    assert sorted(values) == sorted(rolled.produced)
    assert committed_offsets(cluster, "g1") == rolled.offsets_before
    failed = [name for name, process in cluster.processes.items()
              if "Traceback" in process.log.read_text(errors="replace")]
    assert not failed
    print(f"[brokers rolled to pykraft] phases: {rolled.timeline.seconds}", flush=True)

