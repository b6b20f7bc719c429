"""Issue 32 item 4: Kafka's operations guide "Reverting to ZooKeeper mode During the
Migration" (migration-plan §10's table) run on a Kafka 3.9.1 ZooKeeper cluster migrated by
**pykraft** controllers, one cluster per row (a parametrised module fixture: one cluster
runs at a time).

Both rows: phase A (``reference_procedure``); "controllers provisioned" reverted (the
controllers of B1 started, deprovisioned: the ZK cluster never noticed, and the next
attempt starts from the ``/migration`` they created); B1 again, B2 (the load) and B3
(run.sh's changes through the brokers, dual-written by the pykraft controllers). Kafka's
tools then describe the topics (with B3's partitions), configs, ACLs, SCRAM users, quotas,
topic ids and group g1's offsets: the last dual-write state. Then, with Kafka's
``VerifiableProducer`` (idempotent, acks=all) writing through it, the revert:

- "brokers in migration mode": the controllers deprovisioned; in ZooKeeper ``get
  /migration``, ``deleteall /controller``, ``deleteall /migration``; a ZK broker elects itself
  controller; each broker rolled to plain ZK mode (no ``zookeeper.metadata.migration.enable``,
  ``controller.listener.names``, ``controller.quorum.*``).
- "brokers migrated to KRaft": first phase C, the brokers rolled to **pykraft** brokers;
  then each rolled back to a Kafka ZK broker with migration kept (so Kafka 3.9 reads the
  logs, checkpoints and ``meta.properties`` pykraft left), the controllers deprovisioned,
  ``deleteall /controller``, and a second roll without the migration settings.

Checked after each: a ZK broker is controller at the claimed epoch + 1; Kafka's tools show
what they showed before; alice and bob log in by SCRAM; every acknowledged message of t-rf3
is there exactly once and the cluster takes new ones; the producer ids KRaft handed out are
all below the block the dual write left in ZooKeeper, and those handed out after the
rollback above it.
"""

from __future__ import annotations

import enum
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from reference_procedure import (
    Timeline,
    alice_sees_t_rf3,
    assert_every_partition_served,
    committed_offsets,
    described,
    phase_a,
    phase_b1,
    phase_b2,
    phase_b3,
    quotas_and_broker_configs,
)
from zk_cluster import (
    BROKER_IDS,
    TOPICS,
    BrokerMode,
    ZkCluster,
    acknowledged_after,
    acknowledged_values,
    zk_cluster,
)

from pykraft.migration.znodes import ControllerZNode, MigrationZNode, ProducerIdBlockZNode

pytestmark = pytest.mark.timeout(2400)

TOPIC = "t-rf3"
BATCH = 10
#: the producer through the rollback: stopped once it is acknowledged after the last roll
#: (its count is a bound it never reaches), at 20 a second
THROUGH_ROLLBACK, PER_SECOND, PREFIX = 100_000, 20, 9
DUMPED_BROKER = BROKER_IDS[0]  # replicas of every t-rf3 partition (replication factor 3)


class Row(enum.Enum):
    """The last migration step completed when reverting (the guide's table)."""

    MIGRATION_MODE = "brokers in migration mode"
    KRAFT_BROKERS = "brokers migrated to KRaft"


@dataclass
class RolledBack:
    """What one row's run saw before and after its rollback."""

    row: Row
    cluster: ZkCluster
    produced: list[str]
    """Every value acknowledged to t-rf3 (console producers fail otherwise, the verifiable
    producer prints each acknowledgement)."""
    described_before: dict[str, str]
    offsets_before: dict[tuple[str, int], int]
    take_over: TakeOver
    ids_before: set[int]
    """The producer ids of t-rf3's batches once the controllers are gone (KRaft's and phase
    A's)."""
    timeline: Timeline
    on_pykraft_disks: dict[int, str]
    """"brokers migrated to KRaft": what each Kafka broker logged on its first start on the
    log dirs a pykraft broker left (its start in ZK mode with migration kept)."""


def produce(cluster: ZkCluster, produced: list[str], tag: str) -> None:
    """BATCH idempotent acks=all values tagged ``tag`` to t-rf3, remembered as acknowledged."""
    cluster.produce(TOPIC, BATCH, tag)
    produced.extend(f"{tag}-{i}" for i in range(1, BATCH + 1))


def revert_controllers_provisioned(cluster: ZkCluster, produced: list[str]) -> None:
    """The guide's "controllers provisioned" row: deprovision them, nothing else. The ZK
    controller keeps ``/controller`` at its epoch and the cluster serves."""
    before = cluster.zk_get("/controller")
    epoch = cluster.controller_epoch()
    cluster.deprovision_controllers()
    assert cluster.zk_get("/controller") == before
    assert cluster.controller_epoch() == epoch
    produce(cluster, produced, "P")


