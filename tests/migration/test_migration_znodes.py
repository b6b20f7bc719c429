"""The znode codecs write Kafka 3.9's exact bytes: every znode of the reference run's dumps
decodes and encodes back to the same bytes, and fresh znodes match the run's examples."""

from __future__ import annotations

from pathlib import Path

import pytest
from migration_captures import CAPTURED, znode_dump

from pykraft.ids import uuid_from_str
from pykraft.migration.map_order import (
    immutable_map_order,
    mutable_map_order,
    properties_order,
)
from pykraft.migration.znodes import (
    AclResourceZNode,
    ConfigChangeZNode,
    ConfigEntityZNode,
    ControllerZNode,
    MigrationZNode,
    PartitionStateZNode,
    ProducerIdBlockZNode,
    TopicZNode,
    ZkAclEntry,
    ZNodeDecodeError,
    decode_znode,
    partition_order,
)

DUMPS = sorted(str(p.relative_to(CAPTURED)) for p in CAPTURED.rglob("znodes-*.json"))


def test_every_phase_is_covered() -> None:
    assert len(DUMPS) == 10  # A, B1-B4, C, D, and the two fault runs' dumps


@pytest.mark.parametrize("name", DUMPS)
def test_every_captured_znode_round_trips(name: str) -> None:
    with_data = {path: node["raw"].encode("utf-8")
                 for path, node in znode_dump(name).items() if node["raw"] is not None}
    assert with_data
    for path, raw in with_data.items():
        assert decode_znode(path, raw).encode() == raw, path


def test_fresh_znodes_are_kafkas_bytes() -> None:
    """Built from values, not decoded: the examples of migration-plan §3-§7."""
    assert MigrationZNode().encode() == (
        b'{"version":0,"kraft_metadata_offset":-1,"kraft_controller_id":-1,'
        b'"kraft_metadata_epoch":-1,"kraft_controller_epoch":-1}')
    assert ControllerZNode(3000, 1796075364413, 5).encode() == (
        b'{"version":2,"brokerid":3000,"timestamp":"1796075364413","kraftControllerEpoch":5}')
    assert TopicZNode(uuid_from_str("nBpWhaBeTwCbQr_I29COIg"),
                      ((0, (2, 3)), (1, (3, 1)))).encode() == (
        b'{"partitions":{"0":[2,3],"1":[3,1]},"topic_id":"nBpWhaBeTwCbQr_I29COIg",'
        b'"adding_replicas":{},"removing_replicas":{},"version":3}')
    assert PartitionStateZNode(1, 0, 1, (1, 3, 2)).encode() == (
        b'{"controller_epoch":1,"leader":1,"version":1,"leader_epoch":0,"isr":[1,3,2]}')
    assert ProducerIdBlockZNode(-1, 6000, 6999).encode() == (
        b'{"version":1,"broker":-1,"block_start":"6000","block_end":"6999"}')
    assert ConfigChangeZNode("topics/t-rf3").encode() == (
        b'{"version":2,"entity_path":"topics/t-rf3"}')
    assert AclResourceZNode((ZkAclEntry("User:bob", "Allow", "*", "Write"),)).encode() == (
        b'{"acls":[{"principal":"User:bob","permissionType":"Allow","host":"*",'
        b'"operation":"Write"}],"version":1}')


def test_a_fresh_topic_znode_orders_partitions_as_kafka() -> None:
    topic_id = uuid_from_str("nBpWhaBeTwCbQr_I29COIg")
    node = TopicZNode.of(topic_id, {p: [1, 2] for p in range(12)}, adding={11: [3], 2: []})
    assert [p for p, _ in node.partitions] == [int(k) for k in mutable_map_order(
        [str(p) for p in range(12)])]
    assert node.adding_replicas == ((11, (3,)),)
    assert node.encode().startswith(b'{"partitions":{"11":[1,2],"0":[1,2],"1":[1,2],')
    assert b'"adding_replicas":{"11":[3]},"removing_replicas":{},"version":3}' in node.encode()


def test_a_recovering_partition_state_places_the_recovery_state_as_scala_does() -> None:
    """The order Scala 2.13.15 printed for these six keys in an ``immutable.HashMap``."""
    encoded = PartitionStateZNode(2, 4, 7, (2,), leader_recovery_state=1).encode()
    assert encoded == (b'{"controller_epoch":7,"leader":2,"version":1,'
                       b'"leader_recovery_state":1,"leader_epoch":4,"isr":[2]}')
    assert PartitionStateZNode.decode(encoded).leader_recovery_state == 1


def test_strings_are_escaped_as_jackson_escapes_them() -> None:
    """Control characters as Jackson 2.16.2 (Kafka 3.9.1's) wrote them in jshell; a backslash
    followed by ``u001f`` is text and stays as it is."""
    node = ConfigEntityZNode((("k", 'a\x01b\x1f\n\t"\\/\u00e9\\u001f'),))
    encoded = node.encode()
    assert encoded == ('{"version":1,"config":{"k":"a\\u0001b\\u001F\\n\\t\\"\\\\/\u00e9'
                       '\\\\u001f"}}').encode()
    assert ConfigEntityZNode.decode(encoded) == node


