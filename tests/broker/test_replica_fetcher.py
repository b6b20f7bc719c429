"""A replica fetcher against a leader's real request handlers (no sockets: the connection
is the leader's FetchHandler and ListOffsets in-process): it copies the leader's log,
restarts at the leader's log start when behind it, ends at the leader's end when past it,
and the manager assigns partitions as Kafka does."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import errno
import os
import uuid
from pathlib import Path
from typing import Any

import pytest
from replica_fixtures import (
    InProcessLeader,
    broker,
    hosted,
    produce,
    replicas_of,
    topic,
    until,
    with_records,
)

from pykraft.broker.fetch import FetchHandler
from pykraft.broker.follower_log import append_as_follower
from pykraft.broker.replica_fetcher import (
    FetcherConfig,
    FetcherKey,
    ReplicaFetcher,
    ReplicaFetcherManager,
    fetcher_id,
)
from pykraft.broker.replica_manager import ReplicaManager
from pykraft.ids import TopicPartition
from pykraft.image.image import MetadataImage
from pykraft.messages.kafka.fetch_request import FetchRequest
from pykraft.protocol.api_versions import api_versions_response
from pykraft.protocol.apis import ApiKey, Listener
from pykraft.protocol.codec import (
    api_key_of,
    decode_request,
    encode_request,
    encode_response,
)
from pykraft.protocol.frame import encode_frame
from pykraft.protocol.header import RequestHeader
from pykraft.records.metadata import PartitionChangeRecord

T1 = uuid.UUID(int=7)
BIG = 1 << 24
DEADLINE_S = 10.0


def follow(leader: ReplicaManager, follower: ReplicaManager,
           condition: Any, fetch_version: int = 17) -> InProcessLeader:
    """Run a fetcher for the follower's partition until ``condition()`` holds."""
    connection = InProcessLeader(leader, fetch_version)
    asyncio.run(_follow(connection, follower, condition))
    return connection


async def _follow(connection: InProcessLeader, follower: ReplicaManager,
                  condition: Any) -> None:
    fetcher = _fetcher(connection, follower)
    try:
        await until(condition, "the fetcher's goal", poll_s=0.01)
    finally:
        await fetcher.stop()


def _fetcher(connection: InProcessLeader, follower: ReplicaManager) -> ReplicaFetcher:
    """A started fetcher of the follower's partition from ``connection``."""
    async def opener(_address: tuple[str, int], _client: str, _timeout: float) -> Any:
        return connection

    fetcher = ReplicaFetcher(2, FetcherKey(1, ("127.0.0.1", 9), 0),
                             FetcherConfig(wait_max_ms=50, backoff_ms=10), lambda: 5_000,
                             lambda: 10, opener)
    fetcher.add(hosted(follower))
    fetcher.start()
    return fetcher


def same_logs(leader: ReplicaManager, follower: ReplicaManager, start: int = 0) -> bool:
    lead, part = hosted(leader), hosted(follower)
    return bool(part.log_end_offset == lead.log_end_offset
                and part.log.read(start, BIG) == lead.log.read(start, BIG))


@pytest.fixture
def pair(tmp_path: Path) -> tuple[ReplicaManager, ReplicaManager]:
    image = with_records(MetadataImage(), *topic("t", T1, (1, 2)))
    return replicas_of(tmp_path, 1, image), replicas_of(tmp_path, 2, image)


@pytest.mark.parametrize("version", [17, 15, 14, 12, 11, 4])
def test_the_follower_copies_the_leaders_log(
        pair: tuple[ReplicaManager, ReplicaManager], version: int) -> None:
    leader, follower = pair
    for number in range(20):
        produce(leader, [b"v%d" % number] * 3)
    connection = follow(leader, follower, lambda: same_logs(leader, follower), version)
    first = connection.requests[0]
    encode_request(RequestHeader(ApiKey.FETCH, version, 0, "f"), first)  # fits its version
    if version >= 15:
        assert first.replica_state.replica_id == 2 and first.replica_state.replica_epoch == 10
        assert first.replica_id == -1
    else:
        assert first.replica_id == 2
    assert first.topics[0].topic_id == T1 if version >= 13 else first.topics[0].topic == "t"
    sent = first.topics[0].partitions[0]
    assert sent.fetch_offset == 0
    if version >= 12:
        assert sent.last_fetched_epoch == -1
    assert hosted(follower).log.leader_epochs.entries == [(0, 0)]


