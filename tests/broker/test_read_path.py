"""Fetch, ListOffsets, OffsetForLeaderEpoch, DescribeLogDirs and DeleteRecords handlers over
a real ReplicaManager (broker 1 leads ``t-0``, ``t-1`` has leader 2 elsewhere)."""

from __future__ import annotations

import asyncio
import dataclasses
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kafka.record.memory_records import MemoryRecords
from replica_fixtures import until

from pykraft.broker.delete_records import delete_records
from pykraft.broker.fetch import FetchHandler
from pykraft.broker.list_offsets import list_offsets, offset_for_leader_epoch
from pykraft.broker.log_dirs import describe_log_dirs
from pykraft.broker.replica_manager import HostedPartition, ReplicaManager
from pykraft.image.cluster_image import BrokerRegistration, ClusterImage
from pykraft.image.image import MetadataImage
from pykraft.image.topics import PartitionRegistration, TopicImage, TopicsImage
from pykraft.log.log_manager import LogManager
from pykraft.log.partition_reads import TimestampWalk
from pykraft.messages.codec import decode, encode
from pykraft.messages.kafka import offset_for_leader_epoch_request as ofle
from pykraft.messages.kafka.delete_records_request import (
    DeleteRecordsPartition,
    DeleteRecordsRequest,
    DeleteRecordsTopic,
)
from pykraft.messages.kafka.describe_log_dirs_request import (
    DescribableLogDirTopic,
    DescribeLogDirsRequest,
)
from pykraft.messages.kafka.fetch_request import (
    FetchPartition,
    FetchRequest,
    FetchTopic,
    ForgottenTopic,
    ReplicaState,
)
from pykraft.messages.kafka.list_offsets_request import (
    ListOffsetsPartition,
    ListOffsetsRequest,
    ListOffsetsTopic,
)
from pykraft.protocol.apis import ApiKey
from pykraft.protocol.codec import encode_response
from pykraft.protocol.errors import ErrorCode
from pykraft.records.batch import assemble_batch, encode_batch
from pykraft.records.compression import ZSTD
from pykraft.records.metadata_records import BrokerEndpoint
from pykraft.storage.log_config import LogConfig

TOPIC = "t"
TOPIC_ID = uuid.UUID(int=7)
LISTENER = "PLAINTEXT"


def _image(leader_epoch: int = 3) -> MetadataImage:
    parts = {0: PartitionRegistration((1,), (1,), 1, leader_epoch, 0),
             1: PartitionRegistration((2,), (2,), 2, 5, 0),
             2: PartitionRegistration((2, 1), (2, 1), 2, 6, 0)}
    topic = TopicImage(TOPIC, TOPIC_ID, parts)
    brokers = {b: BrokerRegistration(b, 10, uuid.UUID(int=b), (BrokerEndpoint(
        name=LISTENER, host="127.0.0.1", port=9090 + b, security_protocol=0),), (), "r1",
        False, False) for b in (1, 2)}
    return MetadataImage(cluster=ClusterImage(brokers=brokers), topics=TopicsImage(
        by_id={TOPIC_ID: topic}, by_name={TOPIC: topic}))


@pytest.fixture
def replicas(tmp_path: Path) -> Iterator[ReplicaManager]:
    logs = LogManager([tmp_path / "logs"], LogConfig())
    logs.startup(0)
    manager = ReplicaManager(1, logs)
    manager.apply_image(_image(), 0)
    yield manager
    manager.shutdown()


def _leader(replicas: ReplicaManager) -> HostedPartition:
    return replicas.partition_for(TOPIC, 0)


def _parked(replicas: ReplicaManager) -> int:
    """Fetches waiting in the purgatory on the partition."""
    return replicas.purgatories.fetch.watching(_leader(replicas).tp)


def _produce(replicas: ReplicaManager, values: list[bytes], timestamp: int = 1000) -> None:
    batch = encode_batch(0, [(None, v) for v in values], partition_leader_epoch=-1,
                         timestamp=timestamp)
    replicas.append_records(_leader(replicas), batch, acks=1, api_version=9, now_ms=timestamp)


