"""The leader's side of replication over a real ReplicaManager, driven by follower Fetch
requests through FetchHandler (no sockets): high watermark, acks=all, ISR changes,
divergence and the AlterPartition manager."""

from __future__ import annotations

import asyncio
import dataclasses
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from replica_fixtures import broker, client_batch, request, until, with_records

from pykraft.broker.alter_partition import AlterPartitionManager
from pykraft.broker.fetch import FetchHandler
from pykraft.broker.produce import ProduceHandler
from pykraft.broker.purgatory import FollowerKey
from pykraft.broker.replica_manager import HostedPartition, ReplicaManager
from pykraft.errors import NetworkError, UnsupportedVersionError
from pykraft.ids import TopicPartition
from pykraft.image.image import MetadataImage
from pykraft.log.log_manager import LogManager
from pykraft.messages.codec import decode, encode
from pykraft.messages.kafka import alter_partition_request as ap_req
from pykraft.messages.kafka import alter_partition_response as ap_res
from pykraft.messages.kafka.fetch_request import (
    FetchPartition,
    FetchRequest,
    FetchTopic,
    ReplicaState,
)
from pykraft.protocol.errors import ErrorCode
from pykraft.records.metadata import (
    BrokerRegistrationChangeRecord,
    ConfigRecord,
    PartitionChangeRecord,
    PartitionRecord,
    TopicRecord,
)
from pykraft.replica.leader import AlterResult, IsrProposal
from pykraft.storage.log_config import LogConfig

ME, F2, F3 = 1, 2, 3
EPOCH = 10  # every broker's epoch in replica_fixtures.broker
T1 = uuid.UUID(int=7)
LAG = 1_000


class Clock:
    def __init__(self) -> None:
        self.now = 0

    def __call__(self) -> int:
        return self.now


@dataclasses.dataclass
class Leader:
    replicas: ReplicaManager
    clock: Clock
    proposals: list[IsrProposal]

    @property
    def part(self) -> HostedPartition:
        return self.replicas.partition_for("t", 0)


def _image(isr: tuple[int, ...], min_isr: int) -> MetadataImage:
    unfenced = [BrokerRegistrationChangeRecord(broker_id=b, broker_epoch=EPOCH, fenced=-1)
                for b in (ME, F2, F3)]
    image: MetadataImage = with_records(
        MetadataImage(), *(broker(b, 9090 + b) for b in (ME, F2, F3)), *unfenced,
        TopicRecord(name="t", topic_id=T1),
        PartitionRecord(partition_id=0, topic_id=T1, replicas=(ME, F2, F3), isr=isr,
                        leader=ME, leader_epoch=4, partition_epoch=9),
        ConfigRecord(resource_type=2, resource_name="t", name="min.insync.replicas",
                     value=str(min_isr)))
    return image


def _leader(tmp_path: Path, isr: tuple[int, ...] = (ME, F2, F3), min_isr: int = 2) -> Leader:
    logs = LogManager([tmp_path], LogConfig())
    logs.startup(0)
    clock = Clock()
    manager = ReplicaManager(ME, logs, {"replica.lag.time.max.ms": str(LAG)}, clock_ms=clock)
    proposals: list[IsrProposal] = []
    manager.isr_changes = lambda _part, proposal: proposals.append(proposal)
    manager.apply_image(_image(isr, min_isr), 0)
    return Leader(manager, clock, proposals)


@pytest.fixture
def leader(tmp_path: Path) -> Iterator[Leader]:
    made = _leader(tmp_path)
    yield made
    made.replicas.shutdown()


def _parked(leader: Leader, key: TopicPartition | FollowerKey | None = None) -> int:
    """Fetches waiting in the purgatory on ``key`` (t-0 by default)."""
    return leader.replicas.purgatories.fetch.watching(key or leader.part.tp)


