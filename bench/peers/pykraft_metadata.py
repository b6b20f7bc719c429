"""pykraft as a metadata store: 3 controllers + brokers, driven with real Kafka admin requests.

A write is one IncrementalAlterConfigs request setting ``retention.ms`` on one topic (one
ConfigRecord); the active controller answers it only once the record is committed, i.e.
fsynced on a majority of the controllers. Each writer owns its own topic and connection.

Requests go to the active controller's listener by default (``via="controller"``): that is
the quorum's own commit path, the one etcd's and ZooKeeper's leaders are measured on. With
``via="broker"`` they go to the brokers, which forward them (KIP-590): the figure then also
includes the broker's forwarding channel, which carries one request at a time per broker.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from peers.base import BenchError, Writer, until
from peers.pykraft_sut import Pykraft
from pykraft.errors import PyKraftError
from pykraft.messages.kafka.create_topics_request import CreatableTopic, CreateTopicsRequest
from pykraft.messages.kafka.describe_cluster_request import DescribeClusterRequest
from pykraft.messages.kafka.incremental_alter_configs_request import (
    AlterableConfig,
    AlterConfigsResource,
    IncrementalAlterConfigsRequest,
)
from pykraft.messages.kafka.metadata_request import MetadataRequest, MetadataRequestTopic
from pykraft.protocol.api_versions import listener_ranges, offsets_by_name
from pykraft.protocol.apis import Listener
from pykraft.protocol.errors import ErrorCode
from pykraft.runtime.kafka_client import CONNECTION_ERRORS, ClientConnection, open_with_timeout
from pykraft.testing.append import APPEND_PROPERTIES
from pykraft.tools.local_cluster import LocalCluster
from pykraft.tools.quorum_tool import parse_host_port

TOPIC_RESOURCE = 2
SET = 0
CONNECT_TIMEOUT_S = 5.0
REQUEST_TIMEOUT_S = 30.0
#: Topics the writers alter (one each), created before the measurement.
WRITER_TOPICS = 64
VIA = ("controller", "broker")


def topic_name(index: int) -> str:
    return f"bench-{index}"


async def connect(address: str, listener: Listener) -> ClientConnection:
    host, port = parse_host_port(address)
    try:
        return await open_with_timeout(host, port, client_id="pykraft-bench",
                                       ours=offsets_by_name(listener_ranges(listener)),
                                       timeout_s=CONNECT_TIMEOUT_S)
    except CONNECTION_ERRORS as exc:
        raise BenchError(f"cannot connect to {address}: {exc}") from exc


async def call(connection: ClientConnection, body: Any) -> Any:
    """One bounded request; every transport failure becomes a :class:`BenchError`."""
    try:
        async with asyncio.timeout(REQUEST_TIMEOUT_S):
            return await connection.request(body)
    except (*CONNECTION_ERRORS, PyKraftError) as exc:
        raise BenchError(f"{type(body).__name__} failed: {type(exc).__name__}: {exc}") from exc


def create_topics_request(names: list[str], partitions: int,
                          replication_factor: int) -> CreateTopicsRequest:
    return CreateTopicsRequest(topics=tuple(
        CreatableTopic(name=name, num_partitions=partitions,
                       replication_factor=replication_factor, assignments=(), configs=())
        for name in names))


def created_or_exists(response: Any) -> bool:
    """Whether every topic of a CreateTopics answer now exists."""
    return all(t.error_code in (ErrorCode.NONE, ErrorCode.TOPIC_ALREADY_EXISTS)
               for t in response.topics)


class ConfigWriter(Writer):
    """Sets ``retention.ms`` of its own topic to a new value on every write."""

    def __init__(self, connection: ClientConnection, topic: str) -> None:
        self._connection = connection
        self._topic = topic
        self._count = 0

    async def write(self, value: bytes) -> None:
        # The config value must be a valid retention.ms; ``value`` only sets the pace.
        self._count += 1
        body = IncrementalAlterConfigsRequest(resources=(AlterConfigsResource(
            resource_type=TOPIC_RESOURCE, resource_name=self._topic,
            configs=(AlterableConfig(name="retention.ms", config_operation=SET,
                                     value=str(86_400_000 + self._count)),)),),
            validate_only=False)
        response = await call(self._connection, body)
        code = response.responses[0].error_code
        if code != ErrorCode.NONE:
            raise BenchError(f"IncrementalAlterConfigs on {self._topic}: error {code} "
                             f"({response.responses[0].error_message})")

    async def close(self) -> None:
        self._connection.close()


class PykraftMetadata(Pykraft):
    """3 controllers and ``brokers`` brokers; writers send IncrementalAlterConfigs."""

    name = "pykraft"

    def __init__(self, brokers: int, via: str, properties: dict[str, str] | None = None) -> None:
        if via not in VIA:
            raise BenchError(f"via must be one of {VIA}, not {via!r}")
        super().__init__(properties)
        # The append request writes raw records into the metadata log, so a node serving it
        # runs no QuorumController: it must stay off here.
        for key in APPEND_PROPERTIES:
            del self._properties[key]
        self._brokers = brokers
        self.via = via
        self.durability = (f"ConfigRecord fsynced on a majority of 3 controllers before the "
                           f"answer; {brokers} broker(s); requests to the {via}")

    async def start(self, base: Path) -> None:
        self._cluster = LocalCluster.create(base, 3, self._properties, brokers=self._brokers)
        self._cluster.start_all()
        leader = await self.leader()
        await self.create_topics(leader, [topic_name(i) for i in range(WRITER_TOPICS)])

    async def create_topics(self, leader: int, names: list[str], partitions: int = 1) -> None:
        """Create ``names`` through the active controller, retrying (bounded) until the
        brokers are registered and unfenced, which placement needs."""
        replication = min(3, self._brokers)

        async def attempt() -> bool | None:
            connection = await connect(self.cluster.nodes[leader + 1].address,
                                       Listener.CONTROLLER)
            try:
                response = await call(connection, create_topics_request(
                    names, partitions, replication))
            finally:
                connection.close()
            return True if created_or_exists(response) else None
        await until(f"pykraft topics {names[0]}..{names[-1]}", attempt)

    async def writers(self, node: int, count: int) -> list[Writer]:
        if self.via == "controller":
            addresses = [self.cluster.nodes[node + 1].address] * count
            listener = Listener.CONTROLLER
        else:
            brokers = self.cluster.brokers
            addresses = [self.cluster.nodes[brokers[i % len(brokers)]].address
                         for i in range(count)]
            listener = Listener.BROKER
        if count > WRITER_TOPICS:
            raise BenchError(f"at most {WRITER_TOPICS} writers (one topic each), not {count}")
        return [ConfigWriter(await connect(address, listener), topic_name(i))
                for i, address in enumerate(addresses)]

    async def probe(self, node: int, value: bytes) -> None:
        writer = ConfigWriter(await connect(self.cluster.nodes[node + 1].address,
                                            Listener.CONTROLLER), topic_name(0))
        try:
            await writer.write(value)
        finally:
            await writer.close()


@dataclass(frozen=True)
class Propagation:
    """One topic: ms from the CreateTopics answer until each broker's Metadata showed it."""

    topic: str
    per_broker_ms: dict[int, float]

    @property
    def all_brokers_ms(self) -> float:
        return max(self.per_broker_ms.values())


