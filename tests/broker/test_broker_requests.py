"""A broker's request handling through :meth:`BrokerDispatcher.handle`, on wire frames:
the quorum APIs it forwards (DescribeQuorum, AddRaftVoter, RemoveRaftVoter, as Kafka 4
brokers do), and the error response a failing handler gives instead of a dropped connection.
"""

from __future__ import annotations

import asyncio
import uuid
from types import SimpleNamespace
from typing import Any

import pytest

from pykraft.broker import dispatch
from pykraft.broker.dispatch import BrokerDispatcher
from pykraft.errors import NetworkError
from pykraft.messages.kafka.metadata_request import MetadataRequest, MetadataRequestTopic
from pykraft.protocol.apis import Listener, api_spec
from pykraft.protocol.codec import api_key_of, decode_response, encode_request
from pykraft.protocol.errors import ErrorCode
from pykraft.protocol.header import RequestHeader
from pykraft.raft import rpc
from pykraft.security.session import anonymous

DIRECTORY = uuid.UUID(int=7)


class NoController:
    """A controller channel while no controller is reachable."""

    def __init__(self) -> None:
        self.sent = 0

    async def send(self, body: Any, client_id: str | None = None) -> Any:
        self.sent += 1
        raise NetworkError("no active controller is known yet")


class FailingImage:
    """A metadata listener whose image cannot be read: every local answer fails."""

    @property
    def image(self) -> Any:
        raise RuntimeError("image unavailable")


def broker(channel: object, metadata: object = FailingImage()) -> BrokerDispatcher:
    node = SimpleNamespace(settings=SimpleNamespace(
        node_id=1, controller=SimpleNamespace(properties={})))
    return BrokerDispatcher(node, metadata, channel,  # type: ignore[arg-type]
                            cluster_id="cid", listener_name="PLAINTEXT")


def ask(dispatcher: BrokerDispatcher, body: Any, version: int) -> Any:
    api_key = api_key_of(body)
    frame = encode_request(RequestHeader(api_key, version, 9, "test"), body)
    answer = asyncio.run(dispatcher.handle(frame, anonymous("127.0.0.1:5000")))
    return decode_response(api_key, version, answer).body


@pytest.fixture(autouse=True)
def quick_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dispatch, "FORWARD_BACKOFF_MS", 1)
    monkeypatch.setattr(dispatch, "FORWARD_TIMEOUT_MS", 100)


@pytest.mark.parametrize("body", [
    rpc.describe_quorum_request(),
    rpc.add_voter_request("cid", 4, DIRECTORY, [("CONTROLLER", "h", 9094)]),
    rpc.remove_voter_request("cid", 4, DIRECTORY),
], ids=["DescribeQuorum", "AddRaftVoter", "RemoveRaftVoter"])
def test_quorum_apis_are_advertised_and_forwarded(body: Any) -> None:
    api_key = api_key_of(body)
    spec = api_spec(api_key)
    assert spec is not None and Listener.BROKER in spec.listeners  # advertised on brokers
    assert api_key in dispatch.BROKER_APIS
    channel = NoController()
    refused = ask(broker(channel), body, 0)
    assert refused.error_code == ErrorCode.NOT_CONTROLLER
    assert channel.sent > 1


def test_a_failing_handler_answers_unknown_server_error_per_topic() -> None:
    request = MetadataRequest(topics=(MetadataRequestTopic(name="t"),),
                              allow_auto_topic_creation=False)
    answer = ask(broker(NoController()), request, 4)
    assert [(t.name, t.error_code) for t in answer.topics] == [
        ("t", ErrorCode.UNKNOWN_SERVER_ERROR)]