def fetch_request(replica: int, offset: int, *, version: int = 15, epoch: int = EPOCH,
                  last_fetched_epoch: int = -1, leader_epoch: int = 4,
                  max_wait_ms: int = 0) -> FetchRequest:
    """A follower's Fetch of t-0 as Kafka's ReplicaFetcherThread builds it, as it arrives at
    ``version`` (coded there and back: fields the version lacks hold their defaults)."""
    by_state = version >= 15
    body = FetchRequest(
        replica_id=-1 if by_state else replica,
        replica_state=ReplicaState(replica_id=replica, replica_epoch=epoch) if by_state
        else ReplicaState(),
        max_wait_ms=max_wait_ms, min_bytes=1, max_bytes=1 << 20,
        topics=(FetchTopic(topic="t", topic_id=T1, partitions=(FetchPartition(
            partition=0, current_leader_epoch=leader_epoch, fetch_offset=offset,
            last_fetched_epoch=last_fetched_epoch, log_start_offset=0,
            partition_max_bytes=1 << 20),)),))
    return decode(FetchRequest, version, encode(body, version))


async def follower_fetch(leader: Leader, replica: int, offset: int, **kwargs: Any) -> Any:
    version = kwargs.get("version", 15)
    response = await FetchHandler(leader.replicas, "PLAINTEXT").fetch(
        fetch_request(replica, offset, **kwargs), version)
    return response.responses[0].partitions[0]


def append(leader: Leader, count: int = 1) -> None:
    leader.replicas.append_records(leader.part, client_batch([b"v"] * count), acks=1,
                                   api_version=9, now_ms=leader.clock())


# ---------------------------------------------------------------------- high watermark

@pytest.mark.parametrize("version", [12, 15, 18])
def test_follower_fetches_move_the_high_watermark(leader: Leader, version: int) -> None:
    async def run() -> None:
        append(leader, 3)
        assert leader.part.high_watermark == 0
        first = await follower_fetch(leader, F2, 0, version=version)
        assert first.error_code == ErrorCode.NONE and first.records
        assert first.high_watermark == 0  # as of the read
        await follower_fetch(leader, F2, 3, version=version)
        assert leader.part.high_watermark == 0  # F3 is in the ISR and not there yet
        await follower_fetch(leader, F3, 2, version=version)
        assert leader.part.high_watermark == 2
        answer = await follower_fetch(leader, F3, 3, version=version)
        assert leader.part.high_watermark == 3
        assert (answer.high_watermark, answer.log_start_offset) == (2, 0)

    asyncio.run(run())


def test_acks_all_completes_once_the_followers_fetched_past_the_batch(leader: Leader) -> None:
    async def run() -> None:
        handler = ProduceHandler(leader.replicas, leader.clock, "PLAINTEXT")
        produce = asyncio.create_task(handler.handle(
            request({0: client_batch([b"a", b"b"])}, acks=-1), api_version=12))
        parked = [asyncio.create_task(follower_fetch(leader, f, 0, max_wait_ms=30_000))
                  for f in (F2, F3)]
        for fetched in await asyncio.gather(*parked):  # woken by the append
            assert fetched.records
        assert not produce.done()
        await follower_fetch(leader, F2, 2)
        await asyncio.sleep(0)
        assert not produce.done()
        await follower_fetch(leader, F3, 2)
        response = await asyncio.wait_for(produce, 5)
        assert response is not None
        assert response.responses[0].partition_responses[0].error_code == ErrorCode.NONE

    asyncio.run(run())


def test_an_acks_all_answer_goes_before_the_fetch_woken_by_the_same_high_watermark_move(
        leader: Leader) -> None:
    """A consumer parked first on the partition still gets its answer after the produce
    whose batch the follower's fetch commits: the Produce purgatory is checked first."""
    async def run() -> None:
        done: list[str] = []
        consumer = asyncio.create_task(FetchHandler(leader.replicas, "PLAINTEXT").fetch(
            fetch_request(-1, 0, version=12, max_wait_ms=60_000), 12))
        await until(lambda: _parked(leader), "the consumer fetch parked")
        produce = asyncio.create_task(ProduceHandler(leader.replicas, leader.clock,
                                                     "PLAINTEXT").handle(
            request({0: client_batch([b"a"])}, acks=-1), api_version=12))
        produces = leader.replicas.purgatories.produce
        await until(lambda: produces.watching(leader.part.tp), "the produce parked")
        consumer.add_done_callback(lambda _: done.append("fetch"))
        produce.add_done_callback(lambda _: done.append("produce"))
        await follower_fetch(leader, F2, 1)
        assert not done  # F3 is in the ISR and not there yet
        await follower_fetch(leader, F3, 1)
        await asyncio.wait_for(asyncio.gather(consumer, produce), 5)
        assert done == ["produce", "fetch"]
        assert consumer.result().responses[0].partitions[0].records

    asyncio.run(run())


