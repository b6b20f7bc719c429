"""The load makes the records and batches Kafka 3.9's made in the reference run.

Phase A's znodes are what the load read, except the partition states, which the broker roll
moved before the load (migration-plan §14 (b)): they are set from the captured
PartitionRecords (leader, ISR, leader epoch, and the zkVersion that became the partition
epoch). Compared modulo ACL ids and Kafka's hash-set orders (§6): topics as a set of groups,
a resource's ACLs as a set.
"""

from __future__ import annotations

import json
import random
from typing import Any

import pytest
from migration_captures import CAPTURED, log_batches, log_records, reads, znode_dump

from pykraft.ids import uuid_from_str
from pykraft.migration.load import (
    MigrationLoad,
    MigrationLoadError,
    buffer_batches,
    completion_message,
    migration_load,
)
from pykraft.migration.zk_tree import ZkRead, ZkTree
from pykraft.migration.znodes import PartitionStateZNode, TopicZNode

FINALISED = "metadata-D-finalised"
FAULT_RUN = "fault-load/metadata-B2-migrated"
Json = dict[str, Any]
Unit = tuple[str, ...]


def load_span(records: dict[int, Json]) -> tuple[int, int]:
    """Offsets of the last load's records: after its BeginTransaction "ZK Migration", before
    the ZkMigrationStateRecord that completes it."""
    begin = max(o for o, r in records.items() if r["type"] == "BEGIN_TRANSACTION_RECORD"
                and r["data"]["name"] == "ZK Migration")
    end = min(o for o, r in records.items() if o > begin
              and r["type"] == "ZK_MIGRATION_STATE_RECORD")
    return begin + 1, end


def tree_at_load(dump_name: str, records: list[Json]) -> ZkTree:
    """The dump with each partition state znode set to what the load read."""
    found = reads(znode_dump(dump_name))
    topic_names = {r["data"]["topicId"]: r["data"]["name"]
                   for r in records if r["type"] == "TOPIC_RECORD"}
    for record in records:
        if record["type"] != "PARTITION_RECORD":
            continue
        data = record["data"]
        path = (f"/brokers/topics/{topic_names[data['topicId']]}/partitions/"
                f"{data['partitionId']}/state")
        before = found[path].raw
        assert before is not None
        state = PartitionStateZNode(data["leader"], data["leaderEpoch"],
                                    PartitionStateZNode.decode(before).controller_epoch,
                                    tuple(data["isr"]))
        found[path] = ZkRead(state.encode(), data["partitionEpoch"])
    return ZkTree.from_reads(found)


def comparable(records: list[Json]) -> tuple[list[Unit], list[Unit], list[Unit]]:
    """The records cut into Kafka's record lists, ACL ids dropped and each resource's ACLs
    sorted: (topic lists sorted, broker config lists sorted, the rest in order). Kafka reads
    topics and config entities in hash-set orders and a resource's ACLs from a set."""
    units: list[tuple[str, object, list[str]]] = []  # (kind, key, texts)
    for record in records:
        data = dict(record["data"])
        kind, key = record["type"], None
        if kind in ("CONFIG_RECORD", "PARTITION_RECORD") and units and units[-1][0] == "topic" \
                and data.get("resourceType", 2) == 2:
            kind = "topic"
        elif kind == "TOPIC_RECORD":
            kind, key = "topic", data["name"]
        elif kind == "CONFIG_RECORD":
            kind, key = "broker", data["resourceName"]
        elif kind == "ACCESS_CONTROL_ENTRY_RECORD":
            data.pop("id")
            key = (data["resourceType"], data["patternType"], data["resourceName"])
        text = json.dumps({**record, "data": data}, sort_keys=True)
        if units and units[-1][0] == kind and ((kind == "topic" and key is None)
                                                or (key is not None and units[-1][1] == key)):
            units[-1][2].append(text)
        else:
            units.append((kind, key, [text]))
    by_kind: dict[str, list[Unit]] = {"topic": [], "broker": [], "rest": []}
    for kind, _, texts in units:
        if kind == "ACCESS_CONTROL_ENTRY_RECORD":
            texts.sort()
        by_kind[kind if kind in by_kind else "rest"].append(tuple(texts))
    return sorted(by_kind["topic"]), sorted(by_kind["broker"]), by_kind["rest"]


