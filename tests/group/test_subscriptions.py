"""Consumer protocol subscription and assignment, read from and written as the bytes Kafka's
Java client wrote (``ConsumerProtocol.serializeSubscription/serializeAssignment`` of
kafka-clients 3.9.0)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pykraft.errors import MessageDecodeError
from pykraft.group.subscriptions import read_consumer_protocol
from pykraft.messages import encode
from pykraft.messages.kafka.consumer_protocol_assignment import ConsumerProtocolAssignment
from pykraft.messages.kafka.consumer_protocol_assignment import TopicPartition as Assigned
from pykraft.messages.kafka.consumer_protocol_subscription import ConsumerProtocolSubscription
from pykraft.messages.kafka.consumer_protocol_subscription import TopicPartition as Owned

# Subscription(["t1", "t2"], null userData, owned [t1-0], generation 4, rack "r1") at v3.
JAVA_SUBSCRIPTION = bytes.fromhex(
    "0003000000020002743100027432ffffffff000000010002743100000001000000000000000400027231"
)
# Assignment([t1-0, t1-2, t2-1]) at v3.
JAVA_ASSIGNMENT = bytes.fromhex(
    "00030000000200027431000000020000000000000002000274320000000100000001ffffffff"
)


def test_reads_and_writes_a_java_subscription() -> None:
    subscription = ConsumerProtocolSubscription(
        topics=("t1", "t2"),
        user_data=None,
        owned_partitions=(Owned("t1", (0,)),),
        generation_id=4,
        rack_id="r1",
    )
    assert read_consumer_protocol(ConsumerProtocolSubscription, JAVA_SUBSCRIPTION) == (
        3, subscription
    )
    assert b"\x00\x03" + encode(subscription, 3) == JAVA_SUBSCRIPTION


def test_reads_and_writes_a_java_assignment() -> None:
    assignment = ConsumerProtocolAssignment((Assigned("t1", (0, 2)), Assigned("t2", (1,))))
    assert read_consumer_protocol(ConsumerProtocolAssignment, JAVA_ASSIGNMENT) == (3, assignment)
    assert b"\x00\x03" + encode(assignment, 3) == JAVA_ASSIGNMENT


def test_a_newer_version_is_read_with_the_newest_layout() -> None:
    newer = b"\x00\x07" + JAVA_ASSIGNMENT[2:] + b"extra"
    version, assignment = read_consumer_protocol(ConsumerProtocolAssignment, newer)
    assert version == 7
    assert assignment == read_consumer_protocol(ConsumerProtocolAssignment, JAVA_ASSIGNMENT)[1]


@pytest.mark.parametrize("data", [b"", b"\x00", b"\xff\xff", JAVA_SUBSCRIPTION[:-1]])
def test_malformed_subscriptions_raise_decode_errors(data: bytes) -> None:
    with pytest.raises(MessageDecodeError):
        read_consumer_protocol(ConsumerProtocolSubscription, data)


@given(st.lists(st.text(max_size=5), max_size=4), st.integers(0, 3))
def test_subscriptions_round_trip(topics: list[str], version: int) -> None:
    sub = ConsumerProtocolSubscription(topics=tuple(topics))
    data = version.to_bytes(2, "big") + encode(sub, version)
    assert read_consumer_protocol(ConsumerProtocolSubscription, data) == (version, sub)