def test_a_follower_fetch_at_the_log_end_parks_until_an_append(leader: Leader) -> None:
    async def run() -> None:
        parked = asyncio.create_task(follower_fetch(leader, F2, 0, max_wait_ms=30_000))
        await until(lambda: _parked(leader), "the follower fetch parked")
        assert not parked.done()
        append(leader)
        answer = await asyncio.wait_for(parked, 5)
        assert answer.records

    asyncio.run(run())


def test_a_high_watermark_move_leaves_a_parked_follower_fetch_parked(
        leader: Leader, monkeypatch: pytest.MonkeyPatch) -> None:
    """A follower reads to the log end: reading it again for a high watermark move is
    wasted work on the leader, once per acks=all produce (Kafka's DelayedFetch)."""
    async def run() -> None:
        append(leader, 2)
        await follower_fetch(leader, F2, 2)
        read = FetchHandler._read
        readers: list[int] = []

        def counted(handler: FetchHandler, *args: Any) -> Any:
            readers.append(args[-1].replica_id)  # the _Follower
            return read(handler, *args)

        monkeypatch.setattr(FetchHandler, "_read", counted)
        parked = asyncio.create_task(follower_fetch(leader, F2, 2, max_wait_ms=60_000))
        await until(lambda: _parked(leader), "the follower fetch parked")
        await follower_fetch(leader, F3, 2)
        assert leader.part.high_watermark == 2
        for _ in range(5):
            await asyncio.sleep(0)
        assert readers == [F2, F3] and not parked.done()
        append(leader)
        answer = await asyncio.wait_for(parked, 5)
        assert answer.records and readers == [F2, F3, F2]

    asyncio.run(run())


def _new_topic(leader: Leader, name: str, replicas: tuple[int, ...], *,
               leader_id: int = ME) -> None:
    topic_id = uuid.uuid5(T1, name)
    leader.replicas.apply_image(with_records(
        leader.replicas.image, TopicRecord(name=name, topic_id=topic_id),
        PartitionRecord(partition_id=0, topic_id=topic_id, replicas=replicas, isr=replicas,
                        leader=leader_id, leader_epoch=0, partition_epoch=0)), 0)


def test_a_parked_follower_fetch_is_answered_when_a_partition_it_follows_is_led_here(
        leader: Leader) -> None:
    """Else the follower names the new partition only after max_wait_ms (the first
    acks=all produce to a new topic waited out replica.fetch.wait.max.ms)."""
    async def run() -> None:
        parked = asyncio.create_task(follower_fetch(leader, F2, 0, max_wait_ms=60_000))
        await until(lambda: _parked(leader, FollowerKey(F2)), "the follower fetch parked")
        _new_topic(leader, "elsewhere", (F3, ME, F2), leader_id=F3)  # not led here
        _new_topic(leader, "without-f2", (ME, F3))
        await asyncio.sleep(0)
        assert not parked.done()
        _new_topic(leader, "new", (ME, F2, F3))
        answer = await asyncio.wait_for(parked, 5)
        assert answer.error_code == ErrorCode.NONE and not answer.records
        assert not _parked(leader, FollowerKey(F2))

    asyncio.run(run())


# ---------------------------------------------------------------------- refusals

def test_a_fetch_from_an_older_broker_incarnation_is_refused(leader: Leader) -> None:
    async def run() -> None:
        append(leader)
        answer = await follower_fetch(leader, F2, 1, epoch=EPOCH - 1)
        assert answer.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
        assert leader.part.replication is not None
        assert leader.part.replication.followers[F2].log_end_offset == -1

    asyncio.run(run())


