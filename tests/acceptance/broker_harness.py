"""Probes of a running cluster through a broker's client listener (our own client)."""

from __future__ import annotations

import asyncio
import sys
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any, NamedTuple

from pykraft.config.server import ServerConfig
from pykraft.errors import PyKraftError
from pykraft.ids import random_uuid, uuid_to_str
from pykraft.messages.kafka import produce_request as produce
from pykraft.messages.kafka.describe_cluster_request import DescribeClusterRequest
from pykraft.messages.kafka.metadata_request import MetadataRequest, MetadataRequestTopic
from pykraft.protocol.api_versions import listener_ranges, offsets_by_name
from pykraft.protocol.apis import Listener
from pykraft.protocol.errors import ErrorCode
from pykraft.records.batch import encode_batch
from pykraft.runtime.kafka_client import ClientConnection
from pykraft.tools.local_cluster import (
    BROKER,
    HOST,
    LocalCluster,
    NodeFiles,
    free_ports,
    internal_topic_properties,
)
from pykraft.tools.quorum_tool import parse_host_port
from pykraft.tools.storage_tool import FormatRequest, QuorumMode, format_storage

sys.path.insert(0, str(Path(__file__).parent.parent / "integration"))
from process_harness import wait_for

__all__ = ["PROPERTIES", "PartitionState", "add_broker_listener", "add_listener", "broker_call",
           "combined_node", "fenced_brokers", "partition_leaders", "partition_state",
           "produce_one", "replica_log_bytes", "set_log_dirs", "wait_for", "wait_for_brokers"]

#: Brokers heartbeat every 500 ms with a 3 s session, so fault tests see fencing quickly.
PROPERTIES = {
    "broker.heartbeat.interval.ms": "500",
    "broker.session.timeout.ms": "3000",
    "pykraft.shutdown.timeout.ms": "3000",
}


def combined_node(base: Path, properties: dict[str, str]) -> LocalCluster:
    """One formatted ``broker,controller`` node (node 1, not started): its controller and
    broker share one log."""
    controller_port, client_port = free_ports(2)
    node = NodeFiles(1, client_port, base / "node-1", BROKER)
    node.directory.mkdir(parents=True)
    node.config.write_text("".join(f"{k}={v}\n" for k, v in {
        **internal_topic_properties(1),
        **properties,
        "process.roles": "broker,controller",
        "node.id": "1",
        "listeners": f"CONTROLLER://{HOST}:{controller_port},PLAINTEXT://{node.address}",
        "controller.listener.names": "CONTROLLER",
        "controller.quorum.voters": f"1@{HOST}:{controller_port}",
        "log.dirs": str(node.data),
    }.items()))
    cluster_id = uuid_to_str(random_uuid())
    format_storage(FormatRequest(config=ServerConfig.load(node.config), cluster_id=cluster_id,
                                 mode=QuorumMode.STATIC))
    return LocalCluster(base, cluster_id, [node])


@contextmanager
def running_cluster(base: Path, properties: dict[str, str] = PROPERTIES, *,
                    controllers: int = 1, brokers: int = 1) -> Iterator[LocalCluster]:
    """Controllers and brokers, running and every broker unfenced; killed by PID when the
    block ends."""
    made = LocalCluster.create(base, controllers, properties, brokers=brokers)
    made.start_all()
    try:
        wait_for_brokers(made, brokers)
        yield made
    finally:
        for node_id in made.nodes:
            made.kill(node_id)


def set_log_dirs(cluster: LocalCluster, broker_id: int, *dirs: Path) -> None:
    """Give a broker that was created but not started the log dirs ``dirs`` (in
    ``log.dirs``), and format them."""
    config = cluster.nodes[broker_id].config
    joined = ",".join(str(d) for d in dirs)
    config.write_text("".join(
        (f"log.dirs={joined}" if line.startswith("log.dirs=") else line) + "\n"
        for line in config.read_text().splitlines()))
    cluster.format(broker_id)


def add_broker_listener(cluster: LocalCluster, broker_id: int, name: str) -> int:
    """Bind one more listener, ``NAME://127.0.0.1:<free port>``, on a broker that was
    created but not started; returns its port."""
    return add_listener(cluster.nodes[broker_id].config, name)


