"""The group coordinator's runtime over a real ReplicaManager with a scripted shard: loading,
replies held until their batch commits, commit timeouts, failed appends, timers, unloading."""

from __future__ import annotations

import asyncio
import dataclasses
import random
from collections.abc import Coroutine
from pathlib import Path
from typing import Any

import pytest
from offsets_fixtures import ME, OTHER, TOPIC_ID, ShardCoordinator, offsets_image, run
from replica_fixtures import until, with_records

from pykraft.broker import group_coordinator
from pykraft.broker.coordinator_topics import OffsetsTopicConfig
from pykraft.broker.group_coordinator import GroupCoordinatorService
from pykraft.broker.replica_manager import HostedPartition, ReplicaManager
from pykraft.errors import CorruptRecordError
from pykraft.group.config import GroupConfig
from pykraft.group.messages import ShardResponse
from pykraft.group.metrics import GroupCensus
from pykraft.group.outcome import OffsetsRecord, Outcome, ReplyToken, RequestContext
from pykraft.group.shard import GroupShard
from pykraft.ids import OFFSETS_TOPIC_NAME
from pykraft.image.image import MetadataImage
from pykraft.log.log_manager import LogManager
from pykraft.messages.kafka import offset_commit_request as commit
from pykraft.messages.kafka import offset_fetch_request as fetch
from pykraft.messages.kafka.describe_groups_request import DescribeGroupsRequest
from pykraft.messages.kafka.describe_groups_response import DescribeGroupsResponse
from pykraft.messages.kafka.heartbeat_request import HeartbeatRequest
from pykraft.messages.kafka.heartbeat_response import HeartbeatResponse
from pykraft.messages.kafka.offset_commit_response import OffsetCommitResponse
from pykraft.messages.kafka.offset_fetch_response import OffsetFetchResponse
from pykraft.protocol.apis import ApiKey
from pykraft.protocol.errors import ErrorCode
from pykraft.records.batch import iter_batches
from pykraft.records.metadata import (
    PartitionChangeRecord,
)
from pykraft.storage.log_config import LogConfig


def answer(code: ErrorCode = ErrorCode.NONE) -> HeartbeatResponse:
    return HeartbeatResponse(error_code=code)


class ScriptedShard:
    """A shard whose Heartbeat group id says what to do: "write:<v>" appends a record (key
    ``k<v>``), "big:<n>" one of ``n`` bytes under key ``ka``, "park" holds the request,
    "release" answers every parked one, "read" answers at once."""

    def __init__(self, partition: int) -> None:
        self.partition = partition
        self.replayed: list[tuple[int, OffsetsRecord]] = []
        self.reverted: list[tuple[list[tuple[int, OffsetsRecord]], int]] = []
        self.parked: list[ReplyToken] = []
        self.deadline: int | None = None
        self.ticks: list[int] = []

    refuses_replay = False

    def replay(self, offset: int, record: OffsetsRecord, producer_id: int = -1) -> None:
        if self.refuses_replay:
            raise RuntimeError("replay bug")
        self.replayed.append((offset, record))

    def end_transaction(self, producer_id: int, committed: bool) -> None:
        raise AssertionError("no transaction writes this shard's log")

    def has_open_transactions(self) -> bool:
        return False

    def handle(self, token: ReplyToken, api_key: int, api_version: int, request: Any,
               context: RequestContext) -> Outcome:
        assert api_key == ApiKey.HEARTBEAT
        action, _, value = str(request.group_id).partition(":")
        if action == "park":
            self.parked.append(token)
            return Outcome()
        outcome = Outcome(replies=[(token, answer())])
        if action == "write":
            outcome.records.append(OffsetsRecord(b"k" + value.encode(), value.encode()))
        if action == "big":
            outcome.records += [OffsetsRecord(b"kz", b"z"),
                                OffsetsRecord(b"ka", b"x" * int(value))]
        if action == "release":
            outcome.replies += [(t, answer()) for t in self.parked]
            self.parked.clear()
        return outcome

    def tick(self, now_ms: int) -> Outcome:
        self.ticks.append(now_ms)
        self.deadline = None
        replies: list[tuple[ReplyToken, ShardResponse]] = [(t, answer()) for t in self.parked]
        self.parked.clear()
        return Outcome(records=[OffsetsRecord(b"tick", b"1")], replies=replies)

    def next_deadline_ms(self) -> int | None:
        return self.deadline

    def census(self) -> GroupCensus:
        return GroupCensus()

    def unload(self) -> Outcome:
        replies: list[tuple[ReplyToken, ShardResponse]] = [
            (t, answer(ErrorCode.NOT_COORDINATOR)) for t in self.parked]
        self.parked.clear()
        return Outcome(replies=replies)

    def revert(self, records: list[tuple[int, OffsetsRecord]], error: int) -> Outcome:
        self.reverted.append((records, error))
        return Outcome()


