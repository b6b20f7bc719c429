"""The admin client of the ``--bootstrap-server`` tools (``topics`` now; the data-plane tools
``console-producer``, ``get-offsets``, ``log-dirs``, ``delete-records`` next).

Kafka's tools build an ``Admin`` from ``--bootstrap-server`` and the ``--command-config``
properties; this is that client, for brokers (``--bootstrap-controller`` tools use
:mod:`pykraft.tools.quorum_tool`). Interface::

    settings = admin_settings("host:9092,host2:9092", command_config=Path("admin.properties"))
    async with AdminClient(settings) as admin:
        cluster = await admin.metadata(["t1"])      # ClusterMetadata (None: every topic)
        parts = await admin.topic_partitions(["t1"], 2000)  # by DescribeTopicPartitions
        configs = await admin.topic_configs(["t1"])  # {topic: (ConfigEntry, ...)}
        answer = await admin.request(body)           # any broker API, the generated classes

It talks to the first bootstrap broker that answers (ApiVersions first, versions negotiated
per API by :class:`~pykraft.runtime.kafka_client.ClientConnection`); a connection that breaks
is reopened until ``default.api.timeout.ms``, each attempt bounded by ``request.timeout.ms``.
When every bootstrap server refuses the connection nothing listens there, and the client
says so at once instead of retrying (Kafka's admin would wait out its timeout). With
``security.protocol=SSL`` in the ``--command-config`` properties it connects over TLS with
that file's ``ssl.*`` keys (:mod:`pykraft.runtime.tls`); with SASL_PLAINTEXT or SASL_SSL it
authenticates with ``sasl.mechanism`` (PLAIN, SCRAM-SHA-256/512) and the username and
password of ``sasl.jaas.config`` (:mod:`pykraft.runtime.sasl_client`), and a refused
authentication fails at once with the broker's message. Failures are
:class:`AdminError`; an error code in an answer is :class:`ApiError`, whose text is the
broker's message or else Kafka's default message for that code.
"""

from __future__ import annotations

import asyncio
import re
import ssl
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from types import TracebackType
from typing import Any

from pykraft.config.definitions import ConfigSource
from pykraft.config.properties import load_properties
from pykraft.errors import ConfigError, PyKraftError, UnsupportedVersionError
from pykraft.image.configs import ConfigResourceType
from pykraft.messages.kafka.describe_configs_request import (
    DescribeConfigsRequest,
    DescribeConfigsResource,
)
from pykraft.messages.kafka.describe_configs_response import DescribeConfigsResponse
from pykraft.messages.kafka.describe_topic_partitions_request import (
    Cursor,
    DescribeTopicPartitionsRequest,
    TopicRequest,
)
from pykraft.messages.kafka.describe_topic_partitions_response import (
    DescribeTopicPartitionsResponse,
    DescribeTopicPartitionsResponsePartition,
)
from pykraft.messages.kafka.metadata_request import MetadataRequest, MetadataRequestTopic
from pykraft.messages.kafka.metadata_response import MetadataResponse, MetadataResponsePartition
from pykraft.protocol.api_versions import listener_ranges, offsets_by_name
from pykraft.protocol.apis import ApiKey, Listener
from pykraft.protocol.errors import ErrorCode, error_name
from pykraft.runtime.kafka_client import CONNECTION_ERRORS, ClientConnection, open_with_timeout
from pykraft.runtime.sasl_client import SaslClientError, SaslCredentials, client_credentials
from pykraft.runtime.tls import client_context
from pykraft.security.session import SecurityProtocol

Address = tuple[str, int]

DEFAULT_CLIENT_ID = "pykraft-admin"
#: Kafka's admin defaults: one attempt (``request.timeout.ms``), a whole call
#: (``default.api.timeout.ms``).
REQUEST_TIMEOUT_MS = 30_000
DEFAULT_API_TIMEOUT_MS = 60_000
_RETRY_BACKOFF_S = 0.1
#: The tools name topics in Produce, OffsetCommit and OffsetFetch: Produce v13 (and the
#: offset APIs' v10) names them by id only, so they stop at v12 (a v12 body converted up
#: would reach the broker with no topic id at all).
_BROKER_RANGES = offsets_by_name(listener_ranges(Listener.BROKER)) | {
    ApiKey.PRODUCE: (listener_ranges(Listener.BROKER)[ApiKey.PRODUCE][0], 12)}
_URL = re.compile(r"^\[?([0-9a-zA-Z\-%._:]*)\]?:([0-9]+)$")