def add_listener(config: Path, name: str) -> int:
    """Append ``NAME://127.0.0.1:<free port>`` to the ``listeners`` of a node's
    ``server.properties`` (of pykraft's or of Kafka's: same key); returns its port."""
    (port,) = free_ports(1)
    config.write_text("".join(
        (f"{line},{name}://{HOST}:{port}" if line.startswith("listeners=") else line) + "\n"
        for line in config.read_text().splitlines()))
    return port


def one_broker_cluster(base: Path, properties: dict[str, str] = PROPERTIES,
                       ) -> AbstractContextManager[LocalCluster]:
    """1 controller + 1 broker (see :func:`running_cluster`)."""
    return running_cluster(base, properties)


def broker_call(cluster: LocalCluster, broker_id: int, body: Any) -> Any:
    async def run() -> Any:
        host, port = parse_host_port(cluster.nodes[broker_id].address)
        conn = await asyncio.wait_for(ClientConnection.open(
            host, port, client_id="acceptance",
            ours=offsets_by_name(listener_ranges(Listener.BROKER))), 5)
        try:
            return await asyncio.wait_for(conn.request(body), 10)
        finally:
            conn.close()
    return asyncio.run(run())


def fenced_brokers(cluster: LocalCluster, via: int) -> dict[int, bool] | None:
    """Broker id -> fenced, as broker ``via`` describes the cluster (None if unreachable)."""
    try:
        answer = broker_call(cluster, via, DescribeClusterRequest(include_fenced_brokers=True))
    except (PyKraftError, OSError, TimeoutError):
        return None
    return {b.broker_id: b.is_fenced for b in answer.brokers}


def wait_for_brokers(cluster: LocalCluster, count: int) -> None:
    """Every broker sees ``count`` unfenced brokers."""
    def probe() -> bool | None:
        for broker_id in cluster.brokers:
            seen = fenced_brokers(cluster, broker_id)
            if seen is None or sum(not f for f in seen.values()) < count:
                return None
        return True
    wait_for(f"{count} unfenced brokers", probe)


def partition_leaders(cluster: LocalCluster, via: int, topic: str) -> list[int]:
    answer = broker_call(cluster, via, MetadataRequest(
        topics=(MetadataRequestTopic(name=topic),),
        allow_auto_topic_creation=False, include_topic_authorized_operations=False))
    return [int(p.leader_id) for p in answer.topics[0].partitions]


class PartitionState(NamedTuple):
    leader: int  # -1: offline
    isr: set[int]
    replicas: list[int]  # in assignment order: the order of preference for leadership
    topic_id: uuid.UUID


def partition_state(cluster: LocalCluster, via: int, topic: str,
                    partition: int = 0) -> PartitionState | None:
    """A partition as broker ``via`` answers Metadata (None while it cannot answer or does
    not know the partition)."""
    try:
        answer = broker_call(cluster, via, MetadataRequest(
            topics=(MetadataRequestTopic(name=topic),),
            allow_auto_topic_creation=False, include_topic_authorized_operations=False))
    except (PyKraftError, OSError, TimeoutError):
        return None
    found = [p for p in answer.topics[0].partitions if p.partition_index == partition]
    if answer.topics[0].error_code != 0 or not found:
        return None
    return PartitionState(int(found[0].leader_id), {int(b) for b in found[0].isr_nodes},
                          [int(b) for b in found[0].replica_nodes], answer.topics[0].topic_id)


def produce_one(cluster: LocalCluster, broker_id: int, topic_id: uuid.UUID, key: bytes,
                value: bytes, *, acks: int) -> int:
    """Produce v13 (the topic by id) of one record without a producer id to partition 0,
    straight to ``broker_id`` (no metadata asked of other brokers); the error code."""
    answer = broker_call(cluster, broker_id, produce.ProduceRequest(
        acks=acks, timeout_ms=9_000,
        topic_data=(produce.TopicProduceData(topic_id=topic_id, partition_data=(
            produce.PartitionProduceData(index=0, records=encode_batch(
                0, [(key, value)], partition_leader_epoch=-1,
                timestamp=int(time.time() * 1000))),)),)))
    return int(answer.responses[0].partition_responses[0].error_code)


