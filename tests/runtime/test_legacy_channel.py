"""The migrating controller's channel to ZooKeeper-mode brokers: every request reaches its
broker in order, one lost on a dropped connection is sent again on a new one, and a broker
that leaves the channel (fenced) gets nothing more.

The brokers are small fake servers that read the frames and answer each with an empty
response of its api (as a Kafka 3.9 ZK broker answers a KRaft controller's request).
"""

from __future__ import annotations

import asyncio
import struct
import uuid
from dataclasses import dataclass, field

from pykraft.image.image import MetadataDelta, MetadataImage, Provenance
from pykraft.image.versions import MV_3_4_IV0
from pykraft.messages.legacy_rpc import legacy_classes
from pykraft.messages.rpc import encode_body
from pykraft.messages.schema import schema_of
from pykraft.migration.propagator import MigrationPropagator
from pykraft.records.metadata import (
    BrokerEndpoint,
    FeatureLevelRecord,
    PartitionRecord,
    RegisterBrokerRecord,
    TopicRecord,
)
from pykraft.runtime.legacy_channel import LegacyChannel

LISTENER = "PLAINTEXT"
TOPIC = uuid.UUID(int=7)


@dataclass
class FakeZkBroker:
    """Answers every request; drops the connection instead of the first ``drop`` times."""

    drop: int = 0
    seen: list[tuple[int, int, str]] = field(default_factory=list)
    port: int = 0

    async def start(self) -> asyncio.Server:
        server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
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
            channel.deliver(image, requests)
            assert channel.broker_ids == [1, 2]
            await _until(lambda: channel.sent == len(requests), "every request answered")
            sent = {b: [(r.api_key, r.api_version, "3000") for r in requests
                        if r.broker_id == b] for b in (1, 2)}
            assert steady.seen == sent[1]
            assert flaky.seen == [sent[2][0], *sent[2]]  # the first one twice
            assert [k for k, _, _ in sent[1]] == [6, 4, 6]  # UpdateMetadata, LeaderAndIsr, ...
            fenced = _image({1: steady.port, 2: flaky.port}, fenced=frozenset({2}))
            channel.deliver(fenced, MigrationPropagator(3000, LISTENER).image_requests(fenced, 4))
            assert channel.broker_ids == [1]
            await _until(lambda: len(steady.seen) == 2 * len(sent[1]), "broker 1 answered")
            assert len(flaky.seen) == len(sent[2]) + 1
        finally:
            channel.close()
            for server in servers:
                server.close()
                await server.wait_closed()

    asyncio.run(scenario())
