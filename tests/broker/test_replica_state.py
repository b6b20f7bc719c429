"""The broker's local changes between images and topic settings (the replicas' own rules
are tested in tests/replica)."""

from __future__ import annotations

import uuid

import pytest
from replica_fixtures import topic, with_records

from pykraft.broker.replica_state import local_changes
from pykraft.broker.topic_settings import topic_settings
from pykraft.errors import ConfigError
from pykraft.ids import TopicPartition
from pykraft.image.image import MetadataImage
from pykraft.image.topics import TopicsImage
from pykraft.records.metadata import (
    PartitionChangeRecord,
    RemoveTopicRecord,
)

ME = 1
T1 = uuid.UUID(int=1)


def test_a_new_topic_makes_this_broker_leader_or_follower_where_it_has_a_replica() -> None:
    image = with_records(MetadataImage(), *topic("t", T1, (1, 2), (2, 1), (2, 3)))
    changes = local_changes(TopicsImage(), image.topics, ME)
    assert [p.tp for p in changes.leaders] == [TopicPartition("t", 0)]
    assert [p.tp for p in changes.followers] == [TopicPartition("t", 1)]
    assert changes.deleted == ()


def test_replaying_the_same_image_changes_nothing() -> None:
    image = with_records(MetadataImage(), *topic("t", T1, (1,)))
    assert not local_changes(image.topics, image.topics, ME)
    again = with_records(image)  # a batch without topic records: an equal image
    assert not local_changes(image.topics, again.topics, ME)


def test_a_leader_change_moves_the_partition_and_bumps_the_epoch() -> None:
    before = with_records(MetadataImage(), *topic("t", T1, (1, 2)))
    after = with_records(before, PartitionChangeRecord(partition_id=0, topic_id=T1, leader=2))
    changes = local_changes(before.topics, after.topics, ME)
    (follower,) = changes.followers
    assert (follower.registration.leader, follower.registration.leader_epoch) == (2, 1)
    assert not changes.leaders and not changes.deleted


def test_deleted_recreated_and_reassigned_partitions_are_deletes() -> None:
    before = with_records(MetadataImage(), *topic("gone", T1, (1,)),
                          *topic("again", uuid.UUID(int=2), (1,)),
                          *topic("moved", uuid.UUID(int=3), (1, 2)))
    after = with_records(before, RemoveTopicRecord(topic_id=T1),
                         RemoveTopicRecord(topic_id=uuid.UUID(int=2)),
                         *topic("again", uuid.UUID(int=4), (1,)),
                         PartitionChangeRecord(partition_id=0, topic_id=uuid.UUID(int=3),
                                               replicas=(2,), isr=(2,), leader=2))
    changes = local_changes(before.topics, after.topics, ME)
    assert changes.deleted == (TopicPartition("again", 0), TopicPartition("gone", 0),
                               TopicPartition("moved", 0))
    assert [(p.tp, p.topic_id) for p in changes.leaders] == [
        (TopicPartition("again", 0), uuid.UUID(int=4))]


def test_topic_settings_prefer_the_topic_then_the_broker_then_kafka() -> None:
    default = topic_settings({}, {})
    assert (default.log.segment_bytes, default.log.retention_ms, default.min_insync_replicas,
            default.append.compression_type) == (1 << 30, 7 * 24 * 3600 * 1000, 1, "producer")
    broker = {"log.segment.bytes": "2048", "log.retention.hours": "1",
              "log.cleanup.policy": "compact", "message.max.bytes": "100"}
    from_broker = topic_settings({}, broker)
    assert (from_broker.log.segment_bytes, from_broker.log.retention_ms,
            from_broker.log.delete, from_broker.append.compacted,
            from_broker.append.max_message_bytes) == (2048, 3_600_000, False, True, 100)
    own = topic_settings({"segment.bytes": "4096", "retention.ms": "5",
                          "cleanup.policy": "compact,delete"}, broker)
    assert (own.log.segment_bytes, own.log.retention_ms, own.log.delete,
            own.append.compacted) == (4096, 5, True, True)
    internal = topic_settings({"segment.bytes": "4096", "internal.segment.bytes": "300"}, broker)
    assert internal.log.segment_bytes == 300  # Kafka's LogConfig.segmentSize()


def test_a_bad_topic_setting_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match=r"segment\.bytes"):
        topic_settings({"segment.bytes": "many"}, {})
    with pytest.raises(ConfigError):
        topic_settings({"segment.bytes": "1"}, {})
