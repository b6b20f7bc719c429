"""convert() carries fields Kafka reshaped between versions (DeleteTopics v1-v5 topic_names
vs v6 topics): dropping them deleted nothing for every client below v6."""

from __future__ import annotations

import datetime
import uuid

import pytest
from kio.schema.delete_topics.v6.request import DeleteTopicsRequest, DeleteTopicState
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