def _fetch(version: int, partitions: list[dict[str, Any]], *, max_wait_ms: int = 0,
           min_bytes: int = 0, session_epoch: int = -1, isolation: int = 0,
           topic_id: uuid.UUID = TOPIC_ID, replica_id: int = -1, max_bytes: int = 1 << 20,
           session_id: int = 0, forgotten: tuple[int, ...] = ()) -> FetchRequest:
    """A consumer's Fetch as it arrives at ``version`` (coded there and back: fields the
    version lacks hold their defaults)."""
    parts = tuple(FetchPartition(partition=p["partition"], current_leader_epoch=p.get("epoch", -1),
                                 fetch_offset=p.get("offset", 0), partition_max_bytes=1 << 20)
                  for p in partitions)
    by_state = version >= 15
    body = FetchRequest(
        replica_id=-1 if by_state else replica_id,
        replica_state=ReplicaState(replica_id=replica_id) if by_state else ReplicaState(),
        max_wait_ms=max_wait_ms, min_bytes=min_bytes, max_bytes=max_bytes,
        isolation_level=isolation, session_id=session_id, session_epoch=session_epoch,
        topics=(FetchTopic(topic=TOPIC, topic_id=topic_id, partitions=parts),) if parts else (),
        forgotten_topics_data=(ForgottenTopic(topic=TOPIC, topic_id=topic_id,
                                              partitions=forgotten),) if forgotten else ())
    return decode(FetchRequest, version, encode(body, version))


def _partitions(response: Any) -> list[Any]:
    return [p for t in response.responses for p in t.partitions]


def _values(records: bytes) -> list[bytes | None]:
    """The record values, as kafka-python's consumer decodes them."""
    memory = MemoryRecords(records)
    values: list[bytes | None] = []
    while (batch := memory.next_batch()) is not None:
        values.extend(record.value for record in batch)
    return values


@pytest.mark.parametrize("version", [4, 12, 13, 18])
def test_fetch_reads_by_name_and_by_id(replicas: ReplicaManager, version: int) -> None:
    async def run() -> None:
        _produce(replicas, [b"a", b"b"])
        _produce(replicas, [b"c"])
        fetcher = FetchHandler(replicas, LISTENER)
        request = _fetch(version, [{"partition": 0, "offset": 1}])
        response = await fetcher.fetch(request, version)
        (part,) = _partitions(response)
        assert (part.error_code, part.high_watermark, part.last_stable_offset,
                part.log_start_offset, part.preferred_read_replica) == (
                    ErrorCode.NONE, 3, 3, 0, -1)
        # whole batches: the client skips offset 0
        assert _values(part.records) == [b"a", b"b", b"c"]
        assert response.session_id == 0 and part.aborted_transactions is None
        named = response.responses[0]
        assert (named.topic_id if version >= 13 else named.topic) == (
            TOPIC_ID if version >= 13 else TOPIC)

    asyncio.run(run())


def test_fetch_errors_name_the_leader(replicas: ReplicaManager) -> None:
    async def run() -> None:
        _produce(replicas, [b"a"])
        fetcher = FetchHandler(replicas, LISTENER)
        responses = [await fetcher.fetch(_fetch(18, [case]), 18) for case in (
            {"partition": 1}, {"partition": 0, "epoch": 2}, {"partition": 0, "epoch": 4},
            {"partition": 0, "offset": 5}, {"partition": 9})]
        parts = [part for response in responses for part in _partitions(response)]
        assert [p.error_code for p in parts] == [
            ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.FENCED_LEADER_EPOCH,
            ErrorCode.UNKNOWN_LEADER_EPOCH, ErrorCode.OFFSET_OUT_OF_RANGE,
            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION]
        leaders = [(p.current_leader.leader_id, p.current_leader.leader_epoch) for p in parts]
        assert leaders[:2] == [(2, 5), (1, 3)]
        assert all((p.high_watermark, p.log_start_offset) == (-1, -1) for p in parts)
        assert sorted({(e.node_id, e.host, e.port) for response in responses
                       for e in response.node_endpoints}) == [
            (1, "127.0.0.1", 9091), (2, "127.0.0.1", 9092)]

    asyncio.run(run())


