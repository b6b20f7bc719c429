"""Each other's disks (issue 26, item 5): a node stopped, then started on the same
``log.dirs`` as the other software (same node id, cluster id and directory ids, the same
``server.properties``), must serve what it held and rejoin its cluster.

One cluster, controllers (Kafka, Kafka, pykraft) and brokers (Kafka, pykraft, pykraft), an
RF=3 topic written by an idempotent acks=all producer. In turn:
- broker 1000's disk, written by Kafka, runs pykraft; broker 1001's, written by pykraft, runs
  Kafka. Each swapped broker, made the only replica left by stopping the other two, serves
  every acknowledged message at its offset; its segment bytes from before the swap are kept
  as they were; the others restarted, every replica is back in the ISR with byte-identical
  segments;
- controller 1's metadata log, written by Kafka, runs pykraft, and controller 3's, written by
  pykraft, runs Kafka: each rejoins the quorum, catches up to the leader's log end, and the
  brokers of both kinds see a topic created after it.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Callable, Iterator

import pytest
from confluent_kafka import Consumer, KafkaError, Message, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kafka_brokers_harness import logged_errors, wait_until
from oracle_cluster import (
    KAFKA,
    MIXED_RELEASE_VERSION,
    PYKRAFT,
    ClusterSpec,
    KafkaInstall,
    Node,
    OracleCluster,
    running,
    unfenced_brokers,
)

from pykraft.errors import PyKraftError
from pykraft.tools.quorum_tool import QuorumInfo, describe_quorum, parse_bootstrap

pytestmark = pytest.mark.timeout(900)
TOPIC = "disks"
PARTITIONS = 3
DEADLINE_S = 120.0
MESSAGES_PER_ROUND = 150
#: preferred replicas spread so that each broker leads one partition at first
ASSIGNMENT = [[1000, 1001, 1002], [1001, 1002, 1000], [1002, 1000, 1001]]
SPEC = ClusterSpec(controllers=(KAFKA, KAFKA, PYKRAFT), brokers=(KAFKA, PYKRAFT, PYKRAFT),
                   release_version=MIXED_RELEASE_VERSION)
Record = tuple[int, int, bytes]  # partition, offset, value


def wait_for(what: str, probe: Callable[[], bool]) -> None:
    wait_until(what, probe, DEADLINE_S)


def swap(cluster: OracleCluster, node_id: int) -> Node:
    """Stop the node (SIGTERM: a clean shutdown) and start the other software on its files."""
    node = cluster.nodes[node_id]
    cluster.stop(node)
    swapped = dataclasses.replace(node, kind=PYKRAFT if node.kind == KAFKA else KAFKA)
    cluster.nodes[node_id] = swapped
    cluster.start(swapped)
    return swapped


def partition_files(node: Node, partition: int) -> dict[str, bytes]:
    """The partition's segment files (``.log``) on that node, by name."""
    directory = node.data / f"{TOPIC}-{partition}"
    return {path.name: path.read_bytes() for path in sorted(directory.glob("*.log"))}


def admin(cluster: OracleCluster) -> AdminClient:
    return AdminClient({"bootstrap.servers": cluster.bootstrap_servers})


def create(cluster: OracleCluster, topic: NewTopic) -> None:
    client = admin(cluster)  # held until the answer: a collected client fails its futures
    client.create_topics([topic])[topic.topic].result(60)


def partition_state(cluster: OracleCluster) -> dict[int, tuple[int, tuple[int, ...]]]:
    """partition -> (leader, ISR), as the brokers' metadata says."""
    topics = admin(cluster).list_topics(TOPIC, timeout=20).topics
    found = topics[TOPIC].partitions if TOPIC in topics else {}
    return {p: (meta.leader, tuple(sorted(meta.isrs))) for p, meta in found.items()}


def record(message: Message) -> Record:
    partition, offset, value = message.partition(), message.offset(), message.value()
    assert partition is not None and offset is not None and value is not None
    return partition, offset, value


def produce(cluster: OracleCluster, round_name: str) -> list[Record]:
    """An idempotent acks=all producer's messages, each acknowledged: where they landed."""
    landed: list[Record] = []
    failed: list[str] = []

    def report(error: KafkaError | None, message: Message) -> None:
        if error is not None:
            failed.append(str(error))
        else:
            landed.append(record(message))
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers,
                         "enable.idempotence": True, "acks": "all",
                         "message.timeout.ms": 60000})
    for i in range(MESSAGES_PER_ROUND):
        producer.produce(TOPIC, f"{round_name}-{i}".encode(), partition=i % PARTITIONS,
                         on_delivery=report)
    assert producer.flush(90) == 0, "messages still unacknowledged"
    assert not failed, failed
    return landed


def consume_all(address: str, ends: dict[int, int]) -> list[Record]:
    """Every record up to ``ends`` (partition -> end offset), read through ``address``."""
    consumer = Consumer({"bootstrap.servers": address, "group.id": "disks-reader",
                         "enable.auto.commit": False})
    consumer.assign([TopicPartition(TOPIC, p, 0) for p in ends])
    got: list[Record] = []
    deadline = time.monotonic() + DEADLINE_S
    try:
        while len(got) < sum(ends.values()):
            assert time.monotonic() < deadline, f"read {len(got)} of {sum(ends.values())}"
            message = consumer.poll(1.0)
            if message is None or message.error() is not None:
                continue
            got.append(record(message))
    finally:
        consumer.close()
    return sorted(got)