def create_topic(bootstrap: str, name: str, partitions: int, replication: int = 1,
                 configs: dict[str, str] | None = None) -> None:
    """Create a topic through kafka-python's admin client (it waits for the answer)."""
    from kafka.admin import KafkaAdminClient, NewTopic

    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics([NewTopic(name, partitions, replication,
                                      topic_configs=configs or {})])
    finally:
        admin.close()


def batches_on_disk(cluster: LocalCluster, topic: str) -> Iterator[Any]:
    """Every batch in the topic's segment files on the first broker, partition by partition,
    read by kafka-python's MemoryRecords (an independent reader of Kafka's layout)."""
    from kafka.record.memory_records import MemoryRecords

    data = cluster.nodes[cluster.brokers[0]].data
    directories = [d for d in data.glob(f"{topic}-*") if d.name[len(topic) + 1:].isdigit()]
    for directory in sorted(directories, key=lambda d: int(d.name[len(topic) + 1:])):
        for segment in sorted(directory.glob("*.log")):
            records = MemoryRecords(segment.read_bytes())
            while (batch := records.next_batch()) is not None:
                yield batch


def replica_log_bytes(cluster: LocalCluster, broker_id: int, topic: str,
                      partition: int = 0) -> bytes:
    """Broker ``broker_id``'s copy of a partition: its segment files' bytes, in order."""
    directory = cluster.nodes[broker_id].data / f"{topic}-{partition}"
    return b"".join(path.read_bytes() for path in sorted(directory.glob("*.log")))


def codecs_on_disk(cluster: LocalCluster, topic: str) -> set[int]:
    """The compression type of every batch in the topic's segment files."""
    return {batch.compression_type for batch in batches_on_disk(cluster, topic)}


Message = tuple[bytes, bytes, tuple[tuple[str, bytes], ...]]


def confluent_produce(config: dict[str, Any], topic: str, sent: Sequence[Message],
                      timeout_s: float = 60.0) -> list[Any]:
    """Send every message with confluent-kafka's Producer and wait for each delivery; the
    delivery reports (Messages, in delivery order). Any delivery error fails the test."""
    import confluent_kafka

    producer = confluent_kafka.Producer(config)
    reports: list[Any] = []  # a Message or a KafkaError per delivery
    for key, value, headers in sent:
        producer.produce(topic, key=key, value=value, headers=list(headers),
                         on_delivery=lambda error, m: reports.append(error or m))
        producer.poll(0)
    assert producer.flush(timeout_s) == 0
    assert [r for r in reports if isinstance(r, confluent_kafka.KafkaError)] == []
    assert len(reports) == len(sent)
    return reports


def leader_and_isr(cluster: LocalCluster, via: int,
                   topic: str) -> tuple[int, set[int], uuid.UUID] | None:
    """Partition 0's leader and ISR, and the topic id, as broker ``via`` answers Metadata."""
    answer = broker_call(cluster, via, MetadataRequest(
        topics=(MetadataRequestTopic(name=topic),),
        allow_auto_topic_creation=False, include_topic_authorized_operations=False))
    parts = answer.topics[0].partitions
    if answer.topics[0].error_code != ErrorCode.NONE or not parts or parts[0].leader_id < 0:
        return None
    return (int(parts[0].leader_id), {int(b) for b in parts[0].isr_nodes},
            answer.topics[0].topic_id)


def produce_all(cluster: LocalCluster, leader: int, topic_id: uuid.UUID,
                value: bytes) -> ErrorCode:
    """An acks=all Produce v13 (topics by id) of one record to partition 0."""
    answer = broker_call(cluster, leader, produce.ProduceRequest(
        acks=-1, timeout_ms=9_000,
        topic_data=(produce.TopicProduceData(topic_id=topic_id, partition_data=(
            produce.PartitionProduceData(index=0, records=encode_batch(
                0, [(None, value)], partition_leader_epoch=-1, timestamp=1_000)),)),)))
    return ErrorCode(answer.responses[0].partition_responses[0].error_code)
