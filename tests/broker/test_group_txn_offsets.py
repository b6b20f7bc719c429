"""Transactional offsets through the group coordinator's runtime and a real group shard:
TxnOffsetCommit's batch carries the producer, the marker written through the runtime ends
it, a reload replays both (and keeps what is still pending), a fenced producer's commit is
refused before anything is held, and a partition not loaded refuses markers."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
from offsets_fixtures import ShardCoordinator, run

from pykraft.broker.group_coordinator import GroupCoordinatorService
from pykraft.broker.replica_manager import PartitionError, ReplicaManager
from pykraft.ids import OFFSETS_TOPIC_NAME
from pykraft.messages.kafka import offset_fetch_request as fetch
from pykraft.messages.kafka import txn_offset_commit_request as txn
from pykraft.messages.kafka.offset_fetch_response import OffsetFetchResponse
from pykraft.messages.kafka.txn_offset_commit_response import TxnOffsetCommitResponse
from pykraft.protocol.apis import ApiKey
from pykraft.protocol.errors import ErrorCode
from pykraft.records.batch import iter_batches

PRODUCER = 4_000


class Coordinator:
    """The coordinator (:class:`offsets_fixtures.ShardCoordinator`), and the transactional
    requests these tests send it."""

    def __init__(self, directory: Path, max_message_bytes: int = 1_048_588) -> None:
        made = ShardCoordinator(directory, max_message_bytes)
        self.replicas: ReplicaManager = made.replicas
        self.service: GroupCoordinatorService = made.service
        self.loaded: Callable[[], Awaitable[None]] = made.loaded
        self.reload: Callable[[], Awaitable[None]] = made.reload

    async def commit(self, offset: int, epoch: int = 0, metadata: str | None = None
                     ) -> ErrorCode:
        answer = await self.service.handle(ApiKey.TXN_OFFSET_COMMIT, 5, txn.TxnOffsetCommitRequest(
            transactional_id="tx", group_id="g", producer_id=PRODUCER, producer_epoch=epoch,
            topics=(txn.TxnOffsetCommitRequestTopic(name="t", partitions=(
                txn.TxnOffsetCommitRequestPartition(
                    partition_index=0, committed_offset=offset,
                    committed_metadata=metadata),)),)),
            client_id="c", client_host="/127.0.0.1")
        assert isinstance(answer, TxnOffsetCommitResponse)
        (code,) = {p.error_code for t in answer.topics for p in t.partitions}
        return ErrorCode(code)

    def marker(self, committed: bool, epoch: int = 0) -> None:
        self.service.write_marker(0, producer_id=PRODUCER, producer_epoch=epoch,
                                  committed=committed, coordinator_epoch=0,
                                  transaction_version=0, now_ms=1_000)

    async def fetched(self, require_stable: bool = True) -> tuple[str, int]:
        answer = await self.service.handle(ApiKey.OFFSET_FETCH, 9, fetch.OffsetFetchRequest(
            require_stable=require_stable, groups=(fetch.OffsetFetchRequestGroup(
                group_id="g", topics=(fetch.OffsetFetchRequestTopics(
                    name="t", partition_indexes=(0,)),)),)),
            client_id="c", client_host="/127.0.0.1")
        assert isinstance(answer, OffsetFetchResponse)
        (partition,) = answer.groups[0].topics[0].partitions
        return ErrorCode(partition.error_code).name, partition.committed_offset

    def batches(self) -> list[tuple[int, bool, bool]]:
        """Each batch of the log: (producer id, transactional, control)."""
        part = self.replicas.partition_for(OFFSETS_TOPIC_NAME, 0)
        return [(b.header.producer_id, b.header.is_transactional, b.is_control)
                for b in iter_batches(part.log.read(0, 1 << 20))]


def test_a_commit_marker_makes_the_offsets_visible_and_a_reload_replays_it(
        tmp_path: Path) -> None:
    async def scenario() -> None:
        c = Coordinator(tmp_path)
        await c.loaded()
        assert await c.commit(5) == ErrorCode.NONE
        assert await c.fetched() == ("UNSTABLE_OFFSET_COMMIT", -1)
        assert await c.fetched(require_stable=False) == ("NONE", -1)
        c.marker(committed=True)
        assert await c.fetched() == ("NONE", 5)
        assert await c.commit(9) == ErrorCode.NONE
        c.marker(committed=False)
        assert await c.fetched() == ("NONE", 5)
        assert c.batches() == [(PRODUCER, True, False), (PRODUCER, True, True)] * 2
        await c.reload()
        assert await c.fetched() == ("NONE", 5)
        await c.service.close()

    run(scenario)


def test_a_reload_keeps_an_open_transactions_offsets_pending(tmp_path: Path) -> None:
    async def scenario() -> None:
        c = Coordinator(tmp_path)
        await c.loaded()
        assert await c.commit(7) == ErrorCode.NONE
        await c.reload()
        assert await c.fetched() == ("UNSTABLE_OFFSET_COMMIT", -1)
        c.marker(committed=True)
        assert await c.fetched() == ("NONE", 7)
        await c.service.close()

    run(scenario)


def test_a_fenced_producers_commit_is_refused_and_holds_nothing(tmp_path: Path) -> None:
    async def scenario() -> None:
        c = Coordinator(tmp_path)
        await c.loaded()
        assert await c.commit(3, epoch=1) == ErrorCode.NONE
        c.marker(committed=False, epoch=2)  # the coordinator fenced epoch 1
        before = c.batches()
        assert await c.commit(4, epoch=1) == ErrorCode.INVALID_PRODUCER_EPOCH
        assert c.batches() == before
        assert await c.fetched() == ("NONE", -1)
        await c.service.close()

    run(scenario)


def test_a_marker_for_a_partition_not_loaded_is_refused_not_leader(tmp_path: Path) -> None:
    async def scenario() -> None:
        c = Coordinator(tmp_path)
        with pytest.raises(PartitionError) as refused:
            c.marker(committed=True)  # before the load completes
        assert refused.value.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
        await c.loaded()
        await c.service.close()

    run(scenario)


def test_a_commit_too_large_for_one_batch_is_refused_before_the_shard(tmp_path: Path) -> None:
    """As OffsetCommit: UNKNOWN_SERVER_ERROR (Kafka's RecordTooLargeException), nothing held,
    nothing written, and the shard goes on without a reload."""
    async def scenario() -> None:
        c = Coordinator(tmp_path, max_message_bytes=2_000)
        await c.loaded()
        assert await c.commit(5, metadata="m" * 3_000) == ErrorCode.UNKNOWN_SERVER_ERROR
        assert c.batches() == []
        assert await c.fetched() == ("NONE", -1)
        assert await c.commit(6) == ErrorCode.NONE
        assert c.service.partition_states == {0: "loaded"}
        await c.service.close()

    run(scenario)
