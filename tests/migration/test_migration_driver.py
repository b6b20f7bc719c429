"""The migration driver walks Kafka's states (migration-plan §4) against fake ports.

ZooKeeper, the controller and the brokers are fakes that record what the driver asked of
them; the tree the load reads is the reference run's phase A (captured znodes). Each test
drives the driver by its inputs (leader changes, committed images, polls) and asserts the
states and the effects, in order.
"""

from __future__ import annotations

import logging
import random
import uuid
from dataclasses import dataclass, field, replace

import pytest
from migration_captures import reads, znode_dump

from pykraft.image.features import ZkMigrationState
from pykraft.image.image import MetadataDelta, MetadataImage, Provenance
from pykraft.migration import driver as driver_module
from pykraft.migration.driver import (
    MigrationCommitError,
    MigrationDriver,
    MigrationDriverState,
)
from pykraft.migration.fencing import ZkMigrationLeadershipState
from pykraft.migration.zk_ops import ZkUnavailableError
from pykraft.migration.zk_tree import ZkTree
from pykraft.migration.zk_write import UPDATE_CLIENT_QUOTA, UPDATE_CONFIG, ZkWrite
from pykraft.records.metadata import (
    FeatureLevelRecord,
    MetadataRecord,
    RegisterBrokerRecord,
    TopicRecord,
    ZkMigrationStateRecord,
)
from pykraft.runtime.zk_write_metrics import ZkWriteMetrics

S = MigrationDriverState
NODE = 3000
TREE = ZkTree.from_reads(reads(znode_dump("znodes-A-zk-cluster.json")))
"""Phase A of the reference run: 3 brokers, 4 topics, configs, quotas, SCRAM, ACLs."""


@dataclass
class FakeZk:
    migration: ZkMigrationLeadershipState = field(
        default_factory=lambda: replace(ZkMigrationLeadershipState(), migration_zk_version=0))
    broker_ids: set[int] = field(default_factory=lambda: {1, 2, 3})
    tree: ZkTree = TREE
    zk_epoch: int = 3
    claimable: bool = True
    down: bool = False
    failed_writes: int = 0
    """The next writes that fail (ZooKeeper lost mid-write)."""
    calls: list[str] = field(default_factory=list)

    def _call(self, name: str) -> None:
        if self.down:
            raise ZkUnavailableError("connection lost")
        self.calls.append(name)

    def get_or_create_migration_state(
            self, initial: ZkMigrationLeadershipState) -> ZkMigrationLeadershipState:
        self._call("get_or_create")
        return replace(initial, kraft_metadata_offset=self.migration.kraft_metadata_offset,
                       kraft_metadata_epoch=self.migration.kraft_metadata_epoch,
                       migration_zk_version=self.migration.migration_zk_version)

    def set_migration_state(self, state: ZkMigrationLeadershipState) -> ZkMigrationLeadershipState:
        self._call(f"set_migration {state.kraft_metadata_offset}")
        version = self.migration.migration_zk_version + 1
        self.migration = replace(state, migration_zk_version=version)
        return self.migration

    def claim_controller_leadership(
            self, state: ZkMigrationLeadershipState) -> ZkMigrationLeadershipState:
        self._call("claim")
        if not self.claimable:
            return state
        self.zk_epoch += 1
        return replace(state, zk_controller_epoch=self.zk_epoch,
                       zk_controller_epoch_zk_version=self.zk_epoch)

    def read_broker_ids(self) -> set[int]:
        self._call("read_broker_ids")
        return set(self.broker_ids)

    def read_tree(self) -> ZkTree:
        self._call("read_tree")
        return self.tree

    def sync_writes(self, image: MetadataImage,
                    state: ZkMigrationLeadershipState) -> list[ZkWrite]:
        self._call(f"sync {image.provenance.last_offset}")
        return [ZkWrite(UPDATE_CLIENT_QUOTA, "quota", ())] * 3

    def delta_writes(self, previous: MetadataImage, image: MetadataImage,
                     delta: MetadataDelta, state: ZkMigrationLeadershipState) -> list[ZkWrite]:
        return [ZkWrite(UPDATE_CONFIG, f"config {image.provenance.last_offset}", ())]

    def apply(self, write: ZkWrite,
              state: ZkMigrationLeadershipState) -> ZkMigrationLeadershipState:
        self._call(f"apply {write.description}")
        if self.failed_writes:
            self.failed_writes -= 1
            raise ZkUnavailableError("connection lost")
        return state


