"""A controller dies in the middle of the ZooKeeper load; the next one aborts the load's
transaction, claims ZooKeeper over it and loads again (migration-plan §6, the reference
run's ``FAULT_DURING_LOAD``), with the real pieces: the driver, its ZooKeeper side on the
simulated ZooKeeper of phase A, and QuorumControllers on the fake raft log.

Nothing of the first load survives in the image, nothing is loaded twice, and the dead
controller's writes to ZooKeeper are fenced by the successor's claim.
"""

from __future__ import annotations

import json
import random
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from controller_harness import Cluster  # type: ignore[import-not-found]
from test_controller_zk_migration import (  # type: ignore[import-not-found]
    migrating,
    register_zk_brokers,
    successor,
)

sys.path.insert(0, str(Path(__file__).parents[1] / "migration"))
from migration_captures import znode_dump

from pykraft.controller.migration_ops import (
    AbortMigration,
    BeginMigration,
    CompleteMigration,
    MigrationBatch,
    MigrationRequest,
    MigrationWritten,
)
from pykraft.image.image import MetadataImage
from pykraft.messages.kafka.incremental_alter_configs_request import (
    AlterableConfig,
    AlterConfigsResource,
    IncrementalAlterConfigsRequest,
)
from pykraft.migration.driver import MigrationCommitError, MigrationDriver, MigrationDriverState
from pykraft.migration.fencing import ControllerMovedError, fenced_with
from pykraft.migration.zk_migration_client import ZkMigrationClient
from pykraft.migration.zk_ops import CreateOp
from pykraft.records.metadata import AbortTransactionRecord, MetadataRecord, TopicRecord
from pykraft.runtime.zk_write_metrics import ZkWriteMetrics
from pykraft.testing.sim_zookeeper import SimZooKeeper

PHASE_A_TOPICS = {"t-plain", "t-compact", "t-rf3", "__consumer_offsets"}


class ControllerDiedError(Exception):
    """The process running the driver and its controller is gone (SIGKILL)."""


@dataclass
class ClusterRecords:
    """The driver's writes to a QuorumController on the fake log, committed at once; the
    controller dies (nothing more is written) once ``batches_before_death`` batches went in."""

    cluster: Cluster
    batches_before_death: int | None = None

    def begin(self) -> None:
        self._write(BeginMigration())

    def accept_batch(self, records: tuple[MetadataRecord, ...]) -> None:
        if self.batches_before_death == 0:
            raise ControllerDiedError
        if self.batches_before_death is not None:
            self.batches_before_death -= 1
        self._write(MigrationBatch(records))

    def complete(self) -> tuple[int, int]:
        written = self._write(CompleteMigration())
        return written.offset, written.epoch

    def abort(self) -> None:
        self._write(AbortMigration())

    def _write(self, request: MigrationRequest) -> MigrationWritten:
        answer = self.cluster.call(request)
        if not isinstance(answer, MigrationWritten):
            raise MigrationCommitError(str(answer))
        return answer


class NoRpcs:
    def send_full(self, image: MetadataImage, zk_controller_epoch: int) -> None:
        pass

    def send_delta(self, previous: MetadataImage, image: MetadataImage,
                   zk_controller_epoch: int) -> None:
        pass


def driver_of(node_id: int, cluster: Cluster, zk: SimZooKeeper, records: ClusterRecords,
              min_batch_size: int) -> MigrationDriver:
    driver = MigrationDriver(
        node_id, zk=ZkMigrationClient(zk.session(), clock=lambda: 1796075364413),
        records=records, propagator=NoRpcs(), quorum_readiness=lambda image: None,
        metrics=ZkWriteMetrics(), rng=random.Random(node_id), clock=lambda: 0,
        min_batch_size=min_batch_size)
    driver.on_leader_change(node_id, cluster.raft.epoch)
    publish(driver, cluster)
    return driver


def publish(driver: MigrationDriver, cluster: Cluster) -> None:
    controller = cluster.controller
    driver.on_metadata(controller.committed_delta, controller.committed_image,
                       is_snapshot=False)


