"""Fetch from followers (KIP-392) over real ReplicaManagers, through FetchHandler (no
sockets): brokers 1, 2 and 3 in racks a, b and c replicate ``t-0``, led by broker 1. The
leader names the consumer's preferred read replica with RackAwareReplicaSelector; a
follower serves consumers of Fetch v11+ up to its own high watermark (last stable offset
for read_committed), learnt from the leader's answers."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from kafka.record.memory_records import MemoryRecords
from replica_fixtures import client_batch, until, with_records

from pykraft.broker.fetch import FetchHandler
from pykraft.broker.follower_log import append_as_follower
from pykraft.broker.replica_manager import HostedPartition, ReplicaManager
from pykraft.image.image import MetadataImage
from pykraft.log.log_manager import LogManager
from pykraft.messages.codec import decode, encode
from pykraft.messages.kafka.fetch_request import (
    FetchPartition,
    FetchRequest,
    FetchTopic,
    ReplicaState,
)
from pykraft.protocol.errors import ErrorCode
from pykraft.records.metadata import (
    BrokerEndpoint,
    BrokerRegistrationChangeRecord,
    PartitionRecord,
    RegisterBrokerRecord,
    TopicRecord,
)
from pykraft.replica.read_replica import RACK_AWARE_REPLICA_SELECTOR
from pykraft.storage.log_config import LogConfig

LEADER, F2, F3 = 1, 2, 3
RACKS = {LEADER: "a", F2: "b", F3: "c"}
T1 = uuid.UUID(int=7)
BROKER_EPOCH = 10
LEADER_EPOCH = 4
SELECTOR = {"replica.selector.class": RACK_AWARE_REPLICA_SELECTOR}
BIG = 1 << 20


class Clock:
    def __init__(self) -> None:
        self.now = 0

    def __call__(self) -> int:
        return self.now


def _image(*, fenced: tuple[int, ...] = ()) -> MetadataImage:
    image: MetadataImage = with_records(
        MetadataImage(),
        *(RegisterBrokerRecord(
            broker_id=b, incarnation_id=uuid.UUID(int=b), broker_epoch=BROKER_EPOCH,
            end_points=(BrokerEndpoint(name="PLAINTEXT", host="127.0.0.1", port=9090 + b,
                                       security_protocol=0),), rack=rack)
          for b, rack in RACKS.items()),
        *(BrokerRegistrationChangeRecord(broker_id=b, broker_epoch=BROKER_EPOCH,
                                         fenced=1 if b in fenced else -1) for b in RACKS),
        TopicRecord(name="t", topic_id=T1),
        PartitionRecord(partition_id=0, topic_id=T1, replicas=(LEADER, F2, F3),
                        isr=(LEADER, F2, F3), leader=LEADER, leader_epoch=LEADER_EPOCH,
                        partition_epoch=1))
    return image


@dataclass
class Broker:
    replicas: ReplicaManager
    clock: Clock

    @property
    def part(self) -> HostedPartition:
        return self.replicas.partition_for("t", 0, require_leader=False)

    async def fetch(self, request: FetchRequest, version: int) -> Any:
        response = await FetchHandler(self.replicas, "PLAINTEXT").fetch(request, version)
        return response


def _broker(directory: Path, broker_id: int, properties: dict[str, str],
            image: MetadataImage | None = None) -> Broker:
    logs = LogManager([directory / f"b{broker_id}"], LogConfig())
    logs.startup(0)
    clock = Clock()
    manager = ReplicaManager(broker_id, logs, properties, clock_ms=clock)
    manager.apply_image(image or _image(), 0)
    return Broker(manager, clock)


@pytest.fixture
def leader(tmp_path: Path) -> Iterator[Broker]:
    made = _broker(tmp_path, LEADER, SELECTOR)
    yield made
    made.replicas.shutdown()


def consumer_fetch(offset: int, *, version: int = 12, rack: str = "", max_wait_ms: int = 0,
                   isolation: int = 0, session_id: int = 0, session_epoch: int = -1,
                   leader_epoch: int = LEADER_EPOCH) -> FetchRequest:
    """A consumer's Fetch of t-0 as it arrives at ``version``."""
    body = FetchRequest(
        replica_id=-1, replica_state=ReplicaState(), max_wait_ms=max_wait_ms, min_bytes=1,
        max_bytes=BIG, isolation_level=isolation, session_id=session_id,
        session_epoch=session_epoch, rack_id=rack,
        topics=(FetchTopic(topic="t", topic_id=T1, partitions=(FetchPartition(
            partition=0, current_leader_epoch=leader_epoch, fetch_offset=offset,
            partition_max_bytes=BIG),)),))
    return decode(FetchRequest, version, encode(body, version))


