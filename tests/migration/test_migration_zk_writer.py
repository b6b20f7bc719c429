"""The KRaft -> ZooKeeper writes leave the znodes Kafka 3.9's left in the reference run.

A simulated ZooKeeper starts from a captured phase; the captured metadata log, replayed,
gives the images. Compared modulo what the run cannot fix (migration-plan §7): zkVersions
and cversions, ``/migration`` (the driver writes it), ``/controller``'s timestamp, and the
change notifications: a sync notifies every quota entity it rewrites (Kafka's sync rewrites
them all), so its notifications are the dual write's plus those. Containers: Kafka creates
them with null data, a ``CreateOp`` with empty data (what kazoo sends), so both read as "".
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

import pytest
from migration_captures import log_records, znode_dump
from migration_images import FINALISED, image_at, published

from pykraft.ids import uuid_to_str
from pykraft.image.image import MetadataImage
from pykraft.migration.fencing import (
    ControllerMovedError,
    ZkMigrationLeadershipState,
    claim_ops,
    claim_outcome,
    claim_with,
    get_or_create_migration_with,
    set_migration_with,
)
from pykraft.migration.zk_ops import ANY_VERSION, SetDataOp
from pykraft.migration.zk_tree import ZkRead, ZkTree
from pykraft.migration.zk_write import apply_writes, counts_text, write_counts
from pykraft.migration.zk_writer import dual_write, sync
from pykraft.migration.znodes import ControllerZNode, PartitionStateZNode
from pykraft.testing.sim_zookeeper import SimZkSession, SimZooKeeper

B2, B3, B4 = "znodes-B2-migrated.json", "znodes-B3-dual-write.json", "znodes-B4-failover.json"
KRAFT_EPOCH_B3, KRAFT_EPOCH_B4 = 5, 7
NOTIFICATIONS = ("/config/changes/", "/kafka-acl-changes/", "/kafka-acl-extended-changes/")
Dump = Mapping[str, Mapping[str, Any]]


def session(dump_name: str) -> SimZkSession:
    return SimZooKeeper.from_dump(znode_dump(dump_name)).session()


def tree(client: SimZkSession) -> ZkTree:
    return ZkTree.from_reads(client.zk.reads())


def recovered(client: SimZkSession, controller_id: int,
              epoch: int) -> ZkMigrationLeadershipState:
    """The driver's state once it read ``/migration`` and became the active driver."""
    return get_or_create_migration_with(client).with_new_kraft_controller(controller_id, epoch)


def claimed(client: SimZkSession, controller_id: int, epoch: int) -> ZkMigrationLeadershipState:
    """Read ``/migration``, claim the ZK controller and write ``/migration`` (BECOME_CONTROLLER)."""
    state = claim_with(client, recovered(client, controller_id, epoch), timestamp_ms=1)
    assert state.zk_controller_epoch_zk_version >= 0
    return set_migration_with(client, state.with_migration_zk_version(ANY_VERSION))


def continuing(client: SimZkSession) -> ZkMigrationLeadershipState:
    """Controller 3000's state in phases B2-B3: its claim (``/controller_epoch`` 4 at
    zkVersion 4) is in the dump."""
    epoch = tree(client).controller_epoch
    assert epoch is not None
    return recovered(client, 3000, KRAFT_EPOCH_B3).with_zk_controller(epoch.value.epoch,
                                                                      epoch.zk_version)


def comparable(dump: Dump) -> dict[str, tuple[str, bool]]:
    """Path -> (data, ephemeral) of every znode but ``/migration`` and the notifications;
    ``/controller`` without its timestamp."""
    found = {}
    for path, node in dump.items():
        if path == "/migration" or path.startswith(NOTIFICATIONS):
            continue
        raw = node["raw"] or ""
        if path == "/controller":
            controller = ControllerZNode.decode(raw.encode())
            raw = f"{controller.broker_id}@{controller.kraft_controller_epoch}"
        found[path] = (raw, bool(node["ephemeral"]))
    return found