def test_an_idle_follower_fetches_nothing_in_its_session_and_restarts_a_lost_one(
        pair: tuple[ReplicaManager, ReplicaManager]) -> None:
    """A full fetch opens the session; once caught up the follower's fetches name no
    partition, at epochs counting up. When the leader loses the session, the fetch that
    learns it (FETCH_SESSION_ID_NOT_FOUND) is followed by a full one, and replication
    goes on. (A fetch parked in the session when it was lost still answers.)"""
    leader, follower = pair
    produce(leader, [b"a"])
    connection = InProcessLeader(leader, 17)

    def fetches() -> list[Any]:
        return [r for r in connection.requests if api_key_of(r) == ApiKey.FETCH]

    async def run() -> None:
        fetcher = _fetcher(connection, follower)
        try:
            await until(lambda: same_logs(leader, follower) and len(fetches()) >= 5,
                        "caught up, then idle", poll_s=0.01)
            for session in list(leader.fetch_sessions.cache):
                leader.fetch_sessions.cache.remove(session.id)
            produce(leader, [b"b"])
            await until(lambda: same_logs(leader, follower), "caught up again", poll_s=0.01)
        finally:
            await fetcher.stop()

    asyncio.run(run())
    sent = [(r.session_id != 0, r.session_epoch, bool(r.topics)) for r in fetches()]
    assert sent[0] == (False, 0, True)
    idle = sent.index((True, 3, False))  # the third incremental fetch: idle by then
    restart = sent.index((False, 0, True), 1)  # a full fetch opening another session
    assert idle < restart and all(session for session, _, _ in sent[1:restart])


@pytest.mark.parametrize("version", [17, 12, 11])
def test_batches_of_an_old_epoch_the_new_leader_lacks_are_truncated_away(
        tmp_path: Path, version: int) -> None:
    """Diverging epochs in Fetch from v12, OffsetForLeaderEpoch before."""
    image = with_records(MetadataImage(), *topic("t", T1, (1, 2, 3)))
    old, follower, new = (replicas_of(tmp_path, i, image) for i in (1, 2, 3))
    produce(old, [b"a", b"b"])
    produce(old, [b"c"])
    append_as_follower(hosted(new), hosted(old).log.read(0, BIG), leader_high_watermark=3,
                       leader_log_start_offset=0, now_ms=2_000)
    produce(old, [b"lost-1", b"lost-2"])  # offsets 3-4: the new leader never gets them
    follow(old, follower, lambda: same_logs(old, follower))
    image = with_records(image, PartitionChangeRecord(partition_id=0, topic_id=T1, leader=3))
    for manager in (old, follower, new):
        manager.apply_image(image, 3_000)
    produce(new, [b"d", b"e", b"f"])  # offsets 3-5 in leader epoch 1
    connection = follow(new, follower, lambda: same_logs(new, follower), version)
    assert hosted(follower).log.leader_epochs.entries == [(0, 0), (1, 3)]
    asked = {api_key_of(r) for r in connection.requests}
    assert (ApiKey.OFFSET_FOR_LEADER_EPOCH in asked) == (version < 12)


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
    replicas = replicas_of(tmp_path, 2, image)
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


def test_a_leader_before_topic_ids_is_fetched_from_by_name_over_a_socket(
        pair: tuple[ReplicaManager, ReplicaManager]) -> None:
    """The real connection: ApiVersions caps Fetch at v12, so the fetcher reconnects with
    v12 as its highest and reads the answers' topic names."""
    leader, follower = pair
    produce(leader, [b"a", b"b"])
    asyncio.run(_fetch_over_socket(leader, follower))
    assert same_logs(leader, follower)


async def _fetch_over_socket(leader: ReplicaManager, follower: ReplicaManager) -> None:
    handler = FetchHandler(leader, "PLAINTEXT")
    connections: list[int] = []

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connections.append(1)
        with contextlib.suppress(asyncio.IncompleteReadError, ConnectionError):
            while True:
                size = int.from_bytes(await reader.readexactly(4), "big")
                frame = decode_request(await reader.readexactly(size))
                body: object
                if frame.api_key == ApiKey.API_VERSIONS:
                    versions = api_versions_response(Listener.BROKER, frame.api_version)
                    body = dataclasses.replace(versions, api_keys=tuple(
                        dataclasses.replace(k, max_version=12) if k.api_key == ApiKey.FETCH
                        else k for k in versions.api_keys))
                else:
                    assert (frame.api_key, frame.api_version) == (ApiKey.FETCH, 12)
                    body = await handler.fetch(frame.body_as(FetchRequest), 12)
                writer.write(encode_frame(encode_response(
                    frame.header.correlation_id, frame.api_key, frame.api_version, body)))
                await writer.drain()
        writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    fetcher = ReplicaFetcher(2, FetcherKey(1, ("127.0.0.1", port), 0),
                             FetcherConfig(wait_max_ms=50, backoff_ms=10), lambda: 5_000,
                             lambda: 10)
    fetcher.add(hosted(follower))
    fetcher.start()
    try:
        await until(lambda: same_logs(leader, follower), "identical logs", poll_s=0.01)
    finally:
        await fetcher.stop()
        server.close()
        await server.wait_closed()
    assert len(connections) == 2  # reconnected with v12 as the highest Fetch


