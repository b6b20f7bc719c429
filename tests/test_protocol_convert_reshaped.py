"""DeleteTopics v1-v5 name their topics in ``topic_names``, v6 in ``topics``: a broker
forwarding an old client's request at v6 must carry the names over (written as they came,
the ignorable ``topic_names`` is dropped and nothing is deleted for every client below v6)."""

from __future__ import annotations

import uuid

import pytest

from pykraft.controller.responses import delete_topic_states
from pykraft.messages.kafka.delete_topics_request import DeleteTopicsRequest, DeleteTopicState
from pykraft.protocol.apis import ApiKey
from pykraft.protocol.codec import decode_request, encode_request
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
