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

A connection speaks the inter-broker listener's security protocol, as the controller's
``ControllerChannelManager`` builds its channel from it: over TLS with the controller's
``ssl.*`` keys for that listener (``listener.name.<listener>.ssl.*`` first), and on a SASL
listener authenticated first (ApiVersions and the SASL exchange, as Kafka's
SaslClientAuthenticator) with ``sasl.mechanism.inter.broker.protocol`` and the listener's
JAAS (``listener.name.<listener>.<mechanism>.sasl.jaas.config``): the settings of
:class:`pykraft.runtime.settings.NodeSettings` ``legacy_tls`` and ``legacy_sasl``. A refused
authentication is a failed attempt like any other, retried after the backoff.

A queue is bounded, where Kafka's is not: Kafka's ``ControllerChannelManager`` queues every
request to a broker it cannot reach (a ``LinkedBlockingQueue`` per broker, nothing coalesced)
until the broker is removed, which for a broker that still heartbeats (registered and
unfenced, but its inter-broker listener unreachable from the controller) is never. When a
delivery takes a queue past ``max_queued`` requests, its requests are replaced by the full
state of the delivered image — the FULL UpdateMetadata and LeaderAndIsr a snapshot sends,
built by the channel's own propagator — and a request in flight is given up after its
attempt: every later change follows that full state in the queue, and a Kafka 3.9 ZK broker
takes a FULL LeaderAndIsr as the whole truth (partitions it does not name are stray and
removed), so the broker loses nothing by the dropped requests. A queue holds at most
``max_queued`` requests plus one full state.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass

from pykraft.errors import NetworkError, ProtocolError
from pykraft.image.image import MetadataImage
from pykraft.messages.legacy_rpc import decode_legacy_response, encode_legacy_request
from pykraft.messages.rpc import RequestHeader
from pykraft.migration.propagator import (
    LegacyRequest,
    MigrationPropagator,
    PropagationError,
    channel_brokers,
)
from pykraft.protocol.frame import DEFAULT_MAX_FRAME_SIZE
from pykraft.runtime.kafka_client import authenticate_stream
from pykraft.runtime.sasl_client import SaslCredentials
from pykraft.runtime.streams import FrameStream

log = logging.getLogger(__name__)

RETRY_BACKOFF_S = 0.1
"""``RequestSendThread.backoff``: 100 ms between attempts."""
REQUEST_TIMEOUT_S = 30.0
"""The controller channel's ``request.timeout.ms`` default (30 s)."""
MAX_QUEUED_REQUESTS = 1000
"""A queue's bound (pykraft's; Kafka's queues are unbounded): a few hundred metadata
changes to a broker that cannot be reached, after which it gets the full state instead."""


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
        """Waiting to be sent (the one in flight is not among them)."""
        self.superseded = False
        """The requests were replaced by a full state: the one in flight is given up after
        its attempt instead of being retried."""
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

    def supersede(self, full: Sequence[LegacyRequest]) -> None:
        """Replace the queued requests by ``full``, the broker's full state."""
        self.requests.clear()
        self.requests.extend(full)
        self.superseded = True

    async def _run(self) -> None:
        while True:
            while not self.requests:
                self.ready.clear()
                await self.ready.wait()
            request = self.requests.popleft()
            self.superseded = False
            while not await self._attempt(request):
                if self.superseded:
                    break  # the full state queued since covers it
            else:
                self._channel.sent += 1

    async def _attempt(self, request: LegacyRequest) -> bool:
        """One attempt at ``request``: False after a failure and Kafka's backoff."""
        try:
            await asyncio.wait_for(self._exchange(request), REQUEST_TIMEOUT_S)
        except (OSError, NetworkError, ProtocolError, TimeoutError) as e:
            log.warning("Controller %d fails to send request %s to broker %d (%s:%d). "
                        "Reconnecting to broker. (%s)", self._channel.controller_id,
                        type(request.body).__name__, self.broker_id, self.target.host,
                        self.target.port, e)
            self._disconnect()
            await asyncio.sleep(RETRY_BACKOFF_S)
            return False
        return True

    async def _exchange(self, request: LegacyRequest) -> None:
        if self._stream is None:
            self._stream = await self._channel.connect(self.target)
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

    def __init__(self, controller_id: int, inter_broker_listener: str, *,
                 max_queued: int = MAX_QUEUED_REQUESTS, tls: ssl.SSLContext | None = None,
                 sasl: SaslCredentials | None = None) -> None:
        self.controller_id = controller_id
        self.inter_broker_listener = inter_broker_listener
        self.max_queued = max_queued
        self._tls = tls
        self._sasl = sasl
        self._brokers: dict[int, _BrokerQueue] = {}
        self._propagator = MigrationPropagator(controller_id, inter_broker_listener)
        """The full states of overflowing queues (the driver's propagator is its thread's)."""
        self.sent = 0
        """Requests answered (a count for tests and metrics)."""

    async def connect(self, target: _Target) -> FrameStream:
        """A connection to a broker, secured as the inter-broker listener asks."""
        stream = await FrameStream.connect(target.host, target.port, DEFAULT_MAX_FRAME_SIZE,
                                           tls=self._tls)
        if self._sasl is not None:
            try:
                await authenticate_stream(stream, str(self.controller_id), self._sasl)
            except BaseException:
                stream.close()
                raise
        return stream

    @property
    def broker_ids(self) -> list[int]:
        return sorted(self._brokers)

    def queued(self, broker_id: int) -> int:
        """The requests waiting for ``broker_id`` (Kafka's ``QueueSize`` gauge of it)."""
        queue = self._brokers.get(broker_id)
        return 0 if queue is None else len(queue.requests)

    def deliver(self, image: MetadataImage, requests: Sequence[LegacyRequest],
                zk_controller_epoch: int) -> None:
        """Update the brokers from ``image`` (the one ``requests`` were made, under
        ``zk_controller_epoch``, from), then queue each request to its broker; requests to a
        broker not in the channel are not sent (Kafka: "Not sending request ... since it is
        offline"). A queue past :attr:`max_queued` gets the full state of ``image``."""
        self._publish(image)
        overflowing: set[int] = set()
        for request in requests:
            queue = self._brokers.get(request.broker_id)
            if queue is None:
                log.info("Not sending request %s to broker %d, since it is offline.",
                         type(request.body).__name__, request.broker_id)
                continue
            queue.requests.append(request)
            queue.ready.set()
            if len(queue.requests) > self.max_queued:
                overflowing.add(request.broker_id)
        if overflowing:
            self._supersede(image, zk_controller_epoch, overflowing)

    def _supersede(self, image: MetadataImage, zk_controller_epoch: int,
                   broker_ids: set[int]) -> None:
        try:
            full = self._propagator.image_requests(image, zk_controller_epoch)
        except PropagationError as e:  # the queues stay as they are, to be bounded later
            log.error("Cannot replace the requests queued to brokers %s by the full "
                      "metadata: %s", sorted(broker_ids), e)
            return
        for broker_id in sorted(broker_ids):
            queue = self._brokers[broker_id]
            log.warning("Controller %d has %d requests queued to broker %d (%s:%d), more than "
                        "%d: they are replaced by the full metadata at offset %d.",
                        self.controller_id, len(queue.requests), broker_id, queue.target.host,
                        queue.target.port, self.max_queued, image.provenance.last_offset)
            queue.supersede([r for r in full if r.broker_id == broker_id])

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