#: Kafka's default exception messages, for an answer that carries a code but no message.
_DEFAULT_MESSAGES = {
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: "This server does not host this topic-partition.",
    ErrorCode.TOPIC_ALREADY_EXISTS: "Topic with this name already exists.",
    ErrorCode.INVALID_TOPIC_EXCEPTION: "The request attempted to perform an operation on an "
                                       "invalid topic.",
    ErrorCode.INVALID_PARTITIONS: "Number of partitions is below 1.",
    ErrorCode.INVALID_REPLICATION_FACTOR: "Replication factor is below 1 or larger than the "
                                          "number of available brokers.",
    ErrorCode.INVALID_REPLICA_ASSIGNMENT: "Replica assignment is invalid.",
    ErrorCode.INVALID_CONFIG: "Configuration is invalid.",
    ErrorCode.POLICY_VIOLATION: "Request parameters do not satisfy the configured policy.",
    ErrorCode.TOPIC_DELETION_DISABLED: "Topic deletion is disabled.",
    ErrorCode.NOT_CONTROLLER: "This is not the correct controller for this cluster.",
    ErrorCode.REQUEST_TIMED_OUT: "The request timed out.",
    ErrorCode.UNKNOWN_TOPIC_ID: "This server does not host this topic ID.",
    ErrorCode.THROTTLING_QUOTA_EXCEEDED: "The throttling quota has been exceeded.",
}


class AdminError(PyKraftError):
    """An admin call failed; the message is what Kafka's tools would print."""


class UnsupportedApiError(AdminError):
    """The broker serves no version of the API this client speaks."""


class ApiError(AdminError):
    """A broker answered with an error code; ``error`` is that code."""

    def __init__(self, error: ErrorCode, message: str | None) -> None:
        self.error = error
        super().__init__(message or _DEFAULT_MESSAGES.get(error, error_name(error)))


def raise_for(error_code: int, message: str | None = None) -> None:
    """Raise :class:`ApiError` unless ``error_code`` is NONE."""
    if error_code != ErrorCode.NONE:
        raise ApiError(ErrorCode(error_code), message)


# -- settings -------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class AdminSettings:
    bootstrap: tuple[Address, ...]
    client_id: str = DEFAULT_CLIENT_ID
    request_timeout_s: float = REQUEST_TIMEOUT_MS / 1000
    api_timeout_s: float = DEFAULT_API_TIMEOUT_MS / 1000
    tls: ssl.SSLContext | None = None
    """The client context when ``security.protocol`` is SSL or SASL_SSL."""
    sasl: SaslCredentials | None = None
    """The credentials when ``security.protocol`` is SASL_PLAINTEXT or SASL_SSL."""


def parse_bootstrap_servers(text: str) -> tuple[Address, ...]:
    """``bootstrap.servers``: comma-separated host:port, with Kafka's ClientUtils messages."""
    addresses = []
    for url in (part.strip() for part in text.split(",")):
        if not url:
            continue
        match = _URL.match(url)
        if match is None or not match.group(1):
            raise ConfigError(f"Invalid url in bootstrap.servers: {url}")
        addresses.append((match.group(1), int(match.group(2))))
    if not addresses:
        raise ConfigError("No resolvable bootstrap urls given in bootstrap.servers")
    return tuple(addresses)


def _int_config(props: Mapping[str, str], key: str, default: int) -> int:
    text = props.get(key)
    if text is None:
        return default
    try:
        return int(text.strip())
    except ValueError:
        raise ConfigError(f"Invalid value {text} for configuration {key}: Not a number of "
                          "type INT") from None


@dataclass(frozen=True, slots=True)
class ClientSecurity:
    """How a tool's connections are secured (plaintext when both are None)."""

    tls: ssl.SSLContext | None = None
    sasl: SaslCredentials | None = None


def client_security(props: Mapping[str, str]) -> ClientSecurity:
    """``security.protocol`` (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL) with the ``ssl.*``
    keys, ``sasl.mechanism`` and ``sasl.jaas.config`` of a ``--command-config``."""
    protocol = props.get("security.protocol", "PLAINTEXT").strip().upper()
    if protocol not in SecurityProtocol.__members__:
        raise ConfigError(f"security.protocol={protocol} is not supported: pykraft's tools "
                          "speak PLAINTEXT, SSL, SASL_PLAINTEXT and SASL_SSL")
    return ClientSecurity(
        tls=client_context(props) if SecurityProtocol[protocol].uses_tls else None,
        sasl=client_credentials(props))


def client_settings(bootstrap_server: str, props: Mapping[str, str], *,
                    client_id: str) -> AdminSettings:
    """A producer's or consumer's connection settings (console tools): the bootstrap
    servers, ``client.id`` and the keys of :func:`client_security`; the timeouts stay the
    admin defaults (the producer's ``request.timeout.ms`` is its Produce timeout)."""
    security = client_security(props)
    return AdminSettings(
        tls=security.tls, sasl=security.sasl,
        bootstrap=parse_bootstrap_servers(bootstrap_server),
        client_id=props.get("client.id", client_id).strip() or client_id)


