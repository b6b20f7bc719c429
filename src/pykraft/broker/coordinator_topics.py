"""The coordinators' internal topics and FindCoordinator: where a group's or a transactional
id's coordinator is.

A key's coordinator is the leader of its partition of the key type's topic
(:func:`~pykraft.group.partitioning.partition_for`): ``__consumer_offsets`` for a group
(key type 0), ``__transaction_state`` for a transactional id (key type 1). The topic is
created on the first FindCoordinator of its type, as Kafka's AutoTopicCreationManager does:
a CreateTopics to the active controller with the configured partitions, exactly the
configured replicas and the topic's own configs (compaction; for transactions also
``min.insync.replicas``, no compression and no unclean election). Until the partition has a
leader the answer is COORDINATOR_NOT_AVAILABLE, which clients retry. The factor is not
capped by the brokers there are: while fewer are unfenced the controller refuses it
(INVALID_REPLICATION_FACTOR) and a later FindCoordinator asks again, so the topic waits for
the cluster to reach its factor instead of being made with fewer replicas forever (Kafka:
"Internal topic creation will fail until the cluster size meets this replication factor
requirement"). Other key types get INVALID_REQUEST, as in Kafka.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

from pykraft.broker.group_versions import error_response
from pykraft.config.properties import int_property
from pykraft.errors import NetworkError
from pykraft.group.partitioning import partition_for
from pykraft.ids import OFFSETS_TOPIC_NAME, TRANSACTION_STATE_TOPIC_NAME
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
from pykraft.txn.config import TxnConfig

log = logging.getLogger(__name__)

GROUP_KEY = 0
TRANSACTION_KEY = 1
#: How long the broker waits for the controller's CreateTopics answer (Kafka's
#: AutoTopicCreationManager uses the request timeout).
CREATE_TIMEOUT_MS = 30_000


class CoordinatorTopic(Protocol):
    """An internal topic whose partitions' leaders coordinate the keys hashed to them."""

    @property
    def name(self) -> str: ...

    @property
    def num_partitions(self) -> int: ...

    @property
    def replication_factor(self) -> int: ...

    def topic_configs(self) -> tuple[tuple[str, str], ...]: ...


def partition_of(topic: CoordinatorTopic, key: str, image: MetadataImage) -> int:
    """``key``'s partition: among the topic's partitions when it exists (Kafka reads the
    count from the metadata, so a topic created under another count keeps its keys), else
    the configured count."""
    found = image.topics.by_name.get(topic.name)
    count = topic.num_partitions if found is None or not found.partitions else len(
        found.partitions)
    return partition_for(key, count)


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

    @property
    def name(self) -> str:
        return OFFSETS_TOPIC_NAME

    def topic_configs(self) -> tuple[tuple[str, str], ...]:
        return (("cleanup.policy", "compact"), ("segment.bytes", str(self.segment_bytes)),
                ("compression.type", "producer"))

    def partition_of(self, group_id: str, image: MetadataImage) -> int:
        """The group's ``__consumer_offsets`` partition (see :func:`partition_of`)."""
        return partition_of(self, group_id, image)


_KEYS = {
    "num_partitions": ("offsets.topic.num.partitions", 1),
    "replication_factor": ("offsets.topic.replication.factor", 1),
    "segment_bytes": ("offsets.topic.segment.bytes", 1),
    "commit_timeout_ms": ("offsets.commit.timeout.ms", 1),
}


@dataclass(frozen=True, slots=True)
class TransactionTopic:
    """``__transaction_state`` as Kafka creates it (``TransactionLog``'s configs)."""

    config: TxnConfig

    @property
    def name(self) -> str:
        return TRANSACTION_STATE_TOPIC_NAME

    @property
    def num_partitions(self) -> int:
        return self.config.log_partitions

    @property
    def replication_factor(self) -> int:
        return self.config.log_replication_factor

    def topic_configs(self) -> tuple[tuple[str, str], ...]:
        return (("unclean.leader.election.enable", "false"),
                ("compression.type", "uncompressed"), ("cleanup.policy", "compact"),
                ("min.insync.replicas", str(self.config.log_min_isr)),
                ("segment.bytes", str(self.config.log_segment_bytes)))

    def partition_of(self, transactional_id: str, image: MetadataImage) -> int:
        return partition_of(self, transactional_id, image)


