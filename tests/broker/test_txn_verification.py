"""Verifying a transaction with its coordinator before its first write to a partition
(KIP-890): where the coordinator is found, what each client version is told, a guard that a
marker voids, and the group coordinator refusing TxnOffsetCommit on it."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from offsets_fixtures import ShardCoordinator, run
from replica_fixtures import broker, with_records

from pykraft.broker.txn_verification import Operation, TxnVerifier
from pykraft.errors import NetworkError
from pykraft.ids import OFFSETS_TOPIC_NAME, TRANSACTION_STATE_TOPIC_NAME, TopicPartition
from pykraft.image.image import MetadataImage
from pykraft.log.producer_state import ProducerStateManager
from pykraft.messages.kafka import add_partitions_to_txn_response as apr
from pykraft.messages.kafka import txn_offset_commit_request as txn
from pykraft.messages.kafka.add_partitions_to_txn_request import (
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnTransaction,
)
from pykraft.messages.kafka.txn_offset_commit_response import TxnOffsetCommitResponse
from pykraft.protocol.apis import ApiKey
from pykraft.protocol.errors import ErrorCode
from pykraft.records.metadata import PartitionRecord, TopicRecord

ME, PEER = 1, 2
TP = TopicPartition("t", 0)
STATE_ID = uuid.UUID(int=77)


def state_image(leader: int | None) -> MetadataImage:
    """``__transaction_state`` with one partition led by ``leader`` (None: no topic)."""
    image: MetadataImage = with_records(MetadataImage(), broker(ME, 9091), broker(PEER, 9092))
    if leader is None:
        return image
    led: MetadataImage = with_records(
        image, TopicRecord(name=TRANSACTION_STATE_TOPIC_NAME, topic_id=STATE_ID),
        PartitionRecord(partition_id=0, topic_id=STATE_ID, replicas=(leader,), isr=(leader,),
                        leader=leader, leader_epoch=0, partition_epoch=0))
    return led


class Peer:
    """Another broker's coordinator: answers each partition ``code`` (or fails)."""

    def __init__(self, code: ErrorCode = ErrorCode.NONE, top: ErrorCode = ErrorCode.NONE,
                 fails: bool = False, silent: bool = False) -> None:
        self.code, self.top, self.fails, self.silent = code, top, fails, silent
        self.sent: list[AddPartitionsToTxnRequest] = []
        self.closed = False

    async def request(self, body: AddPartitionsToTxnRequest) -> apr.AddPartitionsToTxnResponse:
        self.sent.append(body)
        if self.fails:
            raise NetworkError("connection reset")
        if self.silent:  # a black-holed link: no answer, no error
            await asyncio.Event().wait()
        (transaction,) = body.transactions
        return apr.AddPartitionsToTxnResponse(error_code=self.top, results_by_transaction=(
            apr.AddPartitionsToTxnResult(transactional_id=transaction.transactional_id,
                                         topic_results=tuple(apr.AddPartitionsToTxnTopicResult(
                name=t.name, results_by_partition=tuple(
                    apr.AddPartitionsToTxnPartitionResult(partition_index=p,
                                                          partition_error_code=self.code)
                    for p in t.partitions)) for t in transaction.topics)),))

    def close(self) -> None:
        self.closed = True


def verifier(leader: int | None, *, peer: Peer | None = None,
             local: Mapping[TopicPartition, ErrorCode] | None = None,
             enabled: bool = True, timeout_ms: int = 30_000,
             ) -> tuple[TxnVerifier, list[AddPartitionsToTxnTransaction]]:
    asked: list[AddPartitionsToTxnTransaction] = []

    async def ask_local(transaction: AddPartitionsToTxnTransaction
                        ) -> Mapping[TopicPartition, ErrorCode]:
        asked.append(transaction)
        return local or {TP: ErrorCode.NONE}

    async def connect(broker_id: int) -> Any:
        assert broker_id == PEER
        return peer

    made = TxnVerifier(ME, image=lambda: state_image(leader), partition_of=lambda _id: 0,
                       local=ask_local, connect=connect, enabled=enabled,
                       timeout_ms=timeout_ms)
    return made, asked


def verify(made: TxnVerifier, operation: Operation = Operation.DEFAULT_ERROR
           ) -> dict[TopicPartition, ErrorCode]:
    return asyncio.run(made.verify("tx", 7, 0, [TP], operation))


def test_no_coordinator_is_coordinator_not_available() -> None:
    made, asked = verifier(None)
    assert verify(made) == {TP: ErrorCode.COORDINATOR_NOT_AVAILABLE}
    assert asked == []


def test_this_brokers_coordinator_is_asked_in_place_verify_only_before_v5() -> None:
    made, asked = verifier(ME)
    assert verify(made) == {}
    assert verify(made, Operation.ADD_PARTITION) == {}
    assert [t.verify_only for t in asked] == [True, False]
    assert [(t.name, tuple(t.partitions)) for t in asked[0].topics] == [("t", (0,))]


