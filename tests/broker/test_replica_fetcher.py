"""A replica fetcher against a leader's real request handlers (no sockets: the connection
is the leader's FetchHandler and ListOffsets in-process): it copies the leader's log,
restarts at the leader's log start when behind it, ends at the leader's end when past it,
and the manager assigns partitions as Kafka does."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from typing import Any

import pytest
from replica_fixtures import broker, client_batch, topic, with_records

from pykraft.broker.fetch import FetchHandler
from pykraft.broker.list_offsets import list_offsets
from pykraft.broker.log_manager import LogManager
from pykraft.broker.replica_fetcher import (
    FetcherConfig,
    FetcherKey,
    ReplicaFetcher,
    ReplicaFetcherManager,
    fetcher_id,
)
from pykraft.broker.replica_manager import HostedPartition, ReplicaManager
from pykraft.image.image import MetadataImage
from pykraft.protocol.apis import ApiKey
from pykraft.protocol.codec import response_type
from pykraft.protocol.convert import convert
from pykraft.records.metadata import PartitionChangeRecord
from pykraft.storage.log_config import LogConfig
from pykraft.storage.offset_checkpoints import TopicPartition

T1 = uuid.UUID(int=7)
BIG = 1 << 24
DEADLINE_S = 10.0


class InProcessLeader:
    """A ClientConnection stand-in answering with the leader broker's handlers."""

    versions = {ApiKey.FETCH: 17, ApiKey.LIST_OFFSETS: 11}

    def __init__(self, replicas: ReplicaManager) -> None:
        self._fetch = FetchHandler(replicas, "PLAINTEXT")
        self._replicas = replicas
        self.requests: list[Any] = []

    async def request(self, body: Any) -> Any:
        self.requests.append(body)
        await asyncio.sleep(0)  # a network round trip lets the loop run other tasks
        if int(body.__api_key__) == ApiKey.FETCH:
            answer = await self._fetch.fetch(body, int(body.__version__))
            return convert(answer, response_type(ApiKey.FETCH, 17))
        return list_offsets(body, self._replicas)

    def close(self) -> None:
        pass


def broker_replicas(directory: Path, broker_id: int, image: MetadataImage) -> ReplicaManager:
    logs = LogManager([directory / f"b{broker_id}"], LogConfig())
    logs.startup(1_000)
    manager = ReplicaManager(broker_id, logs, {})
    manager.apply_image(image, 1_000)
    return manager


def hosted(manager: ReplicaManager) -> HostedPartition:
    return manager.partition_for("t", 0, require_leader=False)


def produce(leader: ReplicaManager, values: list[bytes]) -> None:
    part = leader.partition_for("t", 0)
    leader.append_records(part, client_batch(values), acks=1, api_version=12, now_ms=2_000)


async def wait_until(condition: Any) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + DEADLINE_S
    while not condition():
        assert loop.time() < deadline, "condition not reached in time"
        await asyncio.sleep(0.01)


def follow(leader: ReplicaManager, follower: ReplicaManager,
           condition: Any) -> InProcessLeader:
    """Run a fetcher for the follower's partition until ``condition()`` holds."""
    connection = InProcessLeader(leader)
    asyncio.run(_follow(connection, follower, condition))
    return connection


async def _follow(connection: InProcessLeader, follower: ReplicaManager,
                  condition: Any) -> None:
    async def opener(_address: tuple[str, int], _client: str, _timeout: float) -> Any:
        return connection

    fetcher = ReplicaFetcher(2, FetcherKey(1, ("127.0.0.1", 9), 0),
                             FetcherConfig(wait_max_ms=50, backoff_ms=10), lambda: 5_000,
                             lambda: 10, opener)
    fetcher.add(hosted(follower))
    fetcher.start()
    try:
        await wait_until(condition)
    finally:
        await fetcher.stop()


def same_logs(leader: ReplicaManager, follower: ReplicaManager, start: int = 0) -> bool:
    lead, part = hosted(leader), hosted(follower)
    return (part.log_end_offset == lead.log_end_offset
            and part.log.read(start, BIG) == lead.log.read(start, BIG))


@pytest.fixture
def pair(tmp_path: Path) -> tuple[ReplicaManager, ReplicaManager]:
    image = with_records(MetadataImage(), *topic("t", T1, (1, 2)))
    return broker_replicas(tmp_path, 1, image), broker_replicas(tmp_path, 2, image)


def test_the_follower_copies_the_leaders_log(
        pair: tuple[ReplicaManager, ReplicaManager]) -> None:
    leader, follower = pair
    for number in range(20):
        produce(leader, [b"v%d" % number] * 3)
    connection = follow(leader, follower, lambda: same_logs(leader, follower))
    first = connection.requests[0]
    assert first.replica_state.replica_id == 2 and first.replica_state.replica_epoch == 10
    sent = first.topics[0].partitions[0]
    assert (sent.fetch_offset, sent.last_fetched_epoch, sent.current_leader_epoch) == (0, -1, 0)
    assert hosted(follower).log.leader_epochs.entries == [(0, 0)]


def test_a_follower_behind_the_leaders_log_start_restarts_there(
        pair: tuple[ReplicaManager, ReplicaManager]) -> None:
    leader, follower = pair
    produce(leader, [b"a"])
    follow(leader, follower, lambda: same_logs(leader, follower))
    lead = hosted(leader)
    lead.log.truncate_fully_and_start_at(50, 3_000)  # as if retention took 1-49 away
    produce(leader, [b"b", b"c"])
    follow(leader, follower, lambda: same_logs(leader, follower, 50))
    part = hosted(follower)
    assert (part.log_start_offset, part.log_end_offset) == (50, 52)


def test_a_follower_past_the_leaders_end_truncates_to_it(
        pair: tuple[ReplicaManager, ReplicaManager]) -> None:
    leader, follower = pair
    produce(leader, [b"a"])
    produce(leader, [b"b"])
    follow(leader, follower, lambda: same_logs(leader, follower))
    hosted(leader).log.truncate_to(1, 3_000)  # an unclean leader without offset 1
    follow(leader, follower, lambda: hosted(follower).log_end_offset == 1)
    produce(leader, [b"c"])
    follow(leader, follower, lambda: same_logs(leader, follower))


def test_the_manager_follows_partitions_led_elsewhere_and_drops_them_on_leadership(
        tmp_path: Path) -> None:
    image = with_records(MetadataImage(), broker(1, 9091), broker(2, 9092),
                         *topic("t", T1, (1, 2), (2, 1)))
    replicas = broker_replicas(tmp_path, 2, image)
    manager = ReplicaFetcherManager(2, replicas, FetcherConfig(num_fetchers=3), "PLAINTEXT",
                                    lambda: 1_000, lambda: 10)
    manager.update(image)
    [(key, fetcher)] = manager.fetchers.items()
    assert key == FetcherKey(1, ("127.0.0.1", 9091), fetcher_id(TopicPartition("t", 0), 3))
    assert list(fetcher.partitions) == [TopicPartition("t", 0)]

    image = with_records(image, PartitionChangeRecord(partition_id=0, topic_id=T1, leader=2))
    replicas.apply_image(image, 2_000)
    manager.update(image)
    assert manager.fetchers == {}


def test_fetcher_ids_hash_like_kafka() -> None:
    # Utils.abs(31 * "t".hashCode() + p) % n: "t".hashCode() = 116
    assert [fetcher_id(TopicPartition("t", p), 4) for p in range(4)] == [0, 1, 2, 3]
    # "topic".hashCode() = 110546223; 31 times that overflows to -868034383
    assert fetcher_id(TopicPartition("topic", 0), 3) == 868034383 % 3
