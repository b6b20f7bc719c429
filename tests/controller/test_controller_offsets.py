"""The core may append control records (a voter change) between the controller's writes:
the controller takes the offsets the core assigns instead of predicting them."""

from __future__ import annotations

from controller_harness import Cluster, create_topic  # type: ignore[import-not-found]

from pykraft.messages.kafka.create_topics_response import CreateTopicsResponse
from pykraft.protocol.errors import ErrorCode


def test_writes_after_a_control_batch_the_core_appended() -> None:
    cluster = Cluster()
    cluster.elect()
    cluster.start_brokers([None])
    raft = cluster.raft
    raft.batches.append((raft.end_offset, raft.epoch, [b"voters"], True))  # a VotersRecord
    response = cluster.call(create_topic("after-voters", 2))
    assert isinstance(response, CreateTopicsResponse)
    assert response.topics[0].error_code == ErrorCode.NONE
    assert "after-voters" in cluster.controller.committed_image.topics.by_name
    assert cluster.controller.next_offset == raft.end_offset
    assert cluster.replayed_image() == cluster.controller.committed_image
