"""``__consumer_offsets`` and FindCoordinator: where a group's coordinator is.

A group's coordinator is the leader of its ``__consumer_offsets`` partition
(:func:`~pykraft.group.partitioning.partition_for`). The topic is created on the first
FindCoordinator, as Kafka's AutoTopicCreationManager does: a CreateTopics to the active
controller with ``offsets.topic.num.partitions`` partitions, exactly
``offsets.topic.replication.factor`` replicas, compaction, and ``offsets.topic.segment.bytes``.
Until the partition has a leader the answer is COORDINATOR_NOT_AVAILABLE, which clients retry.
The factor is not capped by the brokers there are: while fewer are unfenced the controller
refuses it (INVALID_REPLICATION_FACTOR) and a later FindCoordinator asks again, so the topic
waits for the cluster to reach its factor instead of being made with fewer replicas forever
(Kafka: "Internal topic creation will fail until the cluster size meets this replication
factor requirement").

A transaction coordinator key gets TRANSACTIONAL_ID_AUTHORIZATION_FAILED with a message
saying transactions are not supported: pykraft has no transaction coordinator, and that is
the answer its InitProducerId gives a transactional id (:mod:`pykraft.broker.producer_ids`
says why this code), fatal in every client, whereas Kafka's answer when
``__transaction_state`` cannot be created (COORDINATOR_NOT_AVAILABLE) is retried until the
producer's ``max.block.ms`` runs out. Other key types get INVALID_REQUEST, as in Kafka.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

from pykraft.broker.group_versions import error_response
from pykraft.broker.producer_ids import TRANSACTIONS_UNSUPPORTED
from pykraft.config.properties import int_property
from pykraft.errors import NetworkError
from pykraft.group.partitioning import partition_for
from pykraft.ids import OFFSETS_TOPIC_NAME
from pykraft.image.image import MetadataImage
from pykraft.image.topics import NO_LEADER
from pykraft.messages.kafka.create_topics_request import (
    CreatableTopic,
    CreatableTopicConfig,
    CreateTopicsRequest,
)
from pykraft.messages.kafka.create_topics_response import CreateTopicsResponse
from pykraft.messages.kafka.find_coordinator_request import FindCoordinatorRequest
from pykraft.messages.kafka.find_coordinator_response import (
    Coordinator,
    FindCoordinatorResponse,
)
from pykraft.protocol.apis import ApiKey
from pykraft.protocol.errors import ErrorCode
from pykraft.runtime.logfmt import event

log = logging.getLogger(__name__)

GROUP_KEY = 0
TRANSACTION_KEY = 1
#: How long the broker waits for the controller's CreateTopics answer (Kafka's
#: AutoTopicCreationManager uses the request timeout).
CREATE_TIMEOUT_MS = 30_000


@dataclass(frozen=True, slots=True)
class OffsetsTopicConfig:
    """The offsets topic's shape and the coordinator's write timeout (Kafka's keys and
    defaults, ``GroupCoordinatorConfig``)."""

    num_partitions: int = 50
    replication_factor: int = 3
    segment_bytes: int = 104_857_600
    commit_timeout_ms: int = 5000

    @classmethod
    def from_properties(cls, properties: Mapping[str, str]) -> OffsetsTopicConfig:
        """The values ``properties`` names; a bad one raises :class:`ConfigError`."""
        values = {attribute: int_property(properties, key, minimum)
                  for attribute, (key, minimum) in _KEYS.items()}
        return cls(**{a: v for a, v in values.items() if v is not None})

    def partition_of(self, group_id: str, image: MetadataImage) -> int:
        """The group's ``__consumer_offsets`` partition: among the topic's partitions when
        it exists (Kafka reads its partition count from the metadata, so a topic created
        under another ``offsets.topic.num.partitions`` keeps its groups), else the
        configured count."""
        topic = image.topics.by_name.get(OFFSETS_TOPIC_NAME)
        count = self.num_partitions if topic is None or not topic.partitions else len(
            topic.partitions)
        return partition_for(group_id, count)


_KEYS = {
    "num_partitions": ("offsets.topic.num.partitions", 1),
    "replication_factor": ("offsets.topic.replication.factor", 1),
    "segment_bytes": ("offsets.topic.segment.bytes", 1),
    "commit_timeout_ms": ("offsets.commit.timeout.ms", 1),
}


class Channel(Protocol):
    """Where the offsets topic's CreateTopics goes (the broker's ControllerChannel)."""

    async def send(self, body: CreateTopicsRequest) -> object: ...


class CoordinatorFinder:
    """Answers FindCoordinator (latest version) from the broker's image, creating the
    offsets topic when it is missing."""

    def __init__(self, config: OffsetsTopicConfig, channel: Channel,
                 listener_name: str) -> None:
        self._config = config
        self._channel = channel
        self._listener = listener_name
        self._creating: asyncio.Task[None] | None = None
        self._last_error: ErrorCode | None = None  # a refusal repeated is not logged again

    def find(self, request: FindCoordinatorRequest,
             image: MetadataImage) -> FindCoordinatorResponse:
        """The FindCoordinator answer for each of ``request``'s keys; pure (a large request's
        is built off the loop), so the missing offsets topic is asked for apart
        (:meth:`create_missing`)."""
        key_type = request.key_type
        refused: FindCoordinatorResponse
        if key_type == TRANSACTION_KEY:
            event(log, "transactional_producer_refused",
                  transactional_ids=",".join(dict.fromkeys(request.coordinator_keys)))
            refused = error_response(ApiKey.FIND_COORDINATOR, request,
                                     ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
                                     TRANSACTIONS_UNSUPPORTED)
            return refused
        if key_type != GROUP_KEY:
            refused = error_response(ApiKey.FIND_COORDINATOR, request,
                                     ErrorCode.INVALID_REQUEST,
                                     f"Unknown coordinator type {key_type}")
            return refused
        found: dict[str, Coordinator] = {}  # a key named again gets the same entry
        coordinators = []
        for key in request.coordinator_keys:
            entry = found.get(key)
            if entry is None:
                entry = found[key] = self._coordinator(key, image)
            coordinators.append(entry)
        return FindCoordinatorResponse(coordinators=tuple(coordinators))

    def create_missing(self, request: FindCoordinatorRequest, image: MetadataImage) -> None:
        """Ask for the offsets topic when a group's coordinator is looked for before it
        exists (Kafka's AutoTopicCreationManager)."""
        if request.key_type == GROUP_KEY and OFFSETS_TOPIC_NAME not in image.topics.by_name:
            self._create()

    def _coordinator(self, key: str, image: MetadataImage) -> Coordinator:
        """One key's coordinator: its partition's leader and that broker's endpoint (no
        message: Kafka's lookup sets none; v0-3 get ``Errors.message()`` on the way out)."""
        topic = image.topics.by_name.get(OFFSETS_TOPIC_NAME)
        registration = None if topic is None else topic.partitions.get(
            self._config.partition_of(key, image))
        leader = NO_LEADER if registration is None else registration.leader
        broker = image.cluster.brokers.get(leader)
        endpoint = None if broker is None else next(
            (e for e in broker.listeners if e.name == self._listener), None)
        if endpoint is None:  # no message, as Kafka's batched answer (versions 4+)
            return Coordinator(key=key, node_id=NO_LEADER, port=-1,
                               error_code=ErrorCode.COORDINATOR_NOT_AVAILABLE, error_message="")
        return Coordinator(key=key, node_id=leader, host=endpoint.host, port=endpoint.port,
                           error_code=ErrorCode.NONE, error_message="")

    def _create(self) -> None:
        """Ask the controller for the offsets topic, once at a time (a refused one is asked
        for again by the next FindCoordinator, as Kafka's in-flight set allows)."""
        if self._creating is not None and not self._creating.done():
            return
        self._creating = asyncio.get_running_loop().create_task(self._send_create())

    async def _send_create(self) -> None:
        config = self._config
        request = CreateTopicsRequest(
            topics=(CreatableTopic(
                name=OFFSETS_TOPIC_NAME, num_partitions=config.num_partitions,
                replication_factor=config.replication_factor,
                configs=tuple(CreatableTopicConfig(name=k, value=v) for k, v in (
                    ("cleanup.policy", "compact"),
                    ("segment.bytes", str(config.segment_bytes)),
                    ("compression.type", "producer")))),),
            timeout_ms=CREATE_TIMEOUT_MS, validate_only=False)
        try:
            response = await self._channel.send(request)
        except NetworkError as exc:
            log.info("cannot create %s yet: %s", OFFSETS_TOPIC_NAME, exc)
            return
        assert isinstance(response, CreateTopicsResponse)
        for result in response.topics:
            error = ErrorCode(result.error_code)
            if error not in (ErrorCode.NONE, ErrorCode.TOPIC_ALREADY_EXISTS) \
                    and error != self._last_error:
                event(log, "offsets_topic_creation_failed", level=logging.WARNING,
                      error=error.name, message=result.error_message)
            self._last_error = error

    async def close(self) -> None:
        if self._creating is not None:
            self._creating.cancel()
            await asyncio.gather(self._creating, return_exceptions=True)
