"""A Produce whose handling fails on the broker listener: like Kafka's getErrorResponse,
every partition it named is answered UNKNOWN_SERVER_ERROR in the caller's version (the
client settles each one; an answer naming none left them unsettled), and a failed acks=0
request closes the connection."""

from __future__ import annotations

import asyncio
import uuid
from types import SimpleNamespace
from typing import Any

import pytest
from replica_fixtures import client_batch, request, topic, with_records

from pykraft.broker.dispatch import BrokerDispatcher
from pykraft.broker.produce import ProduceHandler
from pykraft.image.image import MetadataImage
from pykraft.messages.kafka import produce_request as req
from pykraft.protocol.apis import ApiKey
from pykraft.protocol.codec import decode_response, encode_request
from pykraft.protocol.errors import ErrorCode
from pykraft.protocol.header import RequestHeader
from pykraft.runtime.listener_dispatch import CloseConnection
from pykraft.security.session import anonymous

CLIENT = anonymous("127.0.0.1:5000")
TOPIC_ID = uuid.UUID(int=5)


class BrokenReplicas:
    """A replica manager whose every partition lookup fails."""

    image = with_records(MetadataImage(), *topic("t", TOPIC_ID, (1,), (1,)))

    def registration(self, topic: str, partition: int) -> Any:
        raise RuntimeError("disk on fire")


def broker() -> BrokerDispatcher:
    node = SimpleNamespace(settings=SimpleNamespace(
        node_id=1, controller=SimpleNamespace(properties={})))
    metadata = SimpleNamespace(image=MetadataImage())
    produce = ProduceHandler(BrokenReplicas(), lambda: 0, "PLAINTEXT")  # type: ignore[arg-type]
    return BrokerDispatcher(node, metadata, None,  # type: ignore[arg-type]
                            cluster_id="cid", listener_name="PLAINTEXT", produce=produce)


def ask(body: req.ProduceRequest, version: int) -> Any:
    frame = encode_request(RequestHeader(ApiKey.PRODUCE, version, 9, "test"), body)
    return decode_response(ApiKey.PRODUCE, version,
                           asyncio.run(broker().handle(frame, CLIENT))).body


@pytest.mark.parametrize("version", [3, 8, 12])
def test_every_partition_named_gets_the_error(version: int) -> None:
    batch = client_batch([b"a"])
    answer = ask(request({0: batch, 2: batch}), version)
    assert [(str(t.name), [(p.index, p.error_code) for p in t.partition_responses])
            for t in answer.responses] == [
        ("t", [(0, ErrorCode.UNKNOWN_SERVER_ERROR), (2, ErrorCode.UNKNOWN_SERVER_ERROR)])]


def test_by_topic_id_from_v13() -> None:
    body = req.ProduceRequest(
        acks=1, timeout_ms=30_000,
        topic_data=(req.TopicProduceData(topic_id=TOPIC_ID, partition_data=(
            req.PartitionProduceData(index=1, records=client_batch([b"a"])),
        )),))
    answer = ask(body, 13)
    assert [(t.topic_id, [(p.index, p.error_code) for p in t.partition_responses])
            for t in answer.responses] == [(TOPIC_ID, [(1, ErrorCode.UNKNOWN_SERVER_ERROR)])]


def test_acks_0_closes_the_connection() -> None:
    with pytest.raises(CloseConnection):
        ask(request({0: client_batch([b"a"])}, acks=0), 9)
