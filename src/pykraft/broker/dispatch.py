"""The broker's client listener (PLAINTEXT): answered locally, or forwarded (KIP-590).

Metadata, DescribeCluster and DescribeConfigs come from this broker's metadata image (and
for its own configs, its properties file). Admin writes and DescribeQuorum are forwarded
to the active controller, whose answer is converted back to the caller's version; while the
controller changes the broker retries, and when none answers within FORWARD_TIMEOUT_MS the
caller gets NOT_CONTROLLER. The framing rules (unknown API or version closes the
connection, KIP-511 ApiVersions reply) are the controller listener's, inherited from
:class:`~pykraft.runtime.dispatch.Dispatcher`.
"""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

from kio.schema.describe_configs.v4.request import DescribeConfigsRequest

from pykraft.broker.channel import ControllerChannel
from pykraft.broker.metadata_listener import BrokerMetadataListener
from pykraft.broker.responses import describe_cluster_response, metadata_response
from pykraft.controller.config_control import describe_configs
from pykraft.controller.responses import error_response, is_not_controller
from pykraft.errors import (
    MalformedMessageError,
    NetworkError,
    ProtocolError,
    UnsupportedVersionError,
)
from pykraft.protocol.api_versions import api_versions_response, encode_unsupported_version_reply
from pykraft.protocol.apis import ApiKey, Listener
from pykraft.protocol.codec import RequestFrame, decode_request, encode_response
from pykraft.protocol.convert import convert
from pykraft.protocol.errors import ErrorCode
from pykraft.protocol.header import read_request_prefix
from pykraft.protocol.wire import Reader
from pykraft.runtime.backoff import ExponentialBackoff
from pykraft.runtime.controller_service import CONTROLLER_REQUESTS
from pykraft.runtime.dispatch import CloseConnection, Dispatcher
from pykraft.runtime.node import RaftNode

FORWARDED = frozenset({
    ApiKey.CREATE_TOPICS, ApiKey.DELETE_TOPICS, ApiKey.CREATE_PARTITIONS,
    ApiKey.ALTER_CONFIGS, ApiKey.INCREMENTAL_ALTER_CONFIGS,
    ApiKey.UPDATE_FEATURES, ApiKey.DESCRIBE_QUORUM,
})
BROKER_SERVED = FORWARDED | {ApiKey.API_VERSIONS, ApiKey.METADATA, ApiKey.DESCRIBE_CLUSTER,
                             ApiKey.DESCRIBE_CONFIGS}
#: How long a forwarded request is retried while the active controller changes: an election
#: takes about controller.quorum.fetch.timeout.ms (2 s) plus a vote; clients wait 30 s or more.
FORWARD_TIMEOUT_MS = 15_000
FORWARD_BACKOFF_MS = 50


class BrokerDispatcher(Dispatcher):
    """Turns one client request frame into one response frame on a broker."""

    def __init__(self, node: RaftNode, metadata: BrokerMetadataListener,
                 channel: ControllerChannel, *, cluster_id: str, listener_name: str) -> None:
        super().__init__(node)
        self._metadata = metadata
        self._channel = channel
        self._cluster_id = cluster_id
        self._listener_name = listener_name

    async def handle(self, frame: bytes, peer: str) -> bytes:
        try:
            api_key, _, correlation_id = read_request_prefix(Reader(frame))
        except MalformedMessageError as exc:
            raise CloseConnection(f"unreadable request header: {exc}") from None
        try:
            request = decode_request(frame)
        except UnsupportedVersionError as exc:
            if exc.api_key == ApiKey.API_VERSIONS and exc.correlation_id is not None:
                return encode_unsupported_version_reply(exc.correlation_id, Listener.BROKER)
            raise CloseConnection(str(exc)) from None
        except ProtocolError as exc:
            raise CloseConnection(f"malformed request: {exc}") from None
        if api_key not in BROKER_SERVED:
            raise CloseConnection(f"api key {api_key} is not enabled on this listener")
        if api_key == ApiKey.API_VERSIONS:
            return encode_response(correlation_id, api_key, request.api_version,
                                   self._broker_api_versions(request.api_version))
        node_id = self._settings.node_id
        image = self._metadata.image
        if api_key == ApiKey.METADATA:
            return self._encode(request, metadata_response(
                image, request.body, version=request.api_version, self_id=node_id,
                cluster_id=self._cluster_id, listener=self._listener_name))
        if api_key == ApiKey.DESCRIBE_CLUSTER:
            return self._encode(request, describe_cluster_response(
                image, request.body, self_id=node_id, cluster_id=self._cluster_id,
                listener=self._listener_name))
        if api_key == ApiKey.DESCRIBE_CONFIGS:  # Kafka's brokers answer it (ConfigHelper)
            return self._encode(request, describe_configs(
                image, convert(request.body, DescribeConfigsRequest), node_id=node_id,
                static=self._settings.controller.properties).response)
        return self._encode(request, await self._forward(request))

    async def _forward(self, request: RequestFrame) -> Any:
        """The active controller's answer. While the controller changes (no leader known
        yet, a lost connection, an answer of NOT_CONTROLLER from a former leader), retry
        with backoff for up to :data:`FORWARD_TIMEOUT_MS`, as Kafka's forwarding does: some
        clients (librdkafka's CreateTopics) do not retry per-topic NOT_CONTROLLER errors."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + FORWARD_TIMEOUT_MS / 1000
        backoff = ExponentialBackoff(initial_ms=FORWARD_BACKOFF_MS)
        while True:
            try:
                response = await self._channel.send(request.body)
            except UnsupportedVersionError as exc:
                return self._not_controller(request, exc)
            except NetworkError as exc:
                response = self._not_controller(request, exc)
            delay = backoff.next_delay_ms() / 1000
            if not is_not_controller(response) or loop.time() + delay >= deadline:
                return response
            await asyncio.sleep(delay)

    @staticmethod
    def _not_controller(request: RequestFrame, exc: Exception) -> Any:
        controller_class = CONTROLLER_REQUESTS.get(request.api_key)
        if controller_class is None:
            raise CloseConnection(f"cannot forward: {exc}") from None
        return error_response(convert(request.body, controller_class),
                              ErrorCode.not_controller, str(exc))

    @staticmethod
    def _broker_api_versions(version: int) -> Any:
        """The same fixed set on every broker, so a client may talk to any of them."""
        body = api_versions_response(Listener.BROKER, version)
        served = tuple(k for k in body.api_keys if k.api_key in BROKER_SERVED)
        return dataclasses.replace(body, api_keys=served)