@pytest.mark.parametrize("version", [10, 12, 15])
def test_only_the_leader_serves_replicas_and_older_consumers(replicas: ReplicaManager,
                                                             version: int) -> None:
    """Broker 1 follows partition 2: the other replica may not fetch it here, nor may a
    consumer without client metadata (before v11: Kafka's fetchOnlyLeader), while one
    from v11 reads this follower (KIP-392); broker 2 is no replica of partition 0, so its
    fetches there are refused too (UNKNOWN_LEADER_EPOCH when it names the epoch, as Kafka's
    followerReplicaOrThrow)."""
    async def run() -> None:
        fetcher = FetchHandler(replicas, LISTENER)
        for replica_id in (-1, 2):
            response = await fetcher.fetch(_fetch(version, [{"partition": 2}],
                                                  replica_id=replica_id), version)
            served = replica_id < 0 and version >= 11
            assert [p.error_code for p in _partitions(response)] == [
                ErrorCode.NONE if served else ErrorCode.NOT_LEADER_OR_FOLLOWER]
        _produce(replicas, [b"a"])
        refusals = [await fetcher.fetch(_fetch(version, [case], replica_id=2), version)
                    for case in ({"partition": 0}, {"partition": 0, "epoch": 3})]
        assert [p.error_code for r in refusals for p in _partitions(r)] == [
            ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.UNKNOWN_LEADER_EPOCH]

    asyncio.run(run())


def test_fetch_by_an_unknown_topic_id(replicas: ReplicaManager) -> None:
    async def run() -> None:
        request = _fetch(13, [{"partition": 0}], topic_id=uuid.UUID(int=99))
        response = await FetchHandler(replicas, LISTENER).fetch(request, 13)
        assert [p.error_code for p in _partitions(response)] == [ErrorCode.UNKNOWN_TOPIC_ID]

    asyncio.run(run())


def _answered(response: Any) -> list[tuple[int, int, int]]:
    """(partition, error, high watermark) of each partition answered."""
    return [(p.partition_index, p.error_code, p.high_watermark) for p in _partitions(response)]


@pytest.mark.parametrize("version", [12, 13])
def test_a_fetch_session_answers_only_what_changed(replicas: ReplicaManager,
                                                    version: int) -> None:
    """A full fetch opens a session; incremental fetches (no partitions sent) then read
    its partitions and answer only those with something new: nothing while idle,
    partition 0 once it has records, partition 1 (led elsewhere) only in full."""
    async def run() -> None:
        fetcher = FetchHandler(replicas, LISTENER)
        full = await fetcher.fetch(_fetch(version, [{"partition": 0}, {"partition": 1}],
                                          session_epoch=0), version)
        session = full.session_id
        assert session != 0 and _answered(full) == [
            (0, ErrorCode.NONE, 0), (1, ErrorCode.NOT_LEADER_OR_FOLLOWER, -1)]
        idle = await fetcher.fetch(_fetch(version, [], session_id=session, session_epoch=1),
                                   version)
        assert (idle.error_code, idle.session_id) == (ErrorCode.NONE, session)
        assert _answered(idle) == [(1, ErrorCode.NOT_LEADER_OR_FOLLOWER, -1)]  # an error
        _produce(replicas, [b"a"])
        new = await fetcher.fetch(_fetch(version, [], session_id=session, session_epoch=2),
                                  version)
        assert _answered(new) == [(0, ErrorCode.NONE, 1),
                                  (1, ErrorCode.NOT_LEADER_OR_FOLLOWER, -1)]
        assert _values(_partitions(new)[0].records) == [b"a"]
        # partition 0 moves on (sent: its parameters changed), partition 1 is forgotten
        caught_up = await fetcher.fetch(_fetch(version, [{"partition": 0, "offset": 1}],
                                               session_id=session, session_epoch=3,
                                               forgotten=(1,)), version)
        assert (caught_up.session_id, _answered(caught_up)) == (session, [])

    asyncio.run(run())


