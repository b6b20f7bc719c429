"""The propagator sends what Kafka 3.9.1's controllers sent the ZK brokers in the reference
run (captured/legacy-rpcs-b*.jsonl, legacy-rpc-counts.txt), field for field and in Kafka's
order.

The images are the captured metadata log (metadata-D-finalised.records) replayed through
pykraft's record decoding and image deltas, one delta per raft batch as the controllers
published them. Each active controller's full propagation is at the offset its driver
logged ("Sending RPCs to broker before moving to dual-write mode using at offset and
epoch ...", controller-migration-lines.txt), under the ZooKeeper epoch of its claim; then
come the deltas: the ISR expansion of offsets 110-111 (the first INCREMENTAL LeaderAndIsr)
and t-plain's deletion at offset 215 (the StopReplica). Captured bodies are compared as the
JSON Kafka's request log prints, key order and list order included.
"""

from __future__ import annotations

import collections
import dataclasses
import json
import re
from typing import Any

import pytest
from migration_captures import CAPTURED, LegacyRpc, legacy_rpcs, log_batches, log_records

from pykraft.image.image import MetadataDelta, MetadataImage, Provenance
from pykraft.image.topics import PartitionRegistration
from pykraft.java import java_compute_if_absent_order, java_string_hash
from pykraft.messages.jsonview import from_json_dict, to_json_dict
from pykraft.messages.legacy.leader_and_isr_request import LeaderAndIsrRequest
from pykraft.messages.legacy.stop_replica_request import StopReplicaRequest
from pykraft.messages.legacy.update_metadata_request import UpdateMetadataRequest
from pykraft.migration.map_order import ScalaMutableHashMap
from pykraft.migration.propagator import (
    LegacyRequest,
    MigrationPropagator,
    PropagationError,
    UpdateType,
)
from pykraft.records.metadata import decode_metadata_record, encode_metadata_record
from pykraft.records.metadata_records import RECORD_CLASSES

LOG = "metadata-D-finalised"
RECORDS = log_records(f"{LOG}.records")
BATCHES = log_batches(f"{LOG}.batches")
CLASSES = {name: cls for _, name, cls in RECORD_CLASSES}
ZK_BROKERS = (1, 2, 3)
LOAD_END = 105  # the load's EndTransaction (migration-plan §6)
ISR_EXPANSION = (110, 111)  # the first batch after the load with PartitionChangeRecords
T_PLAIN_REMOVED = 215


def _epochs() -> dict[int, int]:
    """Offset -> leader epoch of its batch."""
    epochs = {}
    for line in (CAPTURED / f"{LOG}.batches").read_text().splitlines():
        base, last, _, epoch, _ = line.split()
        epochs.update({offset: int(epoch) for offset in range(int(base), int(last) + 1)})
    return epochs


EPOCHS = _epochs()


@dataclasses.dataclass(frozen=True)
class Era:
    """One active migrating controller: its id, the ZooKeeper controller epoch it claimed,
    the offset of its full propagation."""

    controller: int
    zk_epoch: int
    full_at: int


def _eras() -> list[Era]:
    text = (CAPTURED / "controller-migration-lines.txt").read_text()
    claims = {int(c): int(e) for c, e in re.findall(
        r"KRaft controller (\d+) overwriting /controller .* with ZK epoch (\d+)\.", text)}
    fulls = re.findall(r"\[KRaftMigrationDriver id=(\d+)\] Sending RPCs to broker before "
                       r"moving to dual-write mode using at offset and epoch "
                       r"OffsetAndEpoch\(offset=(\d+), epoch=\d+\)", text)
    return sorted((Era(int(c), claims[int(c)], int(o)) for c, o in fulls),
                  key=lambda era: era.full_at)


ERAS = _eras()
FIRST = ERAS[0]