def follower_fetch(replica: int, offset: int) -> FetchRequest:
    """A follower's Fetch of t-0 (v15: its id and epoch in replica_state)."""
    return FetchRequest(
        replica_state=ReplicaState(replica_id=replica, replica_epoch=BROKER_EPOCH),
        max_wait_ms=0, min_bytes=1, max_bytes=BIG,
        topics=(FetchTopic(topic_id=T1, partitions=(FetchPartition(
            partition=0, current_leader_epoch=LEADER_EPOCH, fetch_offset=offset,
            log_start_offset=0, partition_max_bytes=BIG),)),))


def _only(response: Any) -> Any:
    [topic] = response.responses
    [partition] = topic.partitions
    return partition


def append(broker: Broker, count: int = 1, **batch: Any) -> None:
    broker.replicas.append_records(broker.part, client_batch([b"v"] * count, **batch), acks=1,
                                   api_version=9, now_ms=broker.clock())


async def caught_up(leader: Broker, *followers: int) -> None:
    """Each follower fetches up to the leader's log end (so the high watermark moves)."""
    for replica in followers:
        await leader.fetch(follower_fetch(replica, leader.part.log_end_offset), 15)


# ---------------------------------------------------------------------- the leader's choice

@pytest.mark.parametrize("version", [11, 12, 15, 18])
def test_the_leader_names_the_follower_in_the_consumers_rack(leader: Broker,
                                                             version: int) -> None:
    async def run() -> None:
        append(leader, 3)
        await caught_up(leader, F2, F3)
        assert leader.part.high_watermark == 3
        task = asyncio.create_task(leader.fetch(
            consumer_fetch(1, version=version, rack="c", max_wait_ms=60_000), version))
        await until(task.done, "answered without parking")
        answer = _only(task.result())
        assert answer.preferred_read_replica == F3
        assert answer.error_code == ErrorCode.NONE and not answer.records
        assert (answer.high_watermark, answer.last_stable_offset,
                answer.log_start_offset) == (3, 3, 0)
        assert answer.aborted_transactions is None

    asyncio.run(run())


@pytest.mark.parametrize(("version", "rack"), [
    (10, "c"),  # no client metadata before v11
    (12, ""),  # a consumer without client.rack
    (12, "a"),  # the leader's own rack
    (12, "z"),  # no replica there
])
def test_the_leader_serves_consumers_it_prefers_itself_for(leader: Broker, version: int,
                                                           rack: str) -> None:
    async def run() -> None:
        append(leader, 3)
        await caught_up(leader, F2, F3)
        answer = _only(await leader.fetch(consumer_fetch(0, version=version, rack=rack),
                                          version))
        assert answer.preferred_read_replica == -1 and answer.records

    asyncio.run(run())


def test_without_a_selector_the_leader_serves_every_consumer(tmp_path: Path) -> None:
    async def run() -> None:
        plain = _broker(tmp_path, LEADER, {})
        append(plain, 3)
        await caught_up(plain, F2, F3)
        answer = _only(await plain.fetch(consumer_fetch(0, rack="c"), 12))
        assert answer.preferred_read_replica == -1 and answer.records
        plain.replicas.shutdown()

    asyncio.run(run())


def test_a_follower_not_yet_past_the_fetch_offset_is_not_named(leader: Broker) -> None:
    async def run() -> None:
        append(leader, 3)
        await caught_up(leader, F2)
        await leader.fetch(follower_fetch(F3, 1), 15)  # F3 has offsets 0 and 1 only
        assert _only(await leader.fetch(consumer_fetch(1, rack="c"), 12)) \
            .preferred_read_replica == F3
        answer = _only(await leader.fetch(consumer_fetch(2, rack="c"), 12))
        assert (answer.preferred_read_replica, answer.error_code) == (-1, ErrorCode.NONE)
        assert answer.high_watermark == 1  # F3, in the ISR, holds it back: nothing to read

    asyncio.run(run())


def test_a_fenced_follower_is_not_named(leader: Broker) -> None:
    async def run() -> None:
        append(leader, 3)
        await caught_up(leader, F2, F3)
        leader.replicas.apply_image(_image(fenced=(F3,)), 0)
        answer = _only(await leader.fetch(consumer_fetch(0, rack="c"), 12))
        assert answer.preferred_read_replica == -1 and answer.records

    asyncio.run(run())


