"""Images, client batches and Produce requests for the replica manager and Produce tests."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from kafka.record.default_records import DefaultRecordBatchBuilder

from pykraft.broker.fetch import FetchHandler
from pykraft.broker.list_offsets import list_offsets, offset_for_leader_epoch
from pykraft.broker.replica_manager import HostedPartition, ReplicaManager
from pykraft.image.image import MetadataDelta, MetadataImage
from pykraft.log.log_manager import LogManager
from pykraft.messages.kafka import produce_request as req
from pykraft.protocol.apis import ApiKey
from pykraft.protocol.codec import api_key_of, decode_response, encode_response
from pykraft.records.metadata import (
    BrokerEndpoint,
    PartitionRecord,
    RegisterBrokerRecord,
    TopicRecord,
)
from pykraft.storage.log_config import LogConfig


def with_records(image: MetadataImage, *records: object) -> MetadataImage:
    delta = MetadataDelta(image)
    for record in records:
        delta.replay(record)
    return delta.apply()


def topic(name: str, topic_id: uuid.UUID, *partitions: tuple[int, ...]) -> list[object]:
    """A topic whose partition i has replicas (and ISR) ``partitions[i]``, led by the first."""
    return [TopicRecord(name=name, topic_id=topic_id), *(
        PartitionRecord(partition_id=i, topic_id=topic_id, replicas=r, isr=r, leader=r[0],
                        leader_epoch=0, partition_epoch=0)
        for i, r in enumerate(partitions))]


def broker(broker_id: int, port: int) -> RegisterBrokerRecord:
    return RegisterBrokerRecord(
        broker_id=broker_id, incarnation_id=uuid.UUID(int=broker_id), broker_epoch=10,
        end_points=(BrokerEndpoint(name="PLAINTEXT", host="127.0.0.1", port=port,
                                   security_protocol=0),), rack="r1")


def client_batch(values: Sequence[bytes], *, producer_id: int = -1, epoch: int = -1,
                 sequence: int = -1, timestamp: int = 1_000, key: bytes | None = b"k",
                 transactional: bool = False) -> bytes:
    """A producer's batch as kafka-python writes it."""
    builder = DefaultRecordBatchBuilder(
        magic=2, compression_type=0, is_transactional=transactional, producer_id=producer_id,
        producer_epoch=epoch, base_sequence=sequence, batch_size=1 << 24)
    for index, value in enumerate(values):
        builder.append(index, timestamp=timestamp + index, key=key, value=value, headers=[])
    return bytes(builder.build())


def request(partitions: dict[int, bytes], *, acks: int = 1, timeout_ms: int = 30_000,
            name: str = "t", transactional_id: str | None = None) -> req.ProduceRequest:
    """A Produce of ``partitions`` (index -> records) to topic ``name``, by name (v3-12)."""
    return req.ProduceRequest(
        transactional_id=transactional_id, acks=acks, timeout_ms=timeout_ms,
        topic_data=(req.TopicProduceData(name=name, partition_data=tuple(
            req.PartitionProduceData(index=index, records=records)
            for index, records in partitions.items())),))


def replicas_of(directory: Path, broker_id: int, image: MetadataImage) -> ReplicaManager:
    """A broker's replica manager over its own log dir under ``directory``, given ``image``."""
    logs = LogManager([directory / f"b{broker_id}"], LogConfig())
    logs.startup(1_000)
    manager = ReplicaManager(broker_id, logs, {})
    manager.apply_image(image, 1_000)
    return manager


def hosted(manager: ReplicaManager) -> HostedPartition:
    """The replica of partition t-0, leader or follower."""
    return manager.partition_for("t", 0, require_leader=False)


def produce(leader: ReplicaManager, values: list[bytes], *, producer_id: int = -1,
            epoch: int = -1, sequence: int = -1, transactional: bool = False) -> int:
    """Append ``values`` as one client batch to t-0 on its leader; the base offset."""
    part = leader.partition_for("t", 0)
    batch = client_batch(values, producer_id=producer_id, epoch=epoch, sequence=sequence,
                         transactional=transactional)
    return leader.append_records(part, batch, acks=1, api_version=12,
                                 now_ms=2_000).base_offset


async def until(condition: Callable[[], object], what: str, *, deadline_s: float = 10.0,
                poll_s: float = 0.0) -> None:
    """Let the event loop run until ``condition()`` holds (a task parked, an append made),
    checking every ``poll_s`` (0: every loop turn; more when real sockets are involved),
    bounded by ``deadline_s``: tests wait on state, never on a fixed sleep."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + deadline_s
    while not condition():
        assert loop.time() < deadline, f"{what}: not reached within {deadline_s} s"
        await asyncio.sleep(poll_s)


class InProcessLeader:
    """A ClientConnection stand-in answering with the leader broker's handlers, at the
    Fetch version given (answers come back as ClientConnection converts them: up to v17,
    or v12 from a leader without topic ids, see ``open_connection``)."""

    def __init__(self, replicas: ReplicaManager, fetch_version: int) -> None:
        self._fetch = FetchHandler(replicas, "PLAINTEXT")
        self._replicas = replicas
        self.versions = {ApiKey.FETCH: fetch_version, ApiKey.LIST_OFFSETS: 11,
                         ApiKey.OFFSET_FOR_LEADER_EPOCH: 4}
        self.requests: list[Any] = []

    async def request(self, body: Any) -> Any:
        self.requests.append(body)
        await asyncio.sleep(0)  # a network round trip lets the loop run other tasks
        api_key = api_key_of(body)
        if api_key == ApiKey.FETCH:  # the answer as the leader's bytes would bring it
            version = self.versions[ApiKey.FETCH]
            answer = await self._fetch.fetch(body, version)
            return decode_response(ApiKey.FETCH, version, encode_response(
                0, ApiKey.FETCH, version, answer)).body
        if api_key == ApiKey.OFFSET_FOR_LEADER_EPOCH:
            return await offset_for_leader_epoch(body, self._replicas)
        return await list_offsets(body, self._replicas)

    def close(self) -> None:
        pass