async def unfenced_brokers(connection: ClientConnection) -> int:
    answer = await call(connection, DescribeClusterRequest(include_fenced_brokers=True))
    return sum(1 for b in answer.brokers if not b.is_fenced)


async def serves(connection: ClientConnection, topic: str) -> bool:
    answer = await call(connection, MetadataRequest(
        topics=(MetadataRequestTopic(name=topic),),
        allow_auto_topic_creation=False, include_topic_authorized_operations=False))
    found = answer.topics[0] if answer.topics else None
    return found is not None and found.error_code == ErrorCode.NONE and bool(found.partitions)


class PropagationProbe:
    """Creates topics one at a time on the active controller and polls every broker's
    Metadata until it shows each one (one connection per broker, bounded waits)."""

    def __init__(self, system: PykraftMetadata, poll_interval_s: float,
                 deadline_s: float = 30.0) -> None:
        self._system = system
        self._poll_s = poll_interval_s
        self._deadline_s = deadline_s
        self._brokers: dict[int, ClientConnection] = {}

    async def open(self) -> None:
        """Connect to every broker once all of them see each other unfenced."""
        cluster = self._system.cluster
        count = len(cluster.brokers)
        for broker_id in cluster.brokers:
            async def ready(broker_id: int = broker_id) -> ClientConnection | None:
                connection = await connect(cluster.nodes[broker_id].address, Listener.BROKER)
                if await unfenced_brokers(connection) == count:
                    return connection
                connection.close()
                return None
            self._brokers[broker_id] = await until(
                f"broker {broker_id} sees {count} unfenced brokers", ready, timeout_s=120)

    def close(self) -> None:
        for connection in self._brokers.values():
            connection.close()

    async def measure(self, topic: str, partitions: int) -> Propagation:
        system = self._system
        leader = await system.leader()
        controller = await connect(system.cluster.nodes[leader + 1].address,
                                   Listener.CONTROLLER)
        try:
            response = await call(controller, create_topics_request(
                [topic], partitions, min(3, len(self._brokers))))
        finally:
            controller.close()
        acked = time.monotonic()
        if response.topics[0].error_code != ErrorCode.NONE:
            raise BenchError(f"CreateTopics {topic}: error {response.topics[0].error_code} "
                             f"({response.topics[0].error_message})")
        seen = await asyncio.gather(*(self._wait_served(c, topic, acked)
                                      for c in self._brokers.values()))
        return Propagation(topic, dict(zip(self._brokers, seen, strict=True)))

    async def _wait_served(self, connection: ClientConnection, topic: str,
                           acked: float) -> float:
        while time.monotonic() - acked < self._deadline_s:
            if await serves(connection, topic):
                return (time.monotonic() - acked) * 1000
            await asyncio.sleep(self._poll_s)
        raise BenchError(f"{topic} not served {self._deadline_s:.0f} s after its creation")