@dataclass
class FakeRecords:
    offset: int = 100
    fail_batches: int = 0
    calls: list[str] = field(default_factory=list)
    batches: list[tuple[MetadataRecord, ...]] = field(default_factory=list)

    def begin(self) -> None:
        self.offset += 1
        self.calls.append("begin")

    def accept_batch(self, records: tuple[MetadataRecord, ...]) -> None:
        if self.fail_batches:
            self.fail_batches -= 1
            raise MigrationCommitError("not the active controller")
        self.offset += len(records)
        self.batches.append(records)
        self.calls.append(f"batch {len(records)}")

    def complete(self) -> tuple[int, int]:
        self.offset += 2
        self.calls.append("complete")
        return self.offset, 5

    def abort(self) -> None:
        self.calls.append("abort")


@dataclass
class FakePropagator:
    calls: list[str] = field(default_factory=list)

    def send_full(self, image: MetadataImage, zk_controller_epoch: int) -> None:
        self.calls.append(f"full {image.provenance.last_offset} {zk_controller_epoch}")

    def send_delta(self, previous: MetadataImage, image: MetadataImage,
                   zk_controller_epoch: int) -> None:
        self.calls.append(f"delta {image.provenance.last_offset} {zk_controller_epoch}")


@dataclass
class TickingClock:
    """Each reading TICK_MS after the previous one: a timed step reads it twice."""

    now_ms: int = 0

    def __call__(self) -> int:
        self.now_ms += TICK_MS
        return self.now_ms


TICK_MS = 7


@dataclass
class Rig:
    zk: FakeZk = field(default_factory=FakeZk)
    records: FakeRecords = field(default_factory=FakeRecords)
    propagator: FakePropagator = field(default_factory=FakePropagator)
    metrics: ZkWriteMetrics = field(default_factory=ZkWriteMetrics)
    not_ready: str | None = None
    driver: MigrationDriver = field(init=False)

    def __post_init__(self) -> None:
        self.driver = MigrationDriver(
            NODE, zk=self.zk, records=self.records, propagator=self.propagator,
            quorum_readiness=lambda image: self.not_ready, metrics=self.metrics,
            rng=random.Random(1), clock=TickingClock(), min_batch_size=200)

    def publish(self, image: MetadataImage, *records: object, offset: int,
                epoch: int = 5) -> MetadataImage:
        delta = MetadataDelta(image)
        for record in records:
            delta.replay(record)
        published = delta.apply(Provenance(offset, epoch, 0))
        self.driver.on_metadata(delta, published, is_snapshot=False)
        return published

    def state(self) -> MigrationDriverState:
        """The driver's state, read afresh (so a type checker does not narrow it)."""
        return self.driver.state

    def poll_until(self, state: MigrationDriverState, *, polls: int = 10) -> None:
        for _ in range(polls):
            if self.driver.state is state:
                return
            self.driver.poll()
        assert self.driver.state is state


def _broker(broker_id: int, *, migrating: bool = True) -> RegisterBrokerRecord:
    return RegisterBrokerRecord(broker_id=broker_id, broker_epoch=10 + broker_id,
                                is_migrating_zk_broker=migrating, fenced=False)


def _pre_migration(*brokers: RegisterBrokerRecord) -> tuple[object, ...]:
    return (FeatureLevelRecord(name="metadata.version", feature_level=21),
            ZkMigrationStateRecord(zk_migration_state=ZkMigrationState.PRE_MIGRATION), *brokers)


def _to_dual_write(rig: Rig) -> MetadataImage:
    rig.driver.on_leader_change(NODE, 5)
    image = rig.publish(MetadataImage(), *_pre_migration(*map(_broker, (1, 2, 3))), offset=10)
    rig.poll_until(S.SYNC_KRAFT_TO_ZK)
    image = rig.publish(image, ZkMigrationStateRecord(
        zk_migration_state=ZkMigrationState.MIGRATION), offset=rig.records.offset)
    rig.poll_until(S.DUAL_WRITE)
    return image