def replay(image: MetadataImage, first: int, last: int) -> MetadataImage:
    """``image`` with the captured records of offsets ``first``..``last``: each built from
    the decoder's JSON, framed, decoded again as the loader would, and replayed."""
    delta = MetadataDelta(image)
    for at in range(first, last + 1):
        record = RECORDS.get(at)
        if record is None:
            continue  # a NoOpRecord (not captured)
        body: object = from_json_dict(CLASSES[record["type"]], record["version"], record["data"])
        delta.replay(decode_metadata_record(encode_metadata_record(body, record["version"])))
    return delta.apply(Provenance(last, EPOCHS[last]))


def image_at(offset: int) -> MetadataImage:
    return replay(MetadataImage(), 0, offset)


def logged(broker: int, api_key: int, correlation_id: int) -> LegacyRpc:
    (rpc,) = (rpc for rpc in legacy_rpcs(broker)
              if (rpc.api_key, rpc.correlation_id) == (api_key, correlation_id))
    return rpc


def as_json(request: LegacyRequest) -> str:
    return json.dumps(to_json_dict(request.body, request.api_version))


def sent(requests: list[LegacyRequest], broker: int) -> list[tuple[int, int, Any]]:
    """(api key, type, body JSON) of what one broker is sent, in order."""
    return [(r.api_key, getattr(r.body, "type", -1), as_json(r)) for r in requests
            if r.broker_id == broker]


def first_full_image() -> MetadataImage:
    return image_at(FIRST.full_at)


def test_the_eras_are_the_runs_two_active_controllers() -> None:
    eras = ERAS
    assert eras == [Era(3000, 4, 107), Era(3002, 5, 232)]


def test_the_full_image_has_the_partition_epochs_the_brokers_got() -> None:
    """Past the load and broker 3's unfence (106), before the first ISR change (110)."""
    image = first_full_image()
    for broker in ZK_BROKERS:
        request = logged(broker, 4, 1).request
        for topic in request["topicStates"]:
            partitions = image.topics.by_name[topic["topicName"]].partitions
            for state in topic["partitionStates"]:
                partition = partitions[state["partitionIndex"]]
                assert state["partitionEpoch"] == partition.partition_epoch


def test_full_propagation_is_what_each_zk_broker_received() -> None:
    """UpdateMetadata (type 0, every partition and broker), then LeaderAndIsr FULL of the
    broker's replicas, then UpdateMetadata FULL: the bodies each broker logged as
    correlation ids 0, 1 and 2, exactly."""
    requests = MigrationPropagator(FIRST.controller, "PLAINTEXT").image_requests(
        first_full_image(), FIRST.zk_epoch)
    for broker in ZK_BROKERS:
        expected = [(6, UpdateType.UNKNOWN, logged(broker, 6, 0).request),
                    (4, UpdateType.FULL, logged(broker, 4, 1).request),
                    (6, UpdateType.FULL, logged(broker, 6, 2).request)]
        assert sent(requests, broker) == [(key, kind, json.dumps(body))
                                          for key, kind, body in expected]
    assert {r.broker_id for r in requests} == set(ZK_BROKERS)


def test_isr_expansion_delta_sends_the_first_incremental_leader_and_isr() -> None:
    """The delta of offsets 110-111 (t-compact-1 and __consumer_offsets-0 back to full ISR):
    LeaderAndIsr INCREMENTAL to each replica, as each broker logged it (correlation id 3),
    then the partitions' UpdateMetadata to every ZK broker; no broker change, so nothing
    before."""
    propagator = MigrationPropagator(FIRST.controller, "PLAINTEXT")
    previous = first_full_image()
    propagator.image_requests(previous, FIRST.zk_epoch)
    requests = propagator.delta_requests(previous, image_at(ISR_EXPANSION[1]),
                                         FIRST.zk_epoch)
    for broker in ZK_BROKERS:
        (lair, umr) = sent(requests, broker)
        assert lair == (4, UpdateType.INCREMENTAL, json.dumps(logged(broker, 4, 3).request))
        body = json.loads(umr[2])
        assert (umr[:2], body["type"]) == ((6, UpdateType.INCREMENTAL), UpdateType.INCREMENTAL)
        assert [(t["topicName"], [p["partitionIndex"] for p in t["partitionStates"]])
                for t in body["topicStates"]] == [("t-compact", [1]), ("__consumer_offsets", [0])]