def test_an_incremental_fetch_answers_the_preferred_replica_every_time(leader: Broker) -> None:
    """Kafka's session rule (``maybeUpdateResponseData``): a partition naming a preferred
    read replica is answered even when nothing else about it changed."""
    async def run() -> None:
        append(leader, 3)
        await caught_up(leader, F2, F3)
        opened = await leader.fetch(consumer_fetch(1, rack="c", session_epoch=0), 12)
        assert _only(opened).preferred_read_replica == F3 and opened.session_id
        again = await leader.fetch(
            consumer_fetch(1, rack="c", session_id=opened.session_id, session_epoch=1), 12)
        assert _only(again).preferred_read_replica == F3

    asyncio.run(run())


# ---------------------------------------------------------------------- the follower's reads

@pytest.fixture
def follower(tmp_path: Path) -> Iterator[Broker]:
    """Broker 3, following t-0 (no selector: a follower names no preferred replica)."""
    made = _broker(tmp_path, F3, {})
    yield made
    made.replicas.shutdown()


def copy(leader: Broker, follower: Broker) -> None:
    """One follower fetch's worth: the leader's batches past the follower's log end, with
    the leader's high watermark and log start."""
    lead, part = leader.part, follower.part
    append_as_follower(part, lead.log.read(part.log_end_offset, BIG),
                       leader_high_watermark=lead.high_watermark,
                       leader_log_start_offset=lead.log_start_offset, now_ms=0)


def _offsets(records: bytes) -> list[int]:
    memory, found = MemoryRecords(records), list[int]()
    while (batch := memory.next_batch()) is not None:
        found.extend(record.offset for record in batch)
    return found


def test_a_follower_serves_consumers_up_to_its_high_watermark(leader: Broker,
                                                              follower: Broker) -> None:
    async def run() -> None:
        append(leader, 3)
        copy(leader, follower)  # the records, with the leader's high watermark 0
        assert (follower.part.log_end_offset, follower.part.high_watermark) == (3, 0)
        await caught_up(leader, F2, F3)
        copy(leader, follower)  # no records: the leader's high watermark 3
        answer = _only(await follower.fetch(consumer_fetch(0, rack="c"), 12))
        assert answer.error_code == ErrorCode.NONE and answer.preferred_read_replica == -1
        assert _offsets(answer.records) == [0, 1, 2] and answer.high_watermark == 3
        past = _only(await follower.fetch(consumer_fetch(4, rack="c"), 12))
        assert past.error_code == ErrorCode.OFFSET_OUT_OF_RANGE

    asyncio.run(run())


def test_a_consumer_parked_on_a_follower_wakes_when_its_high_watermark_moves(
        leader: Broker, follower: Broker) -> None:
    async def run() -> None:
        append(leader, 2)
        copy(leader, follower)
        task = asyncio.create_task(follower.fetch(
            consumer_fetch(0, rack="c", max_wait_ms=60_000), 12))
        await until(lambda: follower.replicas.purgatories.fetch.watching(follower.part.tp),
                    "the consumer's fetch parked at the follower's high watermark 0")
        await caught_up(leader, F2, F3)
        copy(leader, follower)  # nothing new but the high watermark
        await until(task.done, "woken by the high watermark move")
        assert _offsets(_only(task.result()).records) == [0, 1]

    asyncio.run(run())


def test_read_committed_on_a_follower_stops_at_its_last_stable_offset(
        leader: Broker, follower: Broker) -> None:
    async def run() -> None:
        append(leader, 2)
        append(leader, 1, producer_id=9, epoch=0, sequence=0, transactional=True)
        await caught_up(leader, F2, F3)
        copy(leader, follower)
        assert follower.part.high_watermark == 3
        answer = _only(await follower.fetch(consumer_fetch(0, rack="c", isolation=1), 12))
        assert answer.last_stable_offset == 2
        assert _offsets(answer.records) == [0, 1]

    asyncio.run(run())


@pytest.mark.parametrize(("epoch", "code"), [
    (LEADER_EPOCH - 1, ErrorCode.FENCED_LEADER_EPOCH),
    (LEADER_EPOCH + 1, ErrorCode.UNKNOWN_LEADER_EPOCH)])
def test_a_follower_fences_a_consumers_leader_epoch_before_refusing_it(
        leader: Broker, follower: Broker, epoch: int, code: ErrorCode) -> None:
    """Kafka's ``Partition.getLocalLog`` checks the epoch first: a consumer of v10, which
    only leaders serve, is told its epoch is wrong rather than NOT_LEADER_OR_FOLLOWER."""
    async def run() -> None:
        answer = await follower.fetch(consumer_fetch(0, version=10, leader_epoch=epoch), 10)
        assert _only(answer).error_code == code

    asyncio.run(run())