@pytest.fixture(scope="module")
def captured() -> list[Json]:
    records = log_records(f"{FINALISED}.records")
    first, end = load_span(records)
    assert (first, end) == (73, 104)
    return [records[o] for o in range(first, end) if o in records]


def test_the_load_of_phase_a_is_kafkas(captured: list[Json]) -> None:
    tree = tree_at_load("znodes-A-zk-cluster.json", captured)
    load = migration_load(tree, random.Random(7))
    ours = [record.to_json_dict() for record in load.records]  # the decoder's JSON
    assert len(ours) == len(captured) == 30
    assert comparable(ours) == comparable(captured)
    assert set(load.brokers_seen) == {1, 2, 3}


def test_the_load_is_one_batch_as_kafkas(captured: list[Json]) -> None:
    load = migration_load(tree_at_load("znodes-A-zk-cluster.json", captured), random.Random(7))
    (batch,) = [b for b in log_batches(f"{FINALISED}.batches") if b[0] <= 73 <= b[1]]
    assert batch == (73, 102)
    assert [len(b) for b in load.batches] == [30]


def test_min_batch_size_one_batches_as_the_fault_run() -> None:
    """The fault run's controllers ran with min.batch.size=1: each record list of §6 was its
    own write (13 of them for 30 records); its reload after the failover is compared."""
    records = log_records(f"{FAULT_RUN}.records")
    first, end = load_span(records)
    captured = [records[o] for o in range(first, end) if o in records]
    sizes = [sum(1 for o in range(max(base, first), min(last, end - 1) + 1) if o in records)
             for base, last in log_batches(f"{FAULT_RUN}.batches")
             if last >= first and base < end]
    tree = tree_at_load("fault-load/znodes-B2-migrated.json", captured)
    load = migration_load(tree, random.Random(1), min_batch_size=1)
    assert len(load.records) == len(captured) == 30
    assert sorted(len(b) for b in load.batches) == sorted(sizes)
    assert [len(b) for b in load.batches][4:] == sizes[4:]  # after the topics: Kafka's order
    assert len(load.batches) == 13


def test_acl_ids_come_from_the_rng_and_are_distinct(captured: list[Json]) -> None:
    tree = tree_at_load("znodes-A-zk-cluster.json", captured)

    def ids(seed: int) -> list[object]:
        return [r.message.id for r in migration_load(tree, random.Random(seed)).records
                if r.type_name == "ACCESS_CONTROL_ENTRY_RECORD"]

    assert ids(3) == ids(3)
    assert ids(3) != ids(4)
    assert len(set(ids(3))) == 3


def test_buffering_flushes_at_the_minimum_and_at_the_end() -> None:
    lists = [[1, 2], [3], [4, 5, 6], [7]]
    assert list(buffer_batches(lists, 3)) == [(1, 2, 3), (4, 5, 6), (7,)]
    with pytest.raises(MigrationLoadError, match="at least 1"):
        list(buffer_batches(lists, 0))


def test_kafkas_rules_for_odd_znodes() -> None:
    """Pending deletions are skipped, a partition without state gets ISR = replicas, a topic
    without an id cannot be migrated."""
    assignment = TopicZNode(None, ((0, (2, 1)),))
    with_id = TopicZNode(uuid_from_str("PH2VKehVRZi86ZZeYkU9ZQ"), ((0, (2, 1)),))
    base = {"/brokers/topics/kept": ZkRead(with_id.encode()),
            "/brokers/topics/gone": ZkRead(assignment.encode()),
            "/admin/delete_topics/gone": ZkRead(None)}
    (only,) = migration_load(ZkTree.from_reads(base), random.Random(0)).batches
    partition = only[1].message
    assert (only[0].message.name, partition.isr, partition.leader, partition.leader_epoch,
            partition.partition_epoch) == ("kept", (2, 1), 2, 0, 0)
    del base["/admin/delete_topics/gone"]
    with pytest.raises(MigrationLoadError, match="'gone' has no topic id"):
        migration_load(ZkTree.from_reads(base), random.Random(0))



