"""Topics created on demand: Kafka's AutoTopicCreationManager, as a KRaft broker runs it.

With ``auto.create.topics.enable`` (Kafka's default: true), a Metadata request that names a
missing topic and allows it (v4+ ``allow_auto_topic_creation``; always before v4) makes the
broker send the active controller a CreateTopics for it, with this broker's
``num.partitions`` and ``default.replication.factor``, and answer at once without waiting:
UNKNOWN_TOPIC_OR_PARTITION, which clients retry until the topic is in the metadata. A name
``Topic.validate`` refuses gets INVALID_TOPIC_EXCEPTION and is never sent; a name already
on its way is not sent twice. Produce never creates (Kafka 4: the client's Metadata does).

Internal topics are left out: ``__consumer_offsets`` and ``__transaction_state`` are
created by FindCoordinator with their own shapes (:mod:`pykraft.broker.coordinator_topics`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable

from pykraft.broker.coordinator_topics import CREATE_TIMEOUT_MS, Channel
from pykraft.controller.topic_names import topic_name_problem
from pykraft.errors import NetworkError
from pykraft.ids import INTERNAL_TOPICS
from pykraft.messages.kafka.create_topics_request import CreatableTopic, CreateTopicsRequest
from pykraft.messages.kafka.create_topics_response import CreateTopicsResponse
from pykraft.protocol.errors import ErrorCode
from pykraft.runtime.logfmt import event

log = logging.getLogger(__name__)


class AutoTopicCreator:
    """Sends the CreateTopics of missing topics (one broker-wide instance: Kafka's set of
    topics in flight is per broker)."""

    def __init__(self, channel: Channel, *, num_partitions: int,
                 replication_factor: int) -> None:
        self._channel = channel
        self._num_partitions = num_partitions
        self._replication_factor = replication_factor
        self._in_flight: set[str] = set()
        self._tasks: set[asyncio.Task[None]] = set()

    def create(self, names: Iterable[str]) -> dict[str, ErrorCode]:
        """Each missing topic's Metadata error; the creatable ones are sent in one request."""
        answers: dict[str, ErrorCode] = {}
        creatable: list[str] = []
        for name in names:
            if topic_name_problem(name) is not None:
                answers[name] = ErrorCode.INVALID_TOPIC_EXCEPTION
                continue
            answers[name] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            if name not in self._in_flight and name not in INTERNAL_TOPICS:
                self._in_flight.add(name)
                creatable.append(name)
        if creatable:
            task = asyncio.get_running_loop().create_task(self._send(creatable))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        return answers

    async def _send(self, names: list[str]) -> None:
        request = CreateTopicsRequest(
            topics=tuple(CreatableTopic(name=name, num_partitions=self._num_partitions,
                                        replication_factor=self._replication_factor)
                         for name in names),
            timeout_ms=CREATE_TIMEOUT_MS, validate_only=False)
        event(log, "auto_topic_creation_sent", topics=",".join(names))
        try:
            response = await self._channel.send(request)
        except NetworkError as exc:
            event(log, "auto_topic_creation_failed", topics=",".join(names), error=str(exc))
            return
        finally:
            self._in_flight.difference_update(names)
        assert isinstance(response, CreateTopicsResponse)
        for result in response.topics:
            if result.error_code not in (ErrorCode.NONE, ErrorCode.TOPIC_ALREADY_EXISTS):
                event(log, "auto_topic_creation_failed", level=logging.WARNING,
                      topic=result.name, error=ErrorCode(result.error_code).name,
                      message=result.error_message)

    async def close(self) -> None:
        for task in tuple(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
