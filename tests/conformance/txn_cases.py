"""The transaction rows: on a partition leader WriteTxnMarkers (the coordinator's COMMIT and
ABORT markers) and DescribeProducers (what the partition's producer state holds after them);
the transaction coordinator's APIs; TxnOffsetCommit to the group coordinator.

Each row that writes uses a fresh single-partition topic, so the producer state it meets is
its own; a marker needs no open transaction (Kafka appends it all the same), which lets a row
set up the producer and coordinator epochs the next marker is checked against.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kafka.record.default_records import DefaultRecordBatchBuilder

from conformance.cases import (
    ABSENT,
    Case,
    Meaning,
    code,
    create_topics,
    known_topic_id,
    settled,
    topic_id_of,
)
from conformance.group_cases import group_of, ready, retried
from conformance.harness import BROKER, Run
from pykraft.messages.kafka import add_offsets_to_txn_request as ao_req
from pykraft.messages.kafka import add_partitions_to_txn_request as apt_req
from pykraft.messages.kafka import describe_producers_request as dp_req
from pykraft.messages.kafka import describe_transactions_request as dt_req
from pykraft.messages.kafka import end_txn_request as et_req
from pykraft.messages.kafka import find_coordinator_request as fc_req
from pykraft.messages.kafka import init_producer_id_request as ip_req
from pykraft.messages.kafka import list_transactions_request as lt_req
from pykraft.messages.kafka import offset_fetch_request as of_req
from pykraft.messages.kafka import produce_request as produce_req
from pykraft.messages.kafka import txn_offset_commit_request as toc_req
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



# -- the transaction coordinator ---------------------------------------------------------------

#: Answers a coordinator gives while it is not ready for an id, which clients retry.
_NOT_READY = ("COORDINATOR_NOT_AVAILABLE", "NOT_COORDINATOR", "COORDINATOR_LOAD_IN_PROGRESS",
              "CONCURRENT_TRANSACTIONS")


def coordinator_for(run: Run, transactional_id: str) -> None:
    """FindCoordinator (key type 1) until the id's coordinator answers: the first one
    creates ``__transaction_state``."""
    probe = Run(run.cluster, "setup", "setup", BROKER, 4)
    settled(lambda: probe.generated(10, fc_req.FindCoordinatorRequest(
        key_type=1, coordinator_keys=(transactional_id,))),
        lambda body: code(body.coordinators[0].error_code) == "NONE")


def init_txn(run: Run, transactional_id: str) -> tuple[str, int, int]:
    """InitProducerId for ``transactional_id`` once its coordinator is ready: (error,
    producer id, epoch)."""
    coordinator_for(run, transactional_id)
    probe = Run(run.cluster, "setup", "setup", BROKER, 4)
    body = settled(lambda: probe.generated(22, ip_req.InitProducerIdRequest(
        transactional_id=transactional_id, transaction_timeout_ms=60_000)),
        lambda answer: code(answer.error_code) not in _NOT_READY)
    return code(body.error_code), body.producer_id, body.producer_epoch


def add_partitions(run: Run, transactional_id: str, producer_id: int, epoch: int,
                   topic: str, *, verify_only: bool = False) -> Any:
    """AddPartitionsToTxn of ``topic``'s partition 0: a client's (v0-3) or a broker's
    batch of one transaction (v4+)."""
    topics = (apt_req.AddPartitionsToTxnTopic(name=topic, partitions=(0,)),)
    if run.version < 4:
        return run.generated(24, apt_req.AddPartitionsToTxnRequest(
            v3_and_below_transactional_id=transactional_id,
            v3_and_below_producer_id=producer_id, v3_and_below_producer_epoch=epoch,
            v3_and_below_topics=topics))
    return run.generated(24, apt_req.AddPartitionsToTxnRequest(transactions=(
        apt_req.AddPartitionsToTxnTransaction(
            transactional_id=transactional_id, producer_id=producer_id,
            producer_epoch=epoch, verify_only=verify_only, topics=topics),)))


def partition_errors(body: Any, run: Run) -> list[str]:
    results = (body.results_by_topic_v3_and_below if run.version < 4
               else [t for r in body.results_by_transaction for t in r.topic_results])
    return [code(p.partition_error_code) for t in results for p in t.results_by_partition]


def added(body: Any, run: Run) -> Meaning:
    """Each partition's error (v4+: also the top-level error)."""
    errors = partition_errors(body, run)
    return errors if run.version < 4 else (code(body.error_code), errors)