def test_a_fetch_from_a_broker_that_is_no_replica_is_refused(tmp_path: Path) -> None:
    made = _leader(tmp_path)
    made.replicas.apply_image(with_records(made.replicas.image, PartitionChangeRecord(
        partition_id=0, topic_id=T1, replicas=(ME, F2), isr=(ME, F2))), 0)

    async def run() -> None:
        assert (await follower_fetch(made, F3, 0)).error_code == ErrorCode.UNKNOWN_LEADER_EPOCH
        assert (await follower_fetch(made, F3, 0, leader_epoch=-1)).error_code == \
            ErrorCode.NOT_LEADER_OR_FOLLOWER

    asyncio.run(run())
    made.replicas.shutdown()


def test_a_diverging_follower_is_told_where_its_epoch_ends(leader: Leader) -> None:
    async def run() -> None:
        append(leader, 2)  # offsets 0-1 in leader epoch 4
        answer = await follower_fetch(leader, F2, 5, last_fetched_epoch=3, max_wait_ms=30_000)
        assert (answer.diverging_epoch.epoch, answer.diverging_epoch.end_offset) == (3, 0)
        assert answer.records == b""
        same = await follower_fetch(leader, F2, 2, last_fetched_epoch=4)
        assert same.diverging_epoch.epoch == -1
        past = await follower_fetch(leader, F2, 5, last_fetched_epoch=4)
        assert (past.diverging_epoch.epoch, past.diverging_epoch.end_offset) == (4, 2)
        unknown = await follower_fetch(leader, F2, 0, last_fetched_epoch=9)
        assert unknown.error_code == ErrorCode.OFFSET_OUT_OF_RANGE
        assert leader.part.replication is not None
        assert leader.part.replication.followers[F2].log_end_offset == 2  # only 'same'

    asyncio.run(run())


# ---------------------------------------------------------------------- ISR changes

def test_a_caught_up_follower_is_proposed_for_the_isr(tmp_path: Path) -> None:
    made = _leader(tmp_path, isr=(ME, F2))

    async def run() -> None:
        append(made, 2)
        await follower_fetch(made, F2, 2)
        assert made.part.high_watermark == 2
        await follower_fetch(made, F3, 1)
        assert made.proposals == []  # below the high watermark
        await follower_fetch(made, F3, 2)
        assert [p.isr_with_epochs for p in made.proposals] == [
            ((ME, EPOCH), (F2, EPOCH), (F3, EPOCH))]
        assert made.part.maximal_isr == {ME, F2, F3} and made.part.isr == (ME, F2)
        proposal = made.proposals[0]
        assert not made.replicas.complete_isr_change(
            made.part, proposal, AlterResult(4, 10, proposal.isr), made.clock())
        assert set(made.part.isr) == {ME, F2, F3}
        assert (made.replicas.isr_expands, made.replicas.isr_shrinks) == (1, 0)

    asyncio.run(run())
    made.replicas.shutdown()


def test_a_fenced_follower_is_not_proposed(tmp_path: Path) -> None:
    made = _leader(tmp_path, isr=(ME, F2))
    made.replicas.apply_image(with_records(made.replicas.image, BrokerRegistrationChangeRecord(
        broker_id=F3, broker_epoch=EPOCH, fenced=1)), 0)

    async def run() -> None:
        await follower_fetch(made, F3, 0)
        assert made.proposals == []

    asyncio.run(run())
    made.replicas.shutdown()