def test_fetch_session_errors(replicas: ReplicaManager) -> None:
    """An unknown session, a wrong epoch (a repeated fetch), and a session by topic ids
    fetched at a version naming topics: a top-level error, no partitions, session 0."""
    async def run() -> None:
        fetcher = FetchHandler(replicas, LISTENER)
        session = (await fetcher.fetch(_fetch(13, [{"partition": 0}], session_epoch=0),
                                       13)).session_id
        await fetcher.fetch(_fetch(13, [], session_id=session, session_epoch=1), 13)
        for request, version, error in (
                (_fetch(13, [], session_id=session + 1, session_epoch=1), 13,
                 ErrorCode.FETCH_SESSION_ID_NOT_FOUND),
                (_fetch(13, [], session_id=session, session_epoch=1), 13,
                 ErrorCode.INVALID_FETCH_SESSION_EPOCH),
                (_fetch(12, [], session_id=session, session_epoch=2), 12,
                 ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR)):
            response = await fetcher.fetch(request, version)
            assert (response.error_code, response.session_id, response.responses) == (
                error, 0, ())

    asyncio.run(run())


def test_closing_a_fetch_session(replicas: ReplicaManager) -> None:
    """Epoch -1 closes the named session and reads sessionless; so does forgetting every
    partition of a session."""
    async def run() -> None:
        fetcher = FetchHandler(replicas, LISTENER)

        async def opened() -> int:
            return (await fetcher.fetch(_fetch(13, [{"partition": 0}], session_epoch=0),
                                        13)).session_id

        session = await opened()
        closed = await fetcher.fetch(_fetch(13, [{"partition": 0}], session_id=session,
                                            session_epoch=-1), 13)
        assert (closed.session_id, _answered(closed)) == (0, [(0, ErrorCode.NONE, 0)])
        session = await opened()
        emptied = await fetcher.fetch(_fetch(13, [], session_id=session, session_epoch=1,
                                             forgotten=(0,)), 13)
        assert (emptied.error_code, emptied.session_id, emptied.responses) == (
            ErrorCode.NONE, 0, ())
        assert len(replicas.fetch_sessions.cache) == 0

    asyncio.run(run())


def test_read_committed_lists_no_aborted_transactions(replicas: ReplicaManager) -> None:
    async def run() -> None:
        _produce(replicas, [b"a"])
        response = await FetchHandler(replicas, LISTENER).fetch(
            _fetch(12, [{"partition": 0}], isolation=1), 12)
        (part,) = _partitions(response)
        assert (part.aborted_transactions, part.last_stable_offset) == ((), 1)

    asyncio.run(run())


def test_a_long_poll_is_answered_by_the_append(replicas: ReplicaManager) -> None:
    """No data: the fetch parks (a minute) until an append wakes it."""
    async def run() -> None:
        fetcher = FetchHandler(replicas, LISTENER)
        parked = asyncio.create_task(fetcher.fetch(
            _fetch(12, [{"partition": 0}], max_wait_ms=60_000, min_bytes=1), 12))
        await until(lambda: _parked(replicas), "the fetch parked")
        assert not parked.done() and _parked(replicas) == 1
        _produce(replicas, [b"late"])
        response = await asyncio.wait_for(parked, 5)
        assert _values(_partitions(response)[0].records) == [b"late"]
        assert _parked(replicas) == 0

    asyncio.run(run())


def test_a_long_poll_ends_at_max_wait_with_nothing(replicas: ReplicaManager) -> None:
    async def run() -> None:
        response = await FetchHandler(replicas, LISTENER).fetch(
            _fetch(12, [{"partition": 0}], max_wait_ms=20, min_bytes=1), 12)
        (part,) = _partitions(response)
        assert (part.error_code, part.records) == (ErrorCode.NONE, b"")
        assert _parked(replicas) == 0

    asyncio.run(run())