def for_clients(errors: list[str]) -> Callable[[Run], Meaning]:
    """A client's AddPartitionsToTxn meaning, or a broker's (v4+) with no top-level error."""
    return lambda run: errors if run.version < 4 else ("NONE", errors)


def unknown_producer_add(run: Run) -> Any:
    coordinator_for(run, run.fresh_topic)  # the id: a name no other row uses
    return settled(lambda: add_partitions(run, run.fresh_topic, 4242, 0, run.cluster.topic,
                                          verify_only=run.version >= 4),
                   lambda body: not set(partition_errors(body, run)) & set(_NOT_READY))


def a_whole_transaction(run: Run) -> Meaning:
    """InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn, EndTxn (commit) at this EndTxn
    version, then the coordinator's description once the markers are written."""
    transactional_id = run.fresh_topic
    error, producer_id, epoch = init_txn(run, transactional_id)
    client = Run(run.cluster, "setup", "setup", BROKER, 3)
    add = added(add_partitions(client, transactional_id, producer_id, epoch,
                               run.cluster.topic), client)
    offsets = code(client.generated(25, ao_req.AddOffsetsToTxnRequest(
        transactional_id=transactional_id, producer_id=producer_id, producer_epoch=epoch,
        group_id="txn-group")).error_code)
    end = run.generated(26, et_req.EndTxnRequest(
        transactional_id=transactional_id, producer_id=producer_id, producer_epoch=epoch,
        committed=True))
    describe = Run(run.cluster, "setup", "setup", BROKER, 0)
    state = settled(lambda: describe.generated(65, dt_req.DescribeTransactionsRequest(
        transactional_ids=(transactional_id,))).transaction_states[0],
        lambda s: s.transaction_state != "PrepareCommit")
    return (error, add, offsets, code(end.error_code),
            # EndTxn v5 (transaction version 2) answers the epoch it bumped to
            (end.producer_id == producer_id, end.producer_epoch == epoch + 1)
            if run.version >= 5 else None,
            code(state.error_code), state.transaction_state, len(state.topics))


NO_PRODUCER = "no-producer"


def unknown_producer(run: Run, api_key: int, request: Any) -> Any:
    """``request`` for an id no InitProducerId named, once its coordinator is up."""
    coordinator_for(run, NO_PRODUCER)
    return settled(lambda: run.generated(api_key, request),
                   lambda body: code(body.error_code) not in _NOT_READY)


def txn_error(body: Any, _run: Run) -> Meaning:
    return code(body.error_code)


def listed(filters: dict[str, Any]) -> Callable[[Run], Any]:
    def send(run: Run) -> Any:
        return run.generated(66, lt_req.ListTransactionsRequest(**filters))
    return send


def list_meaning(body: Any, _run: Run) -> Meaning:
    return code(body.error_code), list(body.unknown_state_filters), len(body.transaction_states)


def described(transactional_id: str) -> Callable[[Run], Any]:
    def send(run: Run) -> Any:
        if transactional_id:
            coordinator_for(run, transactional_id)
        return settled(lambda: run.generated(65, dt_req.DescribeTransactionsRequest(
            transactional_ids=(transactional_id,))),
            lambda body: code(body.transaction_states[0].error_code) not in _NOT_READY)
    return send


def describe_meaning(body: Any, _run: Run) -> Meaning:
    return [(code(s.error_code), s.transaction_state) for s in body.transaction_states]