def test_a_password_broker_config_needs_the_decoder() -> None:
    tree = ZkTree.from_reads({"/config/brokers/2": ZkRead(
        b'{"version":1,"config":{"listener.name.plain.ssl.key.password":"enc","x":"1"}}')})
    with pytest.raises(MigrationLoadError, match=r"password\.encoder\.secret"):
        migration_load(tree, random.Random(0))
    load = migration_load(tree, random.Random(0), password_decoder=lambda text: text.upper())
    assert [(r.message.name, r.message.value) for r in load.records] == [
        ("listener.name.plain.ssl.key.password", "ENC"), ("x", "1")]
    assert load.brokers_seen == (2,)


@pytest.mark.parametrize(("text", "value"), [
    ("50", 50.0), (" 1e3 ", 1000.0), ("2.5d", 2.5), ("-.5", -0.5), ("1_000", None),
    ("inf", None), ("ten", None)])
def test_quota_values_parse_as_java_doubles(text: str, value: float | None) -> None:
    tree = ZkTree.from_reads({"/config/clients/app": ZkRead(
        b'{"version":1,"config":{"request_percentage":"%s"}}' % text.encode())})
    if value is None:
        with pytest.raises(MigrationLoadError, match="unexpected client quota"):
            migration_load(tree, random.Random(0))
        return
    (record,) = migration_load(tree, random.Random(0)).records
    assert record.message.value == value


def captured_completion(path: str) -> str:
    """The driver's "Completed migration ..." message as the controller logged it."""
    text: str = (CAPTURED / path).read_text()
    (line,) = [line for line in text.splitlines() if "Completed migration" in line]
    return line[line.index("Completed migration"):line.index(" (org.apache")]


@pytest.mark.parametrize(("lines", "min_batch_size", "figures"), [
    ("controller-migration-lines.txt", 200, (463, 101, 105, 5)),
    ("fault-load/controller-migration-lines.txt", 1, (740, 554, 146, 4))])
def test_the_completion_line_is_kafkas(captured: list[Json], lines: str, min_batch_size: int,
                                       figures: tuple[int, int, int, int]) -> None:
    """The figures Kafka logged (duration, offset, epoch; the total wait is the logged
    average times the batches: 101 ms for one, 554 ms for 13 averaging 42.62) and the load
    of phase A give the line Kafka logged, record type counts and broker order included."""
    load = migration_load(tree_at_load("znodes-A-zk-cluster.json", captured), random.Random(0),
                          min_batch_size=min_batch_size)
    duration, wait, offset, epoch = figures
    assert completion_message(load, duration_ms=duration, batch_wait_ms=wait, offset=offset,
                              epoch=epoch) == captured_completion(lines)


def test_the_completion_line_of_an_empty_load() -> None:
    text = completion_message(MigrationLoad((), ()), duration_ms=3, batch_wait_ms=0, offset=7,
                              epoch=1)
    assert "0 records were generated in 3 ms across 0 batches" in text
    assert "waiting on a batch was -1.00 ms. The record types were {}." in text
    assert text.endswith("Saw 0 brokers in the migrated metadata [].")


@pytest.mark.parametrize("name", sorted(str(p.relative_to(CAPTURED))
                                        for p in CAPTURED.rglob("znodes-*.json")))
def test_every_captured_phase_loads(name: str) -> None:
    load = migration_load(ZkTree.from_reads(reads(znode_dump(name))), random.Random(0))
    assert sorted(load.brokers_seen) == [1, 2, 3]
    assert sum(r.type_name == "TOPIC_RECORD" for r in load.records) == 4


def test_a_scram_sha_512_credential_of_the_dual_write() -> None:
    """Bob's SCRAM-SHA-512 user, written to ZooKeeper by the dual write of phase B3."""
    load = migration_load(ZkTree.from_reads(reads(znode_dump("znodes-B3-dual-write.json"))),
                          random.Random(0))
    (bob,) = [r.message for r in load.records
              if r.type_name == "USER_SCRAM_CREDENTIAL_RECORD" and r.message.name == "bob"]
    assert (bob.mechanism, bob.iterations, len(bob.stored_key), len(bob.server_key)) == (
        2, 8192, 64, 64)