def exact(dump: Dump) -> dict[str, tuple[object, ...]]:
    """Every znode with its data, zkVersion, cversion and ephemerality; ``/controller``
    without its timestamp."""
    found: dict[str, tuple[object, ...]] = {}
    for path, node in dump.items():
        raw = node["raw"] or None
        if path == "/controller" and raw is not None:
            controller = ControllerZNode.decode(raw.encode())
            raw = f"{controller.broker_id}@{controller.kraft_controller_epoch}"
        found[path] = (raw, node["version"], node["cversion"], node["ephemeral"])
    return found


def dual_write_batches(client: SimZkSession, state: ZkMigrationLeadershipState, first: int,
                       last: int, epoch: int) -> tuple[ZkMigrationLeadershipState, list[str]]:
    """Each committed batch of offsets ``first``..``last`` dual-written, then ``/migration``
    set to its offset, as the driver does in DUAL_WRITE; the counts of each delta that wrote."""
    counts: list[str] = []
    for batch in published():
        if not first <= batch.offset <= last:
            continue
        writes = dual_write(batch.previous, batch.image, batch.delta, epoch)
        if writes:
            counts.append(counts_text(write_counts(writes)))
        state = apply_writes(client, state, writes)
        state = set_migration_with(client, state.with_kraft_metadata_offset_and_epoch(
            batch.offset, batch.epoch))
    return state, counts


def notifications(dump: Dump) -> Counter[str]:
    return Counter(f"{path.rpartition('/')[0]} {node['raw']}" for path, node in dump.items()
                   if path.startswith(NOTIFICATIONS))


def differences(left: Dump, right: Dump) -> dict[str, tuple[object, object]]:
    one, other = comparable(left), comparable(right)
    return {path: (one.get(path), other.get(path)) for path in sorted(set(one) | set(other))
            if one.get(path) != other.get(path)}


def quota_notifications(*entities: str) -> Counter[str]:
    return Counter(f'/config/changes {{"version":2,"entity_path":"{e}"}}' for e in entities)


def test_sync_of_the_b3_image_on_the_b2_tree_writes_the_b3_znodes() -> None:
    client = session(B2)
    state = continuing(client)
    writes = sync(image_at(230), tree(client), KRAFT_EPOCH_B3)
    assert write_counts(writes) == {
        "CreateTopic": 1, "DeleteTopic": 1, "UpdateAcl": 1, "UpdateBrokerConfig": 1,
        "UpdateClientQuota": 4, "UpdatePartition": 1, "UpdateProducerId": 1, "UpdateTopic": 1,
        "UpdateTopicConfig": 2}
    apply_writes(client, state, writes)
    expected = znode_dump(B3)
    assert differences(client.zk.dump(), expected) == {}
    extra = notifications(client.zk.dump()) - notifications(expected)
    assert extra == quota_notifications("clients/app1", "ips/127.0.0.2")
    assert not notifications(expected) - notifications(client.zk.dump())


def test_dual_write_of_each_b3_batch_writes_the_b3_znodes() -> None:
    client = session(B2)
    state = continuing(client)
    assert state.offset_and_epoch == (134, 5)
    _, counts = dual_write_batches(client, state, 135, 230, KRAFT_EPOCH_B3)
    # the controller's "Made the following ZK writes when handling KRaft delta" lines of B3
    assert counts == [
        "{CreateTopic=1, UpdateConfig=1}", "{UpdateConfig=1}", "{UpdateConfig=1}",
        "{UpdateClientQuota=1}", "{UpdateClientQuota=1}", "{UpdateAcl=1}", "{DeleteTopic=1}",
        "{UpdatePartition=1, UpdateTopic=1}", "{UpdateProducerId=1}", "{UpdateProducerId=1}",
        "{UpdateProducerId=1}"]
    # every znode as captured, zkVersions, cversions and change notification numbers too:
    # /migration at 138 = 32 + 14 operations + 92 deltas
    assert exact(client.zk.dump()) == exact(znode_dump(B3))


