"""The writer's operations beyond what the reference run exercised (migration-plan §7): the
set-then-create of config, quota, ACL and token znodes with their parents, deletes that
find nothing, password configs, quota value forms, and a sync's deletions of what only
ZooKeeper has."""

from __future__ import annotations

import random
import uuid
from collections.abc import Sequence

import pytest
from migration_captures import znode_dump
from migration_images import image_at

from pykraft.image.acls import PatternType, ResourceType
from pykraft.image.configs import ConfigResourceType
from pykraft.image.image import MetadataDelta, MetadataImage
from pykraft.migration.fencing import (
    MigrationClientError,
    ZkMigrationLeadershipState,
    get_or_create_migration_with,
)
from pykraft.migration.load import read_all_metadata
from pykraft.migration.password_encoder import decode_password
from pykraft.migration.zk_acl_writes import delete_acls, delete_token, write_acls, write_token
from pykraft.migration.zk_config_writes import (
    Passwords,
    delete_configs,
    write_client_quotas,
    write_configs,
)
from pykraft.migration.zk_ops import (
    CreateOp,
    SetDataOp,
    ZkError,
    ZkOp,
    ZkOpResult,
    ZkUnavailableError,
)
from pykraft.migration.zk_topic_writes import create_topic
from pykraft.migration.zk_tree import ZkRead, ZkTree
from pykraft.migration.zk_write import (
    DELETE_CONFIG,
    UPDATE_CONFIG,
    Verdict,
    ZkWrite,
    ZkWriteError,
    apply_write,
    apply_writes,
    write_counts,
)
from pykraft.migration.zk_writer import sync
from pykraft.migration.znodes import AclResourceZNode, ZkAclEntry
from pykraft.records.metadata import (
    ConfigRecord,
    DelegationTokenRecord,
    RemoveTopicRecord,
    TopicRecord,
)
from pykraft.testing.sim_zookeeper import SimZkSession, SimZooKeeper

B2 = "znodes-B2-migrated.json"
PASSWORD = "listener.name.internal.ssl.key.password"


def b2() -> tuple[SimZkSession, ZkMigrationLeadershipState]:
    client = SimZooKeeper.from_dump(znode_dump(B2)).session()
    return client, get_or_create_migration_with(client).with_zk_controller(4, 4)


def data(client: SimZkSession, path: str) -> bytes | None:
    found = client.get(path)
    return None if found is None else found.raw


def changes(client: SimZkSession, parent: str = "/config/changes") -> list[bytes | None]:
    names = sorted(client.children(parent) or [])
    return [data(client, f"{parent}/{name}") for name in names]


def test_a_second_sync_rewrites_only_what_kafka_always_rewrites() -> None:
    client, state = b2()
    image = image_at(230)
    state = apply_writes(client, state, sync(image, ZkTree.from_reads(client.zk.reads()), 5))
    again = sync(image, ZkTree.from_reads(client.zk.reads()), 5)
    # quotas always; the producer block holds the block after KRaft's; partitions created in
    # KRaft have directories, which ZooKeeper cannot hold (t-compact's third, t-new)
    assert write_counts(again) == {"UpdateClientQuota": 4, "UpdatePartition": 2,
                                   "UpdateProducerId": 1, "UpdateTopic": 2}


def test_a_users_client_quota_creates_its_parents() -> None:
    client, state = b2()
    entity = (("client-id", "app 1"), ("user", "bob@x"))
    write = write_client_quotas(entity, {"producer_byte_rate": 1024.0,
                                         "request_percentage": 12.5}, {})
    assert write is not None
    after = apply_write(client, state, write)
    assert after.migration_zk_version == state.migration_zk_version + 1
    path = "/config/users/bob%40x/clients/app%201"
    assert data(client, path) == \
        b'{"version":1,"config":{"request_percentage":"12.5","producer_byte_rate":"1024"}}'
    assert changes(client)[-1] == \
        b'{"version":2,"entity_path":"users/bob%40x/clients/app%201"}'