def test_topic_deletion_sends_stop_replica_with_delete_and_leader_minus_2() -> None:
    """t-plain's RemoveTopicRecord: StopReplica (delete, leader epoch -2) to its replica,
    broker 2, exactly as logged; every ZK broker's UpdateMetadata says leader -2, under the
    ZooKeeper controller epoch (``MigrationPropagator`` passes it for deleted topics)."""
    previous, image = image_at(T_PLAIN_REMOVED - 1), image_at(T_PLAIN_REMOVED)
    requests = MigrationPropagator(FIRST.controller, "PLAINTEXT").delta_requests(
        previous, image, FIRST.zk_epoch)
    stops = [r for r in requests if isinstance(r.body, StopReplicaRequest)]
    assert [(r.broker_id, as_json(r)) for r in stops] == [
        (2, json.dumps(logged(2, 5, 10).request))]
    updates = [r for r in requests if isinstance(r.body, UpdateMetadataRequest)]
    assert [r.broker_id for r in updates] == list(ZK_BROKERS)
    for update in updates:
        assert isinstance(update.body, UpdateMetadataRequest)
        (topic,) = update.body.topic_states
        (state,) = topic.partition_states
        assert (topic.topic_name, state.leader, state.leader_epoch, state.zk_version) == (
            "t-plain", -2, 0, 0)  # LeaderAndIsr.duringDelete
        assert (state.controller_epoch, state.isr, state.replicas) == (FIRST.zk_epoch, (2,), (2,))
        assert state.offline_replicas == (2,)  # Kafka 3.9 lists the registered replicas here
    assert not any(isinstance(r.body, LeaderAndIsrRequest) for r in requests)
    assert requests.index(stops[0]) > requests.index(updates[-1])


API_NAMES = {4: "LEADER_AND_ISR", 5: "STOP_REPLICA", 6: "UPDATE_METADATA"}


def test_the_whole_run_sends_each_zk_broker_what_it_counted() -> None:
    """Every era replayed batch by batch (a full propagation, then one delta per batch
    until the next era): per broker, api, version and type, as many requests as the
    brokers' request logs counted (legacy-rpc-counts.txt), through the dual writes of phase
    B3, 3002's takeover and the roll of each ZK broker to KRaft (no request once fenced)."""
    expected = (CAPTURED / "legacy-rpc-counts.txt").read_text().splitlines()
    counts: collections.Counter[str] = collections.Counter()
    ends = [era.full_at - 1 for era in ERAS[1:]] + [BATCHES[-1][1]]
    for era, end in zip(ERAS, ends, strict=True):
        propagator = MigrationPropagator(era.controller, "PLAINTEXT")
        image = image_at(era.full_at)
        requests = propagator.image_requests(image, era.zk_epoch)
        for base, last in BATCHES:
            if era.full_at < base and last <= end:
                after = replay(image, base, last)
                requests += propagator.delta_requests(image, after, era.zk_epoch)
                image = after
        counts.update(f"b{r.broker_id} {API_NAMES[r.api_key]} v{r.api_version} "
                      f"type={getattr(r.body, 'type', 0)}" for r in requests)
    assert sorted(f"{key}: {n}" for key, n in counts.items()) == expected


def _with_broker(image: MetadataImage, broker: int, **changes: Any) -> MetadataImage:
    brokers = dict(image.cluster.brokers)
    brokers[broker] = dataclasses.replace(brokers[broker], **changes)
    return dataclasses.replace(image, cluster=dataclasses.replace(image.cluster, brokers=brokers))