def _list_offsets(replicas: ReplicaManager, *timestamps: int, epoch: int = -1,
                  replica_id: int = -1, partition: int = 0,
                  version: int = 11) -> list[tuple[int, int, int, int]]:
    request = ListOffsetsRequest(replica_id=replica_id, topics=(
        ListOffsetsTopic(name=TOPIC, partitions=tuple(ListOffsetsPartition(
            partition_index=partition, current_leader_epoch=epoch, timestamp=ts)
            for ts in timestamps)),))
    response = asyncio.run(list_offsets(request, replicas, api_version=version))
    encode_response(0, ApiKey.LIST_OFFSETS, version, response)  # the version has its fields
    return [(p.error_code, p.timestamp, p.offset, p.leader_epoch)
            for p in response.topics[0].partitions]


def test_list_offsets(replicas: ReplicaManager) -> None:
    _produce(replicas, [b"a", b"b"], timestamp=1000)
    _produce(replicas, [b"c"], timestamp=2000)
    assert _list_offsets(replicas, -2) == [(ErrorCode.NONE, -1, 0, 3)]
    assert _list_offsets(replicas, -1) == [(ErrorCode.NONE, -1, 3, 3)]
    assert _list_offsets(replicas, 1500) == [(ErrorCode.NONE, 2000, 2, 3)]
    assert _list_offsets(replicas, -3) == [(ErrorCode.NONE, 2000, 2, 3)]
    # named twice: refused once, as Kafka's ReplicaManager.fetchOffset answers a map
    assert _list_offsets(replicas, 1000, 1000) == [(ErrorCode.INVALID_REQUEST, -1, -1, -1)]
    assert _list_offsets(replicas, -1, epoch=2)[0][0] == ErrorCode.FENCED_LEADER_EPOCH
    assert _list_offsets(replicas, -1, partition=1)[0][0] == ErrorCode.NOT_LEADER_OR_FOLLOWER
    # v1-3 have no leader epoch to answer (Kafka sets it from v4)
    assert _list_offsets(replicas, 1500, version=3) == [(ErrorCode.NONE, 2000, 2, -1)]
    assert _list_offsets(replicas, -1, version=1) == [(ErrorCode.NONE, -1, 3, -1)]


def test_offset_for_leader_epoch(replicas: ReplicaManager) -> None:
    _produce(replicas, [b"a", b"b"])

    def ask(epoch: int, current: int = -1) -> tuple[int, int, int]:
        request = ofle.OffsetForLeaderEpochRequest(replica_id=-1, topics=(
            ofle.OffsetForLeaderTopic(topic=TOPIC, partitions=(ofle.OffsetForLeaderPartition(
                partition=0, current_leader_epoch=current, leader_epoch=epoch),)),))
        (part,) = asyncio.run(offset_for_leader_epoch(request, replicas)).topics[0].partitions
        return part.error_code, part.leader_epoch, part.end_offset

    assert ask(3) == (ErrorCode.NONE, 3, 2)  # the current epoch ends at the log end
    assert ask(9) == (ErrorCode.NONE, -1, -1)
    assert ask(1) == (ErrorCode.NONE, 1, 0)  # older than the first: where the log starts
    assert ask(3, current=9)[0] == ErrorCode.UNKNOWN_LEADER_EPOCH


def test_describe_log_dirs(replicas: ReplicaManager, tmp_path: Path) -> None:
    _produce(replicas, [b"a"])
    (result,) = describe_log_dirs(DescribeLogDirsRequest(topics=None), replicas).results
    assert result.log_dir == str(tmp_path / "logs") and result.total_bytes > 0
    assert [(t.name, [(p.partition_index, p.partition_size, p.offset_lag, p.is_future_key)
                      for p in t.partitions]) for t in result.topics] == [
        (TOPIC, [(0, _leader(replicas).log.size, 0, False), (2, 0, 0, False)])]
    nothing = DescribeLogDirsRequest(topics=(DescribableLogDirTopic(
        topic="other", partitions=(0,)),))
    assert describe_log_dirs(nothing, replicas).results[0].topics == ()


