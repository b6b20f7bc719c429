"""A broker retries forwarded admin requests while the active controller changes; to a
controller that takes Envelope it sends them inside one, as its client's (Kafka's
ForwardingManager); it relays a write's answer once its image holds the write."""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

import pytest

from pykraft.broker import dispatch
from pykraft.broker.dispatch import BrokerDispatcher
from pykraft.controller.responses import error_codes, error_response, is_not_controller
from pykraft.errors import NetworkError, UnsupportedVersionError
from pykraft.messages.kafka.create_topics_request import CreatableTopic, CreateTopicsRequest
from pykraft.messages.kafka.create_topics_response import CreateTopicsResponse
from pykraft.messages.kafka.describe_quorum_request import DescribeQuorumRequest
from pykraft.messages.kafka.envelope_request import EnvelopeRequest
from pykraft.messages.kafka.envelope_response import EnvelopeResponse
from pykraft.protocol.apis import ApiKey
from pykraft.protocol.codec import RequestFrame, encode_request, encode_response
from pykraft.protocol.errors import ErrorCode
from pykraft.protocol.header import RequestHeader
from pykraft.raft import rpc
from pykraft.runtime.listener_dispatch import CloseConnection
from pykraft.security.principal_serde import deserialize_principal
from pykraft.security.session import KafkaPrincipal, Session

REQUEST = CreateTopicsRequest(topics=tuple(
    CreatableTopic(name=name, num_partitions=1, replication_factor=1,
                   assignments=(), configs=()) for name in ("a", "b")))
FRAME = RequestFrame(RequestHeader(ApiKey.CREATE_TOPICS, 7, 1, "test"), REQUEST,
                     ApiKey.CREATE_TOPICS, 7)


class ScriptedChannel:
    """Answers each send with the next scripted outcome (a response or an exception); a
    DescribeQuorum, aside, with ``high_watermark``."""

    def __init__(self, *outcomes: object, high_watermark: int = 0) -> None:
        self.outcomes = list(outcomes)
        self.sent = 0
        self.client_ids: set[str | None] = set()
        self.bodies: list[Any] = []
        self.high_watermark = high_watermark
        self.quorum_asked = 0

    async def send(self, body: Any, client_id: str | None = None) -> Any:
        if isinstance(body, DescribeQuorumRequest):
            self.quorum_asked += 1
            return rpc.describe_quorum_response(1, 1, self.high_watermark, [], [])
        self.sent += 1
        self.client_ids.add(client_id)
        self.bodies.append(body)
        outcome = self.outcomes[min(self.sent, len(self.outcomes)) - 1]
        if isinstance(outcome, Exception):
            raise outcome
        return outcome


class HeldImage:
    """A broker's image that has replayed up to ``end`` (exclusive) until told more."""

    def __init__(self, end: int) -> None:
        self.end = end
        self.moved = asyncio.Event()

    async def reached(self, end_offset: int) -> None:
        while self.end < end_offset:
            self.moved.clear()
            await self.moved.wait()

    def replay_to(self, end: int) -> None:
        self.end = end
        self.moved.set()


def broker_on(channel: ScriptedChannel, image: HeldImage | None = None) -> BrokerDispatcher:
    broker = object.__new__(BrokerDispatcher)  # forwarding needs the channel and the image
    broker._channel = channel  # type: ignore[assignment]
    broker._metadata = image or HeldImage(0)  # type: ignore[assignment]
    return broker


def forward(channel: ScriptedChannel) -> Any:
    return forward_on(channel, HeldImage(0))


def forward_on(channel: ScriptedChannel, image: HeldImage) -> Any:
    broker = broker_on(channel, image)
    return asyncio.run(broker._forward(FRAME, lambda: broker._send_plain(FRAME)))


CAROL = Session(KafkaPrincipal("User", "carol"), "[::1]:5000")


def enveloped(channel: ScriptedChannel) -> Any:
    """The answer to FRAME forwarded inside an Envelope for carol (None: sent plain)."""
    answer = asyncio.run(broker_on(channel)._enveloped(FRAME, CAROL))
    return None if answer is None else answer.response


@pytest.fixture(autouse=True)
def quick_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dispatch, "FORWARD_BACKOFF_MS", 1)
    monkeypatch.setattr(dispatch, "FORWARD_TIMEOUT_MS", 300)


def test_not_controller_and_lost_connections_are_retried_until_an_answer() -> None:
    done = error_response(REQUEST, ErrorCode.NONE)
    channel = ScriptedChannel(error_response(REQUEST, ErrorCode.NOT_CONTROLLER),
                              NetworkError("no active controller is known yet"), done)
    assert forward(channel) is done
    assert channel.sent == 3
    assert channel.client_ids == {"test"}  # the client's, as inside Kafka's envelope


def test_a_partial_answer_is_final() -> None:
    refused = error_response(REQUEST, ErrorCode.NOT_CONTROLLER)
    assert isinstance(refused, CreateTopicsResponse)
    exists = dataclasses.replace(refused.topics[1], error_code=ErrorCode.TOPIC_ALREADY_EXISTS)
    partial = dataclasses.replace(refused, topics=(refused.topics[0], exists))
    channel = ScriptedChannel(partial)
    assert forward(channel) is partial
    assert channel.sent == 1


