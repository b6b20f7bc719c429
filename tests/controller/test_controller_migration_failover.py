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
from collections.abc import Sequence
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
from pykraft.migration.zk_ops import CreateOp, ZkClient, ZkOp, ZkOpResult
from pykraft.migration.zk_tree import ZkRead
from pykraft.records.metadata import AbortTransactionRecord, MetadataRecord, TopicRecord
from pykraft.runtime.zk_write_metrics import ZkWriteMetrics
from pykraft.testing.sim_zookeeper import SimZkSession, SimZooKeeper

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
              min_batch_size: int, client: ZkClient | None = None) -> MigrationDriver:
    driver = MigrationDriver(
        node_id, zk=ZkMigrationClient(client or zk.session(), clock=lambda: 1796075364413),
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
    """As Kafka 3.9's driver, blocked until ZooKeeper answers, wrote it in the reference
    run (``captured/fault-zk-restart/``: "{UpdateConfig=1}"): the change and its one
    notification, nothing else written again (a full sync would rewrite every quota entity
    with a notification each)."""
    zk = SimZooKeeper.from_dump(znode_dump("znodes-A-zk-cluster.json"))
    cluster = migrating()
    register_zk_brokers(cluster)
    driver = driver_of(3000, cluster, zk, ClusterRecords(cluster), min_batch_size=200)
    run_until(driver, cluster, MigrationDriverState.DUAL_WRITE)
    before = zk.reads()
    zk.available = False
    _set_retention(cluster, "t-rf3", "1234")
    publish(driver, cluster)  # the dual write fails: ZooKeeper is down
    zk.available = True
    assert _topic_config(zk, "t-rf3").get("retention.ms") != "1234"
    driver.poll()
    assert _topic_config(zk, "t-rf3")["retention.ms"] == "1234"
    assert _changed(before, zk) == {"/config/topics/t-rf3", "/migration",
                                    _notification(before, zk, b"topics/t-rf3")}
    migration = json.loads(zk.get("/migration").raw or b"")  # type: ignore[union-attr]
    assert migration["kraft_metadata_offset"] == cluster.controller.committed_offset


def test_a_change_cut_between_its_writes_resumes_after_the_last_one_made() -> None:
    """Two topics' configs in one change; the session expires after the first write: the
    driver, on a new session, makes the second under the ``/migration`` zkVersion the first
    one moved (fenced out for good if it kept the old one), each notification once."""
    zk = SimZooKeeper.from_dump(znode_dump("znodes-A-zk-cluster.json"))
    cluster = migrating()
    register_zk_brokers(cluster)
    client = ExpiringSession(zk, zk.session())
    driver = driver_of(3000, cluster, zk, ClusterRecords(cluster), min_batch_size=200,
                       client=client)
    run_until(driver, cluster, MigrationDriverState.DUAL_WRITE)
    before = zk.reads()
    client.touches_left = 2
    _set_retention(cluster, "t-rf3", "1234", "t-compact", "5678")
    publish(driver, cluster)
    assert zk.is_expired(client.session.session_id)
    assert _topic_config(zk, "t-rf3")["retention.ms"] == "1234"  # written first
    assert "retention.ms" not in _topic_config(zk, "t-compact")
    client.session.reconnect()
    driver.poll()
    assert _topic_config(zk, "t-compact")["retention.ms"] == "5678"
    assert _changed(before, zk) == {
        "/config/topics/t-rf3", "/config/topics/t-compact", "/migration",
        _notification(before, zk, b"topics/t-rf3"), _notification(before, zk, b"topics/t-compact")}
    migration = json.loads(zk.get("/migration").raw or b"")  # type: ignore[union-attr]
    assert migration["kraft_metadata_offset"] == cluster.controller.committed_offset


@dataclass
class ExpiringSession:
    """A session of the simulated ZooKeeper that expires at the ``touches_left``-th multi
    writing a topic's config (before it applies), as a real session expiring mid-change."""

    zk: SimZooKeeper
    session: SimZkSession
    touches_left: int | None = None

    def get(self, path: str) -> ZkRead | None:
        return self.session.get(path)

    def children(self, path: str) -> list[str] | None:
        return self.session.children(path)

    def multi(self, ops: Sequence[ZkOp]) -> list[ZkOpResult]:
        if self.touches_left is not None and any(
                op.path.startswith("/config/topics/") for op in ops):
            self.touches_left -= 1
            if self.touches_left == 0:
                self.zk.expire(self.session.session_id)
        return self.session.multi(ops)


def _set_retention(cluster: Cluster, *topics_and_values: str) -> None:
    pairs = zip(topics_and_values[::2], topics_and_values[1::2], strict=True)
    answer = cluster.call(IncrementalAlterConfigsRequest(resources=tuple(
        AlterConfigsResource(resource_type=2, resource_name=topic, configs=(AlterableConfig(
            name="retention.ms", config_operation=0, value=value),)) for topic, value in pairs)))
    assert [r.error_code for r in answer.responses] == [0] * (len(topics_and_values) // 2)


def _changed(before: dict[str, ZkRead], zk: SimZooKeeper) -> set[str]:
    """The znodes created, deleted or written since ``before``."""
    after = zk.reads()
    return {path for path in before.keys() | after.keys() if before.get(path) != after.get(path)}


def _notification(before: dict[str, ZkRead], zk: SimZooKeeper, entity_path: bytes) -> str:
    """The one config change notification naming ``entity_path`` made since ``before``."""
    (path,) = [path for path, read in zk.reads().items() if path.startswith("/config/changes/")
               and path not in before and read.raw is not None and entity_path in read.raw]
    return path


def _topic_config(zk: SimZooKeeper, topic: str) -> dict[str, str]:
    found = zk.get(f"/config/topics/{topic}")
    assert found is not None and found.raw is not None
    config: dict[str, str] = json.loads(found.raw)["config"]
    return config