# Orders printed by Scala 2.13.15 (scala-library of the kafka-zk jars, through jshell).
SCALA_MUTABLE_40 = [
    "22", "23", "24", "25", "26", "27", "28", "29", "30", "31", "10", "32", "11", "33", "12",
    "34", "13", "35", "14", "36", "15", "37", "16", "38", "17", "39", "18", "19", "0", "1",
    "2", "3", "4", "5", "6", "7", "8", "9", "20", "21"]
SCALA_MUTABLE_24 = ["k11", "k10", "k13", "k12", "k15", "k14", "k17", "k16", "k19", "k18", "k0",
                    "k1", "k2", "k3", "k20", "k4", "k5", "k22", "k6", "k21", "k7", "k8", "k23",
                    "k9"]
SCALA_MUTABLE_12 = ["k0", "k1", "k2", "k3", "k4", "k5", "k11", "k6", "k10", "k7", "k8", "k9"]
SCALA_TOPIC_LITERAL = ["partitions", "topic_id", "adding_replicas", "removing_replicas",
                       "version"]  # mutable.Map of 4 entries (a table of 8), then topic_id
SCALA_IMMUTABLE_TOKEN = ["issueTimestamp", "renewers", "tokenRequester", "tokenId", "owner",
                         "expiryTimestamp", "maxTimestamp", "version"]


def test_scala_map_orders() -> None:
    assert mutable_map_order([str(i) for i in range(40)]) == SCALA_MUTABLE_40
    assert mutable_map_order([f"k{i}" for i in range(24)]) == SCALA_MUTABLE_24
    assert mutable_map_order([f"k{i}" for i in range(12)]) == SCALA_MUTABLE_12
    assert immutable_map_order(["version", "owner", "tokenRequester", "renewers",
                                "issueTimestamp", "maxTimestamp", "expiryTimestamp",
                                "tokenId"]) == SCALA_IMMUTABLE_TOKEN
    assert partition_order(list(range(40))) == [int(p) for p in SCALA_MUTABLE_40]
    assert mutable_map_order(["version", "partitions", "adding_replicas", "removing_replicas",
                              "topic_id"], built_with=4) == SCALA_TOPIC_LITERAL


@pytest.mark.parametrize(("path", "raw", "problem"), [
    ("/brokers/topics/t", b"{", "not JSON"),
    ("/brokers/topics/t", b'{"partitions":{"x":[1]},"version":3}', "non-numeric partition"),
    ("/brokers/topics/t/partitions/0/state", b'{"leader":"1"}', "'leader' must be an integer"),
    ("/controller_epoch", b"five", "not a number"),
    ("/latest_producer_id_block", b'{"broker":1,"block_start":"x","block_end":"1"}',
     "decimal string"),
    ("/kafka-acl-changes/acl_changes_0000000001", b"TOPIC", "<TYPE>:<name>"),
    ("/zookeeper/quota", b"", "no znode data"),
])
def test_bad_data_names_the_znode_and_the_problem(path: str, raw: bytes, problem: str) -> None:
    with pytest.raises(ZNodeDecodeError, match=problem) as failure:
        decode_znode(path, raw)
    assert path in str(failure.value)


JAVA17_ORDERS = Path(__file__).parents[1] / "fixtures/migration/properties-orders-java17.txt"
TOPIC_CONFIG_NAMES = [
    "cleanup.policy", "compression.type", "segment.bytes", "retention.ms", "min.insync.replicas",
    "max.message.bytes", "retention.bytes", "segment.ms", "flush.ms", "flush.messages",
    "index.interval.bytes", "delete.retention.ms", "file.delete.delay.ms",
    "min.compaction.lag.ms", "max.compaction.lag.ms", "message.timestamp.type", "preallocate",
    "unclean.leader.election.enable", "segment.index.bytes", "segment.jitter.ms",
    "local.retention.ms", "local.retention.bytes", "remote.storage.enable",
    "min.cleanable.dirty.ratio", "message.downconversion.enable",
    "follower.replication.throttled.replicas", "leader.replication.throttled.replicas",
    "message.timestamp.after.max.ms", "message.timestamp.before.max.ms",
    "message.format.version"]


def test_properties_orders_are_java_17s() -> None:
    """The fixture is what Java 17 printed (jshell) for the first n of these names put into
    a ``Properties`` forwards (F) and backwards (R), and for k0..k<n-1> (K): sizes across
    two resizes, where a resize reverses part of a bucket."""
    lines = JAVA17_ORDERS.read_text().split()
    for tag, order in zip(lines[::2], lines[1::2], strict=True):
        count = int(tag[1:])
        keys = {"F": TOPIC_CONFIG_NAMES[:count], "R": TOPIC_CONFIG_NAMES[:count][::-1],
                "K": [f"k{i}" for i in range(count)]}[tag[0]]
        assert properties_order(keys) == order.split(","), tag
    assert len(lines) == 42


def test_a_fresh_config_znode_is_in_properties_order() -> None:
    configs = {"cleanup.policy": "compact", "compression.type": "producer",
               "segment.bytes": "104857600"}
    assert ConfigEntityZNode.of(configs).encode() == (
        b'{"version":1,"config":{"compression.type":"producer","cleanup.policy":"compact",'
        b'"segment.bytes":"104857600"}}')  # /config/topics/__consumer_offsets of the run