def load_time_tree(client: SimZkSession) -> ZkTree:
    """B2's znodes with the partition states the load read (the PartitionRecords of the
    load): the dual write of offsets 110-117 had moved them by the time of the dump."""
    records = log_records(f"{FINALISED}.records")
    names = {r["data"]["topicId"]: r["data"]["name"] for o, r in records.items()
             if o <= 105 and r["type"] == "TOPIC_RECORD"}
    reads = client.zk.reads()
    for offset, record in records.items():
        data = record["data"]
        if offset > 105 or record["type"] != "PARTITION_RECORD":
            continue
        path = f"/brokers/topics/{names[data['topicId']]}/partitions/{data['partitionId']}/state"
        state = PartitionStateZNode(data["leader"], data["leaderEpoch"], 1, tuple(data["isr"]))
        reads[path] = ZkRead(state.encode(), data["partitionEpoch"])
    return ZkTree.from_reads(reads)


def test_the_first_sync_after_the_load_rewrites_only_the_quotas() -> None:
    client = session(B2)
    image = image_at(107)
    assert write_counts(sync(image, load_time_tree(client), KRAFT_EPOCH_B3)) == \
        {"UpdateClientQuota": 3}


def test_the_failover_sync_of_b4_rewrites_what_kafka_rewrote() -> None:
    client = session(B3)
    dual_write_batches(client, continuing(client), 231, 231, KRAFT_EPOCH_B3)  # 3000's last
    other = client.zk.session()  # 3002's, once it is the KRaft leader
    state = claimed(other, 3002, KRAFT_EPOCH_B4)
    assert (state.zk_controller_epoch, state.zk_controller_epoch_zk_version) == (5, 5)
    writes = sync(image_at(232), tree(other), KRAFT_EPOCH_B4)
    assert counts_text(write_counts(writes)) == \
        "{UpdateClientQuota=4, UpdatePartition=2, UpdateProducerId=1, UpdateTopic=2}"
    state = apply_writes(other, state, writes)
    dual_write_batches(other, state, 233, 235, KRAFT_EPOCH_B4)
    # every znode as captured but /controller's timestamp: the rewritten partition states
    # carry controller_epoch 7, the quota notifications come in Kafka's HashSet order
    assert exact(client.zk.dump()) == exact(znode_dump(B4))


def test_a_claim_at_a_stale_controller_epoch_version_changes_nothing() -> None:
    client = session(B2)
    state = recovered(client, 3002, KRAFT_EPOCH_B4)
    before = tree(client)
    claim = claim_ops(before.controller, before.controller_epoch, state, timestamp_ms=1)
    other = client.zk.session()  # another writer moves /controller_epoch meanwhile
    assert other.multi([SetDataOp("/controller_epoch", b"5")])[0].ok
    dump = client.zk.dump()
    outcome = claim_outcome(claim, client.multi(claim.ops), state)
    assert outcome.zk_controller_epoch_zk_version < 0
    assert client.zk.dump() == dump


def test_a_fenced_write_after_another_controllers_claim_fails() -> None:
    client = session(B2)
    old = continuing(client)
    newer = client.zk.session()
    claimed(newer, 3002, KRAFT_EPOCH_B4)
    image = image_at(230)
    writes = sync(image, tree(client), KRAFT_EPOCH_B3)
    dump = client.zk.dump()
    with pytest.raises(ControllerMovedError):
        apply_writes(client, old, writes)
    assert client.zk.dump() == dump


def test_a_claim_fails_against_a_newer_kraft_controller() -> None:
    client = session(B4)  # /controller holds 3002's claim at KRaft epoch 7
    with pytest.raises(ControllerMovedError):
        claim_with(client, recovered(client, 3000, KRAFT_EPOCH_B3), timestamp_ms=1)


def test_every_topic_id_matches_between_image_and_znodes() -> None:
    """The replayed image and B3's znodes name the same topics by the same ids (the
    comparisons above rely on the replay)."""
    image: MetadataImage = image_at(230)
    found = {t.name: t.assignment.topic_id for t in tree(session(B3)).topics}
    assert found == {name: topic.topic_id for name, topic in image.topics.by_name.items()}
    assert all(uuid_to_str(topic_id) for topic_id in found.values() if topic_id)