COORDINATOR = [
    Case("AddPartitionsToTxn", 24, "unknown_topic",
         lambda r: add_partitions(r, "any-id", 1, 0, NO_SUCH_TOPIC), added,
         for_clients([ABSENT])),
    # an internal topic is never WRITE-authorized for a client (KafkaApis filters it out)
    Case("AddPartitionsToTxn", 24, "internal_topic",
         lambda r: add_partitions(r, "any-id", 1, 0, "__consumer_offsets"), added,
         lambda _r: ["TOPIC_AUTHORIZATION_FAILED"], until=4),
    Case("AddPartitionsToTxn", 24, "unknown_producer", unknown_producer_add, added,
         for_clients(["INVALID_PRODUCER_ID_MAPPING"])),
    Case("AddOffsetsToTxn", 25, "unknown_producer", lambda r: unknown_producer(
        r, 25, ao_req.AddOffsetsToTxnRequest(transactional_id=NO_PRODUCER, producer_id=7,
                                             producer_epoch=0, group_id="g")),
         txn_error, lambda _r: "INVALID_PRODUCER_ID_MAPPING"),
    Case("EndTxn", 26, "unknown_producer", lambda r: unknown_producer(
        r, 26, et_req.EndTxnRequest(transactional_id=NO_PRODUCER, producer_id=7,
                                    producer_epoch=0, committed=True)),
         txn_error, lambda _r: "INVALID_PRODUCER_ID_MAPPING"),
    Case("EndTxn", 26, "a_whole_transaction", a_whole_transaction, lambda m, _r: m,
         lambda r: ("NONE", ["NONE"], "NONE", "NONE",
                    (True, True) if r.version >= 5 else None,
                    "NONE", "CompleteCommit", 0)),
    Case("DescribeTransactions", 65, "unknown_id", described("never-initialized"),
         describe_meaning, lambda _r: [("TRANSACTIONAL_ID_NOT_FOUND", "")]),
    Case("DescribeTransactions", 65, "empty_id", described(""), describe_meaning,
         lambda _r: [("INVALID_REQUEST", "")]),
    Case("ListTransactions", 66, "unknown_state_filter",
         listed({"state_filters": ("Bogus",), "producer_id_filters": (424_242_424,)}),
         list_meaning, lambda _r: ("NONE", ["Bogus"], 0)),
    Case("ListTransactions", 66, "running_longer_than_a_day",
         listed({"state_filters": (), "producer_id_filters": (), "duration_filter": 86_400_000}),
         list_meaning, lambda _r: ("NONE", [], 0), since=1),
    Case("ListTransactions", 66, "pattern_matching_nothing",
         listed({"state_filters": (), "producer_id_filters": (),
                 "transactional_id_pattern": "nothing-matches-.*"}),
         list_meaning, lambda _r: ("NONE", [], 0), since=2),
    Case("ListTransactions", 66, "pattern_not_a_regex",
         listed({"state_filters": (), "producer_id_filters": (),
                 "transactional_id_pattern": "["}),
         list_meaning, lambda _r: ("INVALID_REGULAR_EXPRESSION", [], 0), since=2),
]


# -- TxnOffsetCommit ---------------------------------------------------------------------

#: TxnOffsetCommit names topics by id from v6 (KIP-1319); member and generation from v3.
FIRST_TXN_COMMIT_TOPIC_ID, FIRST_TXN_COMMIT_MEMBER = 6, 3
TXN_COMMITTED = 17


def txn_commit(run: Run, group: str, *, producer_id: int = PRODUCER_ID, epoch: int = 0,
               transactional_id: str = "txn-commit", generation: int = -1,
               topics: tuple[str, ...] = ()) -> Any:
    """TxnOffsetCommit of partition 0 of ``topics`` (the cluster's topic by default), by
    name or, from v6, by id; retried while the group's coordinator is not ready."""
    if group:
        ready(run, group)
    request = toc_req.TxnOffsetCommitRequest(
        transactional_id=transactional_id, group_id=group, producer_id=producer_id,
        producer_epoch=epoch, member_id="",
        generation_id_or_member_epoch=generation if run.version >= FIRST_TXN_COMMIT_MEMBER
        else -1, topics=tuple(toc_req.TxnOffsetCommitRequestTopic(
            **({"name": topic} if run.version < FIRST_TXN_COMMIT_TOPIC_ID
               else {"topic_id": topic_id_of(run, topic)}),
            partitions=(toc_req.TxnOffsetCommitRequestPartition(
                partition_index=0, committed_offset=TXN_COMMITTED,
                committed_metadata=None),)) for topic in topics or (run.cluster.topic,)))
    return retried(lambda: run.generated(28, request), txn_commit_errors)


