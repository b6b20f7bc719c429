"""FindCoordinator from the image, the offsets topic created on the first one, its settings,
and Metadata naming it internal."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest
from replica_fixtures import broker, until, with_records

from pykraft.broker.coordinator_topics import (
    GROUP_KEY,
    TRANSACTION_KEY,
    CoordinatorFinder,
    OffsetsTopicConfig,
    TransactionTopic,
)
from pykraft.broker.group_versions import to_version
from pykraft.broker.responses import metadata_response
from pykraft.errors import ConfigError
from pykraft.group.partitioning import partition_for
from pykraft.ids import OFFSETS_TOPIC_NAME, TRANSACTION_STATE_TOPIC_NAME
from pykraft.image.image import MetadataImage
from pykraft.messages.kafka import create_topics_response as ct
from pykraft.messages.kafka.find_coordinator_request import FindCoordinatorRequest
from pykraft.messages.kafka.metadata_request import MetadataRequest
from pykraft.protocol.apis import ApiKey
from pykraft.protocol.errors import ErrorCode
from pykraft.records.metadata import (
    BrokerRegistrationChangeRecord,
    PartitionRecord,
    TopicRecord,
)
from pykraft.txn.config import TxnConfig

TOPIC_ID = uuid.UUID(int=50)


class Channel:
    """Records what a finder asks the controller; answers each topic with ``error``."""

    def __init__(self, error: ErrorCode = ErrorCode.NONE) -> None:
        self.sent: list[Any] = []
        self.error = error

    async def send(self, body: Any) -> Any:
        self.sent.append(body)
        return ct.CreateTopicsResponse(topics=tuple(
            ct.CreatableTopicResult(
                name=t.name, topic_id=uuid.UUID(int=0), error_code=self.error,
                error_message=None, topic_config_error_code=0,
                num_partitions=-1, replication_factor=-1, configs=None)
            for t in body.topics))


def cluster(brokers: int, *, fenced: tuple[int, ...] = ()) -> MetadataImage:
    image: MetadataImage = with_records(
        MetadataImage(), *(broker(b, 9090 + b) for b in range(1, brokers + 1)),
        *(BrokerRegistrationChangeRecord(broker_id=b, broker_epoch=10, fenced=-1)
          for b in range(1, brokers + 1) if b not in fenced))
    return image


def with_offsets_topic(image: MetadataImage, partitions: int, leader: int) -> MetadataImage:
    result: MetadataImage = with_records(
        image, TopicRecord(name=OFFSETS_TOPIC_NAME, topic_id=TOPIC_ID),
        *(PartitionRecord(partition_id=p, topic_id=TOPIC_ID, replicas=(1,), isr=(1,),
                          leader=leader, leader_epoch=0, partition_epoch=0)
          for p in range(partitions)))
    return result


def finder_of(offsets: OffsetsTopicConfig, channel: Channel,
              transactions: TxnConfig | None = None) -> CoordinatorFinder:
    return CoordinatorFinder({GROUP_KEY: offsets,
                              TRANSACTION_KEY: TransactionTopic(transactions or TxnConfig())},
                             channel, "PLAINTEXT")


def find(keys: tuple[str, ...], key_type: int = 0) -> FindCoordinatorRequest:
    return FindCoordinatorRequest(key_type=key_type, coordinator_keys=keys)


def test_the_first_find_creates_the_offsets_topic_with_the_configured_factor() -> None:
    """Exactly ``offsets.topic.replication.factor``, even with fewer live brokers: Kafka
    does not cap it (the controller refuses it until the cluster is large enough)."""
    async def scenario() -> tuple[Any, Channel]:
        channel = Channel()
        finder = finder_of(OffsetsTopicConfig(num_partitions=7, segment_bytes=1 << 20), channel)
        image = cluster(3, fenced=(3,))
        finder.create_missing(find(("g", "h")), image)
        answer = finder.find(find(("g", "h")), image)
        finder.create_missing(find(("g",)), image)  # one creation at a time
        await until(lambda: channel.sent, "the creation sent")
        await finder.close()
        return answer, channel

    answer, channel = asyncio.run(scenario())
    assert [(c.key, c.error_code) for c in answer.coordinators] == [
        ("g", ErrorCode.COORDINATOR_NOT_AVAILABLE), ("h", ErrorCode.COORDINATOR_NOT_AVAILABLE)]
    (request,) = channel.sent
    (topic,) = request.topics
    assert (topic.name, topic.num_partitions, topic.replication_factor) == (
        OFFSETS_TOPIC_NAME, 7, 3)
    assert {c.name: c.value for c in topic.configs} == {
        "cleanup.policy": "compact", "segment.bytes": str(1 << 20),
        "compression.type": "producer"}


def test_a_refused_creation_is_asked_again_by_the_next_find() -> None:
    """INVALID_REPLICATION_FACTOR (fewer unfenced brokers than the factor): no topic, the
    groups' coordinator not available, and the next FindCoordinator asks again (no retry
    of its own between them)."""
    async def scenario() -> tuple[Any, Channel]:
        channel = Channel(ErrorCode.INVALID_REPLICATION_FACTOR)
        finder = finder_of(OffsetsTopicConfig(num_partitions=3), channel)
        image = cluster(1)
        finder.create_missing(find(("g",)), image)
        for _ in range(3):  # the refusal comes back; nothing more is sent by itself
            await asyncio.sleep(0)
        assert len(channel.sent) == 1
        finder.create_missing(find(("g",)), image)
        await asyncio.sleep(0)
        answer = finder.find(find(("g",)), image)
        await finder.close()
        return answer, channel

    answer, channel = asyncio.run(scenario())
    assert [c.error_code for c in answer.coordinators] == [ErrorCode.COORDINATOR_NOT_AVAILABLE]
    assert [t.replication_factor for r in channel.sent for t in r.topics] == [3, 3]


def test_the_coordinator_is_the_leader_of_the_groups_partition() -> None:
    finder = finder_of(OffsetsTopicConfig(num_partitions=5), Channel())
    image = with_offsets_topic(cluster(2), 5, leader=2)
    (found,) = finder.find(find(("group-1",)), image).coordinators
    assert (found.error_code, found.node_id, found.host, found.port) == (
        ErrorCode.NONE, 2, "127.0.0.1", 9092)
    assert partition_for("group-1", 5) < 5


def test_a_key_named_again_gets_the_same_entry() -> None:
    """Each distinct key is looked up once: a million duplicates are one entry repeated
    (the codec writes it once and copies its bytes)."""
    finder = finder_of(OffsetsTopicConfig(num_partitions=5), Channel())
    image = with_offsets_topic(cluster(2), 5, leader=2)
    found = finder.find(find(("a", "b", "a")), image).coordinators
    assert [c.key for c in found] == ["a", "b", "a"] and found[0] is found[2]


def test_no_leader_yet_is_coordinator_not_available() -> None:
    finder = finder_of(OffsetsTopicConfig(num_partitions=3), Channel())
    image = with_offsets_topic(cluster(1), 3, leader=-1)
    request = find(("g",))
    answer = finder.find(request, image)
    (found,) = answer.coordinators
    assert found.error_code == ErrorCode.COORDINATOR_NOT_AVAILABLE and found.node_id == -1
    assert found.error_message == ""  # Kafka's batched entries set none: empty
    old = to_version(ApiKey.FIND_COORDINATOR, 3, answer, request)
    assert (old.error_code, old.error_message) == (
        ErrorCode.COORDINATOR_NOT_AVAILABLE, "The coordinator is not available.")


def test_a_transactional_id_creates_the_transaction_state_topic_as_kafka() -> None:
    """Kafka's ``TransactionLog`` configs: compacted, uncompressed, no unclean election,
    ``transaction.state.log.min.isr`` replicas in sync."""
    async def scenario() -> tuple[Any, Channel]:
        channel = Channel()
        finder = finder_of(OffsetsTopicConfig(), channel, TxnConfig(
            log_partitions=4, log_replication_factor=2, log_min_isr=1,
            log_segment_bytes=1 << 20))
        image = cluster(1)
        finder.create_missing(find(("t",), key_type=1), image)
        answer = finder.find(find(("t",), key_type=1), image)
        await until(lambda: channel.sent, "the creation sent")
        await finder.close()
        return answer, channel

    answer, channel = asyncio.run(scenario())
    assert [c.error_code for c in answer.coordinators] == [ErrorCode.COORDINATOR_NOT_AVAILABLE]
    ((topic,),) = [r.topics for r in channel.sent]
    assert (topic.name, topic.num_partitions, topic.replication_factor) == (
        TRANSACTION_STATE_TOPIC_NAME, 4, 2)
    assert {c.name: c.value for c in topic.configs} == {
        "unclean.leader.election.enable": "false", "compression.type": "uncompressed",
        "cleanup.policy": "compact", "min.insync.replicas": "1",
        "segment.bytes": str(1 << 20)}


def test_an_unknown_key_type_is_an_invalid_request() -> None:
    finder = finder_of(OffsetsTopicConfig(), Channel())
    (share,) = finder.find(find(("s",), key_type=2), cluster(1)).coordinators
    assert share.error_code == ErrorCode.INVALID_REQUEST


@pytest.mark.parametrize(("key", "value"), [
    ("offsets.topic.num.partitions", "0"), ("offsets.topic.replication.factor", "x"),
    ("offsets.commit.timeout.ms", "-1"), ("offsets.topic.segment.bytes", "0")])
def test_bad_settings_are_refused_naming_the_key(key: str, value: str) -> None:
    with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
        OffsetsTopicConfig.from_properties({key: value})


def test_settings_default_to_kafkas() -> None:
    config = OffsetsTopicConfig.from_properties({"offsets.topic.replication.factor": "1"})
    assert (config.num_partitions, config.replication_factor, config.segment_bytes,
            config.commit_timeout_ms) == (50, 1, 104857600, 5000)


def test_metadata_names_the_offsets_topic_internal() -> None:
    image = with_offsets_topic(cluster(1), 1, leader=1)
    request = MetadataRequest(topics=None, allow_auto_topic_creation=False,
                              include_topic_authorized_operations=False)
    body = metadata_response(image, request, version=12, self_id=1, cluster_id="c",
                             listener="PLAINTEXT")
    assert [(t.name, t.is_internal) for t in body.topics] == [(OFFSETS_TOPIC_NAME, True)]


def test_an_existing_topics_partition_count_wins_over_the_setting() -> None:
    image: MetadataImage = with_records(
        cluster(2), TopicRecord(name=OFFSETS_TOPIC_NAME, topic_id=TOPIC_ID),
        *(PartitionRecord(partition_id=p, topic_id=TOPIC_ID, replicas=(p + 1,), isr=(p + 1,),
                          leader=p + 1, leader_epoch=0, partition_epoch=0) for p in (0, 1)))
    finder = finder_of(OffsetsTopicConfig(num_partitions=50), Channel())
    groups = [f"group-{i}" for i in range(20)]
    found = finder.find(find(tuple(groups)), image).coordinators
    assert [c.node_id for c in found] == [partition_for(g, 2) + 1 for g in groups]
