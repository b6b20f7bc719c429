"""What a Kafka client's own test suite (librdkafka's) takes for granted of a broker with
Kafka's defaults, on a real controller and two brokers: topics created on demand by
Metadata with the brokers' ``num.partitions`` and ``default.replication.factor``, the same
defaults for a CreateTopics that leaves them to the cluster (-1), an illegal name refused
as invalid rather than unknown, a producer writing to a topic nobody created, a commit for
a topic that does not exist refused, and a compacted topic cleaned every
``log.cleaner.backoff.ms`` rather than on the retention task's 5 minutes."""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Message, Producer, TopicPartition

from pykraft.errors import PyKraftError
from pykraft.ids import TopicPartition as Partition
from pykraft.log.log_manager import CLEANER_OFFSET_CHECKPOINT
from pykraft.messages.kafka.create_topics_request import CreatableTopic, CreateTopicsRequest
from pykraft.messages.kafka.metadata_request import MetadataRequest, MetadataRequestTopic
from pykraft.protocol.errors import ErrorCode
from pykraft.storage.offset_checkpoints import read_offset_checkpoint
from pykraft.tools.local_cluster import LocalCluster

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parent.parent / "acceptance"))
from broker_harness import broker_call, create_topic, running_cluster
from process_harness import wait_for

PROPERTIES = {"pykraft.shutdown.timeout.ms": "3000", "num.partitions": "3",
              "default.replication.factor": "2", "log.cleaner.backoff.ms": "200"}
SHAPE = (3, 2)  # partitions, replicas of each


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with running_cluster(tmp_path_factory.mktemp("defaults") / "c", PROPERTIES,
                         brokers=2) as made:
        yield made


def call(cluster: LocalCluster, body: Any) -> Any:
    """``body``'s answer from the first broker, or None while it cannot answer."""
    try:
        return broker_call(cluster, cluster.brokers[0], body)
    except (OSError, PyKraftError, TimeoutError):
        return None


def metadata(cluster: LocalCluster, name: str, *, auto_create: bool = True) -> Any:
    answer = wait_for("a Metadata answer", lambda: call(cluster, MetadataRequest(
        topics=(MetadataRequestTopic(name=name),),
        allow_auto_topic_creation=auto_create, include_topic_authorized_operations=False)))
    (topic,) = answer.topics
    return topic


def shape_once_led(cluster: LocalCluster, name: str) -> tuple[int, int]:
    """The topic's partition count and replication factor once every partition has a
    leader (asking without creating)."""
    def led() -> tuple[int, int] | None:
        topic = metadata(cluster, name, auto_create=False)
        parts = topic.partitions
        if topic.error_code != ErrorCode.NONE or not all(p.leader_id >= 0 for p in parts):
            return None
        (factor,) = {len(p.replica_nodes) for p in parts}
        return len(parts), factor
    shape: tuple[int, int] = wait_for(f"{name} to be created and led", led, 30)
    return shape


def test_metadata_creates_a_missing_topic_with_the_broker_defaults(
        cluster: LocalCluster) -> None:
    assert metadata(cluster, "wanted", auto_create=False).error_code == (
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    assert metadata(cluster, "not-wanted", auto_create=False).error_code == (
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    first = metadata(cluster, "wanted")
    assert first.error_code in (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.NONE)
    assert shape_once_led(cluster, "wanted") == SHAPE
    assert metadata(cluster, "not-wanted", auto_create=False).error_code == (
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)


@pytest.mark.parametrize("auto_create", [True, False])
def test_an_illegal_name_is_invalid_and_never_created(cluster: LocalCluster,
                                                      auto_create: bool) -> None:
    assert metadata(cluster, "no spaces", auto_create=auto_create).error_code == (
        ErrorCode.INVALID_TOPIC_EXCEPTION)


def test_create_topics_without_counts_takes_the_controller_defaults(
        cluster: LocalCluster) -> None:
    answer = wait_for("a CreateTopics answer", lambda: call(cluster, CreateTopicsRequest(
        topics=(CreatableTopic(name="defaults", num_partitions=-1,
                               replication_factor=-1, assignments=(), configs=()),),
        timeout_ms=10000, validate_only=False)))
    (result,) = answer.topics
    assert (result.error_code, result.num_partitions, result.replication_factor) == (
        ErrorCode.NONE, *SHAPE)
    assert shape_once_led(cluster, "defaults") == SHAPE


def test_a_producer_writes_to_a_topic_nobody_created(cluster: LocalCluster) -> None:
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers,
                         "message.timeout.ms": 30_000})
    delivered: list[tuple[str | None, int]] = []

    def report(error: KafkaError | None, message: Message) -> None:
        delivered.append((None if error is None else error.str(), message.partition() or 0))

    for index in range(10):
        producer.produce("produced", value=str(index).encode(), partition=index % SHAPE[0],
                         on_delivery=report)
    assert producer.flush(45) == 0
    assert Counter(delivered) == Counter((None, index % SHAPE[0]) for index in range(10))
    assert shape_once_led(cluster, "produced") == SHAPE