@pytest.mark.parametrize(("key", "value", "text"), [
    ("consumer_byte_rate", 2097152.0, "2097152"),
    ("controller_mutation_rate", 1e7, "1.0E7"),
    ("request_percentage", 0.5, "0.5"),
])
def test_quota_values_are_written_as_kafka_writes_them(key: str, value: float,
                                                       text: str) -> None:
    write = write_client_quotas((("client-id", "c"),), {key: value}, {})
    assert write is not None
    assert write.requests[0] == SetDataOp(
        "/config/clients/c", f'{{"version":1,"config":{{"{key}":"{text}"}}}}'.encode())


def test_quota_values_zookeeper_cannot_hold_are_refused() -> None:
    with pytest.raises(ZkWriteError, match="must be a LONG value"):
        write_client_quotas((("user", None),), {"producer_byte_rate": 10.5}, {})
    with pytest.raises(ZkWriteError, match="Invalid configuration key"):
        write_client_quotas((("ip", "1.2.3.4"),), {"producer_byte_rate": 1.0}, {})
    ip = write_client_quotas((("ip", None),), {"connection_creation_rate": 50.0}, {})
    assert ip is not None and ip.requests[0].path == "/config/ips/<default>"


def test_a_config_delete_that_finds_nothing_changes_nothing() -> None:
    client, state = b2()
    before = changes(client)
    write = delete_configs(DELETE_CONFIG, (ConfigResourceType.TOPIC, "no-such-topic"))
    assert write.verdict([r.error for r in client.multi([write.requests[0]])]) is \
        Verdict.UNCHANGED
    assert apply_write(client, state, write) == state
    assert changes(client) == before


def test_a_topic_already_in_zookeeper_is_not_created_again() -> None:
    client, state = b2()
    topic = image_at(230).topics.by_name["t-rf3"]
    assert apply_write(client, state, create_topic("t-rf3", topic.topic_id, topic.partitions,
                                                   5)) == state


def test_password_configs_are_stored_encoded() -> None:
    with pytest.raises(ZkWriteError, match=r"password\.encoder\.secret"):
        write_configs(UPDATE_CONFIG, (ConfigResourceType.BROKER, "1"), {PASSWORD: "s3cret"})
    passwords = Passwords.with_secret("enc-secret", random.Random(0).randbytes)
    client, state = b2()
    apply_write(client, state, write_configs(UPDATE_CONFIG, (ConfigResourceType.BROKER, "1"),
                                             {PASSWORD: "s3cret"}, passwords))
    stored = ZkTree.from_reads(client.zk.reads()).broker_configs
    (encoded,) = [value for entity in stored if entity.name == "1"
                  for key, value in entity.config.config if key == PASSWORD]
    assert encoded.startswith("initializationVector:")
    assert decode_password(encoded, "enc-secret") == "s3cret"
    # a sync compares the decoded value: nothing to write for it
    image = _with_configs(image_at(134), {(ConfigResourceType.BROKER, "1"):
                                          {PASSWORD: "s3cret"}})
    writes = sync(image, ZkTree.from_reads(client.zk.reads()), 5, passwords)
    assert "UpdateBrokerConfig" not in write_counts(writes)


def _with_configs(image: MetadataImage,
                  configs: dict[tuple[int, str], dict[str, str]]) -> MetadataImage:
    delta = MetadataDelta(image)
    for (resource_type, name), values in configs.items():
        for key in image.configs.get((resource_type, name)):
            delta.replay(ConfigRecord(resource_type=resource_type, resource_name=name, name=key,
                                      value=None))
        for key, value in values.items():
            delta.replay(ConfigRecord(resource_type=resource_type, resource_name=name, name=key,
                                      value=value))
    return delta.apply()