def txn_commit_errors(body: Any) -> list[str]:
    return [code(p.error_code) for t in body.topics for p in t.partitions]


def txn_committed(body: Any, _run: Run) -> Meaning:
    return txn_commit_errors(body)


def stable_offset(run: Run, group: str) -> tuple[str, int]:
    """The group's offset of the cluster topic's partition 0 as OffsetFetch v8 with
    ``require_stable`` answers it."""
    probe = Run(run.cluster, "setup", "setup", BROKER, 8)
    body = probe.generated(9, of_req.OffsetFetchRequest(require_stable=True, groups=(
        of_req.OffsetFetchRequestGroup(group_id=group, topics=(of_req.OffsetFetchRequestTopics(
            name=run.cluster.topic, partition_indexes=(0,)),)),)))
    (partition,) = body.groups[0].topics[0].partitions
    return code(partition.error_code), partition.committed_offset


def in_a_transaction(run: Run, group: str, *, add_offsets: bool = True,
                     generation: int = -1, topics: tuple[str, ...] = ()) -> Any:
    """TxnOffsetCommit at this version inside a new transaction (InitProducerId, then
    AddOffsetsToTxn of ``group`` unless not ``add_offsets``), as a producer sends it."""
    transactional_id = run.fresh_topic
    _, producer_id, epoch = init_txn(run, transactional_id)
    if add_offsets:
        client = Run(run.cluster, "setup", "setup", BROKER, 3)
        added_offsets = client.generated(25, ao_req.AddOffsetsToTxnRequest(
            transactional_id=transactional_id, producer_id=producer_id, producer_epoch=epoch,
            group_id=group))
        assert code(added_offsets.error_code) == "NONE"
    return txn_commit(run, group, producer_id=producer_id, epoch=epoch,
                      transactional_id=transactional_id, generation=generation, topics=topics)


def offsets_in_a_transaction(run: Run) -> Meaning:
    """InitProducerId, AddOffsetsToTxn, TxnOffsetCommit at this version, the offset as a
    stable fetch sees it then, EndTxn (commit), and the offset once the markers are
    written."""
    transactional_id, group = run.fresh_topic, group_of(run)
    error, producer_id, epoch = init_txn(run, transactional_id)
    client = Run(run.cluster, "setup", "setup", BROKER, 3)
    added_offsets = code(client.generated(25, ao_req.AddOffsetsToTxnRequest(
        transactional_id=transactional_id, producer_id=producer_id, producer_epoch=epoch,
        group_id=group)).error_code)
    committed = txn_commit_errors(txn_commit(
        run, group, producer_id=producer_id, epoch=epoch, transactional_id=transactional_id))
    pending = stable_offset(run, group)
    end = code(client.generated(26, et_req.EndTxnRequest(
        transactional_id=transactional_id, producer_id=producer_id, producer_epoch=epoch,
        committed=True)).error_code)
    done = settled(lambda: stable_offset(run, group),
                   lambda answer: answer[0] != "UNSTABLE_OFFSET_COMMIT")
    return error, added_offsets, committed, pending, end, done