@dataclasses.dataclass
class Rig:
    replicas: ReplicaManager
    service: GroupCoordinatorService
    shards: list[ScriptedShard]
    now: list[int]

    @property
    def part(self) -> HostedPartition:
        return self.replicas.partition_for(OFFSETS_TOPIC_NAME, 0, require_leader=False)

    @property
    def shard(self) -> ScriptedShard:
        return self.shards[-1]

    def request(self, group: str) -> Coroutine[Any, Any, Any]:
        body = HeartbeatRequest(group_id=group, generation_id=1, member_id="m")
        return self.service.handle(ApiKey.HEARTBEAT, 4, body, client_id="c",
                                   client_host="/127.0.0.1")

    async def loaded(self) -> None:
        await until(lambda: self.service.partition_states == {0: "loaded"}, "shard loaded")


def rig(directory: Path, image: MetadataImage, commit_timeout_ms: int = 5_000) -> Rig:
    logs = LogManager([directory], LogConfig())
    logs.startup(1_000)
    now = [1_000]
    replicas = ReplicaManager(ME, logs, {}, clock_ms=lambda: now[0])
    shards: list[ScriptedShard] = []

    def new_shard(partition: int) -> ScriptedShard:
        shards.append(ScriptedShard(partition))
        return shards[-1]

    service = GroupCoordinatorService(
        replicas, lambda: now[0], new_shard,
        OffsetsTopicConfig(num_partitions=1, commit_timeout_ms=commit_timeout_ms))
    replicas.apply_image(image, now[0])
    return Rig(replicas, service, shards, now)