def run_until(driver: MigrationDriver, cluster: Cluster, state: MigrationDriverState) -> None:
    for _ in range(12):
        if driver.state is state:
            return
        driver.poll()
        publish(driver, cluster)
    assert driver.state is state


def topics(cluster: Cluster) -> list[str]:
    return sorted(t.name for t in cluster.replayed_image().topics.by_id.values())


def test_a_load_cut_by_the_controllers_death_is_aborted_and_done_once_by_the_next() -> None:
    zk = SimZooKeeper.from_dump(znode_dump("znodes-A-zk-cluster.json"))
    first = migrating()
    register_zk_brokers(first)
    dead = driver_of(3000, first, zk, ClusterRecords(first, batches_before_death=6),
                     min_batch_size=1)
    run_until(dead, first, MigrationDriverState.ZK_MIGRATION)
    with pytest.raises(ControllerDiedError):
        dead.poll()
    loaded_before_death = [r.message.name for r in first.raft.metadata_records()
                           if isinstance(r.message, TopicRecord)]
    assert loaded_before_death  # the first load had begun writing topics

    nxt = successor(first, zk_migration=True)
    records = [r.message for r in nxt.raft.metadata_records()]
    assert AbortTransactionRecord(reason="Controller failover") in records
    assert topics(nxt) == []  # the cut load is invisible
    driver = driver_of(3001, nxt, zk, ClusterRecords(nxt), min_batch_size=200)
    run_until(driver, nxt, MigrationDriverState.DUAL_WRITE)

    assert topics(nxt) == sorted(PHASE_A_TOPICS)  # each once
    controller = json.loads(zk.get("/controller").raw or b"")  # type: ignore[union-attr]
    assert (controller["brokerid"], controller["kraftControllerEpoch"]) == (
        3001, nxt.raft.epoch)
    migration = json.loads(zk.get("/migration").raw or b"")  # type: ignore[union-attr]
    assert migration["kraft_controller_id"] == 3001
    assert migration["kraft_metadata_offset"] == driver.leadership.kraft_metadata_offset > 0
    # a write the dead controller had in flight is fenced by the successor's claim
    with pytest.raises(ControllerMovedError):
        fenced_with(zk.session(), [CreateOp("/stale", b"")], dead.leadership)


def test_a_change_dual_written_while_zookeeper_is_down_reaches_it_once_it_is_back() -> None:
    """Kafka 3.9 logs a failed dual write and moves on (ZooKeeper misses the change until
    the next leader change); pykraft's driver reconciles everything on its next poll."""
    zk = SimZooKeeper.from_dump(znode_dump("znodes-A-zk-cluster.json"))
    cluster = migrating()
    register_zk_brokers(cluster)
    driver = driver_of(3000, cluster, zk, ClusterRecords(cluster), min_batch_size=200)
    run_until(driver, cluster, MigrationDriverState.DUAL_WRITE)
    zk.available = False
    answer = cluster.call(IncrementalAlterConfigsRequest(resources=(AlterConfigsResource(
        resource_type=2, resource_name="t-rf3", configs=(AlterableConfig(
            name="retention.ms", config_operation=0, value="1234"),)),)))
    assert answer.responses[0].error_code == 0
    publish(driver, cluster)  # the dual write fails: ZooKeeper is down
    zk.available = True
    assert _topic_config(zk, "t-rf3").get("retention.ms") != "1234"
    driver.poll()
    assert _topic_config(zk, "t-rf3")["retention.ms"] == "1234"
    migration = json.loads(zk.get("/migration").raw or b"")  # type: ignore[union-attr]
    assert migration["kraft_metadata_offset"] == cluster.controller.committed_offset


def _topic_config(zk: SimZooKeeper, topic: str) -> dict[str, str]:
    found = zk.get(f"/config/topics/{topic}")
    assert found is not None and found.raw is not None
    config: dict[str, str] = json.loads(found.raw)["config"]
    return config