def test_a_migration_walks_kafkas_states_in_order(caplog: pytest.LogCaptureFixture) -> None:
    rig = Rig()
    with caplog.at_level(logging.INFO, logger="pykraft.migration.driver"):
        _to_dual_write(rig)
    walked = [r.getMessage() for r in caplog.records if "transitioning from" in r.getMessage()]
    assert walked == [f"{NODE} transitioning from {a} to {b} state" for a, b in [
        ("UNINITIALIZED", "INACTIVE"), ("INACTIVE", "WAIT_FOR_CONTROLLER_QUORUM"),
        ("WAIT_FOR_CONTROLLER_QUORUM", "WAIT_FOR_BROKERS"),
        ("WAIT_FOR_BROKERS", "BECOME_CONTROLLER"), ("BECOME_CONTROLLER", "ZK_MIGRATION"),
        ("ZK_MIGRATION", "SYNC_KRAFT_TO_ZK"),
        ("SYNC_KRAFT_TO_ZK", "KRAFT_CONTROLLER_TO_BROKER_COMM"),
        ("KRAFT_CONTROLLER_TO_BROKER_COMM", "DUAL_WRITE")]]
    # the load: Begin, phase A's 30 records in one batch, then MIGRATION + End at 133
    assert rig.records.calls == ["begin", "batch 30", "complete"]
    completed = [r.getMessage() for r in caplog.records
                 if r.getMessage().startswith("Completed migration")]
    assert len(completed) == 1
    assert "30 records were generated" in completed[0]
    assert "The current metadata offset is now 133 with an epoch of 5" in completed[0]
    assert rig.zk.calls == [
        "get_or_create", "get_or_create", "read_broker_ids", "read_tree", "claim",
        "set_migration -1", "read_tree", "set_migration 133", "sync 133", "apply quota",
        "apply quota", "apply quota"]
    assert rig.driver.leadership.zk_controller_epoch == 4
    assert rig.propagator.calls == ["full 133 4"]
    assert "Made the following ZK writes when reconciling with KRaft state: " \
        "{UpdateClientQuota=3}" in caplog.text


def test_dual_write_writes_each_newer_delta_then_moves_migration_and_sends_rpcs() -> None:
    rig = Rig()
    image = _to_dual_write(rig)
    rig.zk.calls.clear()
    image = rig.publish(image, _broker(4, migrating=False), offset=140)
    assert rig.zk.calls == ["apply config 140", "set_migration 140"]
    assert rig.propagator.calls[-1] == "delta 140 4"
    rig.zk.calls.clear()
    rig.publish(image, offset=120)  # older than /migration's offset: already in ZooKeeper
    assert rig.zk.calls == []


def test_a_new_leader_sends_the_driver_inactive_and_stale_steps_write_nothing() -> None:
    rig = Rig()
    rig.driver.on_leader_change(NODE, 5)
    rig.publish(MetadataImage(), *_pre_migration(*map(_broker, (1, 2, 3))), offset=10)
    rig.poll_until(S.BECOME_CONTROLLER)
    rig.driver.on_leader_change(3001, 6)
    assert rig.state() is S.INACTIVE
    assert rig.driver.leadership.kraft_controller_id == 3001
    calls = list(rig.zk.calls)
    rig.driver.poll()
    assert rig.zk.calls == calls


def test_the_driver_waits_for_the_controller_quorum_and_every_zk_broker() -> None:
    rig = Rig(not_ready="No registration found for controller 3002")
    rig.driver.on_leader_change(NODE, 5)
    image = rig.publish(MetadataImage(), *_pre_migration(_broker(1), _broker(2)), offset=10)
    rig.driver.poll()
    assert rig.state() is S.WAIT_FOR_CONTROLLER_QUORUM
    rig.not_ready = None
    rig.poll_until(S.WAIT_FOR_BROKERS)
    rig.driver.poll()  # broker 3 is registered in ZooKeeper, not in KRaft
    assert rig.state() is S.WAIT_FOR_BROKERS
    rig.zk.broker_ids = {1, 2}  # broker 3 is down, but it holds replicas (t-rf3)
    rig.driver.poll()
    assert rig.state() is S.WAIT_FOR_BROKERS
    rig.driver.wakeup = False
    rig.publish(image, _broker(3, migrating=False), offset=11)  # a KRaft broker does not count
    assert rig.driver.wakeup  # a registration change re-checks at once
    rig.driver.poll()
    assert rig.state() is S.WAIT_FOR_BROKERS
    rig.publish(image, _broker(3), offset=12)
    rig.driver.poll()
    assert rig.state() is S.BECOME_CONTROLLER


def test_a_failed_claim_is_retried_and_a_zookeeper_outage_keeps_the_state() -> None:
    rig = Rig()
    rig.zk.claimable = False
    rig.driver.on_leader_change(NODE, 5)
    rig.publish(MetadataImage(), *_pre_migration(*map(_broker, (1, 2, 3))), offset=10)
    rig.poll_until(S.BECOME_CONTROLLER)
    rig.driver.poll()
    rig.driver.poll()
    assert rig.state() is S.BECOME_CONTROLLER
    assert rig.zk.calls.count("claim") == 2
    rig.zk.claimable, rig.zk.down = True, True
    rig.driver.poll()
    assert rig.state() is S.BECOME_CONTROLLER
    rig.zk.down = False
    rig.driver.poll()
    assert rig.state() is S.ZK_MIGRATION