def admin_settings(bootstrap_server: str, command_config: Path | None = None, *,
                   client_id: str = DEFAULT_CLIENT_ID) -> AdminSettings:
    """Settings from ``--bootstrap-server`` and the ``--command-config`` properties.

    Honoured keys: those of :func:`client_settings`, ``request.timeout.ms`` and
    ``default.api.timeout.ms``."""
    props = load_properties(command_config) if command_config is not None else {}
    return replace(
        client_settings(bootstrap_server, props, client_id=client_id),
        request_timeout_s=_int_config(props, "request.timeout.ms", REQUEST_TIMEOUT_MS) / 1000,
        api_timeout_s=_int_config(props, "default.api.timeout.ms",
                                  DEFAULT_API_TIMEOUT_MS) / 1000)


# -- answers --------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class PartitionMetadata:
    """One partition as Metadata or DescribeTopicPartitions describes it; ``leader`` is None
    when it has none; ``elr`` and ``last_known_elr`` are None from Metadata, which has
    neither."""

    partition: int
    leader: int | None
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    offline: tuple[int, ...]
    elr: tuple[int, ...] | None = None
    last_known_elr: tuple[int, ...] | None = None


@dataclass(frozen=True, slots=True)
class TopicMetadata:
    name: str
    topic_id: uuid.UUID
    internal: bool
    partitions: tuple[PartitionMetadata, ...]  # by partition index


@dataclass(frozen=True, slots=True)
class ClusterMetadata:
    """Metadata's answer: live brokers (id to host:port), the controller id clients send
    admin requests to, and the topics found (a name that is not there is left out)."""

    cluster_id: str | None
    controller_id: int
    brokers: dict[int, Address]
    topics: dict[str, TopicMetadata]


@dataclass(frozen=True, slots=True)
class ConfigEntry:
    """One DescribeConfigs entry; Kafka's ``ConfigEntry.isDefault()`` is the source test."""

    name: str
    value: str | None
    source: int

    @property
    def is_default(self) -> bool:
        return self.source == ConfigSource.DEFAULT_CONFIG


def _partition(part: MetadataResponsePartition) -> PartitionMetadata:
    leader = part.leader_id
    return PartitionMetadata(
        partition=part.partition_index, leader=leader if leader >= 0 else None,
        leader_epoch=part.leader_epoch, replicas=part.replica_nodes, isr=part.isr_nodes,
        offline=part.offline_replicas)


def _described(part: DescribeTopicPartitionsResponsePartition) -> PartitionMetadata:
    leader = part.leader_id
    return PartitionMetadata(
        partition=part.partition_index, leader=leader if leader >= 0 else None,
        leader_epoch=part.leader_epoch, replicas=part.replica_nodes, isr=part.isr_nodes,
        offline=part.offline_replicas, elr=part.eligible_leader_replicas or (),
        last_known_elr=part.last_known_elr or ())


def cluster_metadata(answer: MetadataResponse) -> ClusterMetadata:
    """The tool's view of a Metadata answer; a topic that failed with anything but
    UNKNOWN_TOPIC_OR_PARTITION is an :class:`ApiError`."""
    raise_for(answer.error_code)
    topics = {}
    for topic in answer.topics:
        if topic.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
            continue
        raise_for(topic.error_code)
        topics[str(topic.name)] = TopicMetadata(
            name=str(topic.name), topic_id=topic.topic_id, internal=topic.is_internal,
            partitions=tuple(sorted((_partition(p) for p in topic.partitions),
                                    key=lambda p: p.partition)))
    return ClusterMetadata(
        cluster_id=answer.cluster_id, controller_id=answer.controller_id,
        brokers={b.node_id: (b.host, b.port) for b in answer.brokers}, topics=topics)


# -- the client -----------------------------------------------------------------------------