@pytest.mark.parametrize(("answer", "operation", "told"), [
    (ErrorCode.PRODUCER_FENCED, Operation.GENERIC_ERROR, ErrorCode.INVALID_PRODUCER_EPOCH),
    (ErrorCode.TRANSACTION_ABORTABLE, Operation.DEFAULT_ERROR, ErrorCode.INVALID_TXN_STATE),
    (ErrorCode.TRANSACTION_ABORTABLE, Operation.GENERIC_ERROR,
     ErrorCode.TRANSACTION_ABORTABLE),
    (ErrorCode.INVALID_TXN_STATE, Operation.ADD_PARTITION, ErrorCode.INVALID_TXN_STATE),
])
def test_another_brokers_answer_is_mapped_for_the_client(
        answer: ErrorCode, operation: Operation, told: ErrorCode) -> None:
    peer = Peer(answer)
    made, _ = verifier(PEER, peer=peer)
    assert verify(made, operation) == {TP: told}
    assert [t.verify_only for t in peer.sent[0].transactions] == [
        operation is not Operation.ADD_PARTITION]


def test_a_refused_broker_request_and_a_lost_connection() -> None:
    made, _ = verifier(PEER, peer=Peer(top=ErrorCode.CLUSTER_AUTHORIZATION_FAILED))
    assert verify(made) == {TP: ErrorCode.INVALID_TXN_STATE}
    made, _ = verifier(PEER, peer=Peer(fails=True))
    assert verify(made) == {TP: ErrorCode.NETWORK_EXCEPTION}


def test_a_silent_coordinator_is_a_network_exception_after_the_request_timeout() -> None:
    peer = Peer(silent=True)
    made, _ = verifier(PEER, peer=peer, timeout_ms=50)
    assert verify(made) == {TP: ErrorCode.NETWORK_EXCEPTION}
    assert peer.closed  # the next verification opens a new connection


def test_adding_a_partition_happens_even_with_verification_off() -> None:
    made, _ = verifier(ME, enabled=False)
    assert not made.applies(Operation.GENERIC_ERROR)
    assert made.applies(Operation.ADD_PARTITION)


def test_client_versions_choose_the_operation() -> None:
    assert [Operation.of_txn_offset_commit(v) for v in (3, 4, 5)] == [
        Operation.DEFAULT_ERROR, Operation.GENERIC_ERROR, Operation.ADD_PARTITION]
    assert [Operation.of_produce(v) for v in (10, 11, 12)] == [
        Operation.DEFAULT_ERROR, Operation.GENERIC_ERROR, Operation.ADD_PARTITION]


def test_a_guard_holds_until_a_marker_or_a_write_of_the_producer() -> None:
    state = ProducerStateManager(partition="t-0")
    guard = state.start_verification(7, 0)
    assert guard is not None and state.start_verification(7, 0) is guard  # shared
    assert state.verified(7, 0, guard) and not state.verified(7, 0, None)
    state.end_verification(guard)
    assert not state.verified(7, 0, guard)


def test_a_transactional_offset_commit_waits_for_its_verification_and_a_marker_voids_it(
        tmp_path: Path) -> None:
    """The group coordinator asks before holding offsets; a marker of the producer written
    while it asks (the transaction ended) makes the write INVALID_TXN_STATE."""
    async def scenario() -> None:
        made = ShardCoordinator(tmp_path)
        await made.loaded()
        replicas, service = made.replicas, made.service
        asked = asyncio.Event()
        answer: asyncio.Future[Mapping[TopicPartition, ErrorCode]] = (
            asyncio.get_running_loop().create_future())

        async def coordinator(_: AddPartitionsToTxnTransaction
                              ) -> Mapping[TopicPartition, ErrorCode]:
            asked.set()
            return await answer

        async def nobody(_: int) -> None:
            return None

        service.verifier = TxnVerifier(
            ME, image=lambda: with_records(replicas.image, *state_records()),
            partition_of=lambda _id: 0, local=coordinator, connect=nobody, enabled=True)

        async def commit() -> ErrorCode:
            answered = await service.handle(
                ApiKey.TXN_OFFSET_COMMIT, 3, txn.TxnOffsetCommitRequest(
                    transactional_id="tx", group_id="g", producer_id=7, producer_epoch=0,
                    topics=(txn.TxnOffsetCommitRequestTopic(name="t", partitions=(
                        txn.TxnOffsetCommitRequestPartition(
                            partition_index=0, committed_offset=5,
                            committed_metadata=None),)),)),
                client_id="c", client_host="/127.0.0.1")
            assert isinstance(answered, TxnOffsetCommitResponse)
            return ErrorCode(answered.topics[0].partitions[0].error_code)

        pending = asyncio.ensure_future(commit())
        await asyncio.wait_for(asked.wait(), 5)
        service.write_marker(0, producer_id=7, producer_epoch=0, committed=False,
                             coordinator_epoch=0, transaction_version=0, now_ms=1_000)
        answer.set_result({TopicPartition(OFFSETS_TOPIC_NAME, 0): ErrorCode.NONE})
        assert await pending == ErrorCode.INVALID_TXN_STATE
        answer = asyncio.get_running_loop().create_future()
        asked.clear()
        again = asyncio.ensure_future(commit())  # verified and written this time
        await asyncio.wait_for(asked.wait(), 5)
        answer.set_result({TopicPartition(OFFSETS_TOPIC_NAME, 0): ErrorCode.NONE})
        assert await again == ErrorCode.NONE
        await service.close()

    run(scenario)


def state_records() -> list[object]:
    return [TopicRecord(name=TRANSACTION_STATE_TOPIC_NAME, topic_id=STATE_ID),
            PartitionRecord(partition_id=0, topic_id=STATE_ID, replicas=(ME,), isr=(ME,),
                            leader=ME, leader_epoch=0, partition_epoch=0)]