def test_committing_an_offset_of_a_topic_that_does_not_exist_fails(
        cluster: LocalCluster) -> None:
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "g",
                         "enable.auto.commit": False})
    try:
        with pytest.raises(KafkaException) as refused:
            consumer.commit(offsets=[TopicPartition("never-created", 0, 5)],
                            asynchronous=False)
        assert refused.value.args[0].code() == KafkaError.UNKNOWN_TOPIC_OR_PART
        (stored,) = consumer.committed([TopicPartition("never-created", 0)], timeout=30)
        assert stored.offset < 0
    finally:
        consumer.close()


def _cleaned_to_active(data: Path) -> int | None:
    """Where the cleaner's checkpoint says it cleaned compacted-0 to, once that is the active
    segment's base (None before): a pass that ran while the records were still arriving
    checkpoints a point below it, where nothing had a newer value yet."""
    checkpoint = data / CLEANER_OFFSET_CHECKPOINT
    if not checkpoint.exists():
        return None
    cleaned_to = read_offset_checkpoint(checkpoint).get(Partition("compacted", 0))
    active = max(int(segment.stem) for segment in (data / "compacted-0").glob("*.log"))
    return cleaned_to if cleaned_to is not None and cleaned_to >= active else None


def test_a_compacted_topic_is_cleaned_within_the_cleaner_backoff(cluster: LocalCluster) -> None:
    # a ratio of 0.5 (the default) must be exceeded, as in Kafka: the last dirty segment
    # beside the cleaned two records can sit at it, so any dirt here is enough
    create_topic(cluster.bootstrap_servers, "compacted", 1, 2, {
        "cleanup.policy": "compact", "internal.segment.bytes": "200",
        "min.cleanable.dirty.ratio": "0.01"})
    shape_once_led(cluster, "compacted")
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "linger.ms": 0})
    for index in range(20):  # one batch each: about two per 200-byte segment
        producer.produce("compacted", key=b"k%d" % (index % 2), value=b"v%d" % index)
        assert producer.flush(30) == 0
    replicas = [cluster.nodes[b].data for b in cluster.brokers
                if (cluster.nodes[b].data / "compacted-0").is_dir()]
    assert len(replicas) == 2
    for data in replicas:  # each replica cleans its own log; the consumer reads the leader's
        cleaned_to = wait_for("the cleaner's checkpoint at the active segment",
                              partial(_cleaned_to_active, data), 30)
        # never into the active segment (which starts at 20 when the last one rolled full)
        active = max(int(segment.stem) for segment in (data / "compacted-0").glob("*.log"))
        assert 0 < cleaned_to == active
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "c",
                         "enable.auto.commit": False})
    try:
        consumer.assign([TopicPartition("compacted", 0, 0)])
        read: list[tuple[int, bytes | None]] = []
        while not read or read[-1][0] < 19:
            message = consumer.poll(30)
            assert message is not None and message.error() is None
            read.append((message.offset() or 0, message.value()))
    finally:
        consumer.close()
    assert len(read) < 20  # older values of the two keys are gone below cleaned_to
    assert read[-2:] == [(18, b"v18"), (19, b"v19")]