def test_a_load_that_fails_is_aborted_and_loaded_again() -> None:
    rig = Rig()
    rig.records.fail_batches = 1
    rig.driver.on_leader_change(NODE, 5)
    rig.publish(MetadataImage(), *_pre_migration(*map(_broker, (1, 2, 3))), offset=10)
    rig.poll_until(S.ZK_MIGRATION)
    rig.driver.poll()
    assert rig.state() is S.ZK_MIGRATION
    assert rig.records.calls == ["begin", "abort"]
    rig.driver.poll()
    assert rig.state() is S.SYNC_KRAFT_TO_ZK
    assert rig.records.calls == ["begin", "abort", "begin", "batch 30", "complete"]


def test_a_failover_after_the_load_goes_straight_to_the_sync() -> None:
    rig = Rig()
    rig.zk.migration = replace(rig.zk.migration, kraft_metadata_offset=105,
                               kraft_metadata_epoch=5)
    rig.driver.on_leader_change(NODE, 7)
    rig.publish(MetadataImage(), FeatureLevelRecord(name="metadata.version", feature_level=21),
                ZkMigrationStateRecord(zk_migration_state=ZkMigrationState.MIGRATION),
                offset=150, epoch=7)
    rig.poll_until(S.DUAL_WRITE)
    assert rig.records.calls == []
    assert "read_broker_ids" not in rig.zk.calls
    assert rig.propagator.calls == ["full 150 4"]


@pytest.mark.parametrize(("state", "migrated"), [
    (ZkMigrationState.MIGRATION, False),  # KRaft says migrating, /migration says not loaded
    (ZkMigrationState.NONE, False),
    (ZkMigrationState.POST_MIGRATION, True),
])
def test_states_that_must_not_migrate_send_the_driver_inactive(
        state: ZkMigrationState, migrated: bool) -> None:
    rig = Rig()
    if migrated:
        rig.zk.migration = replace(rig.zk.migration, kraft_metadata_offset=105)
    rig.driver.on_leader_change(NODE, 5)
    rig.publish(MetadataImage(), FeatureLevelRecord(name="metadata.version", feature_level=21),
                ZkMigrationStateRecord(zk_migration_state=state), offset=10)
    rig.driver.poll()
    assert rig.state() is S.INACTIVE
    assert rig.records.calls == []


def test_a_cut_dual_write_resumes_on_the_next_poll_and_later_changes_wait_behind_it() -> None:
    """Kafka's driver blocks until ZooKeeper answers; pykraft's keeps what is left and
    writes it, then each later change, in order, each once, with their RPCs after them."""
    rig = Rig()
    image = _to_dual_write(rig)
    rig.zk.calls.clear()
    rig.zk.failed_writes = 1
    image = rig.publish(image, _broker(4, migrating=False), offset=140)
    rig.zk.down = True
    image = rig.publish(image, _broker(5, migrating=False), offset=141)
    assert rig.zk.calls == ["apply config 140"]
    assert rig.zk.migration.kraft_metadata_offset == 133  # /migration not moved past it
    assert rig.propagator.calls == ["full 133 4"]  # the RPCs wait for ZooKeeper too
    rig.zk.down = False
    rig.driver.poll()
    assert rig.zk.calls == ["apply config 140", "apply config 140", "set_migration 140",
                            "apply config 141", "set_migration 141"]
    assert rig.propagator.calls[1:] == ["delta 140 4", "delta 141 4"]
    rig.publish(image, offset=142)
    assert rig.zk.calls[-2:] == ["apply config 142", "set_migration 142"]


