"""Metadata and DescribeCluster computed from a broker's image, at every Metadata version."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pykraft.broker.responses import describe_cluster_response, metadata_response
from pykraft.image.image import MetadataDelta, MetadataImage
from pykraft.messages.kafka.describe_cluster_request import DescribeClusterRequest
from pykraft.messages.kafka.metadata_request import MetadataRequest, MetadataRequestTopic
from pykraft.messages.kafka.metadata_response import MetadataResponse
from pykraft.protocol.codec import decode_response, encode_response
from pykraft.protocol.errors import ErrorCode
from pykraft.records.metadata import (
    BrokerEndpoint,
    PartitionRecord,
    RegisterBrokerRecord,
    TopicRecord,
)

SELF = 1
LISTENER = "PLAINTEXT"


def image_of(fenced: dict[int, bool], topics: dict[str, list[tuple[int, ...]]]) -> MetadataImage:
    delta = MetadataDelta(MetadataImage())
    for broker_id, is_fenced in fenced.items():
        delta.replay(RegisterBrokerRecord(
            broker_id=broker_id, incarnation_id=uuid.UUID(int=broker_id), broker_epoch=10,
            end_points=(BrokerEndpoint(name=LISTENER, host=f"h{broker_id}", port=9000 + broker_id,
                                       security_protocol=0),),
            fenced=is_fenced))
    for index, (name, partitions) in enumerate(sorted(topics.items())):
        topic_id = uuid.UUID(int=index + 1)
        delta.replay(TopicRecord(name=name, topic_id=topic_id))
        for partition_id, replicas in enumerate(partitions):
            delta.replay(PartitionRecord(
                partition_id=partition_id, topic_id=topic_id, replicas=replicas, isr=replicas,
                leader=replicas[0] if replicas else -1, leader_epoch=0, partition_epoch=0))
    return delta.apply()


def round_trip(body: MetadataResponse, version: int) -> MetadataResponse:
    """Encode the answer as a broker would at ``version`` and parse it as a client would."""
    parsed = decode_response(3, version, encode_response(7, 3, version, body)).body
    assert isinstance(parsed, MetadataResponse)
    return parsed


def metadata(image: MetadataImage, names: list[str] | None,
             version: int = 13) -> MetadataResponse:
    request = MetadataRequest(
        topics=None if names is None else tuple(
            MetadataRequestTopic(name=n) for n in names),
        allow_auto_topic_creation=False, include_topic_authorized_operations=False)
    return metadata_response(image, request, version=version, self_id=SELF,
                             cluster_id="cid", listener=LISTENER)


def test_lists_unfenced_brokers_and_itself_with_a_live_controller_id() -> None:
    image = image_of({1: True, 2: False, 3: True}, {})
    answer = metadata(image, None)
    assert [b.node_id for b in answer.brokers] == [1, 2]  # 3 is fenced, 1 is us
    assert answer.controller_id == SELF
    assert answer.cluster_id == "cid"


@pytest.mark.parametrize("version", range(14))
def test_requested_topics_found_and_missing(version: int) -> None:
    image = image_of({1: False, 2: True}, {"a": [(1, 2), (2, 1)]})
    answer = metadata(image, ["a", "nope"], version)
    found, missing = answer.topics
    assert found.error_code == ErrorCode.NONE
    assert [p.leader_id for p in found.partitions] == [1, 2]
    assert [p.offline_replicas for p in found.partitions] == [(2,), (2,)]
    assert missing.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_a_topic_named_twice_is_answered_once() -> None:
    """Kafka answers the set of topics a request names (45,000 copies of one name were 45,000
    answers built on the broker's loop)."""
    image = image_of({1: False}, {"a": [(1,)]})
    assert [t.name for t in metadata(image, ["a", "nope", "a", "nope"]).topics] == ["a", "nope"]


@pytest.mark.parametrize("name", ["", "..", "a b", "x" * 250, "caf\u00e9"])
def test_an_illegal_topic_name_is_invalid_not_unknown(name: str) -> None:
    """INVALID_TOPIC_EXCEPTION is fatal in clients; UNKNOWN_TOPIC_OR_PARTITION they retry."""
    (answer,) = metadata(image_of({1: False}, {}), [name]).topics
    assert answer.error_code == ErrorCode.INVALID_TOPIC_EXCEPTION


def test_v0_empty_topic_list_means_all_topics() -> None:
    image = image_of({1: False}, {"a": [(1,)], "b": [(1,)]})
    assert [t.name for t in metadata(image, [], version=0).topics] == ["a", "b"]
    assert [t.name for t in metadata(image, [], version=1).topics] == []


def test_partition_without_leader_reports_leader_not_available() -> None:
    image = image_of({1: False}, {"a": [()]})
    assert metadata(image, ["a"]).topics[0].partitions[0].error_code == (
        ErrorCode.LEADER_NOT_AVAILABLE)


def test_describe_cluster_brokers_only_and_fenced_on_request() -> None:
    image = image_of({1: False, 2: True}, {})

    def ask(endpoint_type: int, include_fenced: bool, version: int = 1) -> Any:
        return describe_cluster_response(image, DescribeClusterRequest(
            endpoint_type=endpoint_type, include_fenced_brokers=include_fenced),
            version=version, self_id=SELF,
            cluster_id="cid", listener=LISTENER, operations=-(2**31))
    assert [b.broker_id for b in ask(1, False).brokers] == [1]
    both = ask(1, True).brokers
    assert [(b.broker_id, b.is_fenced) for b in both] == [(1, False), (2, True)]
    # Kafka 4.4's AuthHelper.computeDescribeClusterResponse, field by field
    mismatched = ask(2, False)
    assert (mismatched.error_code, mismatched.error_message, mismatched.endpoint_type,
            mismatched.brokers) == (
        ErrorCode.MISMATCHED_ENDPOINT_TYPE, "The request was sent to an endpoint of type "
        "BROKER, but we wanted an endpoint of type CONTROLLER", 1, ())
    unknown = ask(3, False)
    assert (unknown.error_code, unknown.error_message) == (
        ErrorCode.UNSUPPORTED_ENDPOINT_TYPE, "Unsupported endpoint type 3")
    assert ask(3, False, version=0).error_code == ErrorCode.INVALID_REQUEST


brokers = st.dictionaries(st.integers(1, 6), st.booleans(), min_size=1, max_size=4)
topics = st.dictionaries(
    st.text("abcxyz-._", min_size=1, max_size=8),
    st.lists(st.lists(st.integers(1, 6), max_size=3, unique=True).map(tuple), max_size=4),
    max_size=4)


@settings(max_examples=60, deadline=None)
@given(brokers, topics, st.integers(0, 13))
def test_every_version_encodes_what_the_image_holds(
    fenced: dict[int, bool], layout: dict[str, list[tuple[int, ...]]], version: int,
) -> None:
    image = image_of(fenced, layout)
    parsed = round_trip(metadata(image, None, version), version)
    assert {t.name: len(t.partitions) for t in parsed.topics} == {
        name: len(parts) for name, parts in layout.items()}
    shown = {b.node_id for b in parsed.brokers}
    assert shown == {b for b, f in fenced.items() if not f or b == SELF}
    if version >= 10:
        assert all(t.topic_id == image.topics.by_name[str(t.name)].topic_id
                   for t in parsed.topics)