@dataclass(frozen=True)
class TakeOver:
    """ZooKeeper's side of a rollback: what the KRaft controllers left, who took over."""

    claim: ControllerZNode
    """``/controller`` as the KRaft controller's claim left it."""
    claimed_epoch: int
    """``/controller_epoch`` as that claim left it."""
    migration: MigrationZNode
    """``get /migration`` before the rollback deleted it (or not)."""
    block: ProducerIdBlockZNode
    """``/latest_producer_id_block`` as the dual write left it."""
    zk_controller: ControllerZNode
    """The first ZK broker to take ``/controller`` after ``deleteall /controller``."""
    zk_controller_epoch: int


def take_over_zookeeper(cluster: ZkCluster, *, delete_migration: bool) -> TakeOver:
    """The controllers deprovisioned, then quickly in ZooKeeper: ``get /migration``,
    ``deleteall /controller`` (and ``deleteall /migration``); a ZK broker elects itself and
    every broker hears from it."""
    cluster.deprovision_controllers()
    claim, migration = cluster.zk_get("/controller"), cluster.zk_get("/migration")
    block = cluster.zk_get("/latest_producer_id_block")
    assert claim is not None and migration is not None and block is not None
    claimed_epoch = cluster.controller_epoch()
    assert cluster.zk_deleteall("/controller") == ["/controller"]
    if delete_migration:
        assert cluster.zk_deleteall("/migration") == ["/migration"]
    controller = cluster.wait_zk_broker_controller()
    epoch = cluster.controller_epoch()
    cluster.wait_brokers_heard_from(controller.broker_id, epoch)  # before any is rolled
    return TakeOver(ControllerZNode.decode(claim), claimed_epoch,
                    MigrationZNode.decode(migration), ProducerIdBlockZNode.decode(block),
                    controller, epoch)


def roll(cluster: ZkCluster, mode: BrokerMode) -> None:
    for broker in BROKER_IDS:
        cluster.roll_broker(broker, mode)
        assert_every_partition_served(cluster)


@pytest.fixture(scope="module", params=list(Row), ids=lambda row: row.name.lower())
def rolled_back(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory,
                ) -> Iterator[RolledBack]:
    row: Row = request.param
    timeline = Timeline()
    with zk_cluster(tmp_path_factory.mktemp(f"rollback-{row.name.lower()}"),
                    scram_listener=True, pykraft_controllers=True) as cluster:
        produced = [f"A-{i}" for i in range(1, 31)]  # phase A's 30
        with timeline.phase("A"):
            phase_a(cluster)
        cluster_id = cluster.cluster_id()
        with timeline.phase("B1, reverted, B1"):
            phase_b1(cluster, cluster_id)
            revert_controllers_provisioned(cluster, produced)
            phase_b1(cluster, cluster_id)
        with timeline.phase("B2"):
            phase_b2(cluster)
        with timeline.phase("B3"):
            phase_b3(cluster)
            produced += [f"B3-{i}" for i in range(1, 31)]
        described_before = described(cluster) | quotas_and_broker_configs(cluster)
        offsets_before = committed_offsets(cluster, "g1")
        if row is Row.KRAFT_BROKERS:
            with timeline.phase("C"):
                for broker in BROKER_IDS:
                    cluster.roll_broker_to_pykraft(broker)
                    assert_every_partition_served(cluster)
                produce(cluster, produced, "C")
        producer = cluster.start_verifiable_producer(TOPIC, THROUGH_ROLLBACK,
                                                     per_second=PER_SECOND, prefix=PREFIX)
        try:
            acknowledged_after(producer, 0)  # its producer id is KRaft's
            with timeline.phase(f"rollback: {row.value}"):
                on_pykraft_disks = {}
                if row is Row.KRAFT_BROKERS:
                    roll(cluster, BrokerMode.MIGRATION)  # back to Kafka, migration kept
                    on_pykraft_disks = {b: cluster.broker(b).output() for b in BROKER_IDS}
                take_over = take_over_zookeeper(
                    cluster, delete_migration=row is Row.MIGRATION_MODE)
                # every id KRaft handed out, none yet by the new ZK controller
                ids_before = cluster.producer_ids(DUMPED_BROKER, TOPIC)
                roll(cluster, BrokerMode.ZK)
            acknowledged_after(producer, len(acknowledged_values(producer)))
        finally:
            producer.terminate()
            producer.await_stop()
        produced += acknowledged_values(producer)
        produce(cluster, produced, "R")
        yield RolledBack(row, cluster, produced, described_before, offsets_before, take_over,
                         ids_before, timeline, on_pykraft_disks)
        print(f"[rollback {row.value}] phases: {timeline.seconds}", flush=True)


