"""ListConfigResources (API 74) from an image: Kafka's types per version, its order by type,
brokers by listener, and UNSUPPORTED_VERSION for a type it does not list."""

from __future__ import annotations

import uuid

import pytest
from replica_fixtures import topic, with_records
from test_describe_topic_partitions import registered  # type: ignore[import-not-found]

from pykraft.broker.list_config_resources import list_config_resources
from pykraft.image.configs import ConfigResourceType as T
from pykraft.image.image import MetadataImage
from pykraft.messages.kafka.list_config_resources_request import ListConfigResourcesRequest
from pykraft.messages.kafka.list_config_resources_response import ListConfigResourcesResponse
from pykraft.protocol.codec import decode_response, encode_response
from pykraft.protocol.errors import ErrorCode
from pykraft.records.metadata import ConfigRecord

LISTENER = "PLAINTEXT"
#: brokers 2 (fenced) and 1 on the listener, 3 on another; topics b and a; a group's and
#: a client-metrics subscription's configs
IMAGE = with_records(
    MetadataImage(), registered(2, fenced=True), registered(1), registered(3, listener="SSL"),
    *topic("b", uuid.UUID(int=2), (1,)), *topic("a", uuid.UUID(int=1), (1,)),
    ConfigRecord(resource_type=T.GROUP, resource_name="g", name="consumer.session.timeout.ms",
                 value="50000"),
    ConfigRecord(resource_type=T.CLIENT_METRICS, resource_name="all", name="interval.ms",
                 value="1000"),
    ConfigRecord(resource_type=T.TOPIC, resource_name="a", name="retention.ms", value="1"))


def ask(version: int, *types: int) -> ListConfigResourcesResponse:
    answer = list_config_resources(IMAGE, ListConfigResourcesRequest(resource_types=types),
                                   version, listener=LISTENER)
    parsed = decode_response(74, version, encode_response(1, 74, version, answer)).body
    assert isinstance(parsed, ListConfigResourcesResponse)
    return parsed


def listed(answer: ListConfigResourcesResponse) -> list[tuple[int, str]]:
    return [(r.resource_type, r.resource_name) for r in answer.config_resources]


def test_v0_lists_client_metrics_subscriptions() -> None:
    answer = ask(0)
    assert answer.error_code == ErrorCode.NONE
    assert listed(answer) == [(T.CLIENT_METRICS, "all")]


def test_every_type_in_kafka_s_order_when_none_is_named() -> None:
    assert listed(ask(1)) == [(T.GROUP, "g"), (T.CLIENT_METRICS, "all"),
                              (T.BROKER_LOGGER, "1"), (T.BROKER_LOGGER, "2"),
                              (T.BROKER, "1"), (T.BROKER, "2"), (T.TOPIC, "a"), (T.TOPIC, "b")]


def test_named_types_answered_in_kafka_s_order_not_the_request_s() -> None:
    assert listed(ask(1, T.TOPIC, T.BROKER, T.TOPIC)) == [
        (T.BROKER, "1"), (T.BROKER, "2"), (T.TOPIC, "a"), (T.TOPIC, "b")]


@pytest.mark.parametrize("types", [(T.UNKNOWN,), (T.TOPIC, 99)])
def test_a_type_kafka_does_not_list_fails_the_whole_request(types: tuple[int, ...]) -> None:
    answer = ask(1, *types)
    assert (answer.error_code, listed(answer)) == (ErrorCode.UNSUPPORTED_VERSION, [])
