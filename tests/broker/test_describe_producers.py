"""DescribeProducers on a partition's replicas: what Kafka's ``activeProducerState`` shows."""

from __future__ import annotations

import uuid
from pathlib import Path

from replica_fixtures import hosted, produce, replicas_of, topic, with_records

from pykraft.broker.describe_producers import describe_producers
from pykraft.image.image import MetadataImage
from pykraft.messages.kafka.describe_producers_request import (
    DescribeProducersRequest,
    TopicRequest,
)
from pykraft.messages.kafka.describe_producers_response import ProducerState
from pykraft.protocol.errors import ErrorCode

T1 = uuid.UUID(int=11)


def ask(*topics: tuple[str, tuple[int, ...]]) -> DescribeProducersRequest:
    return DescribeProducersRequest(topics=tuple(
        TopicRequest(name=name, partition_indexes=indexes) for name, indexes in topics))


def test_leader_and_follower_show_their_producers(tmp_path: Path) -> None:
    image = with_records(MetadataImage(), *topic("t", T1, (1, 2)))
    leader, follower = replicas_of(tmp_path, 1, image), replicas_of(tmp_path, 2, image)
    produce(leader, [b"a", b"b"], producer_id=5, epoch=1, sequence=0)
    produce(leader, [b"c"], producer_id=6, epoch=0, sequence=0, transactional=True)
    answer = describe_producers(ask(("t", (0,))), leader, frozenset())
    [part] = answer.topics[0].partitions
    assert part.error_code == ErrorCode.NONE
    assert sorted(part.active_producers, key=lambda p: p.producer_id) == [
        ProducerState(producer_id=5, producer_epoch=1, last_sequence=1, last_timestamp=1_001,
                      coordinator_epoch=-1, current_txn_start_offset=-1),
        ProducerState(producer_id=6, producer_epoch=0, last_sequence=0, last_timestamp=1_000,
                      coordinator_epoch=-1, current_txn_start_offset=2),
    ]
    assert hosted(follower).producer_state.producers == {}
    [empty] = describe_producers(ask(("t", (0,))), follower, frozenset()).topics[0].partitions
    assert empty.error_code == ErrorCode.NONE and empty.active_producers == ()


def test_refusals_per_topic_and_partition(tmp_path: Path) -> None:
    image = with_records(MetadataImage(), *topic("t", T1, (1,)))
    leader = replicas_of(tmp_path, 1, image)
    answer = describe_producers(ask(("t", (0, 9)), ("nope", (0,)), ("bad/name", (0,))),
                                leader, frozenset())
    codes = [[p.error_code for p in t.partitions] for t in answer.topics]
    assert codes == [[ErrorCode.NONE, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION],
                     [ErrorCode.UNKNOWN_TOPIC_OR_PARTITION],
                     [ErrorCode.INVALID_TOPIC_EXCEPTION]]
    assert answer.topics[2].partitions[0].error_message is not None
    denied = describe_producers(ask(("t", (0,))), leader, frozenset({"t"}))
    assert denied.topics[0].partitions[0].error_code == ErrorCode.TOPIC_AUTHORIZATION_FAILED
