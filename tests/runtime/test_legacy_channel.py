"""The migrating controller's channel to ZooKeeper-mode brokers: every request reaches its
broker in order, one lost on a dropped connection is sent again on a new one, a broker
that leaves the channel (fenced) gets nothing more, and the queue of a broker that cannot be
reached stays bounded, the broker getting the full state once it answers.

The brokers are small fake servers that read the frames and answer each with an empty
response of its api (as a Kafka 3.9 ZK broker answers a KRaft controller's request).
"""

from __future__ import annotations

import asyncio
import logging
import struct
import uuid
from dataclasses import dataclass, field

import pytest

from pykraft.image.image import MetadataDelta, MetadataImage, Provenance
from pykraft.image.versions import MV_3_4_IV0
from pykraft.messages.legacy_rpc import encode_legacy_request, legacy_classes
from pykraft.messages.rpc import RequestHeader, encode_body
from pykraft.messages.schema import schema_of
from pykraft.migration.propagator import LegacyRequest, MigrationPropagator
from pykraft.records.metadata import (
    BrokerEndpoint,
    FeatureLevelRecord,
    PartitionChangeRecord,
    PartitionRecord,
    RegisterBrokerRecord,
    TopicRecord,
)
from pykraft.runtime.legacy_channel import LegacyChannel
from pykraft.tools.local_cluster import free_ports

LISTENER = "PLAINTEXT"
TOPIC = uuid.UUID(int=7)


@dataclass
class FakeZkBroker:
    """Answers every request; drops the connection instead of the first ``drop`` times."""

    drop: int = 0
    seen: list[tuple[int, int, str]] = field(default_factory=list)
    frames: list[bytes] = field(default_factory=list)
    port: int = 0
    """0: the kernel's choice."""

    async def start(self) -> asyncio.Server:
        server = await asyncio.start_server(self._serve, "127.0.0.1", self.port)
        self.port = server.sockets[0].getsockname()[1]
        return server

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                size = struct.unpack(">i", await reader.readexactly(4))[0]
                frame = await reader.readexactly(size)
                api_key, version, correlation = struct.unpack(">hhi", frame[:8])
                client_len = struct.unpack(">h", frame[8:10])[0]
                self.seen.append((api_key, version, frame[10:10 + client_len].decode()))
                self.frames.append(frame)
                if self.drop:
                    self.drop -= 1
                    return
                response = legacy_classes(api_key)[1]
                header = struct.pack(">i", correlation)
                if schema_of(response).is_flexible(version):
                    header += b"\x00"
                answer = encode_body(response(), version, (), header)
                writer.write(struct.pack(">i", len(answer)) + answer)
                await writer.drain()
        except asyncio.IncompleteReadError:
            return
        finally:
            writer.close()


def _image(ports: dict[int, int], *, fenced: frozenset[int] = frozenset()) -> MetadataImage:
    delta = MetadataDelta(MetadataImage())
    delta.replay(FeatureLevelRecord(name="metadata.version", feature_level=MV_3_4_IV0))
    for broker_id, port in ports.items():
        delta.replay(RegisterBrokerRecord(
            broker_id=broker_id, is_migrating_zk_broker=True, incarnation_id=uuid.uuid4(),
            broker_epoch=10 + broker_id, fenced=broker_id in fenced,
            end_points=(BrokerEndpoint(name=LISTENER, host="127.0.0.1", port=port,
                                       security_protocol=0),)))
    delta.replay(TopicRecord(name="t", topic_id=TOPIC))
    replicas = tuple(ports)
    delta.replay(PartitionRecord(partition_id=0, topic_id=TOPIC, replicas=replicas,
                                 isr=replicas, leader=replicas[0], leader_epoch=1,
                                 partition_epoch=1))
    return delta.apply(Provenance(20, 5, 0))


async def _until(condition: object, what: str) -> None:
    for _ in range(1000):  # bounded: 10 s of loop turns
        if callable(condition) and condition():
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"never: {what}")


def test_requests_reach_each_broker_in_order_and_a_dropped_one_is_sent_again() -> None:
    async def scenario() -> None:
        steady, flaky = FakeZkBroker(), FakeZkBroker(drop=1)
        servers = [await steady.start(), await flaky.start()]
        channel = LegacyChannel(3000, LISTENER)
        try:
            image = _image({1: steady.port, 2: flaky.port})
            requests = MigrationPropagator(3000, LISTENER).image_requests(image, 4)
            channel.deliver(image, requests, 4)
            assert channel.broker_ids == [1, 2]
            await _until(lambda: channel.sent == len(requests), "every request answered")
            sent = {b: [(r.api_key, r.api_version, "3000") for r in requests
                        if r.broker_id == b] for b in (1, 2)}
            assert steady.seen == sent[1]
            assert flaky.seen == [sent[2][0], *sent[2]]  # the first one twice
            assert [k for k, _, _ in sent[1]] == [6, 4, 6]  # UpdateMetadata, LeaderAndIsr, ...
            fenced = _image({1: steady.port, 2: flaky.port}, fenced=frozenset({2}))
            channel.deliver(fenced, MigrationPropagator(3000, LISTENER).image_requests(fenced, 4),
                            4)
            assert channel.broker_ids == [1]
            await _until(lambda: len(steady.seen) == 2 * len(sent[1]), "broker 1 answered")
            assert len(flaky.seen) == len(sent[2]) + 1
        finally:
            channel.close()
            for server in servers:
                server.close()
                await server.wait_closed()

    asyncio.run(scenario())


