"""A broker retries forwarded admin requests while the active controller changes."""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

import pytest
from kio.schema.create_topics.v7.request import CreatableTopic, CreateTopicsRequest
from kio.schema.create_topics.v7.response import CreateTopicsResponse
from kio.schema.types import TopicName
from kio.static.primitive import i16, i32

from pykraft.broker import dispatch
from pykraft.broker.dispatch import BrokerDispatcher
from pykraft.controller.responses import error_codes, error_response, is_not_controller
from pykraft.errors import NetworkError
from pykraft.protocol.apis import ApiKey
from pykraft.protocol.codec import RequestFrame
from pykraft.protocol.errors import ErrorCode
from pykraft.protocol.header import RequestHeader

REQUEST = CreateTopicsRequest(topics=tuple(
    CreatableTopic(name=TopicName(name), num_partitions=i32(1), replication_factor=i16(1),
                   assignments=(), configs=()) for name in ("a", "b")))
FRAME = RequestFrame(RequestHeader(ApiKey.CREATE_TOPICS, 7, 1, "test"), REQUEST,
                     ApiKey.CREATE_TOPICS, 7)


class ScriptedChannel:
    """Answers each send with the next scripted outcome (a response or an exception)."""

    def __init__(self, *outcomes: object) -> None:
        self.outcomes = list(outcomes)
        self.sent = 0
        self.client_ids: set[str | None] = set()

    async def send(self, body: Any, client_id: str | None = None) -> Any:
        self.sent += 1
        self.client_ids.add(client_id)
        outcome = self.outcomes[min(self.sent, len(self.outcomes)) - 1]
        if isinstance(outcome, Exception):
            raise outcome
        return outcome


def forward(channel: ScriptedChannel) -> Any:
    broker = object.__new__(BrokerDispatcher)  # _forward needs only the channel
    broker._channel = channel  # type: ignore[assignment]
    return asyncio.run(broker._forward(FRAME, lambda: broker._send_plain(FRAME)))


@pytest.fixture(autouse=True)
def quick_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dispatch, "FORWARD_BACKOFF_MS", 1)
    monkeypatch.setattr(dispatch, "FORWARD_TIMEOUT_MS", 300)


def test_not_controller_and_lost_connections_are_retried_until_an_answer() -> None:
    done = error_response(REQUEST, ErrorCode.none)
    channel = ScriptedChannel(error_response(REQUEST, ErrorCode.not_controller),
                              NetworkError("no active controller is known yet"), done)
    assert forward(channel) is done
    assert channel.sent == 3
    assert channel.client_ids == {"test"}  # the client's, as inside Kafka's envelope


def test_a_partial_answer_is_final() -> None:
    refused = error_response(REQUEST, ErrorCode.not_controller)
    assert isinstance(refused, CreateTopicsResponse)
    exists = dataclasses.replace(refused.topics[1], error_code=ErrorCode.topic_already_exists)
    partial = dataclasses.replace(refused, topics=(refused.topics[0], exists))
    channel = ScriptedChannel(partial)
    assert forward(channel) is partial
    assert channel.sent == 1


def test_no_controller_within_the_bound_answers_not_controller() -> None:
    channel = ScriptedChannel(NetworkError("connection refused"))
    answer = forward(channel)
    assert error_codes(answer) == [ErrorCode.not_controller] * 2
    assert channel.sent > 1


def test_error_codes_read_top_level_and_per_part_errors() -> None:
    assert is_not_controller(error_response(REQUEST, ErrorCode.not_controller))
    assert not is_not_controller(error_response(REQUEST, ErrorCode.none))
