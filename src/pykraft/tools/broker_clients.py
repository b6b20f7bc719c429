"""Requests to a partition's leader or to a named broker, for the data-plane tools.

Kafka's admin client and its producer and consumer read Metadata from a bootstrap broker,
then send Produce, Fetch, ListOffsets and DeleteRecords to each partition's leader and
DescribeLogDirs to each broker. :class:`BrokerClients` does that over
:class:`~pykraft.tools.admin_client.AdminClient` (one per broker, opened on first use)::

    async with BrokerClients(admin_settings("host:9092")) as brokers:
        cluster = await brokers.metadata(["t1"])          # also learns the brokers' addresses
        leaders, leaderless = by_leader(cluster, [("t1", 0), ("t1", 1)])
        answer = await brokers.request_to(leader_id, body)

Tools take the :class:`Brokers` protocol, so their tests pass a fake. Also here: Kafka's
``key=value`` command-line properties, a partition's ``topic-partition`` name, and the Java
exception class Kafka's tools print for an error code.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from types import TracebackType
from typing import Any, Protocol

from pykraft.errors import ConfigError
from pykraft.ids import TopicPartition
from pykraft.protocol.errors import ErrorCode
from pykraft.tools.admin_client import AdminClient, AdminError, AdminSettings, ClusterMetadata

_JAVA_ERRORS = "org.apache.kafka.common.errors."
#: Kafka's exception classes whose names are not the error's name in CamelCase.
_EXCEPTION_NAMES = {
    ErrorCode.REQUEST_TIMED_OUT: "TimeoutException",
    ErrorCode.UNKNOWN_SERVER_ERROR: "UnknownServerException",
    ErrorCode.KAFKA_STORAGE_ERROR: "KafkaStorageException",
    ErrorCode.TOPIC_AUTHORIZATION_FAILED: "TopicAuthorizationException",
    ErrorCode.CLUSTER_AUTHORIZATION_FAILED: "ClusterAuthorizationException",
    ErrorCode.INVALID_TOPIC_EXCEPTION: "InvalidTopicException",
    ErrorCode.CORRUPT_MESSAGE: "CorruptRecordException",
    ErrorCode.INVALID_RECORD: "InvalidRecordException",
    ErrorCode.NON_EMPTY_GROUP: "GroupNotEmptyException",
    ErrorCode.GROUP_AUTHORIZATION_FAILED: "GroupAuthorizationException",
}


class Brokers(Protocol):
    """What the data-plane tools need of a cluster (:class:`BrokerClients`, or a fake)."""

    async def metadata(self, topics: Sequence[str] | None = None) -> ClusterMetadata: ...

    async def request_to(self, broker_id: int, body: Any) -> Any: ...


class BrokerClients:
    """A bootstrap client for Metadata plus one client per broker asked; ``async with``."""

    def __init__(self, settings: AdminSettings) -> None:
        self.settings = settings
        self.bootstrap = AdminClient(settings)
        self._addresses: dict[int, tuple[str, int]] = {}
        self._clients: dict[int, AdminClient] = {}

    async def __aenter__(self) -> BrokerClients:
        return self

    async def __aexit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                        traceback: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        self.bootstrap.close()
        for client in self._clients.values():
            client.close()
        self._clients.clear()

    async def metadata(self, topics: Sequence[str] | None = None) -> ClusterMetadata:
        cluster = await self.bootstrap.metadata(topics)
        self._addresses.update(cluster.brokers)
        return cluster

    async def request_to(self, broker_id: int, body: Any) -> Any:
        """``body``'s answer from broker ``broker_id`` (known from an earlier Metadata)."""
        client = self._clients.get(broker_id)
        if client is None:
            address = self._addresses.get(broker_id)
            if address is None:
                raise AdminError(f"Broker {broker_id} is not in the cluster's metadata")
            client = AdminClient(dataclasses.replace(self.settings, bootstrap=(address,)))
            self._clients[broker_id] = client
        return await client.request(body)


def by_leader(cluster: ClusterMetadata, partitions: Iterable[TopicPartition]) -> (
    tuple[dict[int, list[TopicPartition]], list[TopicPartition]]
):
    """Partitions grouped by their leader's id, and those with no leader or not found."""
    leaders: dict[int, list[TopicPartition]] = {}
    leaderless: list[TopicPartition] = []
    for topic, index in partitions:
        meta = cluster.topics.get(topic)
        part = next((p for p in meta.partitions if p.partition == index), None) if meta else None
        if part is None or part.leader is None:
            leaderless.append(TopicPartition(topic, index))
        else:
            leaders.setdefault(part.leader, []).append(TopicPartition(topic, index))
    return leaders, leaderless


def tp_name(tp: TopicPartition) -> str:
    """Kafka's ``TopicPartition.toString()``: ``topic-partition``."""
    return f"{tp[0]}-{tp[1]}"


def java_exception(code: int) -> str:
    """The full class name of the exception Kafka's clients raise for ``code``."""
    error = ErrorCode(code)
    name = _EXCEPTION_NAMES.get(error) or "".join(
        word.capitalize() for word in error.name.split("_")) + "Exception"
    return _JAVA_ERRORS + name


def parse_key_values(args: Sequence[str]) -> dict[str, str]:
    """Kafka's ``CommandLineUtils.parseKeyValueArgs``: ``key=value`` (split at the first
    ``=``; a bare key gets an empty value), later keys winning."""
    props: dict[str, str] = {}
    for arg in args:
        if not arg:
            continue
        key, _, value = arg.partition("=")
        props[key] = value
    return props


def require(condition: bool, message: str) -> None:
    """Kafka's argument checks: ``message`` as a :class:`ConfigError` unless ``condition``."""
    if not condition:
        raise ConfigError(message)