def test_too_many_changes_waiting_for_zookeeper_become_one_full_sync(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(driver_module, "MAX_UNWRITTEN_CHANGES", 1)
    rig = Rig()
    image = _to_dual_write(rig)
    rig.zk.calls.clear()
    rig.zk.down = True
    image = rig.publish(image, _broker(4, migrating=False), offset=140)
    rig.publish(image, _broker(5, migrating=False), offset=141)
    rig.zk.down = False
    rig.driver.poll()
    assert rig.zk.calls == ["sync 141", "apply quota", "apply quota", "apply quota",
                            "set_migration 141"]
    assert rig.propagator.calls[-1] == "full 141 4"


def test_a_leader_change_during_a_zookeeper_outage_is_not_lost() -> None:
    rig = Rig()
    rig.zk.down = True
    rig.driver.on_leader_change(NODE, 5)
    assert rig.state() is S.UNINITIALIZED
    rig.publish(MetadataImage(), *_pre_migration(*map(_broker, (1, 2, 3))), offset=10)
    rig.driver.poll()
    assert rig.state() is S.UNINITIALIZED
    rig.zk.down = False
    rig.driver.poll()  # recovers /migration, then follows the leader it heard of
    assert rig.state() is S.WAIT_FOR_CONTROLLER_QUORUM
    rig.poll_until(S.ZK_MIGRATION)


def test_re_elected_in_a_new_epoch_the_driver_claims_again_and_syncs() -> None:
    rig = Rig()
    _to_dual_write(rig)
    rig.zk.calls.clear()
    rig.driver.on_leader_change(NODE, 6)
    assert rig.state() is S.WAIT_FOR_CONTROLLER_QUORUM
    rig.poll_until(S.DUAL_WRITE)
    assert rig.zk.calls == ["get_or_create", "claim", "set_migration 133", "sync 133",
                            "apply quota", "apply quota", "apply quota"]
    assert rig.driver.leadership.kraft_controller_epoch == 6
    assert rig.propagator.calls[-1] == "full 133 5"
    assert rig.records.calls == ["begin", "batch 30", "complete"]  # no second load


def zk_write_samples(rig: Rig, committed_offset: int, *, active: bool = True
                     ) -> dict[str, float]:
    """The migration metrics a scrape shows, by sample name (histograms: count and sum)."""
    return {sample.name.removeprefix("kafka_controller_kafkacontroller_"): sample.value
            for family in rig.metrics.families(committed_offset, active=active)
            for sample in family.samples if not sample.name.endswith("_bucket")}


def test_the_write_behind_lag_grows_while_zookeeper_is_behind_and_returns_to_zero() -> None:
    rig = Rig()
    image = _to_dual_write(rig)
    assert zk_write_samples(rig, 133)["zkwritebehindlag"] == 0  # no dual write yet (Kafka's 0)
    image = rig.publish(image, _broker(4, migrating=False), offset=140)
    assert zk_write_samples(rig, 140)["zkwritebehindlag"] == 0
    rig.zk.failed_writes = 1
    image = rig.publish(image, _broker(5, migrating=False), offset=141)
    rig.zk.down = True
    image = rig.publish(image, _broker(6, migrating=False), offset=142)
    assert zk_write_samples(rig, 142)["zkwritebehindlag"] == 2  # 141 and 142 not in ZooKeeper
    assert zk_write_samples(rig, 142, active=False)["zkwritebehindlag"] == 0
    rig.zk.down = False
    rig.driver.poll()  # what waited is written, up to 142
    assert zk_write_samples(rig, 142)["zkwritebehindlag"] == 0
    rig.publish(image, offset=143)
    assert zk_write_samples(rig, 145)["zkwritebehindlag"] == 2  # committed, not yet published


def test_the_write_times_take_one_sample_per_sync_and_per_delta_touching_zookeeper() -> None:
    rig = Rig()
    image = _to_dual_write(rig)  # SYNC_KRAFT_TO_ZK's full sync
    found = zk_write_samples(rig, 133)
    assert (found["zkwritesnapshottimems_count"], found["zkwritesnapshottimems_sum"]) == (
        1, TICK_MS)
    assert found["zkwritedeltatimems_count"] == 0
    image = rig.publish(image, _broker(4, migrating=False), offset=140)  # nothing for ZooKeeper
    assert zk_write_samples(rig, 140)["zkwritedeltatimems_count"] == 0
    image = rig.publish(image, TopicRecord(name="t-new", topic_id=uuid.UUID(int=9)), offset=141)
    found = zk_write_samples(rig, 141)
    assert (found["zkwritedeltatimems_count"], found["zkwritedeltatimems_sum"]) == (1, TICK_MS)
    delta = MetadataDelta(image)
    snapshot = delta.apply(Provenance(150, 5, 0))
    rig.driver.on_metadata(delta, snapshot, is_snapshot=True)  # a snapshot: a full sync
    rig.zk.failed_writes = 1
    rig.publish(snapshot, TopicRecord(name="t-lost", topic_id=uuid.UUID(int=10)), offset=151)
    rig.driver.poll()  # the failed attempt is not timed; the poll's that wrote it is
    found = zk_write_samples(rig, 151)
    assert (found["zkwritesnapshottimems_count"], found["zkwritedeltatimems_count"]) == (2, 2)
