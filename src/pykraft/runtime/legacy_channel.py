"""The migrating controller's connections to ZooKeeper-mode brokers (Kafka's
``ControllerChannelManager`` as its ``MigrationPropagator`` uses it; migration-plan §8).

One queue and one sender task per unfenced broker registered with ``isMigratingZkBroker``,
on its ``inter.broker.listener.name`` endpoint. Each delivery from the propagator first
updates that set from the image it was made from (brokers added, and removed with their
queues, as Kafka's ``publishMetadata``), then queues each request to its broker. A sender
carries one request at a time, in order; a failed connection or exchange is logged and the
same request is sent again after Kafka's 100 ms backoff on a new connection, until it is
answered or its broker is removed. Errors in the answers are only logged, as Kafka does. No
ApiVersions first: Kafka's controller channel does not discover versions either.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass

from pykraft.errors import NetworkError, ProtocolError
from pykraft.image.image import MetadataImage
from pykraft.messages.legacy_rpc import decode_legacy_response, encode_legacy_request
from pykraft.messages.rpc import RequestHeader
from pykraft.migration.propagator import LegacyRequest, channel_brokers
from pykraft.protocol.frame import DEFAULT_MAX_FRAME_SIZE
from pykraft.runtime.streams import FrameStream

log = logging.getLogger(__name__)

RETRY_BACKOFF_S = 0.1
"""``RequestSendThread.backoff``: 100 ms between attempts."""
REQUEST_TIMEOUT_S = 30.0
"""The controller channel's ``request.timeout.ms`` default (30 s)."""


@dataclass(frozen=True, slots=True)
class _Target:
    host: str
    port: int
    broker_epoch: int


class _BrokerQueue:
    """One broker's requests and the task sending them."""

    def __init__(self, channel: LegacyChannel, broker_id: int, target: _Target) -> None:
        self.broker_id = broker_id
        self.target = target
        self.requests: deque[LegacyRequest] = deque()
        self.ready = asyncio.Event()
        self._channel = channel
        self._stream: FrameStream | None = None
        self._correlation = 0
        self.task = asyncio.get_running_loop().create_task(
            self._run(), name=f"legacy-channel-{broker_id}")

    def close(self) -> None:
        self.task.cancel()
        self._disconnect()

    def _disconnect(self) -> None:
        if self._stream is not None:
            self._stream.close()
            self._stream = None

    async def _run(self) -> None:
        while True:
            while not self.requests:
                self.ready.clear()
                await self.ready.wait()
            request = self.requests[0]
            try:
                await asyncio.wait_for(self._exchange(request), REQUEST_TIMEOUT_S)
            except (OSError, NetworkError, ProtocolError, TimeoutError) as e:
                log.warning("Controller %d fails to send request %s to broker %d (%s:%d). "
                            "Reconnecting to broker. (%s)", self._channel.controller_id,
                            type(request.body).__name__, self.broker_id, self.target.host,
                            self.target.port, e)
                self._disconnect()
                await asyncio.sleep(RETRY_BACKOFF_S)
                continue
            self.requests.popleft()
            self._channel.sent += 1

    async def _exchange(self, request: LegacyRequest) -> None:
        if self._stream is None:
            self._stream = await FrameStream.connect(self.target.host, self.target.port,
                                                     DEFAULT_MAX_FRAME_SIZE)
        self._correlation += 1
        header = RequestHeader(request_api_key=request.api_key,
                               request_api_version=request.api_version,
                               correlation_id=self._correlation,
                               client_id=str(self._channel.controller_id))
        await self._stream.write_frame(encode_legacy_request(header, request.body))
        frame = await self._stream.read_frame()
        if frame is None:
            raise NetworkError(f"broker {self.broker_id} closed the connection")
        answer = decode_legacy_response(request.api_key, request.api_version, frame)
        if answer.correlation_id != self._correlation:
            raise ProtocolError(f"response correlation id {answer.correlation_id}, "
                                f"expected {self._correlation}")
        error = getattr(answer.body, "error_code", 0)
        if error:
            log.warning("Broker %d answered %s with error code %d", self.broker_id,
                        type(request.body).__name__, error)


class LegacyChannel:
    """See the module docstring; used on the event loop only."""

    def __init__(self, controller_id: int, inter_broker_listener: str) -> None:
        self.controller_id = controller_id
        self.inter_broker_listener = inter_broker_listener
        self._brokers: dict[int, _BrokerQueue] = {}
        self.sent = 0
        """Requests answered (a count for tests and metrics)."""

    @property
    def broker_ids(self) -> list[int]:
        return sorted(self._brokers)

    def deliver(self, image: MetadataImage, requests: Sequence[LegacyRequest]) -> None:
        """Update the brokers from ``image`` (the one ``requests`` were made from), then
        queue each request to its broker; requests to a broker not in the channel are not
        sent (Kafka: "Not sending request ... since it is offline")."""
        self._publish(image)
        for request in requests:
            queue = self._brokers.get(request.broker_id)
            if queue is None:
                log.info("Not sending request %s to broker %d, since it is offline.",
                         type(request.body).__name__, request.broker_id)
                continue
            queue.requests.append(request)
            queue.ready.set()

    def close(self) -> None:
        for queue in self._brokers.values():
            queue.close()
        self._brokers.clear()

    def _publish(self, image: MetadataImage) -> None:
        targets: dict[int, _Target] = {}
        for broker in channel_brokers(image):
            endpoint = next((e for e in broker.listeners
                             if e.name == self.inter_broker_listener), None)
            if endpoint is not None:
                targets[broker.broker_id] = _Target(endpoint.host, endpoint.port, broker.epoch)
        for broker_id in [b for b in self._brokers if targets.get(b) != self._brokers[b].target]:
            self._brokers.pop(broker_id).close()
        for broker_id, target in targets.items():
            if broker_id not in self._brokers:
                self._brokers[broker_id] = _BrokerQueue(self, broker_id, target)
