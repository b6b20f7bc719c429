"""The admin client's DescribeTopicPartitions pages (Kafka's admin client's paging), against
the broker's handler over an image, and its fallback when the broker does not serve it; the
``--describe`` lines with ELR read from it."""

from __future__ import annotations

import asyncio
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent / "broker"))
from replica_fixtures import broker, topic, with_records

from pykraft.broker.describe_topic_partitions import describe_topic_partitions
from pykraft.image.acls import AclsImage
from pykraft.image.image import MetadataImage
from pykraft.messages.kafka.describe_topic_partitions_request import (
    DescribeTopicPartitionsRequest,
)
from pykraft.security.api_rules import AuthorizerCache
from pykraft.security.session import KafkaPrincipal, Session
from pykraft.tools.admin_client import (
    AdminClient,
    ApiError,
    PartitionMetadata,
    UnsupportedApiError,
    admin_settings,
)
from pykraft.tools.topics_tool import partition_line

IMAGE = with_records(MetadataImage(), broker(1, 9092),
                     *topic("a", uuid.UUID(int=1), (1,), (1,), (1,)),
                     *topic("b", uuid.UUID(int=2), (1,), (1,)), *topic("c", uuid.UUID(int=3), (1,)))
ANYONE = AuthorizerCache(None).access(AclsImage, Session(KafkaPrincipal("User", "x"), "h"))


class ImageBroker(AdminClient):
    """Answers DescribeTopicPartitions with the broker's handler (or not at all)."""

    def __init__(self, *, serves: bool = True) -> None:
        super().__init__(admin_settings("127.0.0.1:9"))
        self.serves = serves
        self.asked: list[tuple[list[str], tuple[str, int] | None]] = []

    async def request(self, body: Any) -> Any:
        assert isinstance(body, DescribeTopicPartitionsRequest)
        if not self.serves:
            raise UnsupportedApiError("the peer speaks no version of api 75 that we do")
        cursor = body.cursor
        self.asked.append(([t.name for t in body.topics],
                           None if cursor is None else (cursor.topic_name,
                                                        cursor.partition_index)))
        return describe_topic_partitions(IMAGE, body, ANYONE, listener="PLAINTEXT",
                                         partition_cap=2000)


def partitions(client: AdminClient, names: list[str],
               limit: int) -> dict[str, tuple[PartitionMetadata, ...]] | None:
    return asyncio.run(client.topic_partitions(names, limit))


def test_pages_as_kafka_s_admin_client_asks_them() -> None:
    client = ImageBroker()
    found = partitions(client, ["c", "a", "b"], 2)
    assert found is not None
    assert {name: [p.partition for p in parts] for name, parts in found.items()} == {
        "a": [0, 1, 2], "b": [0, 1], "c": [0]}
    # broker 1 is registered fenced: its replica is offline; ELR read as empty lists
    assert found["a"][0] == PartitionMetadata(0, 1, 0, (1,), (1,), (1,), (), ())
    assert client.asked == [(["a", "b", "c"], None), (["a", "b", "c"], ("a", 2)),
                            (["b", "c"], ("b", 1))]


def test_a_limit_spent_at_a_topic_s_end_asks_the_next_topic_without_a_cursor() -> None:
    client = ImageBroker()
    partitions(client, ["a", "b"], 3)
    assert client.asked == [(["a", "b"], None), (["b"], None)]


def test_a_topic_in_error_fails_and_a_broker_without_the_api_falls_back() -> None:
    with pytest.raises(ApiError, match="This server does not host this topic-partition"):
        partitions(ImageBroker(), ["a", "gone"], 10)
    assert partitions(ImageBroker(serves=False), ["a"], 10) is None


def test_the_partition_line_prints_elr_as_read() -> None:
    part = PartitionMetadata(0, 1, 0, (1, 2), (1,), (), (2,), ())
    assert partition_line("t", part) == ("\tTopic: t\tPartition: 0\tLeader: 1\tReplicas: 1,2"
                                         "\tIsr: 1\tElr: 2\tLastKnownElr: ")