def test_acl_writes_create_resources_and_notify_in_kafkas_formats() -> None:
    client, state = b2()
    entry = ZkAclEntry("User:bob", "Allow", "*", "Write")
    state = apply_write(client, state, write_acls((ResourceType.TOPIC, "t-", PatternType.PREFIXED),
                                                  [entry]))
    assert data(client, "/kafka-acl-extended/prefixed/Topic/t-") == \
        AclResourceZNode((entry,)).encode()
    state = apply_write(client, state, delete_acls((ResourceType.TOPIC, "t-rf3",
                                                    PatternType.LITERAL)))
    assert data(client, "/kafka-acl/Topic/t-rf3") is None
    assert changes(client, "/kafka-acl-changes")[-1] == b"TOPIC:t-rf3"
    # the extended format of the change node is the one captured from AclAuthorizer
    group = apply_write(client, state, write_acls((ResourceType.GROUP, "g-",
                                                   PatternType.PREFIXED), [entry]))
    assert group.migration_zk_version == state.migration_zk_version + 1
    captured = znode_dump("znodes-A-zk-cluster.json")[
        "/kafka-acl-extended-changes/acl_changes_0000000000"]["raw"]
    assert changes(client, "/kafka-acl-extended-changes")[-1] == captured.encode()


def test_an_acl_without_its_type_container_fails_as_in_kafka() -> None:
    client = SimZooKeeper().session()
    client.multi([CreateOp("/controller_epoch", b"0")])
    state = get_or_create_migration_with(client).with_zk_controller(0, 0)
    with pytest.raises(MigrationClientError):
        apply_write(client, state, write_acls((ResourceType.TOPIC, "t", PatternType.LITERAL),
                                              [ZkAclEntry("User:a", "Allow", "*", "Read")]))


TOKEN = DelegationTokenRecord(owner="User:alice", requester="User:alice b",
                              renewers=("User:bob",), issue_timestamp=1, max_timestamp=3,
                              expiration_timestamp=2, token_id="tok-1")


TOKEN_ZNODE = (b'{"issueTimestamp":1,"renewers":["User%3Abob"],"tokenRequester":'
               b'"User%3Aalice%20b","tokenId":"tok-1","owner":"User%3Aalice",'
               b'"expiryTimestamp":2,"maxTimestamp":3,"version":3}')


def test_a_token_written_to_zookeeper_loads_back_as_the_same_record() -> None:
    client, state = b2()
    client.multi([CreateOp("/delegation_token", b""), CreateOp("/delegation_token/tokens", b"")])
    state = apply_write(client, state, write_token(TOKEN))
    assert data(client, "/delegation_token/tokens/tok-1") == TOKEN_ZNODE
    tree = ZkTree.from_reads(client.zk.reads())
    loaded = [r.message for records in read_all_metadata(tree, random.Random(0), {})
              for r in records if isinstance(r.message, DelegationTokenRecord)]
    assert loaded == [TOKEN]
    apply_write(client, state, delete_token("tok-1"))
    assert client.children("/delegation_token/tokens") == []


def test_a_sync_deletes_what_only_zookeeper_has() -> None:
    client, state = b2()
    topic = b'{"partitions":{"0":[1,3,2],"1":[2,1,3],"2":[3,2,1],"3":[1,2,3]},' \
        b'"topic_id":"yY7Ph-ZmQ4WB8TTtoD_Dgw","adding_replicas":{},"removing_replicas":{},' \
        b'"version":3}'
    state_znode = b'{"controller_epoch":1,"leader":1,"version":1,"leader_epoch":0,"isr":[1]}'
    acl = AclResourceZNode((ZkAclEntry("User:x", "Deny", "*", "All"),)).encode()
    client.multi([
        SetDataOp("/brokers/topics/t-rf3", topic),
        CreateOp("/brokers/topics/t-rf3/partitions/3", b""),
        CreateOp("/brokers/topics/t-rf3/partitions/3/state", state_znode),
        CreateOp("/admin/delete_topics/gone", b""),
        CreateOp("/kafka-acl/Topic/zz", acl),
        CreateOp("/delegation_token", b""), CreateOp("/delegation_token/tokens", b""),
        CreateOp("/delegation_token/tokens/tok-1", TOKEN_ZNODE)])
    writes = sync(image_at(134), ZkTree.from_reads(client.zk.reads()), 5)
    counts = write_counts(writes)
    assert {kind: counts.get(kind) for kind in (
        "DeleteAcl", "DeleteDelegationToken", "DeletePartition", "DeletePendingTopicDeletion",
        "UpdateTopic")} == {"DeleteAcl": 1, "DeleteDelegationToken": 1, "DeletePartition": 1,
                            "DeletePendingTopicDeletion": 1, "UpdateTopic": 1}
    apply_writes(client, state, writes)
    for gone in ("/brokers/topics/t-rf3/partitions/3", "/admin/delete_topics/gone",
                 "/kafka-acl/Topic/zz", "/delegation_token/tokens/tok-1"):
        assert client.get(gone) is None
    assert data(client, "/brokers/topics/t-rf3") == \
        znode_dump(B2)["/brokers/topics/t-rf3"]["raw"].encode()
    assert write_counts(sync(image_at(134), ZkTree.from_reads(client.zk.reads()), 5)) == \
        {"UpdateClientQuota": 3}