def test_a_fenced_epoch_backs_off_until_the_next_image(tmp_path: Path) -> None:
    image = with_records(MetadataImage(), *topic("t", T1, (1, 2)))
    newer = with_records(image, PartitionChangeRecord(partition_id=0, topic_id=T1, leader=2),
                         PartitionChangeRecord(partition_id=0, topic_id=T1, leader=1))
    leader, follower = replicas_of(tmp_path, 1, newer), replicas_of(tmp_path, 2, image)
    produce(leader, [b"a"])
    assert (hosted(leader).leader_epoch, hosted(follower).leader_epoch) == (2, 0)
    asyncio.run(_fenced_then_current(leader, follower, newer))
    assert same_logs(leader, follower)


async def _fenced_then_current(leader: ReplicaManager, follower: ReplicaManager,
                               newer: MetadataImage) -> None:
    connection = InProcessLeader(leader, 17)

    async def opener(_address: tuple[str, int], _client: str, _timeout: float) -> Any:
        return connection

    fetcher = ReplicaFetcher(2, FetcherKey(1, ("127.0.0.1", 9), 0),
                             FetcherConfig(wait_max_ms=50, backoff_ms=60_000), lambda: 5_000,
                             lambda: 10, opener)
    part = hosted(follower)
    fetcher.add(part)
    fetcher.start()
    try:
        await until(lambda: fetcher.partitions[part.tp].delayed_until > 0, "backed off")
        for _ in range(10):
            await asyncio.sleep(0)
        assert len(connection.requests) == 1 and part.log_end_offset == 0  # backed off
        follower.apply_image(newer, 6_000)  # the image the manager re-adds it from
        fetcher.remove(part.tp)
        fetcher.add(part)
        await until(lambda: same_logs(leader, follower), "identical logs", poll_s=0.01)
    finally:
        await fetcher.stop()


def test_stop_ends_the_fetcher_even_when_its_cancellation_is_lost(
        pair: tuple[ReplicaManager, ReplicaManager],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Python 3.11's wait_for can lose a cancellation (CPython gh-86296); a fetcher stuck
    'cancelling' in its loop kept its broker from exiting on SIGTERM. Here the fetch step
    swallows the cancellation outright: stop() must still end the loop."""
    _, follower = pair
    rounds: list[int] = []

    async def swallowing_fetch(_self: ReplicaFetcher, _ready: Any) -> None:
        rounds.append(len(rounds))
        if len(rounds) > 1:  # later rounds: a fetch that answers at once
            await asyncio.sleep(0.01)
            return
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            return  # what a lost cancellation looks like to the loop

    monkeypatch.setattr(ReplicaFetcher, "_truncate_or_fetch", swallowing_fetch)

    async def run() -> None:
        fetcher = ReplicaFetcher(2, FetcherKey(1, ("127.0.0.1", 9), 0),
                                 FetcherConfig(wait_max_ms=50, backoff_ms=10), lambda: 5_000,
                                 lambda: 10)
        fetcher.add(hosted(follower))
        fetcher.start()
        await until(lambda: rounds, "a fetch round")
        async with asyncio.timeout(DEADLINE_S):
            await fetcher.stop()
        assert fetcher.task is None

    asyncio.run(run())
    assert rounds == [0]  # the loop ended after the round that lost the cancellation


def test_a_follower_that_cannot_write_the_leaders_data_fails_its_directory(
        pair: tuple[ReplicaManager, ReplicaManager], monkeypatch: pytest.MonkeyPatch) -> None:
    """An I/O error appending fetched records (a full disk) is told to ``disk_failed``
    with the follower's log, which takes its directory offline (Kafka halts the broker);
    the follower's log keeps what it had."""
    leader, follower = pair
    produce(leader, [b"a"])
    failures: list[tuple[Path, str]] = []

    def disk_full(*_: object) -> int:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    async def run() -> None:
        async def opener(_address: tuple[str, int], _client: str, _timeout: float) -> Any:
            return InProcessLeader(leader, 17)

        fetcher = ReplicaFetcher(
            2, FetcherKey(1, ("127.0.0.1", 9), 0), FetcherConfig(wait_max_ms=50, backoff_ms=10),
            lambda: 5_000, lambda: 10, opener,
            disk_failed=lambda log, action, _exc: failures.append((log.directory, action)))
        fetcher.add(hosted(follower))
        monkeypatch.setattr(os, "pwrite", disk_full)
        fetcher.start()
        try:
            await until(lambda: failures, "the failure told", poll_s=0.01)
        finally:
            await fetcher.stop()

    asyncio.run(run())
    assert failures[0] == (hosted(follower).log.directory, "appending fetched records to")
    assert hosted(follower).log_end_offset == 0
