"""The transaction rows on a partition leader: WriteTxnMarkers (the coordinator's COMMIT and
ABORT markers) and DescribeProducers (what the partition's producer state holds after them).

Each row that writes uses a fresh single-partition topic, so the producer state it meets is
its own; a marker needs no open transaction (Kafka appends it all the same), which lets a row
set up the producer and coordinator epochs the next marker is checked against.
"""

from __future__ import annotations

from typing import Any

from conformance.cases import (
    ABSENT,
    Case,
    Meaning,
    code,
    create_topics,
    settled,
)
from conformance.harness import BROKER, Run
from pykraft.messages.kafka import describe_producers_request as dp_req
from pykraft.messages.kafka import write_txn_markers_request as wtm_req

NO_SUCH_TOPIC = "no-such-topic"
PRODUCER_ID = 424_242
#: What a just-created partition answers until this broker hosts it.
_NOT_YET = ("NOT_LEADER_OR_FOLLOWER", ABSENT)


def fresh_partition(run: Run) -> str:
    """A new topic of one partition, for this row and version alone."""
    create_topics(Run(run.cluster, "setup", "setup", BROKER, 7), run.fresh_topic, 1, 1)
    return run.fresh_topic


def marker(run: Run, topic: str, *, epoch: int, coordinator_epoch: int = 0,
           commit: bool = False, partition: int = 0) -> Any:
    """One marker for ``partition`` of ``topic``; TV2 from v2 (KIP-1228), TV0 before."""
    return run.generated(27, wtm_req.WriteTxnMarkersRequest(markers=(wtm_req.WritableTxnMarker(
        producer_id=PRODUCER_ID, producer_epoch=epoch, transaction_result=commit,
        topics=(wtm_req.WritableTxnMarkerTopic(name=topic, partition_indexes=(partition,)),),
        coordinator_epoch=coordinator_epoch,
        transaction_version=2 if run.version >= 2 else 0),)))


def settled_marker(run: Run, topic: str, **fields: Any) -> Any:
    """:func:`marker` again while the new partition is not hosted yet."""
    return settled(lambda: marker(run, topic, **fields),
                   lambda body: marker_errors(body, run)[0] not in _NOT_YET)


def marker_errors(body: Any, _run: Run) -> list[str]:
    return [code(p.error_code) for m in body.markers for t in m.topics for p in t.partitions]


def two_markers(first: dict[str, Any], second: dict[str, Any]) -> Any:
    """A first marker that sets the producer's epochs, then the marker the row is about."""
    def send(run: Run) -> tuple[Any, Any]:
        topic = fresh_partition(run)
        return settled_marker(run, topic, **first), marker(run, topic, **second)
    return send


def both_errors(bodies: tuple[Any, Any], run: Run) -> Meaning:
    return [marker_errors(body, run) for body in bodies]


def describe_producers(run: Run, topic: str, partitions: tuple[int, ...] = (0,)) -> Any:
    return run.generated(61, dp_req.DescribeProducersRequest(topics=(dp_req.TopicRequest(
        name=topic, partition_indexes=partitions),)))


def producers_meaning(body: Any, _run: Run) -> Meaning:
    """Each partition's error and producers (the marker's time left out: each broker's own)."""
    return [(code(p.error_code), [(s.producer_id, s.producer_epoch, s.last_sequence,
                                   s.coordinator_epoch, s.current_txn_start_offset)
                                  for s in p.active_producers])
            for t in body.topics for p in t.partitions]


def after_a_marker(run: Run) -> Any:
    topic = fresh_partition(run)
    settled_marker(Run(run.cluster, "setup", "setup", BROKER, 1), topic, epoch=3,
                   coordinator_epoch=7)
    return describe_producers(run, topic)


WRITE_TXN_MARKERS = [
    Case("WriteTxnMarkers", 27, "unknown_topic", lambda r: marker(r, NO_SUCH_TOPIC, epoch=0),
         marker_errors, lambda _r: [ABSENT]),
    # no open transaction: the marker is written all the same, and sets the epochs
    Case("WriteTxnMarkers", 27, "abort_without_a_transaction",
         lambda r: settled_marker(r, fresh_partition(r), epoch=0), marker_errors,
         lambda _r: ["NONE"]),
    Case("WriteTxnMarkers", 27, "unknown_partition",
         lambda r: marker(r, r.cluster.topic, epoch=0, partition=99), marker_errors,
         lambda _r: [ABSENT]),
    Case("WriteTxnMarkers", 27, "older_producer_epoch",
         two_markers({"epoch": 5}, {"epoch": 4}), both_errors,
         lambda _r: [["NONE"], ["INVALID_PRODUCER_EPOCH"]]),
    # TV2 markers bump the epoch, but with no transaction open the same epoch again is
    # the coordinator's retry of a marker already written: Kafka 4.4 writes it again
    Case("WriteTxnMarkers", 27, "same_producer_epoch_without_a_transaction",
         two_markers({"epoch": 5}, {"epoch": 5}), both_errors,
         lambda _r: [["NONE"], ["NONE"]]),
    Case("WriteTxnMarkers", 27, "older_coordinator_epoch",
         two_markers({"epoch": 5, "coordinator_epoch": 9},
                     {"epoch": 6, "coordinator_epoch": 8}), both_errors,
         lambda _r: [["NONE"], ["TRANSACTION_COORDINATOR_FENCED"]]),
]

DESCRIBE_PRODUCERS = [
    Case("DescribeProducers", 61, "unknown_topic",
         lambda r: describe_producers(r, NO_SUCH_TOPIC), producers_meaning,
         lambda _r: [(ABSENT, [])]),
    Case("DescribeProducers", 61, "invalid_topic_name",
         lambda r: describe_producers(r, "bad/name"), producers_meaning,
         lambda _r: [("INVALID_TOPIC_EXCEPTION", [])]),
    Case("DescribeProducers", 61, "unknown_partition",
         lambda r: describe_producers(r, r.cluster.topic, (0, 99)), producers_meaning,
         lambda _r: [("NONE", []), (ABSENT, [])]),
    Case("DescribeProducers", 61, "after_a_marker", after_a_marker, producers_meaning,
         lambda _r: [("NONE", [(PRODUCER_ID, 3, -1, 7, -1)])]),
]

TXN = [*WRITE_TXN_MARKERS, *DESCRIBE_PRODUCERS]