def test_fenced_and_kraft_brokers_get_nothing() -> None:
    """Kafka's channel manager only has unfenced migrating ZK brokers: a fenced one and a
    broker registered as KRaft get no request, though the UpdateMetadata lists them."""
    image = _with_broker(_with_broker(first_full_image(), 3, fenced=True), 1,
                         is_migrating_zk_broker=False)
    requests = MigrationPropagator(FIRST.controller, "PLAINTEXT").image_requests(
        image, FIRST.zk_epoch)
    assert {r.broker_id for r in requests} == {2}
    update = requests[0].body
    assert isinstance(update, UpdateMetadataRequest)
    assert [b.id for b in update.live_brokers] == [1, 2, 3]


def test_a_zk_broker_unfenced_in_the_delta_learns_everything() -> None:
    """A ZK broker unfenced by the delta gets an UpdateMetadata of every partition and a
    LeaderAndIsr of its replicas; the other ZK brokers learn of the change (type 0)."""
    image = first_full_image()
    previous = _with_broker(image, 3, fenced=True)
    requests = MigrationPropagator(FIRST.controller, "PLAINTEXT").delta_requests(
        previous, image, FIRST.zk_epoch)
    kinds = [(r.broker_id, r.api_key, getattr(r.body, "type", -1)) for r in requests]
    assert kinds == [(1, 6, 0), (2, 6, 0), (3, 6, 0), (3, 4, 1), (1, 6, 1), (2, 6, 1),
                     (3, 6, 1)]
    full = requests[2].body
    assert isinstance(full, UpdateMetadataRequest)
    assert sum(len(t.partition_states) for t in full.topic_states) == 9
    assert requests[0].body == dataclasses.replace(full, broker_epoch=31)
    lair = requests[3].body
    assert isinstance(lair, LeaderAndIsrRequest)
    assert {(t.topic_name, p.partition_index) for t in lair.topic_states
            for p in t.partition_states} == {
        ("t-compact", 0), ("t-compact", 1), ("t-rf3", 0), ("t-rf3", 1), ("t-rf3", 2),
        ("__consumer_offsets", 0), ("__consumer_offsets", 1), ("__consumer_offsets", 2)}


def test_a_removed_replica_gets_stop_replica_with_its_leader_epoch() -> None:
    previous = first_full_image()
    topic = previous.topics.by_name["t-rf3"]
    moved: PartitionRegistration = dataclasses.replace(
        topic.partitions[0], replicas=(1, 3), isr=(1,), leader_epoch=4, partition_epoch=6)
    changed = dataclasses.replace(topic, partitions={**topic.partitions, 0: moved})
    topics = dataclasses.replace(
        previous.topics, by_id={**previous.topics.by_id, topic.topic_id: changed},
        by_name={**previous.topics.by_name, "t-rf3": changed})
    requests = MigrationPropagator(FIRST.controller, "PLAINTEXT").delta_requests(
        previous, dataclasses.replace(previous, topics=topics), FIRST.zk_epoch)
    assert [(r.broker_id, r.api_key) for r in requests] == [
        (1, 4), (3, 4), (1, 6), (2, 6), (3, 6), (2, 5)]
    stop = requests[-1].body
    assert isinstance(stop, StopReplicaRequest)
    assert [(t.topic_name, [(p.partition_index, p.leader_epoch, p.delete_partition)
                            for p in t.partition_states]) for t in stop.topic_states] == [
        ("t-rf3", [(0, 4, True)])]