class AdminClient:
    """One broker connection with retries; use as ``async with``. Concurrent calls share
    the connection (pipelined, see :class:`ClientConnection`)."""

    def __init__(self, settings: AdminSettings) -> None:
        self.settings = settings
        self._connection: ClientConnection | None = None
        self._deadline = 0.0
        self._connecting = asyncio.Lock()  # concurrent first calls open one connection

    async def __aenter__(self) -> AdminClient:
        return self

    async def __aexit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                        traceback: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None

    async def request(self, body: Any) -> Any:
        """``body``'s answer (the generated class); a broken connection is reopened and the
        request sent again until ``default.api.timeout.ms``."""
        deadline = time.monotonic() + self.settings.api_timeout_s
        last_error = "no attempt"
        while time.monotonic() < deadline:
            try:
                connection = await self._connect(deadline)
                timeout = min(self.settings.request_timeout_s,
                              max(0.1, deadline - time.monotonic()))
                return await asyncio.wait_for(connection.request(body), timeout)
            except UnsupportedVersionError as exc:
                raise UnsupportedApiError(
                    f"{exc}: is --bootstrap-server a broker's address?") from None
            except CONNECTION_ERRORS as exc:
                self.close()
                last_error = str(exc) or type(exc).__name__
            await asyncio.sleep(_RETRY_BACKOFF_S)
        raise AdminError(f"Timed out after {self.settings.api_timeout_s:.0f} s: {last_error}")

    async def _connect(self, deadline: float) -> ClientConnection:
        async with self._connecting:
            return self._connection or await self._open(deadline)

    async def _open(self, deadline: float) -> ClientConnection:
        refused, errors = [], []
        for host, port in self.settings.bootstrap:
            try:
                self._connection = await open_with_timeout(
                    host, port, client_id=self.settings.client_id, ours=_BROKER_RANGES,
                    timeout_s=min(self.settings.request_timeout_s,
                                  max(0.1, deadline - time.monotonic())),
                    tls=self.settings.tls, sasl=self.settings.sasl)
                return self._connection
            except SaslClientError as exc:  # Kafka's admin: an authentication error is fatal
                raise AdminError(str(exc)) from None
            except ConnectionRefusedError:
                refused.append(f"Connection to {host}:{port} refused")
            except CONNECTION_ERRORS as exc:
                errors.append(f"{host}:{port}: {exc}")
        if refused and not errors:
            raise _RefusedError("; ".join(refused))
        raise ConnectionError("; ".join(errors + refused))

    async def metadata(self, topics: Sequence[str] | None = None) -> ClusterMetadata:
        """Metadata for ``topics`` (None: every topic), never creating one."""
        wanted = None if topics is None else tuple(
            MetadataRequestTopic(name=t) for t in topics)
        return cluster_metadata(await self.request(MetadataRequest(
            topics=wanted, allow_auto_topic_creation=False,
            include_topic_authorized_operations=False)))

    async def topic_partitions(self, topics: Sequence[str], limit: int
                               ) -> dict[str, tuple[PartitionMetadata, ...]] | None:
        """The partitions of ``topics`` by DescribeTopicPartitions, pages of at most
        ``limit`` partitions, as Kafka's admin client asks them: the topics sorted, those
        answered dropped from the next page's request, a topic cut short asked again from
        the partition after those it has. None when the broker does not serve the API
        (Kafka's admin then asks Metadata); a topic answered with an error is an
        :class:`ApiError`."""
        pending = sorted(set(topics))
        found: dict[str, list[PartitionMetadata]] = {}
        cursor: Cursor | None = None
        while pending:
            try:
                answer = await self.request(DescribeTopicPartitionsRequest(
                    topics=tuple(TopicRequest(name=name) for name in pending),
                    response_partition_limit=limit, cursor=cursor))
            except UnsupportedApiError:
                return None
            assert isinstance(answer, DescribeTopicPartitionsResponse)
            cut = None if answer.next_cursor is None else answer.next_cursor.topic_name
            for topic in answer.topics:
                raise_for(topic.error_code)
                found.setdefault(str(topic.name), []).extend(map(_described, topic.partitions))
            done = {str(t.name) for t in answer.topics} - {cut}
            if not done and cut not in found:
                raise AdminError(f"DescribeTopicPartitions answered nothing of {pending}")
            pending = [name for name in pending if name not in done]
            cursor = (Cursor(topic_name=cut, partition_index=len(found[cut]))
                      if cut is not None and cut in found else None)
        return {name: tuple(sorted(parts, key=lambda p: p.partition))
                for name, parts in found.items()}

    async def topic_configs(self, topics: Sequence[str]) -> dict[str, tuple[ConfigEntry, ...]]:
        """DescribeConfigs of each topic, entries in the broker's order."""
        if not topics:
            return {}
        answer = await self.request(DescribeConfigsRequest(resources=tuple(
            DescribeConfigsResource(resource_type=ConfigResourceType.TOPIC,
                                    resource_name=name, configuration_keys=None)
            for name in topics), include_synonyms=False, include_documentation=False))
        assert isinstance(answer, DescribeConfigsResponse)
        configs = {}
        for result in answer.results:
            raise_for(result.error_code, result.error_message)
            configs[result.resource_name] = tuple(
                ConfigEntry(c.name, c.value, c.config_source) for c in result.configs)
        return configs


class _RefusedError(AdminError):
    """Every bootstrap server refused: a definite answer, so :meth:`AdminClient.request`
    does not retry it."""
