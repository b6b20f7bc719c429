"""The typed tree of a ZooKeeper-mode cluster, built from the reference run's phase A dump
(3 ZK brokers, topics, configs, quotas, SCRAM, ACLs; before any KRaft controller)."""

from __future__ import annotations

import pytest
from migration_captures import reads, znode_dump

from pykraft.ids import uuid_from_str
from pykraft.image.acls import PatternType, ResourceType
from pykraft.migration.zk_tree import ZkRead, ZkTree, desanitize
from pykraft.migration.znodes import ZNodeDecodeError


@pytest.fixture(scope="module")
def tree() -> ZkTree:
    return ZkTree.from_reads(reads(znode_dump("znodes-A-zk-cluster.json")))


def test_topics_with_assignments_configs_and_partition_states(tree: ZkTree) -> None:
    topics = {t.name: t for t in tree.topics}
    assert set(topics) == {"__consumer_offsets", "t-compact", "t-plain", "t-rf3"}
    rf3 = topics["t-rf3"]
    assert rf3.assignment.topic_id == uuid_from_str("yY7Ph-ZmQ4WB8TTtoD_Dgw")
    assert rf3.assignment.partitions == ((0, (1, 3, 2)), (1, (2, 1, 3)), (2, (3, 2, 1)))
    assert rf3.config is not None
    assert rf3.config.config == (("min.insync.replicas", "2"), ("retention.ms", "604800000"))
    assert sorted(rf3.states) == [0, 1, 2]
    assert rf3.states[0].value.isr == (1, 3, 2)
    assert rf3.states[0].zk_version == 0
    assert topics["t-plain"].config is not None and topics["t-plain"].config.config == ()
    assert tree.pending_deletions == ()


def test_configs_quotas_and_scram(tree: ZkTree) -> None:
    assert [(e.name, e.config.config) for e in tree.broker_configs] == [
        ("1", (("log.cleaner.threads", "1"),)),
        ("<default>", (("log.cleaner.backoff.ms", "20000"),))]
    (alice,) = tree.user_configs
    assert alice.name == "alice"
    assert [key for key, _ in alice.config.config] == ["SCRAM-SHA-256", "producer_byte_rate"]
    assert [(e.name, e.config.config) for e in tree.client_configs] == [
        ("app1", (("consumer_byte_rate", "2097152"),))]
    assert [(e.name, e.config.config) for e in tree.ip_configs] == [
        ("127.0.0.2", (("connection_creation_rate", "50"),))]
    assert tree.user_client_configs == ()


def test_acls_producer_block_brokers_and_controller(tree: ZkTree) -> None:
    assert [(a.resource_type, a.pattern_type, a.name, len(a.acls.value.acls))
            for a in tree.acls] == [(ResourceType.TOPIC, PatternType.LITERAL, "t-rf3", 2),
                                    (ResourceType.GROUP, PatternType.PREFIXED, "g-", 1)]
    assert tree.producer_id_block is not None
    assert (tree.producer_id_block.broker, tree.producer_id_block.block_end) == (3, 1999)
    assert tree.broker_ids == (1, 2, 3)
    assert tree.cluster_id == "Cp12xPniS8avvFxZKJdD4g"
    assert tree.controller is not None and tree.controller.value.broker_id == 1
    assert tree.controller.value.kraft_controller_epoch == -1
    assert tree.controller_epoch is not None
    assert (tree.controller_epoch.value.epoch, tree.controller_epoch.zk_version) == (1, 1)
    assert tree.migration is None  # created by the first migrating controller (phase B1)


def test_the_migration_znode_once_controllers_are_up() -> None:
    tree = ZkTree.from_reads(reads(znode_dump("znodes-B1-controllers-up.json")))
    assert tree.migration is not None
    assert tree.migration.value.kraft_metadata_offset == -1
    assert not tree.migration.value.initial_migration_complete


def test_pending_deletions_and_user_clients_are_read() -> None:
    found = ZkTree.from_reads({
        "/admin/delete_topics/gone": ZkRead(None),
        "/config/users/bob%40example": ZkRead(b'{"version":1,"config":{}}'),
        "/config/users/bob%40example/clients": ZkRead(None),
        "/config/users/bob%40example/clients/app": ZkRead(
            b'{"version":1,"config":{"request_percentage":"20.5"}}'),
    })
    assert found.pending_deletions == ("gone",)
    assert [e.name for e in found.user_client_configs] == ["bob%40example/clients/app"]
    assert desanitize("bob%40example") == "bob@example"


def test_a_bad_znode_names_its_path() -> None:
    with pytest.raises(ZNodeDecodeError, match="/brokers/topics/t: topic znode: not JSON"):
        ZkTree.from_reads({"/brokers/topics/t": ZkRead(b"{")})
