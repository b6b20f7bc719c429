"""Topics created on demand: what is sent to the controller, and each topic's answer."""

from __future__ import annotations

import asyncio
from typing import Any

from replica_fixtures import until

from pykraft.broker.auto_topics import AutoTopicCreator
from pykraft.messages.kafka.create_topics_response import CreatableTopicResult, CreateTopicsResponse
from pykraft.protocol.errors import ErrorCode

UNKNOWN = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


class HeldChannel:
    """Records each CreateTopics and answers it once released."""

    def __init__(self) -> None:
        self.sent: list[Any] = []
        self.release = asyncio.Event()

    async def send(self, body: Any) -> Any:
        self.sent.append(body)
        await self.release.wait()
        return CreateTopicsResponse(topics=tuple(
            CreatableTopicResult(name=t.name, error_code=ErrorCode.NONE,
                                 error_message=None, configs=None) for t in body.topics))


def test_missing_topics_are_sent_once_with_the_broker_defaults() -> None:
    async def run() -> None:
        channel = HeldChannel()
        creator = AutoTopicCreator(channel, num_partitions=3, replication_factor=2)
        assert creator.create(["a", "b..", "__consumer_offsets", "b"]) == {
            "a": UNKNOWN, "b..": UNKNOWN, "__consumer_offsets": UNKNOWN, "b": UNKNOWN}
        assert creator.create(["a", "bad name"]) == {
            "a": UNKNOWN, "bad name": ErrorCode.INVALID_TOPIC_EXCEPTION}
        await until(lambda: channel.sent, "the first request sent")
        (request,) = channel.sent
        assert [(t.name, t.num_partitions, t.replication_factor) for t in request.topics] == [
            ("a", 3, 2), ("b..", 3, 2), ("b", 3, 2)]
        channel.release.set()
        for _ in range(100):  # once answered, a later miss asks again
            creator.create(["a"])
            await asyncio.sleep(0)
            if len(channel.sent) == 2:
                break
        assert [t.name for t in channel.sent[-1].topics] == ["a"]
        await creator.close()
    asyncio.run(run())