def test_a_lagging_follower_leaves_the_isr_and_acks_all_completes(leader: Leader) -> None:
    async def run() -> None:
        handler = ProduceHandler(leader.replicas, leader.clock, "PLAINTEXT")
        produce = asyncio.create_task(handler.handle(
            request({0: client_batch([b"a"])}, acks=-1), api_version=12))
        await until(lambda: leader.part.log_end_offset == 1, "appended")
        await follower_fetch(leader, F2, 1)
        leader.replicas.shrink_isrs(LAG)
        assert leader.proposals == []  # F3 is caught up until LAG has passed
        leader.clock.now = LAG + 1
        leader.replicas.shrink_isrs(leader.clock())
        assert [p.isr for p in leader.proposals] == [(ME, F2)]
        assert leader.part.high_watermark == 0 and not produce.done()  # held while pending
        leader.replicas.complete_isr_change(leader.part, leader.proposals[0],
                                            AlterResult(4, 10, (ME, F2)), leader.clock())
        assert leader.part.high_watermark == 1
        assert (leader.replicas.isr_shrinks, leader.replicas.isr_expands) == (1, 0)
        response = await asyncio.wait_for(produce, 5)
        assert response is not None
        assert response.responses[0].partition_responses[0].error_code == ErrorCode.NONE

    asyncio.run(run())


def test_under_min_isr_the_high_watermark_stays_and_acks_all_is_refused(
        tmp_path: Path) -> None:
    made = _leader(tmp_path, min_isr=3)

    async def run() -> None:
        append(made)
        made.clock.now = LAG + 1
        made.replicas.shrink_isrs(made.clock())
        made.replicas.complete_isr_change(made.part, made.proposals[0],
                                          AlterResult(4, 10, (ME,)), made.clock())
        assert made.part.isr == (ME,) and made.part.high_watermark == 0
        handler = ProduceHandler(made.replicas, made.clock, "PLAINTEXT")
        response = await handler.handle(request({0: client_batch([b"a"])}, acks=-1),
                                        api_version=12)
        assert response is not None
        assert response.responses[0].partition_responses[0].error_code == \
            ErrorCode.NOT_ENOUGH_REPLICAS

    asyncio.run(run())
    made.replicas.shutdown()


def test_a_wait_whose_isr_falls_under_min_isr_times_out(tmp_path: Path) -> None:
    """Kafka >= 3.7: the high watermark stays under min ISR, so the wait cannot succeed."""
    made = _leader(tmp_path, min_isr=3)

    async def run() -> None:
        handler = ProduceHandler(made.replicas, made.clock, "PLAINTEXT")
        produce = asyncio.create_task(handler.handle(
            request({0: client_batch([b"a"])}, acks=-1, timeout_ms=200), api_version=12))
        await until(lambda: made.part.log_end_offset == 1, "appended")
        await follower_fetch(made, F2, 1)
        made.clock.now = LAG + 1
        made.replicas.shrink_isrs(made.clock())
        made.replicas.complete_isr_change(made.part, made.proposals[0],
                                          AlterResult(4, 10, (ME, F2)), made.clock())
        response = await asyncio.wait_for(produce, 5)
        assert response is not None
        assert response.responses[0].partition_responses[0].error_code == \
            ErrorCode.REQUEST_TIMED_OUT
        assert made.part.high_watermark == 0

    asyncio.run(run())
    made.replicas.shutdown()


def test_a_newer_image_replaces_a_pending_change(leader: Leader) -> None:
    leader.clock.now = LAG + 1
    leader.replicas.shrink_isrs(leader.clock())
    replication = leader.part.replication
    assert replication is not None
    pending = replication.state
    leader.replicas.apply_image(with_records(leader.replicas.image, PartitionChangeRecord(
        partition_id=0, topic_id=T1, isr=(ME, F3))), leader.clock())
    assert leader.part.isr == (ME, F3)
    assert replication.state != pending and not replication.in_flight
    assert not leader.replicas.complete_isr_change(
        leader.part, leader.proposals[0], AlterResult(4, 10, (ME,)), leader.clock())
    assert leader.part.isr == (ME, F3)


