"""librdkafka's transactional producer and read_committed reader for the transaction
acceptance suites."""

from __future__ import annotations

from typing import Any

from broker_harness import broker_call

from pykraft.messages.kafka.find_coordinator_request import FindCoordinatorRequest
from pykraft.messages.kafka.offset_fetch_request import (
    OffsetFetchRequest,
    OffsetFetchRequestGroup,
    OffsetFetchRequestTopics,
)
from pykraft.protocol.errors import ErrorCode
from pykraft.tools.local_cluster import LocalCluster

TOPIC = "txn-topic"
TIMEOUT_S = 30


def producer(cluster: LocalCluster, transactional_id: str, **config: object) -> Any:
    import confluent_kafka

    made = confluent_kafka.Producer({
        "bootstrap.servers": cluster.bootstrap_servers, "transactional.id": transactional_id,
        "log_level": 0, **config})
    made.init_transactions(TIMEOUT_S)
    return made


def consumed(cluster: LocalCluster, isolation: str, expected: int, topic: str = TOPIC,
             partitions: int = 4) -> list[bytes]:
    """Every value of ``topic`` as a consumer of ``isolation`` reads it, once it has read
    ``expected`` records and the end of each partition."""
    import confluent_kafka

    consumer = confluent_kafka.Consumer({
        "bootstrap.servers": cluster.bootstrap_servers, "group.id": f"reader-{isolation}",
        "auto.offset.reset": "earliest", "enable.auto.commit": False,
        "isolation.level": isolation, "enable.partition.eof": True, "log_level": 0})
    consumer.assign([confluent_kafka.TopicPartition(topic, p, 0) for p in range(partitions)])
    values: list[bytes] = []
    at_end: set[int] = set()
    try:
        for _ in range(2_000):  # bounded: each poll waits at most 0.1 s
            message = consumer.poll(0.1)
            if message is None:
                continue
            error, partition, value = message.error(), message.partition(), message.value()
            if error is not None:
                if error.code() == confluent_kafka.KafkaError._PARTITION_EOF:
                    assert partition is not None
                    at_end.add(partition)
                    if len(at_end) == partitions and len(values) >= expected:
                        break
                continue
            assert value is not None
            values.append(value)
    finally:
        consumer.close()
    return values


def group_stable_offsets(cluster: LocalCluster, group: str, topic: str,
                         partitions: int) -> dict[int, tuple[str, int]]:
    """The group's committed offsets of ``topic`` as its coordinator answers an OffsetFetch
    with ``require_stable`` (what a read_committed consumer sends): partition -> (error,
    offset)."""
    broker_id = next(iter(cluster.brokers))
    (found,) = broker_call(cluster, broker_id, FindCoordinatorRequest(
        key_type=0, coordinator_keys=(group,))).coordinators
    answer = broker_call(cluster, found.node_id, OffsetFetchRequest(
        require_stable=True, groups=(OffsetFetchRequestGroup(group_id=group, topics=(
            OffsetFetchRequestTopics(name=topic, partition_indexes=tuple(range(partitions))),
        )),)))
    (fetched,) = answer.groups
    assert fetched.error_code == 0
    return {p.partition_index: (ErrorCode(p.error_code).name, p.committed_offset)
            for t in fetched.topics for p in t.partitions}