TXN_OFFSET_COMMIT = [
    Case("TxnOffsetCommit", 28, "unknown_topic",
         lambda r: txn_commit(r, group_of(r), topics=(NO_SUCH_TOPIC,)), txn_committed,
         lambda _r: ["UNKNOWN_TOPIC_OR_PARTITION"], until=FIRST_TXN_COMMIT_TOPIC_ID),
    Case("TxnOffsetCommit", 28, "unknown_topic_id",
         lambda r: txn_commit(r, group_of(r), topics=(NO_SUCH_TOPIC,)), txn_committed,
         lambda _r: ["UNKNOWN_TOPIC_ID"], since=FIRST_TXN_COMMIT_TOPIC_ID),
    Case("TxnOffsetCommit", 28, "known_then_unknown_topic",
         lambda r: in_a_transaction(r, group_of(r), topics=(r.cluster.topic, NO_SUCH_TOPIC)),
         txn_committed, lambda r: [
             "UNKNOWN_TOPIC_ID" if r.version >= FIRST_TXN_COMMIT_TOPIC_ID
             else "UNKNOWN_TOPIC_OR_PARTITION", "NONE"]),
    Case("TxnOffsetCommit", 28, "empty_group_id", lambda r: txn_commit(r, ""),
         txn_committed, lambda _r: ["INVALID_GROUP_ID"]),
    Case("TxnOffsetCommit", 28, "generation_of_an_unknown_group",
         lambda r: in_a_transaction(r, group_of(r), generation=3), txn_committed,
         lambda r: ["GROUP_ID_NOT_FOUND" if r.version >= FIRST_TXN_COMMIT_TOPIC_ID
                    else "ILLEGAL_GENERATION"], since=FIRST_TXN_COMMIT_MEMBER),
    # KIP-890: the group coordinator asks the transaction's coordinator first; from v5 (a
    # transaction version 2 client) the coordinator adds the offsets partition instead
    Case("TxnOffsetCommit", 28, "offsets_partition_not_in_the_transaction",
         lambda r: in_a_transaction(r, group_of(r), add_offsets=False), txn_committed,
         lambda r: ["NONE" if r.version >= 5 else "TRANSACTION_ABORTABLE" if r.version == 4
                    else "INVALID_TXN_STATE"]),
    Case("TxnOffsetCommit", 28, "offsets_in_a_transaction", offsets_in_a_transaction,
         lambda m, _r: m, lambda _r: (
             "NONE", "NONE", ["NONE"], ("UNSTABLE_OFFSET_COMMIT", -1), "NONE",
             ("NONE", TXN_COMMITTED))),
]


# -- Produce of a transaction (KIP-890 verification) -----------------------------------------

def transactional_produce(run: Run, *, add_partition: bool) -> Meaning:
    """An initialized producer's transactional batch to partition 0 of a fresh topic
    (AddPartitionsToTxn first when ``add_partition``): the partition's error, message,
    and whether it was written."""
    transactional_id, topic = run.fresh_topic, fresh_partition(run)
    _, producer_id, epoch = init_txn(run, transactional_id)
    if add_partition:  # once the coordinator's broker knows the new topic
        client = Run(run.cluster, "setup", "setup", BROKER, 3)
        added_partition = settled(
            lambda: add_partitions(client, transactional_id, producer_id, epoch, topic),
            lambda body: partition_errors(body, client) == ["NONE"])
        assert partition_errors(added_partition, client) == ["NONE"]
    builder = DefaultRecordBatchBuilder(
        magic=2, compression_type=0, is_transactional=True, producer_id=producer_id,
        producer_epoch=epoch, base_sequence=0, batch_size=1 << 20)
    builder.append(0, timestamp=1_000, key=b"k", value=b"v", headers=[])
    named = {"name": topic} if run.version < 13 else {"topic_id": known_topic_id(run, topic)}
    body = settled(lambda: run.generated(0, produce_req.ProduceRequest(
        transactional_id=transactional_id, acks=-1, timeout_ms=5_000, topic_data=(
            produce_req.TopicProduceData(**named, partition_data=(
                produce_req.PartitionProduceData(index=0, records=bytes(builder.build())),
            )),))),
        lambda answer: code(answer.responses[0].partition_responses[0].error_code)
        not in _NOT_YET)
    (partition,) = body.responses[0].partition_responses
    message = partition.error_message if run.version >= 8 else None
    return code(partition.error_code), message, partition.base_offset >= 0


PRODUCE = [
    Case("Produce", 0, "transaction_without_the_partition",
         lambda r: transactional_produce(r, add_partition=False), lambda m, _r: m,
         # from v12 (transaction version 2) the coordinator adds the partition itself
         # v11 understands TRANSACTION_ABORTABLE, which the coordinator answers
         lambda r: ("NONE", None, True) if r.version >= 12 else (
             ("TRANSACTION_ABORTABLE", None, False) if r.version == 11 else (
                 "INVALID_TXN_STATE",
                 "Partition was not added to the transaction" if r.version >= 8 else None,
                 False))),
    Case("Produce", 0, "transaction_with_the_partition",
         lambda r: transactional_produce(r, add_partition=True), lambda m, _r: m,
         lambda _r: ("NONE", None, True)),
]

TXN = [*WRITE_TXN_MARKERS, *DESCRIBE_PRODUCERS, *COORDINATOR, *TXN_OFFSET_COMMIT, *PRODUCE]