def test_a_zk_broker_is_controller_again(rolled_back: RolledBack) -> None:
    """``/controller`` deleted, a ZK broker elected itself at the KRaft claim's epoch + 1
    (an ephemeral ``/controller`` without a KRaft epoch); ``/migration`` held the last
    dual-written offset of a pykraft controller, and is gone only where the guide deletes
    it. The brokers run in ZK mode, none by pykraft."""
    rb, cluster, took = rolled_back, rolled_back.cluster, rolled_back.take_over
    assert took.claim.broker_id in cluster.controller_ports
    assert took.claim.kraft_controller_epoch > 0
    assert took.zk_controller.kraft_controller_epoch == -1
    assert took.zk_controller_epoch == took.claimed_epoch + 1
    assert took.migration.kraft_metadata_offset > 0
    assert took.migration.kraft_controller_id in cluster.controller_ports
    assert (cluster.zk_get("/migration") is None) == (rb.row is Row.MIGRATION_MODE)
    assert set(cluster.broker_modes.values()) == {BrokerMode.ZK}
    assert not cluster.pykraft_brokers
    print(f"[rollback {rb.row.value}] /controller was {took.claim} at epoch "
          f"{took.claimed_epoch}, /migration {took.migration}; broker "
          f"{took.zk_controller.broker_id} controller at epoch {took.zk_controller_epoch}",
          flush=True)


def test_the_metadata_is_as_before(rolled_back: RolledBack) -> None:
    """Kafka's tools show the topics (B3's partitions too), topic ids, configs, ACLs, SCRAM
    users, quotas and g1's offsets of the last dual-write state; SCRAM logins work with
    phase A's credential (alice, SHA-256) and B3's dual-written one (bob, SHA-512)."""
    cluster, before = rolled_back.cluster, rolled_back.described_before
    # what the comparison covers: phase A's and B3's changes, as the tools show them
    assert {"t-new", "t-compact", "t-rf3"} <= set(before["topics"].split())
    assert "t-plain" not in before["topics"].split()
    assert "Topic: t-compact PartitionCount: 3" in before["partitions"]
    assert "retention.ms=3600000" in before["t-rf3"]
    assert "SCRAM-SHA-512" in before["users"] and "producer_byte_rate=2097152" in before["users"]
    assert "app1" in before["clients"] and "127.0.0.2" in before["ips"]
    assert "log.cleaner.backoff.ms=25000" in before["broker-default"]
    assert "log.cleaner.threads=1" in before["broker-1"]
    assert "User:bob" in before["acls"] and "User:alice" in before["acls"]
    assert described(cluster) | quotas_and_broker_configs(cluster) == before
    assert committed_offsets(cluster, "g1") == rolled_back.offsets_before
    assert alice_sees_t_rf3(cluster, "alice-secret")
    assert not alice_sees_t_rf3(cluster, "not-alices")
    bob = cluster.as_scram_user(TOPICS, "bob", "bob-secret", "--list",
                                mechanism="SCRAM-SHA-512")
    assert bob.returncode == 0 and "t-new" in bob.stdout.split(), bob.stderr


def test_every_message_once(rolled_back: RolledBack) -> None:
    """Every value acknowledged before, through and after the rollback is in t-rf3 exactly
    once (an unacknowledged one of the verifiable producer may be there, once at most)."""
    rb = rolled_back
    values = rb.cluster.consume(TOPIC, timeout_ms=20000)
    assert len(values) == len(set(values))
    assert set(values) >= set(rb.produced)
    assert all(v.startswith(f"{PREFIX}.") for v in set(values) - set(rb.produced))
    through = sum(v.startswith(f"{PREFIX}.") for v in rb.produced)
    print(f"[rollback {rb.row.value}] {len(rb.produced)} acknowledged values read back once "
          f"({through} from the producer through the rollback), {len(values)} in t-rf3",
          flush=True)


def test_producer_ids_past_kraft(rolled_back: RolledBack) -> None:
    """Every producer id of t-rf3's batches before the rollback is below the block the
    dual write left in ``/latest_producer_id_block`` (its start is KRaft's next id), and
    the ids the ZK controller handed out after it are above that block: no id twice."""
    rb, block = rolled_back, rolled_back.take_over.block
    assert rb.ids_before and max(rb.ids_before) < block.block_start
    after = rb.cluster.producer_ids(DUMPED_BROKER, TOPIC) - rb.ids_before
    assert after, "no producer id new after the rollback"
    assert min(after) > block.block_end
    print(f"[rollback {rb.row.value}] producer ids before {sorted(rb.ids_before)}, the block "
          f"in ZooKeeper {block.block_start}-{block.block_end}, after {sorted(after)}",
          flush=True)


def test_kafka_reads_what_pykraft_brokers_left(rolled_back: RolledBack) -> None:
    """"brokers migrated to KRaft": each Kafka 3.9 ZK broker started on a pykraft broker's
    log dirs took its clean shutdown marker (no recovery), and warned of nothing there
    (logs, indexes, producer snapshots, checkpoints, ``partition.metadata``,
    ``meta.properties`` and the metadata log all read as its own)."""
    if rolled_back.row is not Row.KRAFT_BROKERS:
        pytest.skip("only the row whose brokers were pykraft's")
    for broker, output in rolled_back.on_pykraft_disks.items():
        data = str(rolled_back.cluster.broker_data(broker))
        assert "since clean shutdown file was found" in output, broker
        complaints = [line for line in output.splitlines() if "Corrupt" in line or (
            data in line and (" WARN " in line or " ERROR " in line))]
        assert not complaints, (broker, complaints)
