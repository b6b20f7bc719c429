"""DeleteTopics v1-v5 name their topics in ``topic_names``, v6 in ``topics``: a broker
forwarding an old client's request at v6 must carry the names over (written as they came,
the ignorable ``topic_names`` is dropped and nothing is deleted for every client below v6).
And convert() converts the entries of nullable lists (old Metadata topics reached the broker
as old classes)."""

from __future__ import annotations

import uuid

import pytest
from kio.schema.metadata.v4 import request as metadata_v4
from kio.schema.metadata.v13 import request as metadata_v13
from kio.schema.types import TopicName

from pykraft.controller.responses import delete_topic_states
from pykraft.messages.kafka.delete_topics_request import DeleteTopicsRequest, DeleteTopicState
from pykraft.protocol.apis import ApiKey
from pykraft.protocol.codec import decode_request, encode_request
from pykraft.protocol.convert import convert
from pykraft.protocol.header import RequestHeader
from pykraft.runtime.controller_service import controller_body


def _recoded(body: DeleteTopicsRequest, version: int) -> DeleteTopicsRequest:
    request = decode_request(encode_request(
        RequestHeader(ApiKey.DELETE_TOPICS, version, 1, "c"), body))
    assert isinstance(request.body, DeleteTopicsRequest)
    return request.body


@pytest.mark.parametrize("version", range(1, 6))
def test_topic_names_reach_the_controller_as_named_topic_states(version: int) -> None:
    sent = _recoded(DeleteTopicsRequest(topic_names=("a", "b"), timeout_ms=30_000), version)
    taken = controller_body(sent)  # as a broker sends it on
    assert isinstance(taken, DeleteTopicsRequest)
    forwarded = _recoded(taken, 6)
    assert delete_topic_states(forwarded) == (DeleteTopicState(name="a"),
                                              DeleteTopicState(name="b"))


def test_v6_topics_are_taken_as_they_are() -> None:
    topics = (DeleteTopicState(name="a"), DeleteTopicState(topic_id=uuid.uuid4()))
    body = _recoded(DeleteTopicsRequest(topics=topics, timeout_ms=30_000), 6)
    assert controller_body(body) is body and delete_topic_states(body) == topics


def test_nullable_lists_of_entities_are_converted_too() -> None:
    """Metadata v1+ topics are ``tuple[Topic, ...] | None``: their entries must become the
    target version's class (v0-v9 topics have no topic_id)."""
    old = metadata_v4.MetadataRequest(
        topics=(metadata_v4.MetadataRequestTopic(name=TopicName("a")),),
        allow_auto_topic_creation=False)
    latest = convert(old, metadata_v13.MetadataRequest)
    assert latest.topics is not None
    assert (latest.topics[0].topic_id, latest.topics[0].name) == (None, "a")