def test_requests_wait_for_the_load_and_the_load_replays_the_log(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(group_coordinator, "LOAD_BUFFER_BYTES", 1)  # one batch per step

    async def scenario() -> None:
        r = rig(tmp_path, offsets_image())
        await r.loaded()
        for value in ("a", "b"):
            assert (await r.request(f"write:{value}")).error_code == ErrorCode.NONE
        # a new leader epoch of ours: unload, then load again from the log
        r.replicas.apply_image(with_records(r.replicas.image, PartitionChangeRecord(
            partition_id=0, topic_id=TOPIC_ID, leader=ME)), r.now[0])
        reply = await r.request("park")  # the load yields after each batch
        assert reply.error_code == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        await r.loaded()
        assert len(r.shards) == 2 and r.shard.parked == []
        assert [(o, rec.key, rec.value) for o, rec in r.shard.replayed] == [
            (0, b"ka", b"a"), (1, b"kb", b"b")]
        await r.service.close()

    run(scenario)


def test_a_reply_waits_for_its_batch_and_every_earlier_one_to_commit(tmp_path: Path) -> None:
    async def scenario() -> None:
        r = rig(tmp_path, offsets_image(isr=(ME, OTHER), replicas=(ME, OTHER)))
        await r.loaded()
        write = asyncio.create_task(r.request("write:a"))
        await until(lambda: r.part.log_end_offset == 1, "batch appended")
        # sequence 0 with no producer, as Kafka's coordinator runtime writes its batches
        (batch,) = iter_batches(r.part.log.read(0, 0))
        assert (batch.header.producer_id, batch.header.base_sequence) == (-1, 0)
        read = asyncio.create_task(r.request("read"))  # no records, behind the write
        for _ in range(10):
            await asyncio.sleep(0)
        assert not write.done() and not read.done() and r.part.high_watermark == 0
        r.replicas.record_follower_fetch(r.part, OTHER, broker_epoch=10, fetch_offset=1,
                                         log_start_offset=0, leader_end_offset=1, now_ms=1_000)
        assert (await write).error_code == ErrorCode.NONE
        assert (await read).error_code == ErrorCode.NONE
        await r.service.close()

    run(scenario)


def test_a_batch_not_committed_in_time_answers_coordinator_not_available(
        tmp_path: Path) -> None:
    async def scenario() -> None:
        r = rig(tmp_path, offsets_image(isr=(ME, OTHER), replicas=(ME, OTHER)),
                commit_timeout_ms=50)
        await r.loaded()
        reply = await r.request("write:a")
        assert reply.error_code == ErrorCode.COORDINATOR_NOT_AVAILABLE
        assert len(r.shards) == 1  # the state stays: the batch is in the log
        await r.service.close()

    run(scenario)


def test_a_failed_append_answers_the_error_and_reverts_that_write_alone(
        tmp_path: Path) -> None:
    async def scenario() -> None:
        # min.insync.replicas 2 with an ISR of one: the acks=all append is refused
        r = rig(tmp_path, offsets_image(isr=(ME,), replicas=(ME, OTHER), min_isr=2))
        await r.loaded()
        reply = await r.request("write:a")
        assert reply.error_code == ErrorCode.COORDINATOR_NOT_AVAILABLE
        assert r.part.log_end_offset == 0
        assert r.service.partition_states == {0: "loaded"} and len(r.shards) == 1
        assert r.shard.reverted == [([(-1, OffsetsRecord(b"ka", None))],
                                     ErrorCode.COORDINATOR_NOT_AVAILABLE)]
        await r.service.close()

    run(scenario)


def test_a_write_that_cannot_be_reverted_reloads_the_shard(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The shard refusing to put a key back (a record it cannot read): the partition is
    reloaded from the log instead, as before any revert existed."""
    def refuse(*_: object) -> Outcome:
        raise CorruptRecordError("unreadable")

    async def scenario() -> None:
        r = rig(tmp_path, offsets_image(isr=(ME,), replicas=(ME, OTHER), min_isr=2))
        await r.loaded()
        monkeypatch.setattr(ScriptedShard, "revert", refuse)
        assert (await r.request("write:a")).error_code == ErrorCode.COORDINATOR_NOT_AVAILABLE
        await r.loaded()
        assert len(r.shards) == 2 and r.shard.replayed == []
        await r.service.close()

    run(scenario)


def test_an_oversized_write_is_unknown_server_error_and_other_groups_go_on(
        tmp_path: Path) -> None:
    """A record over ``__consumer_offsets``' max.message.bytes: Kafka's coordinator answers
    UNKNOWN_SERVER_ERROR (its MESSAGE_TOO_LARGE mapping, not a retriable error) and reverts
    that write alone: its keys go back to their last records (``ka`` to offset 1, ``kz``
    never written: a tombstone), the shard stays loaded and a parked request of another
    group stays parked, then answered as usual."""
    async def scenario() -> None:
        r = rig(tmp_path, offsets_image(max_message_bytes=1_000))
        await r.loaded()
        for value in ("b", "a"):
            assert (await r.request(f"write:{value}")).error_code == ErrorCode.NONE
        parked = asyncio.create_task(r.request("park"))
        await until(lambda: r.shard.parked, "request parked")
        assert (await r.request("big:2000")).error_code == ErrorCode.UNKNOWN_SERVER_ERROR
        assert r.part.log_end_offset == 2 and len(r.shards) == 1 and not parked.done()
        assert r.shard.reverted == [([(-1, OffsetsRecord(b"kz", None)),
                                      (1, OffsetsRecord(b"ka", b"a"))],
                                     ErrorCode.UNKNOWN_SERVER_ERROR)]
        assert (await r.request("big:10")).error_code == ErrorCode.NONE  # fits: written
        assert (await r.request("release")).error_code == ErrorCode.NONE
        assert (await parked).error_code == ErrorCode.NONE
        await r.service.close()

    run(scenario)


def test_losing_leadership_answers_parked_and_later_requests_not_coordinator(
        tmp_path: Path) -> None:
    async def scenario() -> None:
        r = rig(tmp_path, offsets_image())
        await r.loaded()
        parked = asyncio.create_task(r.request("park"))
        await until(lambda: r.shard.parked, "request parked")
        r.replicas.apply_image(with_records(r.replicas.image, PartitionChangeRecord(
            partition_id=0, topic_id=TOPIC_ID, leader=OTHER)), r.now[0])
        assert (await parked).error_code == ErrorCode.NOT_COORDINATOR
        assert (await r.request("read")).error_code == ErrorCode.NOT_COORDINATOR
        await r.service.close()

    run(scenario)


def test_a_parked_request_is_answered_by_another_requests_outcome(tmp_path: Path) -> None:
    async def scenario() -> None:
        r = rig(tmp_path, offsets_image())
        await r.loaded()
        parked = asyncio.create_task(r.request("park"))
        await until(lambda: r.shard.parked, "request parked")
        assert (await r.request("release")).error_code == ErrorCode.NONE
        assert (await parked).error_code == ErrorCode.NONE
        await r.service.close()

    run(scenario)


def test_the_shard_timer_fires_at_its_deadline(tmp_path: Path) -> None:
    async def scenario() -> None:
        r = rig(tmp_path, offsets_image())
        await r.loaded()
        r.shard.deadline = r.now[0] + 20
        parked = asyncio.create_task(r.request("park"))  # rescheduled after each request
        await until(lambda: r.shard.ticks, "tick fired")
        assert (await parked).error_code == ErrorCode.NONE
        assert r.part.log_end_offset == 1  # the tick's record was appended
        await r.service.close()

    run(scenario)


def test_close_answers_parked_requests(tmp_path: Path) -> None:
    async def scenario() -> None:
        r = rig(tmp_path, offsets_image())
        await r.loaded()
        parked = asyncio.create_task(r.request("park"))
        await until(lambda: r.shard.parked, "request parked")
        await r.service.close()
        assert (await parked).error_code == ErrorCode.NOT_COORDINATOR
        assert r.service.partition_states == {}

    run(scenario)


def test_a_load_that_fails_leaves_the_partition_not_coordinator(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    async def scenario() -> None:
        r = rig(tmp_path, offsets_image())
        await r.loaded()
        assert (await r.request("write:a")).error_code == ErrorCode.NONE
        monkeypatch.setattr(ScriptedShard, "refuses_replay", True)  # a bug, not bad bytes
        r.replicas.apply_image(with_records(r.replicas.image, PartitionChangeRecord(
            partition_id=0, topic_id=TOPIC_ID, leader=ME)), r.now[0])
        await until(lambda: r.service.partition_states == {}, "failed load unloaded")
        assert (await r.request("read")).error_code == ErrorCode.NOT_COORDINATOR
        await r.service.close()

    run(scenario)


def test_an_oversized_commit_to_a_real_shard_keeps_the_logged_offsets(tmp_path: Path) -> None:
    """A group shard behind the runtime: a commit whose batch exceeds max.message.bytes is
    UNKNOWN_SERVER_ERROR for each partition and leaves the group's offsets as the log has
    them (a partition never committed stays unknown); the shard never reloads."""
    async def scenario() -> None:
        made = ShardCoordinator(tmp_path, max_message_bytes=4_000)
        await made.loaded()
        replicas, service = made.replicas, made.service

        async def commit_offsets(offsets: dict[int, int], metadata: str) -> set[int]:
            answer = await service.handle(ApiKey.OFFSET_COMMIT, 9, commit.OffsetCommitRequest(
                group_id="g", generation_id_or_member_epoch=-1, member_id="",
                topics=(commit.OffsetCommitRequestTopic(name="t", partitions=tuple(
                    commit.OffsetCommitRequestPartition(
                        partition_index=p, committed_offset=o,
                        committed_metadata=metadata) for p, o in offsets.items())),)),
                client_id="c", client_host="/127.0.0.1")
            assert isinstance(answer, OffsetCommitResponse)
            return {int(p.error_code) for p in answer.topics[0].partitions}

        assert await commit_offsets({0: 5}, "") == {ErrorCode.NONE}
        assert await commit_offsets({0: 9, 1: 9}, "m" * 3_000) == {ErrorCode.UNKNOWN_SERVER_ERROR}
        fetched = await service.handle(ApiKey.OFFSET_FETCH, 9, fetch.OffsetFetchRequest(
            groups=(fetch.OffsetFetchRequestGroup(group_id="g", topics=(
                fetch.OffsetFetchRequestTopics(name="t", partition_indexes=(
                    0, 1)),)),)), client_id="c", client_host="/127.0.0.1")
        assert isinstance(fetched, OffsetFetchResponse)
        assert [int(p.committed_offset) for p in fetched.groups[0].topics[0].partitions] == [
            5, -1]
        part = replicas.partition_for(OFFSETS_TOPIC_NAME, 0)
        assert part.log_end_offset == 1 and service.partition_states == {0: "loaded"}
        await service.close()

    run(scenario)


def test_a_commit_whose_records_cannot_fit_one_batch_never_reaches_the_shard(
        tmp_path: Path) -> None:
    """Kafka checks an atomic write's size before replaying it: 30,000 offsets need more
    than max.message.bytes (1 MiB) whatever their metadata, so every partition is answered
    UNKNOWN_SERVER_ERROR (Kafka's answer to RecordTooLargeException) unbuilt, nothing is
    appended and the shard serves on."""
    async def scenario() -> None:
        r = rig(tmp_path, offsets_image())
        await r.loaded()
        body = commit.OffsetCommitRequest(
            group_id="g", generation_id_or_member_epoch=-1, member_id="",
            group_instance_id=None, topics=(commit.OffsetCommitRequestTopic(
                name="t", partitions=tuple(commit.OffsetCommitRequestPartition(
                    partition_index=p, committed_offset=1,
                    committed_leader_epoch=-1, committed_metadata="")
                    for p in range(30_000))),))
        reply = await r.service.handle(ApiKey.OFFSET_COMMIT, 9, body, client_id="c",
                                       client_host="/127.0.0.1")
        assert isinstance(reply, OffsetCommitResponse)
        codes = [p.error_code for t in reply.topics for p in t.partitions]
        assert len(codes) == 30_000 and set(codes) == {ErrorCode.UNKNOWN_SERVER_ERROR}
        assert r.part.log_end_offset == 0 and r.service.partition_states == {0: "loaded"}
        assert (await r.request("write:a")).error_code == ErrorCode.NONE
        await r.service.close()

    run(scenario)


class CountingShard(GroupShard):
    """A group shard noting, per request it handles, how many groups it names and how many
    loop turns the ticker had seen by then."""

    def __init__(self, partition: int, turns: list[int]) -> None:
        super().__init__(partition, GroupConfig(), random.Random(1))
        self.turns = turns
        self.seen: list[tuple[int, int]] = []

    def handle(self, token: ReplyToken, api_key: int, api_version: int, request: Any,
               context: RequestContext) -> Outcome:
        self.seen.append((len(request.groups), self.turns[0]))
        return super().handle(token, api_key, api_version, request, context)


def test_a_batched_request_reaches_its_shard_a_piece_per_loop_turn(tmp_path: Path) -> None:
    """DescribeGroups of 1,201 groups, each named twice: the shard gets each group once,
    at most GROUPS_PER_TURN a request, the loop running between two; the answer names
    every group as the request did."""
    async def scenario() -> None:
        logs = LogManager([tmp_path], LogConfig())
        logs.startup(1_000)
        replicas = ReplicaManager(ME, logs, {}, clock_ms=lambda: 1_000)
        turns = [0]
        shards: list[CountingShard] = []

        def new_shard(partition: int) -> CountingShard:
            shards.append(CountingShard(partition, turns))
            return shards[-1]
        service = GroupCoordinatorService(replicas, lambda: 1_000, new_shard,
                                          OffsetsTopicConfig(num_partitions=1))
        replicas.apply_image(offsets_image(), 1_000)
        await until(lambda: service.partition_states == {0: "loaded"}, "shard loaded")

        async def tick() -> None:
            while True:
                turns[0] += 1
                await asyncio.sleep(0)
        ticker = asyncio.get_running_loop().create_task(tick())
        names = [f"g{i}" for i in range(1_201)] * 2
        answer = await service.handle(ApiKey.DESCRIBE_GROUPS, 6, DescribeGroupsRequest(
            groups=tuple(names)), client_id="c",
            client_host="/127.0.0.1")
        ticker.cancel()
        sizes = [size for size, _ in shards[-1].seen]
        assert sizes == [500, 500, 201] and group_coordinator.GROUPS_PER_TURN == 500
        seen_turns = [turn for _, turn in shards[-1].seen]
        assert seen_turns == sorted(set(seen_turns))  # another loop turn before each piece
        assert isinstance(answer, DescribeGroupsResponse)
        assert [g.group_id for g in answer.groups] == names
        assert {g.error_code for g in answer.groups} == {ErrorCode.GROUP_ID_NOT_FOUND}
        await service.close()

    run(scenario)