def end_offsets(acknowledged: list[Record]) -> dict[int, int]:
    return {p: 1 + max(o for q, o, _ in acknowledged if q == p) for p in range(PARTITIONS)}


def quorum(cluster: OracleCluster) -> QuorumInfo:
    addresses = ",".join(n.listener("controller") for n in cluster.controllers)
    return asyncio.run(describe_quorum(*parse_bootstrap(addresses), timeout_s=20.0))


def caught_up(cluster: OracleCluster, node_id: int) -> bool:
    """Whether the voter's log end has reached the leader's high watermark."""
    try:
        info = quorum(cluster)
    except PyKraftError:  # no leader yet, or one being elected: ask again
        return False
    voter = next((v for v in info.voters if v.replica_id == node_id), None)
    return voter is not None and voter.log_end_offset >= info.high_watermark > 0


def kafka_errors(cluster: OracleCluster) -> list[str]:
    """ERROR entries in the logs of every node (a swapped node's log holds both kinds' lines:
    only Kafka's entry format is matched)."""
    return [entry for node in cluster.nodes.values() for entry in logged_errors(node)]


@pytest.fixture(scope="module")
def cluster(kafka: KafkaInstall, tmp_path_factory: pytest.TempPathFactory,
            ) -> Iterator[OracleCluster]:
    with running(tmp_path_factory.mktemp("disks"), kafka, SPEC) as (made,):
        create(made, NewTopic(TOPIC, num_partitions=PARTITIONS, replica_assignment=ASSIGNMENT,
                              config={"min.insync.replicas": "2"}))
        wait_for("every partition with a full ISR", lambda: all(
            isr == (1000, 1001, 1002) for _, isr in partition_state(made).values())
            and len(partition_state(made)) == PARTITIONS)
        yield made


@pytest.fixture(scope="module")
def acknowledged() -> list[Record]:
    """Every message acknowledged so far, appended to by the tests in order."""
    return []


@pytest.mark.parametrize("node_id", [1000, 1001])
def test_a_broker_serves_its_disk_as_the_other_software(
        cluster: OracleCluster, acknowledged: list[Record], node_id: int) -> None:
    acknowledged += produce(cluster, f"before-{node_id}")
    wait_for("the ISR full again", lambda: all(
        isr == (1000, 1001, 1002) for _, isr in partition_state(cluster).values()))
    before = {p: partition_files(cluster.nodes[node_id], p) for p in range(PARTITIONS)}
    assert all(before.values()), f"broker {node_id} holds no segment of {TOPIC}"
    was = cluster.nodes[node_id].kind
    swapped = swap(cluster, node_id)
    assert swapped.kind != was
    wait_for(f"broker {node_id} unfenced as {swapped.kind}",
             lambda: unfenced_brokers(swapped.address) == 3)
    for p in range(PARTITIONS):  # what the other software wrote is kept, byte for byte
        now = partition_files(swapped, p)
        for name, data in before[p].items():
            assert now[name][:len(data)] == data, f"{TOPIC}-{p}/{name} changed on {node_id}"

    others = [cluster.nodes[n] for n in (1000, 1001, 1002) if n != node_id]
    for other in others:  # controlled shutdowns: the swapped broker leads everything
        cluster.stop(other)
    wait_for(f"broker {node_id} leading every partition", lambda: all(
        leader == node_id for leader, _ in partition_state(cluster).values()))
    assert consume_all(swapped.address, end_offsets(acknowledged)) == sorted(acknowledged)
    for other in others:
        cluster.start(other)
    wait_for("the ISR full again", lambda: all(
        isr == (1000, 1001, 1002) for _, isr in partition_state(cluster).values()))
    for p in range(PARTITIONS):
        copies = [partition_files(cluster.nodes[n], p) for n in (1000, 1001, 1002)]
        assert copies[0] and copies[0] == copies[1] == copies[2], (
            f"{TOPIC}-{p} differs between replicas")
    assert kafka_errors(cluster) == []


@pytest.mark.parametrize("node_id", [1, 3])
def test_a_controller_runs_on_its_metadata_log_as_the_other_software(
        cluster: OracleCluster, acknowledged: list[Record], node_id: int) -> None:
    swapped = swap(cluster, node_id)
    wait_for(f"controller {node_id} caught up as {swapped.kind}",
             lambda: caught_up(cluster, node_id))
    topic = f"after-controller-{node_id}"
    create(cluster, NewTopic(topic, 1, 3))
    wait_for(f"{topic} known to every broker", lambda: all(
        topic in AdminClient({"bootstrap.servers": b.address}).list_topics(
            topic, timeout=10).topics
        and not AdminClient({"bootstrap.servers": b.address}).list_topics(
            topic, timeout=10).topics[topic].error
        for b in cluster.brokers))
    wait_for(f"controller {node_id} caught up again", lambda: caught_up(cluster, node_id))
    acknowledged += produce(cluster, f"controller-{node_id}")
    assert consume_all(cluster.bootstrap_servers, end_offsets(acknowledged)) == sorted(
        acknowledged)
    assert kafka_errors(cluster) == []


def test_every_node_still_runs(cluster: OracleCluster) -> None:
    """No node exited along the way (a refused disk would have ended the process)."""
    assert [n.node_id for n in cluster.nodes.values() if not cluster.is_running(n)] == []
    assert sorted({n.kind for n in cluster.nodes.values()}) == sorted({KAFKA, PYKRAFT})
