"""The driver with its real ZooKeeper side (:class:`ZkMigrationClient`: reads, claim,
``/migration``, fenced writes) on a simulated ZooKeeper holding the reference run's phase A.

The controller is a fake that applies each committed write to an image; the driver walks
to dual write and leaves ZooKeeper as Kafka's claim, load and first sync left it in the
reference run (``/controller`` and ``/controller_epoch`` claimed, ``/migration`` naming the
load's offset, the quota entities rewritten: ``{UpdateClientQuota=3}``).
"""

from __future__ import annotations

import json
import logging
import random
from dataclasses import dataclass, field

import pytest
from migration_captures import znode_dump

from pykraft.image.features import ZkMigrationState
from pykraft.image.image import MetadataDelta, MetadataImage, Provenance
from pykraft.migration.driver import MigrationDriver, MigrationDriverState
from pykraft.migration.zk_migration_client import ZkMigrationClient
from pykraft.records.metadata import (
    FeatureLevelRecord,
    MetadataRecord,
    RegisterBrokerRecord,
    ZkMigrationStateRecord,
)
from pykraft.runtime.zk_write_metrics import ZkWriteMetrics
from pykraft.testing.sim_zookeeper import SimZooKeeper

NODE, EPOCH = 3000, 5


@dataclass
class AppliedRecords:
    """A controller that commits each write at once into ``image`` (the load in a
    transaction: its records reach the image with the MIGRATION state)."""

    image: MetadataImage
    offset: int = 71
    pending: list[MetadataRecord] = field(default_factory=list)

    def begin(self) -> None:
        self.offset += 1  # BeginTransactionRecord

    def accept_batch(self, records: tuple[MetadataRecord, ...]) -> None:
        self.pending += records
        self.offset += len(records)

    def complete(self) -> tuple[int, int]:
        delta = MetadataDelta(self.image)
        for record in self.pending:
            delta.replay(record)
        delta.replay(ZkMigrationStateRecord(zk_migration_state=ZkMigrationState.MIGRATION))
        self.offset += 2
        self.image = delta.apply(Provenance(self.offset, EPOCH, 0))
        return self.offset, EPOCH

    def abort(self) -> None:
        self.pending.clear()


@dataclass
class NoRpcs:
    sent: list[str] = field(default_factory=list)

    def send_full(self, image: MetadataImage, zk_controller_epoch: int) -> None:
        self.sent.append(f"full {zk_controller_epoch}")

    def send_delta(self, previous: MetadataImage, image: MetadataImage,
                   zk_controller_epoch: int) -> None:
        self.sent.append(f"delta {zk_controller_epoch}")


def _data(zk: SimZooKeeper, path: str) -> bytes:
    found = zk.get(path)
    assert found is not None and found.raw is not None, path
    return found.raw


def test_the_driver_claims_loads_and_syncs_phase_a_as_kafka_did(
        caplog: pytest.LogCaptureFixture) -> None:
    zk = SimZooKeeper.from_dump(znode_dump("znodes-A-zk-cluster.json"))
    start = MetadataDelta(MetadataImage())
    for record in (FeatureLevelRecord(name="metadata.version", feature_level=21),
                   ZkMigrationStateRecord(zk_migration_state=ZkMigrationState.PRE_MIGRATION),
                   *(RegisterBrokerRecord(broker_id=b, broker_epoch=30 + b, fenced=False,
                                          is_migrating_zk_broker=True) for b in (1, 2, 3))):
        start.replay(record)
    records = AppliedRecords(start.apply(Provenance(71, EPOCH, 0)))
    rpcs = NoRpcs()
    driver = MigrationDriver(
        NODE, zk=ZkMigrationClient(zk.session(), clock=lambda: 1796075364413),
        records=records, propagator=rpcs, quorum_readiness=lambda image: None,
        metrics=ZkWriteMetrics(), rng=random.Random(7), clock=lambda: 0, min_batch_size=200)
    driver.on_leader_change(NODE, EPOCH)
    driver.on_metadata(MetadataDelta(records.image), records.image, is_snapshot=False)
    with caplog.at_level(logging.INFO, logger="pykraft.migration.driver"):
        for _ in range(10):
            if driver.state is MigrationDriverState.SYNC_KRAFT_TO_ZK:
                break
            driver.poll()
        driver.on_metadata(MetadataDelta(records.image), records.image, is_snapshot=False)
        for _ in range(3):
            driver.poll()
    assert driver.state is MigrationDriverState.DUAL_WRITE
    assert records.offset == 104  # Begin 72, the 30 records, MIGRATION 103 and End 104
    controller = json.loads(_data(zk, "/controller"))
    assert (controller["brokerid"], controller["kraftControllerEpoch"]) == (NODE, EPOCH)
    claimed = int(_data(zk, "/controller_epoch"))
    assert driver.leadership.zk_controller_epoch == claimed
    migration = json.loads(_data(zk, "/migration"))
    assert migration == {"version": 0, "kraft_metadata_offset": 104,
                         "kraft_controller_id": NODE, "kraft_metadata_epoch": EPOCH,
                         "kraft_controller_epoch": EPOCH}
    assert "Made the following ZK writes when reconciling with KRaft state: " \
        "{UpdateClientQuota=3}" in caplog.text
    assert rpcs.sent == [f"full {claimed}"]