class _UnreachableBroker:
    """Broker 1 registered and unfenced on a port nothing listens on (refused), its full
    state delivered to a channel bounded at 10 requests, until :meth:`come_back` serves it;
    the channel and the server are closed on exit."""

    def __init__(self) -> None:
        self.port = free_ports(1)[0]
        self.channel = LegacyChannel(3000, LISTENER, max_queued=10)
        self.propagator = MigrationPropagator(3000, LISTENER)
        self.image = _image({1: self.port})
        self._server: asyncio.Server | None = None

    async def __aenter__(self) -> _UnreachableBroker:
        self.channel.deliver(self.image, self.propagator.image_requests(self.image, 4), 4)
        return self

    async def come_back(self) -> FakeZkBroker:
        broker = FakeZkBroker(port=self.port)
        self._server = await broker.start()
        return broker

    async def __aexit__(self, *exc: object) -> None:
        self.channel.close()
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()


def test_an_unreachable_brokers_queue_stays_bounded_and_it_gets_the_full_state_back() -> None:
    """Broker 1 registered and unfenced, but nothing answers on its port (refused): 200
    leader changes later its queue holds at most the bound plus one full state, and once it
    answers it gets the full state of the last change, then the changes after it."""
    async def scenario() -> None:
        async with _UnreachableBroker() as broker_1:
            channel, propagator, image = broker_1.channel, broker_1.propagator, broker_1.image
            # no await in between: the sender has not run, nothing was sent. The full state
            # is 3 requests and each change adds 2 (LeaderAndIsr, UpdateMetadata): the 4th
            # change after a full state passes the bound, and so does the 200th
            for _ in range(200):
                previous, image = image, _leader_epoch(image)
                channel.deliver(image, propagator.delta_requests(previous, image, 4), 4)
                assert channel.queued(1) <= 10
            last = image
            full = MigrationPropagator(3000, LISTENER).image_requests(last, 4)
            assert channel.queued(1) == len(full) == 3
            broker = await broker_1.come_back()
            await _full_state_answered(channel, broker, full)
            after = _leader_epoch(last)
            channel.deliver(after, propagator.delta_requests(last, after, 4), 4)
            await _until(lambda: len(broker.frames) > len(full), "the next change sent")
            assert channel.queued(1) == 0

    asyncio.run(scenario())


def _leader_epoch(image: MetadataImage) -> MetadataImage:
    """A new leader epoch for partition 0: LeaderAndIsr and UpdateMetadata to its ZK
    broker."""
    delta = MetadataDelta(image)
    delta.replay(PartitionChangeRecord(partition_id=0, topic_id=TOPIC, leader=1))
    return delta.apply(Provenance(image.provenance.last_offset + 1, 5, 0))


def _correlation(frame: bytes) -> int:
    correlation: int = struct.unpack(">i", frame[4:8])[0]
    return correlation


def test_a_request_in_flight_when_the_queue_is_replaced_is_given_up(
        caplog: pytest.LogCaptureFixture) -> None:
    """The first request of the full state failed on a refused port and waits for its retry
    when five changes pass the bound (2 queued behind it, 2 each): it is not sent again, the
    full state of the fifth change is."""
    def failed() -> bool:
        return any(r.getMessage().startswith("Controller 3000 fails to send request")
                   for r in caplog.records)

    async def scenario() -> None:
        async with _UnreachableBroker() as broker_1:
            channel, propagator, image = broker_1.channel, broker_1.propagator, broker_1.image
            await _until(failed, "the first request failed")  # now in its backoff
            for _ in range(5):
                previous, image = image, _leader_epoch(image)
                channel.deliver(image, propagator.delta_requests(previous, image, 4), 4)
            full = MigrationPropagator(3000, LISTENER).image_requests(image, 4)
            broker = await broker_1.come_back()
            await _full_state_answered(channel, broker, full)
            assert len(broker.frames) == len(full)

    with caplog.at_level(logging.WARNING, logger="pykraft.runtime.legacy_channel"):
        asyncio.run(scenario())


async def _full_state_answered(channel: LegacyChannel, broker: FakeZkBroker,
                               full: list[LegacyRequest]) -> None:
    """The broker's first frames are ``full``, in order, and nothing is left queued."""
    await _until(lambda: channel.queued(1) == 0 and len(broker.frames) >= len(full),
                 "the full state answered")
    for frame, request in zip(broker.frames, full, strict=False):
        header = RequestHeader(request_api_key=request.api_key,
                               request_api_version=request.api_version,
                               correlation_id=_correlation(frame), client_id="3000")
        assert frame == encode_legacy_request(header, request.body)