def test_delete_records(replicas: ReplicaManager) -> None:
    _produce(replicas, [b"a", b"b"])
    _produce(replicas, [b"c"])

    def delete(offset: int, partition: int = 0) -> tuple[int, int]:
        request = DeleteRecordsRequest(topics=(DeleteRecordsTopic(
            name=TOPIC, partitions=(DeleteRecordsPartition(
                partition_index=partition, offset=offset),)),), timeout_ms=1000)
        (part,) = asyncio.run(delete_records(request, replicas)).topics[0].partitions
        return part.error_code, part.low_watermark

    assert delete(2) == (ErrorCode.NONE, 2)
    assert delete(1) == (ErrorCode.NONE, 2)  # never moves back
    assert delete(4) == (ErrorCode.OFFSET_OUT_OF_RANGE, -1)
    assert delete(0, partition=1) == (ErrorCode.NOT_LEADER_OR_FOLLOWER, -1)
    assert delete(-1) == (ErrorCode.NONE, 3)
    assert _list_offsets(replicas, -2)[0][2] == 3


def test_a_leader_epoch_starts_at_the_log_end_before_any_batch(
        replicas: ReplicaManager) -> None:
    """Kafka's makeLeader assigns the epoch's start offset: an empty partition led in
    epoch 3 answers OffsetForLeaderEpoch(3) with (3, 0), not (-1, -1)."""
    assert _leader(replicas).log.leader_epochs.entries == [(3, 0)]
    _produce(replicas, [b"a"])
    replicas.apply_image(_image(leader_epoch=4), 0)
    assert _leader(replicas).log.leader_epochs.entries == [(3, 0), (4, 1)]


def test_a_new_leader_behind_its_epoch_start_refuses_latest_offsets(tmp_path: Path) -> None:
    """Trap 20: the ISR holds a follower that never reported, so the high watermark stays
    at 0 while the leader appends; in its next epoch (starting at 2) a consumer's LATEST is
    OFFSET_NOT_AVAILABLE, and a debug request still sees the log end."""
    logs = LogManager([tmp_path / "logs"], LogConfig())
    logs.startup(0)
    manager = ReplicaManager(1, logs)
    image = _image()
    two = dataclasses.replace(image.topics.by_id[TOPIC_ID].partitions[0], replicas=(1, 2),
                              isr=(1, 2))
    topic = dataclasses.replace(image.topics.by_id[TOPIC_ID], partitions={0: two})
    manager.apply_image(dataclasses.replace(image, topics=TopicsImage(
        by_id={TOPIC_ID: topic}, by_name={TOPIC: topic})), 0)
    _produce(manager, [b"a", b"b"])
    assert _list_offsets(manager, -1) == [(ErrorCode.NONE, -1, 0, 3)]
    newer = dataclasses.replace(topic, partitions={0: dataclasses.replace(two, leader_epoch=4)})
    manager.apply_image(dataclasses.replace(image, topics=TopicsImage(
        by_id={TOPIC_ID: newer}, by_name={TOPIC: newer})), 0)
    assert _list_offsets(manager, -1) == [(ErrorCode.OFFSET_NOT_AVAILABLE, -1, -1, -1)]
    assert _list_offsets(manager, -1, replica_id=-2) == [(ErrorCode.NONE, -1, 2, 4)]
    manager.shutdown()


def _flip(replicas: ReplicaManager, position: int, count: int = 16) -> None:
    """XOR ``count`` bytes of partition 0's first segment from ``position`` (bit rot
    after a clean shutdown: nothing scans the segment again)."""
    segment = next((_leader(replicas).log.directory).glob("*.log"))
    with segment.open("r+b") as file:
        file.seek(position)
        flipped = bytes(b ^ 0xFF for b in file.read(count))
        file.seek(position)
        file.write(flipped)