def test_a_shrink_the_image_commits_before_its_answer_counts_once(leader: Leader) -> None:
    """IsrShrinksPerSec counts this leader's change once committed, whichever of the
    image and the controller's answer comes first."""
    leader.clock.now = LAG + 1
    leader.replicas.shrink_isrs(leader.clock())
    (proposal,) = leader.proposals
    leader.replicas.apply_image(with_records(leader.replicas.image, PartitionChangeRecord(
        partition_id=0, topic_id=T1, isr=tuple(reversed(proposal.isr)))), leader.clock())
    assert leader.replicas.isr_shrinks == 1
    leader.replicas.complete_isr_change(leader.part, proposal,
                                        AlterResult(4, 10, proposal.isr), leader.clock())
    assert (leader.replicas.isr_shrinks, leader.replicas.isr_expands) == (1, 0)


# ---------------------------------------------------------------------- AlterPartition manager

class FakeController:
    def __init__(self, *answers: Any) -> None:
        self.answers = list(answers)
        self.sent: list[ap_req.AlterPartitionRequest] = []

    async def send(self, body: Any) -> Any:
        self.sent.append(body)
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer


def _answer(error: ErrorCode = ErrorCode.NONE, *, code: ErrorCode = ErrorCode.NONE,
            isr: tuple[int, ...] = (ME, F2), partition_epoch: int = 10
            ) -> ap_res.AlterPartitionResponse:
    return ap_res.AlterPartitionResponse(error_code=error, topics=() if error else (
        ap_res.TopicData(topic_id=T1, partitions=(ap_res.PartitionData(
            partition_index=0, error_code=code, leader_id=ME, leader_epoch=4, isr=isr,
            partition_epoch=partition_epoch),)),))


def _shrinking(leader: Leader, controller: FakeController) -> AlterPartitionManager:
    manager = AlterPartitionManager(controller, leader.replicas, broker_id=ME,
                                    broker_epoch=lambda: EPOCH)
    leader.replicas.isr_changes = manager.submit
    leader.clock.now = LAG + 1
    leader.replicas.shrink_isrs(leader.clock())
    return manager


def test_the_manager_sends_the_proposal_and_commits_the_answer(leader: Leader) -> None:
    async def run() -> None:
        append(leader)
        await follower_fetch(leader, F2, 1)
        controller = FakeController(_answer())
        manager = _shrinking(leader, controller)
        assert manager.unsent == 1
        assert await manager.send_once()
        sent = controller.sent[0]
        assert (sent.broker_id, sent.broker_epoch) == (ME, EPOCH)
        part = sent.topics[0].partitions[0]
        assert (sent.topics[0].topic_id, part.leader_epoch, part.partition_epoch) == (T1, 4, 9)
        assert [(s.broker_id, s.broker_epoch) for s in part.new_isr_with_epochs] == [
            (ME, EPOCH), (F2, EPOCH)]
        assert manager.unsent == 0 and leader.part.isr == (ME, F2)
        assert leader.part.high_watermark == 1

    asyncio.run(run())


def test_the_manager_retries_failures_and_drops_refused_changes(leader: Leader) -> None:
    async def run() -> None:
        controller = FakeController(NetworkError("down"), UnsupportedVersionError("v1"),
                                    _answer(ErrorCode.STALE_BROKER_EPOCH),
                                    _answer(code=ErrorCode.NOT_CONTROLLER),
                                    _answer(code=ErrorCode.INELIGIBLE_REPLICA))
        manager = _shrinking(leader, controller)
        for _ in range(4):
            assert not await manager.send_once()
            assert manager.unsent == 1
        assert await manager.send_once()
        assert manager.unsent == 0 and len(controller.sent) == 5
        assert leader.part.replication is not None
        assert not leader.part.replication.in_flight and leader.part.isr == (ME, F2, F3)

    asyncio.run(run())


def test_a_second_proposal_while_one_is_unsent_is_not_attempted(leader: Leader) -> None:
    manager = _shrinking(leader, FakeController())
    replication = leader.part.replication
    assert replication is not None and replication.in_flight and manager.unsent == 1
    leader.replicas.apply_image(with_records(leader.replicas.image, PartitionChangeRecord(
        partition_id=0, topic_id=T1, isr=(ME, F2, F3))), leader.clock())  # committed again
    leader.replicas.shrink_isrs(leader.clock())  # proposes while the first is still unsent
    assert manager.unsent == 1 and not replication.in_flight
