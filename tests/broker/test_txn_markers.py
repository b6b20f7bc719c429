"""WriteTxnMarkers on partition replicas: what Kafka's ``handleWriteTxnMarkersRequest``
answers for each partition of each marker, and what a written marker does to the log."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

import pytest
from replica_fixtures import hosted, produce, replicas_of, topic, with_records

from pykraft.broker.replica_manager import ReplicaManager
from pykraft.broker.txn_markers import write_txn_markers
from pykraft.image.image import MetadataImage
from pykraft.messages.kafka.write_txn_markers_request import (
    WritableTxnMarker,
    WritableTxnMarkerTopic,
    WriteTxnMarkersRequest,
)
from pykraft.protocol.errors import ErrorCode

T1 = uuid.UUID(int=11)
PID = 6


def marker(*partitions: tuple[str, int], epoch: int = 0, commit: bool = True,
           coordinator_epoch: int = 0, version: int = 0) -> WritableTxnMarker:
    names = sorted({name for name, _ in partitions})
    return WritableTxnMarker(
        producer_id=PID, producer_epoch=epoch, transaction_result=commit,
        coordinator_epoch=coordinator_epoch, transaction_version=version,
        topics=tuple(WritableTxnMarkerTopic(name=name, partition_indexes=tuple(
            index for n, index in partitions if n == name)) for name in names))


def write(replicas: ReplicaManager, *markers: WritableTxnMarker,
          timeout_ms: int = 30_000) -> list[list[list[ErrorCode]]]:
    """Each marker's errors, by topic, by partition."""
    answer = asyncio.run(write_txn_markers(WriteTxnMarkersRequest(markers=markers), replicas,
                                           now_ms=lambda: 3_000, timeout_ms=timeout_ms))
    return [[[ErrorCode(p.error_code) for p in t.partitions] for t in m.topics]
            for m in answer.markers]


def test_a_commit_marker_ends_the_transaction_and_the_partition_is_stable(
        tmp_path: Path) -> None:
    leader = replicas_of(tmp_path, 1, with_records(MetadataImage(), *topic("t", T1, (1,))))
    produce(leader, [b"a", b"b"], producer_id=PID, epoch=0, sequence=0, transactional=True)
    part = hosted(leader)
    assert part.last_stable_offset == 0  # the open transaction holds consumers back
    assert write(leader, marker(("t", 0), coordinator_epoch=4)) == [[[ErrorCode.NONE]]]
    assert part.log.log_end_offset == 3  # two records and the marker
    assert part.last_stable_offset == part.high_watermark == 3
    entry = part.producer_state.producers[PID]
    assert (entry.coordinator_epoch, entry.current_txn_first_offset) == (4, None)


def test_partitions_this_broker_cannot_write(tmp_path: Path) -> None:
    image = with_records(MetadataImage(), *topic("t", T1, (2, 1)))
    follower = replicas_of(tmp_path, 1, image)
    errors = write(follower, marker(("t", 0), ("t", 5), ("nope", 0)))
    # the topics in name order: "nope", then "t"
    assert errors == [[[ErrorCode.UNKNOWN_TOPIC_OR_PARTITION],
                       [ErrorCode.NOT_LEADER_OR_FOLLOWER,
                        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION]]]
    assert hosted(follower).log.log_end_offset == 0


@pytest.mark.parametrize(("second", "expected"), [
    ({"epoch": 4}, ErrorCode.INVALID_PRODUCER_EPOCH),
    ({"epoch": 5, "coordinator_epoch": 8}, ErrorCode.TRANSACTION_COORDINATOR_FENCED),
    # TV2 bumps the epoch at each end, but with no transaction open the same epoch again
    # is the coordinator's retry: written again, as Kafka 4.4
    ({"epoch": 5, "version": 2}, ErrorCode.NONE),
    ({"epoch": 6, "version": 2}, ErrorCode.NONE),
    ({"epoch": 5}, ErrorCode.NONE),  # TV0: the same epoch again
])
def test_stale_markers_are_refused_and_nothing_is_written(
        tmp_path: Path, second: dict[str, int], expected: ErrorCode) -> None:
    leader = replicas_of(tmp_path, 1, with_records(MetadataImage(), *topic("t", T1, (1,))))
    assert write(leader, marker(("t", 0), epoch=5, coordinator_epoch=9,
                                      commit=False)) == [[[ErrorCode.NONE]]]
    fields = {"coordinator_epoch": 9} | second
    assert write(leader, marker(("t", 0), commit=False, **fields)) == [[[expected]]]
    assert hosted(leader).log.log_end_offset == (2 if expected == ErrorCode.NONE else 1)


def test_a_tv2_marker_at_the_epoch_of_an_open_transaction_is_stale(tmp_path: Path) -> None:
    leader = replicas_of(tmp_path, 1, with_records(MetadataImage(), *topic("t", T1, (1,))))
    produce(leader, [b"a"], producer_id=PID, epoch=5, sequence=0, transactional=True)
    assert write(leader, marker(("t", 0), epoch=5, version=2)) == [
        [[ErrorCode.INVALID_PRODUCER_EPOCH]]]
    assert write(leader, marker(("t", 0), epoch=6, version=2)) == [[[ErrorCode.NONE]]]
    assert hosted(leader).last_stable_offset == 2


def test_a_marker_not_replicated_in_time_is_request_timed_out(tmp_path: Path) -> None:
    image = with_records(MetadataImage(), *topic("t", T1, (1, 2)))
    leader = replicas_of(tmp_path, 1, image)  # broker 2 never fetches
    assert write(leader, marker(("t", 0)), timeout_ms=1) == [
        [[ErrorCode.REQUEST_TIMED_OUT]]]
    assert hosted(leader).log.log_end_offset == 1  # written, as Kafka's: only unacknowledged


def test_answers_are_keyed_by_producer_and_a_partition_is_written_once(tmp_path: Path) -> None:
    """As Kafka's ``errorsByProducerId``: markers naming one producer share an entry, and a
    partition named again is written once (a 100 MB request of duplicates writes little)."""
    leader = replicas_of(tmp_path, 1, with_records(MetadataImage(), *topic("t", T1, (1,))))
    answer = asyncio.run(write_txn_markers(WriteTxnMarkersRequest(markers=(
        marker(("t", 0), ("t", 0), ("t", 0)), marker(("t", 0)))), leader,
        now_ms=lambda: 3_000, timeout_ms=30_000))
    assert [(m.producer_id, [(t.name, [p.partition_index for p in t.partitions])
                             for t in m.topics]) for m in answer.markers] == [(PID, [("t", [0])])]
    assert hosted(leader).log.log_end_offset == 2  # one marker per marker entry