def test_a_verdict_follows_kafkas_order_of_checks() -> None:
    create = ZkWrite("K", "create", (CreateOp("/p", b""),))
    write = ZkWrite("K", "set", (SetDataOp("/p", b""),), create_instead=create)
    assert write.verdict([ZkError.NO_NODE]) is Verdict.CREATE_INSTEAD
    assert write.verdict([ZkError.OK]) is Verdict.WRITTEN
    assert write.verdict([ZkError.BAD_VERSION]) is Verdict.FAILED
    assert create.verdict([ZkError.NO_NODE]) is Verdict.FAILED


def test_a_topic_recreated_under_the_same_name_ends_in_zookeeper() -> None:
    """Kafka's sync creates it first (NODEEXISTS: taken as done), then deletes the old one,
    leaving none; pykraft deletes the old one first."""
    client, state = b2()
    image = image_at(134)
    old = image.topics.by_name["t-plain"]
    new_id = uuid.UUID(int=0x1234_5678_9ABC_DEF0_1234_5678_9ABC_DEF0)
    delta = MetadataDelta(image)
    delta.replay(RemoveTopicRecord(topic_id=old.topic_id))
    delta.replay(TopicRecord(name="t-plain", topic_id=new_id))
    delta.replay(old.partitions[0].to_record(new_id, 0))
    image = delta.apply()
    writes = sync(image, ZkTree.from_reads(client.zk.reads()), 5)
    assert [w.kind for w in writes if "Topic" in w.kind] == ["DeleteTopic", "CreateTopic"]
    apply_writes(client, state, writes)
    topic = {t.name: t for t in ZkTree.from_reads(client.zk.reads()).topics}["t-plain"]
    assert topic.assignment.topic_id == new_id and set(topic.states) == {0}


class _DropsAfter:
    """A session whose connection drops after ``multis`` multis (a ZooKeeper restart)."""

    def __init__(self, client: SimZkSession, multis: int) -> None:
        self.client, self.left = client, multis

    def get(self, path: str) -> ZkRead | None:
        return self.client.get(path)

    def children(self, path: str) -> list[str] | None:
        return self.client.children(path)

    def multi(self, ops: Sequence[ZkOp]) -> list[ZkOpResult]:
        if self.left == 0:
            raise ZkUnavailableError("connection loss")
        self.left -= 1
        return self.client.multi(ops)


def test_a_topic_half_created_before_a_connection_loss_is_completed_by_its_retry() -> None:
    """Each request of a write is its own multi: a create cut short leaves the topic znode
    without all its partitions. Its retry runs every request again: NODEEXISTS on the topic
    znode (Kafka's "already done", ``/migration`` not moved) while the missing partitions
    are created, so a sync afterwards has none of them to create."""
    client, state = b2()
    topic = image_at(230).topics.by_name["t-new"]
    write = create_topic("t-new", topic.topic_id, topic.partitions, 5)
    with pytest.raises(ZkUnavailableError):
        apply_write(_DropsAfter(client, 4), state, write)  # topic, config, partitions, p0
    assert client.get("/brokers/topics/t-new/partitions/0/state") is None
    assert apply_write(client, state, write) == state
    assert client.get("/brokers/topics/t-new/partitions/1/state") is not None
    writes = sync(image_at(230), ZkTree.from_reads(client.zk.reads()), 5)
    assert not [op for w in writes for op in w.requests
                if isinstance(op, CreateOp) and op.path.startswith("/brokers/topics/t-new")]