def test_a_corrupt_batch_fails_its_partition_only(replicas: ReplicaManager) -> None:
    """Kafka's readFromLog answers each partition apart: a batch header that no longer
    parses is CORRUPT_MESSAGE for its partition, and the other partitions of the same
    request (here one led elsewhere) keep their answers; read from below the damage, the
    damaged bytes after a healthy batch go out as they are, as Kafka's file slices do (the
    client's CRC check finds them)."""
    async def run() -> None:
        _produce(replicas, [b"a"])
        second = len(_leader(replicas).log.read(0, 1 << 20))
        _produce(replicas, [b"b"])
        _flip(replicas, second)  # the second batch's offset and length
        fetcher = FetchHandler(replicas, LISTENER)
        response = await fetcher.fetch(_fetch(18, [
            {"partition": 0, "offset": 1}, {"partition": 1}]), 18)
        assert response.error_code == ErrorCode.NONE
        corrupt, elsewhere = _partitions(response)
        # a request names a partition once (Kafka keeps the last entry): read it again
        (healthy,) = _partitions(await fetcher.fetch(_fetch(18, [{"partition": 0}]), 18))
        assert (corrupt.error_code, corrupt.records, corrupt.high_watermark) == (
            ErrorCode.CORRUPT_MESSAGE, b"", -1)
        assert elsewhere.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
        assert (healthy.error_code, healthy.high_watermark) == (ErrorCode.NONE, 2)
        assert bytes(healthy.records).startswith(_leader(replicas).log.read(0, second))

    asyncio.run(run())


@pytest.mark.parametrize("version", [12, 18])
def test_a_partition_named_many_times_is_read_and_answered_once(
        replicas: ReplicaManager, version: int) -> None:
    """Kafka keys a Fetch's partitions in a map: the first place, the last entry's fields
    (a 28 KB request naming one partition over and over was answered with 954 MB)."""
    async def run() -> None:
        for _ in range(20):
            _produce(replicas, [bytes(4096)])
        named = [{"partition": 0, "offset": 0}] * 300 + [{"partition": 0, "offset": 19}]
        response = await FetchHandler(replicas, LISTENER).fetch(
            _fetch(version, named, max_bytes=1 << 30), version)
        (part,) = _partitions(response)
        assert _values(part.records) == [bytes(4096)]  # from offset 19, the last entry's

    asyncio.run(run())


def test_list_offsets_over_a_corrupt_batch_fails_its_partition_only(
        replicas: ReplicaManager) -> None:
    """ListOffsets by timestamp reads batch headers: a corrupt one is CORRUPT_MESSAGE for
    its partition (Kafka's per-partition ``Errors.forException``), not a failed request;
    LATEST needs no read and is answered."""
    _produce(replicas, [b"a"], timestamp=1000)
    second = len(_leader(replicas).log.read(0, 1 << 20))
    _produce(replicas, [b"b"], timestamp=2000)
    _flip(replicas, second)
    assert _list_offsets(replicas, 2000) == [(ErrorCode.CORRUPT_MESSAGE, -1, -1, -1)]
    assert _list_offsets(replicas, -1) == [(ErrorCode.NONE, -1, 2, 3)]