class Channel(Protocol):
    """Where the offsets topic's CreateTopics goes (the broker's ControllerChannel)."""

    async def send(self, body: CreateTopicsRequest) -> object: ...


class CoordinatorFinder:
    """Answers FindCoordinator (latest version) from the broker's image, creating a key
    type's topic when it is missing."""

    def __init__(self, topics: Mapping[int, CoordinatorTopic], channel: Channel,
                 listener_name: str) -> None:
        self._topics = topics
        self._channel = channel
        self._listener = listener_name
        self._creating: dict[str, asyncio.Task[None]] = {}
        self._last_error: dict[str, ErrorCode] = {}  # a refusal repeated is not logged again

    def find(self, request: FindCoordinatorRequest,
             image: MetadataImage) -> FindCoordinatorResponse:
        """The FindCoordinator answer for each of ``request``'s keys; pure (a large request's
        is built off the loop), so a missing topic is asked for apart
        (:meth:`create_missing`)."""
        topic = self._topics.get(request.key_type)
        if topic is None:
            refused: FindCoordinatorResponse = error_response(
                ApiKey.FIND_COORDINATOR, request, ErrorCode.INVALID_REQUEST,
                f"Unknown coordinator type {request.key_type}")
            return refused
        found: dict[str, Coordinator] = {}  # a key named again gets the same entry
        coordinators = []
        for key in request.coordinator_keys:
            entry = found.get(key)
            if entry is None:
                entry = found[key] = self._coordinator(topic, key, image)
            coordinators.append(entry)
        return FindCoordinatorResponse(coordinators=tuple(coordinators))

    def create_missing(self, request: FindCoordinatorRequest, image: MetadataImage) -> None:
        """Ask for the key type's topic when a coordinator is looked for before it exists
        (Kafka's AutoTopicCreationManager)."""
        topic = self._topics.get(request.key_type)
        if topic is not None and topic.name not in image.topics.by_name:
            self._create(topic)

    def _coordinator(self, topic: CoordinatorTopic, key: str,
                     image: MetadataImage) -> Coordinator:
        """One key's coordinator: its partition's leader and that broker's endpoint (no
        message: Kafka's lookup sets none; v0-3 get ``Errors.message()`` on the way out)."""
        found = image.topics.by_name.get(topic.name)
        registration = None if found is None else found.partitions.get(
            partition_of(topic, key, image))
        leader = NO_LEADER if registration is None else registration.leader
        broker = image.cluster.brokers.get(leader)
        endpoint = None if broker is None else next(
            (e for e in broker.listeners if e.name == self._listener), None)
        if endpoint is None:  # no message, as Kafka's batched answer (versions 4+)
            return Coordinator(key=key, node_id=NO_LEADER, port=-1,
                               error_code=ErrorCode.COORDINATOR_NOT_AVAILABLE, error_message="")
        return Coordinator(key=key, node_id=leader, host=endpoint.host, port=endpoint.port,
                           error_code=ErrorCode.NONE, error_message="")

    def _create(self, topic: CoordinatorTopic) -> None:
        """Ask the controller for the topic, once at a time (a refused one is asked for
        again by the next FindCoordinator, as Kafka's in-flight set allows)."""
        creating = self._creating.get(topic.name)
        if creating is not None and not creating.done():
            return
        self._creating[topic.name] = asyncio.get_running_loop().create_task(
            self._send_create(topic))

    async def _send_create(self, topic: CoordinatorTopic) -> None:
        request = CreateTopicsRequest(
            topics=(CreatableTopic(
                name=topic.name, num_partitions=topic.num_partitions,
                replication_factor=topic.replication_factor,
                configs=tuple(CreatableTopicConfig(name=k, value=v)
                              for k, v in topic.topic_configs())),),
            timeout_ms=CREATE_TIMEOUT_MS, validate_only=False)
        try:
            response = await self._channel.send(request)
        except NetworkError as exc:
            log.info("cannot create %s yet: %s", topic.name, exc)
            return
        assert isinstance(response, CreateTopicsResponse)
        for result in response.topics:
            error = ErrorCode(result.error_code)
            if error not in (ErrorCode.NONE, ErrorCode.TOPIC_ALREADY_EXISTS) \
                    and error != self._last_error.get(topic.name):
                event(log, "internal_topic_creation_failed", level=logging.WARNING,
                      topic=topic.name, error=error.name, message=result.error_message)
            self._last_error[topic.name] = error

    async def close(self) -> None:
        tasks = list(self._creating.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
