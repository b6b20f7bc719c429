"""The transaction coordinator's marker sender: markers written in place on partitions this
broker leads, sent to the leader of the others, retried, stopped or dropped as Kafka's
``TransactionMarkerChannelManager`` does."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from replica_fixtures import hosted, replicas_of, topic, until, with_records

from pykraft.broker.replica_manager import ReplicaManager
from pykraft.broker.txn_marker_sender import MarkerSender
from pykraft.errors import NetworkError
from pykraft.ids import TopicPartition
from pykraft.image.image import MetadataImage
from pykraft.messages.kafka.write_txn_markers_request import WriteTxnMarkersRequest
from pykraft.messages.kafka.write_txn_markers_response import (
    WritableTxnMarkerPartitionResult,
    WritableTxnMarkerResult,
    WritableTxnMarkerTopicResult,
    WriteTxnMarkersResponse,
)
from pykraft.protocol.errors import ErrorCode
from pykraft.txn.marker_results import MarkerAction, marker_action
from pykraft.txn.requests import MarkerOrder

T1, T2 = uuid.UUID(int=11), uuid.UUID(int=12)


def order(*partitions: TopicPartition, epoch: int = 3, producer_id: int = 9) -> MarkerOrder:
    return MarkerOrder("tx", producer_id=producer_id, producer_epoch=epoch, commit=True,
                       coordinator_epoch=0, transaction_version=0,
                       partitions=frozenset(partitions))


class Peer:
    """A remote broker: answers each marker request with the next errors, or fails."""

    def __init__(self, *answers: ErrorCode | type[Exception] | None,
                 by_epoch: dict[int, ErrorCode] | None = None) -> None:
        self.answers = list(answers)  # None: no answer at all (a black-holed link)
        self.by_epoch = by_epoch or {}
        self.requests: list[WriteTxnMarkersRequest] = []
        self.closed = 0

    async def request(self, body: WriteTxnMarkersRequest) -> WriteTxnMarkersResponse:
        self.requests.append(body)
        answer = self.answers.pop(0) if self.answers else ErrorCode.NONE
        if answer is None:
            await asyncio.Event().wait()
            raise AssertionError("never answers")
        if isinstance(answer, type):
            raise answer("the peer went away")
        return WriteTxnMarkersResponse(markers=tuple(
            WritableTxnMarkerResult(producer_id=m.producer_id, topics=tuple(
                WritableTxnMarkerTopicResult(name=t.name, partitions=tuple(
                    WritableTxnMarkerPartitionResult(
                        partition_index=i,
                        error_code=self.by_epoch.get(m.producer_epoch, answer))
                    for i in t.partition_indexes)) for t in m.topics))
            for m in body.markers))

    def close(self) -> None:
        self.closed += 1


def run(replicas: ReplicaManager, orders: list[MarkerOrder], peer: Peer | None,
        done: Callable[[list[tuple[MarkerOrder, TopicPartition]]], bool], *,
        current: Callable[[MarkerOrder], bool] = lambda _: True, timeout_ms: int = 30_000,
        ) -> list[tuple[MarkerOrder, TopicPartition]]:
    """Send ``orders`` and run the loop until ``done`` holds of the markers written."""
    written: list[tuple[MarkerOrder, TopicPartition]] = []

    async def connect(_: int) -> Any:
        return peer

    async def scenario() -> None:
        sender = MarkerSender(1, replicas, connect,
                              written=lambda o, tp: written.append((o, tp)),
                              current=current, clock_ms=lambda: 5_000, timeout_ms=timeout_ms)
        for each in orders:
            sender.send(each)
        await until(lambda: done(written), "markers written")
        await sender.close()

    asyncio.run(scenario())
    return written


def test_a_partition_led_here_gets_its_marker_in_place(tmp_path: Path) -> None:
    leader = replicas_of(tmp_path, 1, with_records(MetadataImage(), *topic("t", T1, (1,))))
    ordered = order(TopicPartition("t", 0))
    assert run(leader, [ordered], None, bool) == [(ordered, TopicPartition("t", 0))]
    assert hosted(leader).log.log_end_offset == 1  # the COMMIT marker


def test_a_deleted_partition_leaves_the_transaction_at_once(tmp_path: Path) -> None:
    replicas = replicas_of(tmp_path, 1, with_records(MetadataImage(), *topic("t", T1, (1,))))
    gone = order(TopicPartition("gone", 0), TopicPartition("t", 7))
    assert sorted(tp for _, tp in run(replicas, [gone], None, lambda w: len(w) == 2)) == [
        TopicPartition("gone", 0), TopicPartition("t", 7)]


def test_retriable_answers_are_sent_again_and_fenced_ones_stop(tmp_path: Path) -> None:
    image = with_records(MetadataImage(), *topic("r", T1, (2,)), *topic("s", T2, (2,)))
    replicas = replicas_of(tmp_path, 1, image)
    retried = Peer(ErrorCode.NOT_LEADER_OR_FOLLOWER, NetworkError, ErrorCode.NONE)
    ordered = order(TopicPartition("r", 0))
    assert run(replicas, [ordered], retried, bool) == [(ordered, TopicPartition("r", 0))]
    assert len(retried.requests) == 3
    assert retried.closed == 2  # the one that failed, then the one open at close
    # a newer epoch took over one transaction: its markers stop, the other's go on
    fenced = Peer(by_epoch={3: ErrorCode.INVALID_PRODUCER_EPOCH})
    stopped = order(TopicPartition("s", 0), TopicPartition("r", 0))
    other = order(TopicPartition("r", 0), epoch=4, producer_id=10)
    written = run(replicas, [stopped, other], fenced,
                  lambda w: (other, TopicPartition("r", 0)) in w)
    assert written == [(other, TopicPartition("r", 0))]
    assert len(fenced.requests) == 1  # one request to broker 2 carried both, once


def test_a_peer_that_never_answers_is_given_up_after_the_request_timeout(
        tmp_path: Path) -> None:
    replicas = replicas_of(tmp_path, 1, with_records(MetadataImage(), *topic("r", T1, (2,))))
    silent = Peer(None, ErrorCode.NONE)
    ordered = order(TopicPartition("r", 0))
    assert run(replicas, [ordered], silent, bool, timeout_ms=50) == [
        (ordered, TopicPartition("r", 0))]
    assert len(silent.requests) == 2 and silent.closed >= 1


def test_markers_of_a_coordinator_that_lost_its_partition_are_dropped(tmp_path: Path) -> None:
    image = with_records(MetadataImage(), *topic("r", T1, (2,)))
    replicas = replicas_of(tmp_path, 1, image)
    peer = Peer()
    kept = order(TopicPartition("r", 0), epoch=5, producer_id=10)
    dropped = order(TopicPartition("r", 0))
    written = run(replicas, [dropped, kept], peer, bool, current=lambda o: o is kept)
    assert written == [(kept, TopicPartition("r", 0))]
    assert [m.producer_epoch for r in peer.requests for m in r.markers] == [5]


@pytest.mark.parametrize(("error", "action"), [
    (ErrorCode.NONE, MarkerAction.DONE),
    (ErrorCode.UNSUPPORTED_FOR_MESSAGE_FORMAT, MarkerAction.DONE),
    (ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND, MarkerAction.RETRY),
    (ErrorCode.REQUEST_TIMED_OUT, MarkerAction.RETRY),
    (ErrorCode.TRANSACTION_COORDINATOR_FENCED, MarkerAction.STOP),
    (ErrorCode.CORRUPT_MESSAGE, MarkerAction.STOP),
])
def test_kafkas_decision_per_answer(error: ErrorCode, action: MarkerAction) -> None:
    assert marker_action(error) is action