def test_a_response_is_capped_by_fetch_max_bytes(tmp_path: Path) -> None:
    """The request's max_bytes is capped by the broker's fetch.max.bytes, except for a
    first batch larger than both (KIP-74)."""
    logs = LogManager([tmp_path / "logs"], LogConfig())
    logs.startup(0)
    capped = ReplicaManager(1, logs, {"fetch.max.bytes": "10000"})
    capped.apply_image(_image(), 0)

    async def run() -> None:
        _produce(capped, [bytes(30_000)])
        for _ in range(10):
            _produce(capped, [bytes(4096)])
        fetcher = FetchHandler(capped, LISTENER)
        first = _partitions(await fetcher.fetch(_fetch(18, [{"partition": 0}],
                                                       max_bytes=1 << 30), 18))[0]
        assert _values(first.records) == [bytes(30_000)]  # whole, though over the cap
        rest = _partitions(await fetcher.fetch(_fetch(18, [{"partition": 0, "offset": 1}],
                                                      max_bytes=1 << 30), 18))[0]
        assert 0 < len(rest.records) <= 10_000
        assert _values(rest.records) == [bytes(4096)] * (len(rest.records) // 4096)

    try:
        asyncio.run(run())
    finally:
        capped.shutdown()


def test_list_offsets_over_records_that_do_not_decompress_fails_their_partition_only(
        replicas: ReplicaManager) -> None:
    """A stored batch whose records do not decompress (its CRC intact) is
    UNKNOWN_SERVER_ERROR for its partition (Kafka's "Failed to decompress record stream"
    KafkaException), not a failed request."""
    _leader(replicas).log.append(assemble_batch(
        b"not zstd at all", base_offset=0, partition_leader_epoch=3, attributes=ZSTD,
        last_offset_delta=0, base_timestamp=1000, max_timestamp=1000, records_count=1),
        now_ms=1000)
    assert _list_offsets(replicas, 1000, replica_id=-2) == [
        (ErrorCode.UNKNOWN_SERVER_ERROR, -1, -1, -1)]
    assert _list_offsets(replicas, -1, replica_id=-2) == [(ErrorCode.NONE, -1, 1, 3)]


def test_a_compressed_batch_is_searched_by_timestamp_off_the_loop(
        replicas: ReplicaManager, monkeypatch: pytest.MonkeyPatch) -> None:
    """A compressed batch's records may expand to gigabytes: ListOffsets walks them on the
    timestamp-search thread (on the loop, a gzip bomb's 256 MiB held it up to 1.4 s)."""
    from kafka.record.default_records import DefaultRecordBatchBuilder

    builder = DefaultRecordBatchBuilder(
        magic=2, compression_type=1, is_transactional=False, producer_id=-1,
        producer_epoch=-1, base_sequence=-1, batch_size=1 << 20)
    for offset, timestamp in enumerate([1000, 2000]):
        builder.append(offset, timestamp=timestamp, key=None, value=b"v" * 1000, headers=[])
    _leader(replicas).log.append(bytes(builder.build()), now_ms=2000)
    threads = []
    walk = TimestampWalk.walk

    def recorded(self: TimestampWalk) -> Any:
        threads.append(threading.current_thread().name)
        return walk(self)
    monkeypatch.setattr(TimestampWalk, "walk", recorded)
    assert _list_offsets(replicas, 1500, replica_id=-2)[0][:3] == (ErrorCode.NONE, 2000, 1)
    assert threads and all(name.startswith("timestamp-search") for name in threads)


class _Quota:
    """A consumer quota that throttles the first answer of records it sees."""

    def __init__(self) -> None:
        self.sizes: list[int] = []

    def max_bytes(self) -> int | None:
        return 100

    def throttle(self, size: int) -> int:
        self.sizes.append(size)
        return 250 if len(self.sizes) == 1 else 0


def test_a_throttled_consumer_gets_an_empty_answer_and_no_session(
        replicas: ReplicaManager) -> None:
    """Kafka's throttled Fetch: capped to the quota's window, answered empty with its
    throttle time and no session opened; the next answer is read as usual."""
    async def run() -> None:
        _produce(replicas, [b"a" * 300])
        _produce(replicas, [b"b" * 300])
        fetcher = FetchHandler(replicas, LISTENER)
        quota = _Quota()
        request = _fetch(13, [{"partition": 0}], session_epoch=0)
        throttled = await fetcher.fetch(request, 13, quota=quota)
        assert (throttled.throttle_time_ms, throttled.session_id, throttled.responses) == (
            250, 0, ())
        answered = await fetcher.fetch(request, 13, quota=quota)
        assert answered.throttle_time_ms == 0 and answered.session_id != 0
        (part,) = _partitions(answered)
        assert _values(part.records) == [b"a" * 300]  # capped: one batch (KIP-74's first)
        assert quota.sizes[0] == quota.sizes[1] > 0

    asyncio.run(run())