def test_refusals() -> None:
    image = first_full_image()
    with pytest.raises(PropagationError, match="inter-broker listener SSL"):
        MigrationPropagator(FIRST.controller, "SSL").image_requests(image, FIRST.zk_epoch)
    old = dataclasses.replace(image, features=dataclasses.replace(
        image.features, finalized={"metadata.version": 7}))  # 3.3-IV3
    with pytest.raises(PropagationError, match="no ZooKeeper migration"):
        MigrationPropagator(FIRST.controller, "PLAINTEXT").image_requests(old, FIRST.zk_epoch)
    unknown = dataclasses.replace(image, provenance=Provenance())
    with pytest.raises(PropagationError, match="without its last offset's epoch"):
        MigrationPropagator(FIRST.controller, "PLAINTEXT").image_requests(unknown, 4)


def test_a_refused_batch_leaves_nothing_for_the_next() -> None:
    """Broker 1 without the inter-broker listener: the full propagation fails when it
    needs broker 1 as a live leader, and the next delta (broker 3 fenced) tells the other
    ZK brokers of the broker change alone, not of the partitions the failed batch had
    collected."""
    image = first_full_image()
    propagator = MigrationPropagator(FIRST.controller, "PLAINTEXT")
    with pytest.raises(PropagationError, match="leader 1 has no endpoint"):
        propagator.image_requests(_with_broker(image, 1, listeners=()), FIRST.zk_epoch)
    requests = propagator.delta_requests(image, _with_broker(image, 3, fenced=True),
                                         FIRST.zk_epoch)
    assert [r.broker_id for r in requests] == [1, 2]
    for request in requests:
        assert isinstance(request.body, UpdateMetadataRequest)
        assert (request.body.type, request.body.topic_states) == (UpdateType.UNKNOWN, ())
        assert [b.id for b in request.body.live_brokers] == [1, 2, 3]


# --- the JVM map orders the requests follow (outputs of jshell on Java 17 and
# scala-library 2.13.15) -----------------------------------------------------------------------

JAVA_COMPUTE_IF_ABSENT_23 = [f"topic-{n}" for n in (
    6, 7, 8, 9, 0, 1, 2, 20, 10, 3, 21, 11, 4, 22, 12, 5, 13, 14, 15, 16, 17, 18, 19)]
SCALA_11_IN_16 = ["t4", "t5", "t6", "t10", "t7", "t8", "t9", "t0", "t1", "t2", "t3"]
SCALA_11_IN_32 = ["t4", "t5", "t6", "t7", "t8", "t9", "t10", "t0", "t1", "t2", "t3"]


def test_compute_if_absent_puts_a_new_key_first_in_its_bucket() -> None:
    """t-rf3 and __consumer_offsets share a bucket: the later one comes first (the order
    the captured requests show), and resizes keep a bucket's order."""
    grouped = ["t-compact", "__consumer_offsets", "t-compact", "t-plain", "t-rf3"]
    assert java_compute_if_absent_order(grouped, java_string_hash) == [
        "t-compact", "t-plain", "t-rf3", "__consumer_offsets"]
    keys = [f"topic-{(i * 7) % 23}" for i in range(40)]
    assert java_compute_if_absent_order(keys, java_string_hash) == JAVA_COMPUTE_IF_ABSENT_23


def test_scala_map_grows_on_a_put_of_a_present_key_and_keeps_its_table_when_cleared() -> None:
    def keys(m: ScalaMutableHashMap[str, int]) -> list[str]:
        return [key for key, _ in m.items()]

    m: ScalaMutableHashMap[str, int] = ScalaMutableHashMap(java_string_hash)
    for i in range(11):
        m.put(f"t{i}", i)
    assert keys(m) == SCALA_11_IN_16
    m.put("t0", 5)
    assert keys(m) == SCALA_11_IN_32
    m.clear()
    for i in range(11):
        m.get_or_else_update(f"t{i}", lambda: 1)
    assert keys(m) == SCALA_11_IN_32
    n: ScalaMutableHashMap[str, int] = ScalaMutableHashMap(java_string_hash)
    for i in range(11):
        n.get_or_else_update(f"t{i}", lambda: 1)
    n.get_or_else_update("t0", lambda: 2)
    assert keys(n) == SCALA_11_IN_16
