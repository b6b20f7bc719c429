"""The transaction coordinator's runtime on one broker: a ``__transaction_state`` partition
led here is loaded, requests go to its shard, writes are answered once committed, markers
reach the partitions, and a new leader finds every transaction where the log left it."""

from __future__ import annotations

import asyncio
import itertools
import uuid
from pathlib import Path

from replica_fixtures import hosted, replicas_of, topic, until, with_records

from pykraft.broker.replica_manager import ReplicaManager
from pykraft.broker.txn_coordinator import TxnCoordinatorService
from pykraft.ids import TRANSACTION_STATE_TOPIC_NAME, TopicPartition
from pykraft.image.image import MetadataImage
from pykraft.protocol.errors import ErrorCode
from pykraft.txn.config import TxnConfig
from pykraft.txn.requests import (
    AddPartitions,
    DescribedTxn,
    DescribeTxn,
    EndTxn,
    InitTxnProducer,
    ListTxns,
    ProducerReply,
)

DATA, STATE = uuid.UUID(int=11), uuid.UUID(int=12)
TP = TopicPartition("t", 0)


def cluster(tmp_path: Path) -> ReplicaManager:
    """Broker 1 leads ``t`` and the one ``__transaction_state`` partition."""
    made: ReplicaManager = replicas_of(tmp_path, 1, with_records(
        MetadataImage(), *topic("t", DATA, (1,)),
        *topic(TRANSACTION_STATE_TOPIC_NAME, STATE, (1,))))
    return made


def service(replicas: ReplicaManager, ids: itertools.count[int]) -> TxnCoordinatorService:
    async def no_peer(_: int) -> None:
        return None

    made = TxnCoordinatorService(replicas, lambda: 10_000, TxnConfig(log_partitions=1),
                                 producer_ids=lambda: next(ids), connect=no_peer,
                                 request_timeout_ms=30_000)
    made.leadership_changed(replicas.partition_for(TRANSACTION_STATE_TOPIC_NAME, 0))
    return made


async def completed(coordinator: TxnCoordinatorService) -> DescribedTxn:
    """The transaction once its markers are written (PrepareCommit until then)."""
    for _ in range(10_000):  # bounded: each turn lets the loop run
        reply = await coordinator.handle(DescribeTxn("tx"))
        assert isinstance(reply, DescribedTxn)
        if reply.state != "PrepareCommit":
            return reply
        await asyncio.sleep(0)
    raise AssertionError("the commit never completed")


def test_a_transaction_commits_and_a_reload_finds_it(tmp_path: Path) -> None:
    replicas = cluster(tmp_path)
    ids = itertools.count(1000)

    async def scenario() -> tuple[DescribedTxn, DescribedTxn]:
        first = service(replicas, ids)
        await until(lambda: first.partition_states == {0: "loaded"}, "loaded")
        init = await first.handle(InitTxnProducer("tx", 60_000))
        assert init == ProducerReply(ErrorCode.NONE, 1000, 0)
        assert await first.handle(AddPartitions("tx", 1000, 0, frozenset({TP}))) is not None
        assert await first.handle(EndTxn("tx", 1000, 0, commit=True)) == ProducerReply(
            ErrorCode.NONE, 1000, 0)
        await until(lambda: hosted(replicas).log.log_end_offset == 1, "the marker written")
        described = await completed(first)
        await first.close()
        second = service(replicas, ids)  # the next leader: the log replayed
        await until(lambda: second.partition_states == {0: "loaded"}, "reloaded")
        again = await second.handle(DescribeTxn("tx"))
        await second.close()
        assert isinstance(again, DescribedTxn)
        return described, again

    described, again = asyncio.run(scenario())
    assert (described.state, described.producer_id, described.partitions) == (
        "CompleteCommit", 1000, frozenset())
    assert again == described


def test_requests_before_the_load_and_after_the_partition_left(tmp_path: Path) -> None:
    replicas = cluster(tmp_path)

    async def scenario() -> list[object]:
        made = service(replicas, itertools.count(7))
        loading = await made.handle(InitTxnProducer("tx", 60_000))
        empty_id = await made.handle(DescribeTxn(""))
        listed = await made.list(ListTxns())
        await made.close()  # unloaded: nobody coordinates any more
        after = await made.handle(EndTxn("tx", 7, 0, commit=False))
        return [loading, empty_id, listed[0], after]

    assert asyncio.run(scenario()) == [
        ProducerReply(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS),
        DescribedTxn("", ErrorCode.INVALID_REQUEST),
        ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
        ProducerReply(ErrorCode.NOT_COORDINATOR)]