def test_no_controller_within_the_bound_answers_not_controller() -> None:
    channel = ScriptedChannel(NetworkError("connection refused"))
    answer = forward(channel)
    assert error_codes(answer) == [ErrorCode.NOT_CONTROLLER] * 2
    assert channel.sent > 1


def test_error_codes_read_top_level_and_per_part_errors() -> None:
    assert is_not_controller(error_response(REQUEST, ErrorCode.NOT_CONTROLLER))
    assert not is_not_controller(error_response(REQUEST, ErrorCode.NONE))


def _wrapped(response: Any) -> EnvelopeResponse:
    """The controller's Envelope answer carrying ``response`` to FRAME."""
    return EnvelopeResponse(response_data=encode_response(1, ApiKey.CREATE_TOPICS, 7, response),
                            error_code=ErrorCode.NONE)


def test_the_client_request_goes_whole_inside_an_envelope() -> None:
    done = error_response(REQUEST, ErrorCode.TOPIC_ALREADY_EXISTS)
    channel = ScriptedChannel(EnvelopeResponse(response_data=None,
                                               error_code=ErrorCode.NOT_CONTROLLER),
                              NetworkError("lost"), _wrapped(done))
    assert error_codes(enveloped(channel)) == [ErrorCode.TOPIC_ALREADY_EXISTS] * 2
    assert channel.sent == 3 and channel.client_ids == {None}  # the broker's own header
    envelope = channel.bodies[-1]
    assert isinstance(envelope, EnvelopeRequest)
    assert envelope.request_data == encode_request(FRAME.header, REQUEST)
    assert deserialize_principal(envelope.request_principal) == CAROL.principal
    assert envelope.client_host_address == bytes(15) + b"\x01"


@pytest.mark.parametrize(("code", "data"), [
    (ErrorCode.CLUSTER_AUTHORIZATION_FAILED, None),
    (ErrorCode.PRINCIPAL_DESERIALIZATION_FAILURE, None),
    (ErrorCode.NONE, b"\x00"),  # a response that does not parse
])
def test_an_envelope_error_is_an_unknown_server_error(code: ErrorCode,
                                                      data: bytes | None) -> None:
    channel = ScriptedChannel(EnvelopeResponse(response_data=data, error_code=code))
    assert error_codes(enveloped(channel)) == [ErrorCode.UNKNOWN_SERVER_ERROR] * 2
    assert channel.sent == 1


def test_unsupported_version_closes_the_client_connection() -> None:
    channel = ScriptedChannel(EnvelopeResponse(response_data=None,
                                               error_code=ErrorCode.UNSUPPORTED_VERSION))
    with pytest.raises(CloseConnection):
        enveloped(channel)


def test_a_controller_without_envelope_gets_the_request_plain() -> None:
    channel = ScriptedChannel(UnsupportedVersionError("no", api_key=ApiKey.ENVELOPE))
    assert enveloped(channel) is None
    assert channel.sent == 1


def test_a_write_is_relayed_once_the_image_holds_what_the_controller_committed() -> None:
    """The controller's answer comes while this broker's image is still at offset 5 and
    the controller's high watermark is 9: the answer waits until the image gets there."""
    done = error_response(REQUEST, ErrorCode.NONE)
    channel = ScriptedChannel(done, high_watermark=9)
    image = HeldImage(5)
    broker = broker_on(channel, image)

    async def run() -> None:
        answer = asyncio.create_task(broker._forward(FRAME, lambda: broker._send_plain(FRAME)))
        for end in (6, 8):  # bounded: the answer is still held at each step
            await asyncio.sleep(0)
            image.replay_to(end)
            for _ in range(5):
                await asyncio.sleep(0)
            assert not answer.done()
        image.replay_to(9)
        assert await answer is done
    asyncio.run(run())
    assert (channel.sent, channel.quorum_asked) == (1, 1)


def test_a_write_is_relayed_at_the_bound_when_the_image_does_not_catch_up() -> None:
    done = error_response(REQUEST, ErrorCode.NONE)
    assert forward_on(ScriptedChannel(done, high_watermark=9), HeldImage(5)) is done


def test_describe_quorum_and_an_unknown_high_watermark_are_relayed_at_once() -> None:
    unknown = ScriptedChannel(error_response(REQUEST, ErrorCode.NONE), high_watermark=-1)
    forward_on(unknown, HeldImage(0))
    assert unknown.quorum_asked == 1
    quorum = RequestFrame(RequestHeader(ApiKey.DESCRIBE_QUORUM, 2, 1, "test"),
                          rpc.describe_quorum_request(), ApiKey.DESCRIBE_QUORUM, 2)
    channel = ScriptedChannel(rpc.describe_quorum_response(1, 1, 9, [], []))
    broker = broker_on(channel, HeldImage(0))
    asyncio.run(broker._forward(quorum, lambda: broker._send_plain(quorum)))
    assert channel.quorum_asked == 1  # the client's own, and no probe after it
