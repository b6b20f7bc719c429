"""convert() carries fields Kafka reshaped between versions (DeleteTopics v1-v5 topic_names
vs v6 topics: dropping them deleted nothing for every client below v6), and converts the
entries of nullable lists (old Metadata topics reached the broker as old classes)."""

from __future__ import annotations

import datetime
import uuid

import pytest
from kio.schema.delete_topics.v6.request import DeleteTopicsRequest, DeleteTopicState
from kio.schema.metadata.v4 import request as metadata_v4
from kio.schema.metadata.v13 import request as metadata_v13
from kio.schema.types import TopicName
from kio.static.primitive import i32Timedelta

from pykraft.protocol.codec import request_type
from pykraft.protocol.convert import convert

TIMEOUT = i32Timedelta.parse(datetime.timedelta(seconds=30))


@pytest.mark.parametrize("version", range(1, 6))
def test_topic_names_become_named_topic_states(version: int) -> None:
    old = request_type(20, version)(topic_names=(TopicName("a"), TopicName("b")),
                                           timeout=TIMEOUT)
    latest = convert(old, DeleteTopicsRequest)
    assert [(t.name, t.topic_id) for t in latest.topics] == [("a", None), ("b", None)]
    assert convert(latest, type(old)) == old


def test_v6_topics_written_at_v5_keep_their_names() -> None:
    latest = DeleteTopicsRequest(topics=(
        DeleteTopicState(name=TopicName("a"), topic_id=uuid.uuid4()),
        DeleteTopicState(name=None, topic_id=uuid.uuid4())), timeout=TIMEOUT)
    assert convert(latest, request_type(20, 5)).topic_names == ("a",)


def test_nullable_lists_of_entities_are_converted_too() -> None:
    """Metadata v1+ topics are ``tuple[Topic, ...] | None``: their entries must become the
    target version's class (v0-v9 topics have no topic_id)."""
    old = metadata_v4.MetadataRequest(
        topics=(metadata_v4.MetadataRequestTopic(name=TopicName("a")),),
        allow_auto_topic_creation=False)
    latest = convert(old, metadata_v13.MetadataRequest)
    assert latest.topics is not None
    assert (latest.topics[0].topic_id, latest.topics[0].name) == (None, "a")
