"""``pykraft transactions`` (kafka-transactions.sh) without a cluster: Kafka 4.4's tables,
its argument checks and error lines, the Java hash orders it prints in, and each command
against a fake cluster (answers built as the brokers' are, read by attribute)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Sequence
from types import SimpleNamespace
from typing import Any

import pytest
from typer.testing import CliRunner

from pykraft.cli.main import app
from pykraft.ids import TopicPartition as Tp
from pykraft.protocol.errors import ErrorCode
from pykraft.tools import transactions_tool as tool
from pykraft.tools.admin_client import ClusterMetadata, PartitionMetadata, TopicMetadata
from pykraft.tools.txn_admin import AbortSpec, ProducerInfo, TxnAdmin

Ns = SimpleNamespace
NOW = 1_700_000_000_000
MINUTE = 60_000
ENABLE_DEBUG = ". Enable debug logging for additional detail."


def producer(pid: int, *, start: int | None = None, last: int = NOW - 20 * MINUTE,
             epoch: int = 0, coordinator_epoch: int = -1) -> Any:
    return Ns(producer_id=pid, producer_epoch=epoch, last_sequence=4, last_timestamp=last,
              coordinator_epoch=coordinator_epoch,
              current_txn_start_offset=-1 if start is None else start)


class FakeCluster:
    """Brokers 1 and 17 (one Java hash bucket at 16); topic ``t`` (partition 0 led by 1,
    partition 1 by 17, each replicated on both) and ``u`` (one partition on 17 alone).
    Broker 1 coordinates every transactional id."""

    def __init__(self) -> None:
        self.listed = {1: [Ns(transactional_id="tx-a", producer_id=10,
                              transaction_state="Ongoing")],
                       17: [Ns(transactional_id="tx-b", producer_id=11,
                               transaction_state="CompleteCommit")]}
        self.described: dict[str, Any] = {
            "tx-a": Ns(error_code=0, transactional_id="tx-a", transaction_state="Ongoing",
                       transaction_timeout_ms=60_000, transaction_start_time_ms=NOW - 5000,
                       producer_id=10, producer_epoch=3,
                       topics=(Ns(topic="t", partitions=(0,)),)),
            "tx-b": Ns(error_code=0, transactional_id="tx-b", transaction_state="Empty",
                       transaction_timeout_ms=60_000, transaction_start_time_ms=-1,
                       producer_id=11, producer_epoch=0, topics=())}
        self.producers: dict[tuple[int, Tp], tuple[Any, ...]] = {
            (1, Tp("t", 0)): (producer(10, start=5), producer(12, start=7), producer(13)),
            (17, Tp("t", 1)): (producer(11, start=9, last=NOW - 30 * MINUTE),),
            (17, Tp("u", 0)): (producer(12, start=0, last=NOW - MINUTE),)}
        self.markers: list[Any] = []
        self.marker_error = ErrorCode.NONE
        self.not_leader_once: set[Tp] = set()
        self.init_answers = [ErrorCode.CONCURRENT_TRANSACTIONS, ErrorCode.NONE]
        self.inits: list[Any] = []
        self.sent: list[tuple[int, str]] = []

    async def metadata(self, topics: Sequence[str] | None = None) -> ClusterMetadata:
        parts = {"t": (PartitionMetadata(0, 1, 0, (1, 17), (1, 17), ()),
                       PartitionMetadata(1, 17, 0, (17, 1), (17, 1), ())),
                 "u": (PartitionMetadata(0, 17, 0, (17,), (17,), ()),)}
        return ClusterMetadata("c", 1, {1: ("h", 1), 17: ("h", 17)}, {
            name: TopicMetadata(name, uuid.UUID(int=1), False, found)
            for name, found in parts.items() if topics is None or name in topics})

    async def request_to(self, broker_id: int, body: Any) -> Any:
        name = type(body).__name__
        self.sent.append((broker_id, name))
        if name == "FindCoordinatorRequest":
            assert body.key_type == 1
            return Ns(coordinators=(Ns(error_code=0, node_id=1, host="h", port=1),))
        if name == "ListTransactionsRequest":
            wanted = set(body.producer_id_filters)
            return Ns(error_code=0, transaction_states=tuple(
                t for t in self.listed[broker_id] if not wanted or t.producer_id in wanted))
        if name == "DescribeTransactionsRequest":
            (transactional_id,) = body.transactional_ids
            return Ns(transaction_states=(self.described.get(transactional_id, Ns(
                error_code=ErrorCode.TRANSACTIONAL_ID_NOT_FOUND)),))
        if name == "DescribeProducersRequest":
            return Ns(topics=tuple(Ns(name=t.name, partitions=tuple(
                self._partition(broker_id, Tp(t.name, index)) for index in t.partition_indexes))
                for t in body.topics))
        if name == "WriteTxnMarkersRequest":
            self.markers.append((broker_id, body))
            (marker,) = body.markers
            return Ns(markers=(Ns(producer_id=marker.producer_id, topics=(Ns(
                name=marker.topics[0].name, partitions=(Ns(
                    partition_index=marker.topics[0].partition_indexes[0],
                    error_code=self.marker_error),)),)),))
        if name == "InitProducerIdRequest":
            self.inits.append(body)
            return Ns(error_code=self.init_answers.pop(0), producer_id=10, producer_epoch=4)
        raise AssertionError(f"unexpected {name}")

    def _partition(self, broker_id: int, tp: Tp) -> Any:
        if tp in self.not_leader_once:
            self.not_leader_once.discard(tp)
            return Ns(partition_index=tp.partition, error_code=ErrorCode.NOT_LEADER_OR_FOLLOWER,
                      error_message=None, active_producers=())
        found = self.producers.get((broker_id, tp))
        if found is None:
            return Ns(partition_index=tp.partition, error_code=ErrorCode.NOT_LEADER_OR_FOLLOWER,
                      error_message=None, active_producers=())
        return Ns(partition_index=tp.partition, error_code=0, error_message=None,
                  active_producers=found)


def admin(cluster: FakeCluster | None = None, timeout_s: float = 5.0) -> TxnAdmin:
    return TxnAdmin(cluster or FakeCluster(), timeout_s)


def run(coroutine: Any) -> Any:
    return asyncio.run(coroutine)


# -- tables ----------------------------------------------------------------------------------

def test_tables_pad_every_cell_and_end_each_with_a_tab() -> None:
    """ToolsUtils.prettyPrintTable, as Kafka 4.4 printed ``list`` on a test cluster."""
    assert tool.table(tool.LIST_HEADERS, [("tx-open", "1000", "0", "Ongoing")]) == [
        "TransactionalId\tCoordinator\tProducerId\tTransactionState\t",
        "tx-open        \t1000       \t0         \tOngoing         \t"]
    assert tool.table(tool.HANGING_HEADERS, []) == [
        "Topic\tPartition\tProducerId\tProducerEpoch\tCoordinatorEpoch\tStartOffset\t"
        "LastTimestamp\tDuration(min)\t"]


def test_list_asks_every_broker_and_prints_them_in_java_hash_order() -> None:
    rows = run(tool.list_rows(admin(), duration_filter=None, pattern=None))
    assert rows == [("tx-a", "1", "10", "Ongoing"), ("tx-b", "17", "11", "CompleteCommit")]


def test_list_sends_the_filters() -> None:
    cluster = FakeCluster()
    seen: list[Any] = []
    original = cluster.request_to

    async def spy(broker_id: int, body: Any) -> Any:
        seen.append(body)
        return await original(broker_id, body)

    cluster.request_to = spy  # type: ignore[method-assign]
    run(tool.list_rows(admin(cluster), duration_filter=500, pattern="tx-.*"))
    assert {(b.duration_filter, b.transactional_id_pattern) for b in seen
            if type(b).__name__ == "ListTransactionsRequest"} == {(500, "tx-.*")}


def test_a_broker_refusing_the_listing_fails_it_as_kafka_says() -> None:
    cluster = FakeCluster()
    original = cluster.request_to

    async def refusing(broker_id: int, body: Any) -> Any:
        if type(body).__name__ == "ListTransactionsRequest" and broker_id == 17:
            return Ns(error_code=ErrorCode.INVALID_REGULAR_EXPRESSION, transaction_states=())
        return await original(broker_id, body)

    cluster.request_to = refusing  # type: ignore[method-assign]
    with pytest.raises(tool.TxnToolError) as raised:
        run(tool.list_rows(admin(cluster), duration_filter=None, pattern="["))
    assert str(raised.value) == ("Failed to list transactions: ListTransactions request sent to "
                                 "broker 17 failed with an unexpected exception" + ENABLE_DEBUG)


# -- describe --------------------------------------------------------------------------------

def test_describe_row_with_and_without_an_open_transaction() -> None:
    found = run(tool.describe(admin(), "tx-a"))
    assert tool.describe_row("tx-a", found, NOW) == (
        "1", "tx-a", "10", "3", "Ongoing", "60000", str(NOW - 5000), "5000", "t-0")
    empty = run(tool.describe(admin(), "tx-b"))
    assert tool.describe_row("tx-b", empty, NOW)[5:] == ("60000", "None", "None", "")


def test_describe_lists_partitions_in_the_order_of_kafkas_hash_set() -> None:
    """Kafka 4.4 printed these 22 partitions in this order (a pykraft and a Kafka cluster
    alike); both brokers answered them in (topic, partition) order, the order the HashSet
    keeps within a bucket."""
    kafka_order = ("multi-4,multi-3,multi-6,multi-5,multi-8,multi-7,multi-10,multi-9,multi-0,"
                   "multi-2,multi-1,multi-19,multi-12,multi-11,multi-14,multi-13,multi-16,"
                   "txns-0,multi-15,multi-18,multi-17,txns-1")
    cluster = FakeCluster()
    cluster.described["tx-a"].topics = (Ns(topic="multi", partitions=tuple(range(20))),
                                        Ns(topic="txns", partitions=(0, 1)))
    found = run(tool.describe(admin(cluster), "tx-a"))
    assert tool.describe_row("tx-a", found, NOW)[-1] == kafka_order


def test_describe_of_an_unknown_id_is_kafkas_error_line() -> None:
    with pytest.raises(tool.TxnToolError) as raised:
        run(tool.describe(admin(), "nobody"))
    assert str(raised.value) == (
        "Failed to describe transaction state of transactional-id `nobody`: DescribeTransactions "
        "request for transactionalId `nobody` failed because the ID could not be found"
        + ENABLE_DEBUG)


# -- describe-producers ----------------------------------------------------------------------

def test_producer_rows_print_none_and_minus_one_as_kafka() -> None:
    found = run(tool.producers(admin(), Tp("t", 0), None))
    assert [tool.producer_row(p) for p in found] == [
        ("10", "0", "-1", "4", str(NOW - 20 * MINUTE), "5"),
        ("12", "0", "-1", "4", str(NOW - 20 * MINUTE), "7"),
        ("13", "0", "-1", "4", str(NOW - 20 * MINUTE), "None")]


def test_producers_are_asked_of_the_leader_again_after_not_leader() -> None:
    cluster = FakeCluster()
    cluster.not_leader_once.add(Tp("t", 1))
    found = run(tool.producers(admin(cluster), Tp("t", 1), None))
    assert [p.producer_id for p in found] == [11]
    assert cluster.sent.count((17, "DescribeProducersRequest")) == 2


def test_a_broker_that_is_not_a_replica_fails_describe_producers_at_once() -> None:
    with pytest.raises(tool.TxnToolError) as raised:
        run(tool.producers(admin(), Tp("u", 0), 1))
    assert str(raised.value) == (
        "Failed to describe producers for partition u-0 on broker 1: Failed to describe active "
        "producers for partition u-0 on brokerId 1" + ENABLE_DEBUG)


def test_an_unknown_topic_is_looked_up_until_the_timeout() -> None:
    with pytest.raises(tool.TxnToolError) as raised:
        run(tool.producers(admin(timeout_s=0.3), Tp("missing", 0), None))
    message = str(raised.value)
    assert message.startswith("Failed to describe producers for partition missing-0 on leader: "
                              "Call(callName=describeProducers(api=METADATA), deadlineMs=")
    assert message.endswith(" attempt(s)" + ENABLE_DEBUG)


def test_a_broker_not_in_the_cluster_is_waited_for_until_the_timeout() -> None:
    with pytest.raises(tool.TxnToolError) as raised:
        run(tool.producers(admin(timeout_s=0.3), Tp("t", 0), 5))
    assert str(raised.value) == (
        "Failed to describe producers for partition t-0 on broker 5: Timed out waiting for a "
        "node assignment. Call: describeProducers(api=DESCRIBE_PRODUCERS)" + ENABLE_DEBUG)


# -- abort -----------------------------------------------------------------------------------

@pytest.mark.parametrize(("options", "message"), [
    (tool.AbortOptions("t", 0), "The transaction to abort must be identified either with "
     "--start-offset (for brokers on 3.0 or above) or with --producer-id, --producer-epoch, "
     "and --coordinator-epoch (for older brokers)"),
    (tool.AbortOptions("t", 0, producer_id=1), "Missing required argument --producer-epoch"),
    (tool.AbortOptions("t", 0, producer_id=1, producer_epoch=0),
     "Missing required argument --coordinator-epoch"),
])
def test_abort_arguments_are_checked_as_kafka_checks_them(options: tool.AbortOptions,
                                                          message: str) -> None:
    with pytest.raises(tool.TxnToolError) as raised:
        tool.check_abort(options)
    assert str(raised.value) == message


def test_abort_by_start_offset_writes_the_producers_abort_marker_at_the_leader() -> None:
    cluster = FakeCluster()
    spec = run(tool.abort(admin(cluster), tool.AbortOptions("t", 0, start_offset=7)))
    assert spec == AbortSpec(Tp("t", 0), 12, 0, 0)  # coordinator epoch -1 (none) taken as 0
    ((broker, body),) = cluster.markers
    (marker,) = body.markers
    assert broker == 1
    assert (marker.producer_id, marker.producer_epoch, marker.transaction_result,
            marker.coordinator_epoch, marker.transaction_version) == (12, 0, False, 0, 0)
    assert [(t.name, t.partition_indexes) for t in marker.topics] == [("t", (0,))]


def test_abort_by_producer_takes_a_negative_coordinator_epoch_as_zero() -> None:
    cluster = FakeCluster()
    spec = run(tool.abort(admin(cluster), tool.AbortOptions(
        "t", 1, producer_id=99, producer_epoch=2, coordinator_epoch=-1)))
    assert str(spec) == ("AbortTransactionSpec(topicPartition=t-1, producerId=99, "
                         "producerEpoch=2, coordinatorEpoch=0)")
    assert cluster.markers[0][0] == 17


def test_abort_of_no_open_transaction_at_that_offset() -> None:
    with pytest.raises(tool.TxnToolError) as raised:
        run(tool.abort(admin(), tool.AbortOptions("t", 0, start_offset=6)))
    assert str(raised.value) == "Could not find any open transactions starting at offset 6 on " \
                                "partition t-0"


@pytest.mark.parametrize(("error", "why"), [
    (ErrorCode.INVALID_PRODUCER_EPOCH, "failed due an invalid producer epoch"),
    (ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "failed due to cluster authorization error"),
    (ErrorCode.TRANSACTION_COORDINATOR_FENCED, "failed since the provided coordinator epoch 0 "
                                               "has been fenced by the active coordinator"),
    (ErrorCode.KAFKA_STORAGE_ERROR, "failed due to unexpected error: Disk error when trying to "
                                    "access log file on the disk."),
])
def test_a_refused_marker_is_kafkas_error_line(error: ErrorCode, why: str) -> None:
    cluster = FakeCluster()
    cluster.marker_error = error
    with pytest.raises(tool.TxnToolError) as raised:
        run(tool.abort(admin(cluster), tool.AbortOptions("t", 0, start_offset=5)))
    spec = ("AbortTransactionSpec(topicPartition=t-0, producerId=10, producerEpoch=0, "
            "coordinatorEpoch=0)")
    assert str(raised.value) == (f"Failed to abort transaction {spec}: WriteTxnMarkers request "
                                 f"with {spec} {why}" + ENABLE_DEBUG)


# -- find-hanging ----------------------------------------------------------------------------

def test_find_hanging_needs_a_scope() -> None:
    with pytest.raises(tool.TxnToolError) as none:
        tool.check_hanging(tool.HangingOptions())
    assert str(none.value) == ("The `find-hanging` command requires either --topic or "
                               "--broker-id to limit the scope of the search")
    with pytest.raises(tool.TxnToolError) as partition_alone:
        tool.check_hanging(tool.HangingOptions(broker_id=1, partition=0))
    assert str(partition_alone.value) == "The --partition argument requires --topic to be " \
                                         "provided"


def _hanging(options: tool.HangingOptions, cluster: FakeCluster | None = None,
             ) -> list[tuple[str, ...]]:
    found = run(tool.find_hanging(admin(cluster), options, lambda: NOW))
    return [tool.hanging_row(h, NOW) for h in found]


def test_find_hanging_keeps_what_no_coordinator_will_end() -> None:
    """On t: producer 10's transaction holds t-0 at its coordinator (not hanging), 12 is no
    coordinator's (hanging), 13 has none open; on t-1, 11's transaction is Empty at its
    coordinator (hanging)."""
    rows = _hanging(tool.HangingOptions(topic="t"))
    assert rows == [
        ("t", "1", "11", "0", "-1", "9", str(NOW - 30 * MINUTE), "30"),
        ("t", "0", "12", "0", "-1", "7", str(NOW - 20 * MINUTE), "20")]


def test_find_hanging_skips_transactions_younger_than_the_timeout() -> None:
    assert _hanging(tool.HangingOptions(topic="t", max_transaction_timeout_min=25)) == [
        ("t", "1", "11", "0", "-1", "9", str(NOW - 30 * MINUTE), "30")]


def test_find_hanging_on_a_broker_searches_its_replicas_there() -> None:
    cluster = FakeCluster()
    cluster.producers[(1, Tp("t", 1))] = (producer(14, start=3),)
    rows = _hanging(tool.HangingOptions(broker_id=1, max_transaction_timeout_min=0), cluster)
    assert [(r[0], r[1], r[2]) for r in rows] == [("t", "0", "12"), ("t", "1", "14")]
    assert not any(broker == 17 and name == "DescribeProducersRequest"
                   for broker, name in cluster.sent)


def test_find_hanging_of_an_id_its_coordinator_no_longer_knows() -> None:
    cluster = FakeCluster()
    del cluster.described["tx-a"]
    rows = _hanging(tool.HangingOptions(topic="t", partition=0), cluster)
    assert [r[2] for r in rows] == ["10", "12"]


def test_find_hanging_errors_name_the_broker_as_a_java_optional() -> None:
    with pytest.raises(tool.TxnToolError) as raised:
        run(tool.find_hanging(admin(), tool.HangingOptions(broker_id=1, topic="u", partition=0),
                              lambda: NOW))
    assert str(raised.value) == ("Failed to describe producers for 1 partitions on broker "
                                 "Optional[1]: Failed to describe active producers for "
                                 "partition u-0 on brokerId 1" + ENABLE_DEBUG)
    with pytest.raises(tool.TxnToolError) as missing:
        run(tool.find_hanging(admin(), tool.HangingOptions(topic="missing"), lambda: NOW))
    assert str(missing.value) == ("Failed to describe 1 topics: This server does not host this "
                                  "topic-partition." + ENABLE_DEBUG)


def test_find_hanging_on_a_broker_with_no_replica_of_the_topic_finds_nothing() -> None:
    assert _hanging(tool.HangingOptions(broker_id=1, topic="u")) == []


def test_hanging_rows_count_whole_minutes() -> None:
    txn = tool.OpenTxn(Tp("t", 0), ProducerInfo(1, 2, 3, NOW - 2 * MINUTE + 1, None, 4))
    assert tool.hanging_row(txn, NOW) == ("t", "0", "1", "2", "-1", "4",
                                          str(NOW - 2 * MINUTE + 1), "1")


# -- forceTerminateTransaction ---------------------------------------------------------------

def test_force_terminate_bumps_the_epoch_at_the_coordinator_after_concurrent_answers() -> None:
    cluster = FakeCluster()
    run(tool.force_terminate(TxnAdmin(cluster, 5.0, request_timeout_ms=30_000), "tx-a"))
    assert [(i.transactional_id, i.transaction_timeout_ms, i.producer_id, i.producer_epoch)
            for i in cluster.inits] == [("tx-a", 30_000, -1, -1)] * 2


def test_force_terminate_refused_is_kafkas_error_line() -> None:
    cluster = FakeCluster()
    cluster.init_answers = [ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED]
    with pytest.raises(tool.TxnToolError) as raised:
        run(tool.force_terminate(admin(cluster), "tx-a"))
    assert str(raised.value) == (
        "Failed to force terminate transactionalId `tx-a`: InitProducerId request for "
        "transactionalId `tx-a` failed due to transactional ID authorization failure"
        + ENABLE_DEBUG)


# -- the command line ------------------------------------------------------------------------

@pytest.mark.parametrize(("args", "message"), [
    (["list"], "kafka-transactions.sh: error: argument --bootstrap-server is required"),
    (["--bootstrap-server", "h:1", "describe"],
     "kafka-transactions.sh: error: argument --transactional-id is required"),
    (["--bootstrap-server", "h:1", "describe-producers", "--topic", "t"],
     "kafka-transactions.sh: error: argument --partition is required"),
    (["--bootstrap-server", "h:1", "abort", "--topic", "t", "--partition", "0"],
     "The transaction to abort must be identified either with --start-offset (for brokers on "
     "3.0 or above) or with --producer-id, --producer-epoch, and --coordinator-epoch (for "
     "older brokers)"),
    (["--bootstrap-server", "h:1", "find-hanging"],
     "The `find-hanging` command requires either --topic or --broker-id to limit the scope "
     "of the search"),
    (["--bootstrap-server", "h:1", "forceTerminateTransaction"],
     "kafka-transactions.sh: error: argument --transactionalId is required"),
    (["--bootstrap-server", "h:1", "--command-config", "/no/such.properties", "list"],
     "Failed to load admin client properties: /no/such.properties. Enable debug logging for "
     "additional detail."),
])
def test_argument_errors_need_no_cluster(args: list[str], message: str) -> None:
    done = CliRunner().invoke(app, ["transactions", *args])
    assert (done.exit_code, done.stdout, done.stderr) == (1, "", message + "\n")


def test_a_refused_connection_is_one_error_line() -> None:
    done = CliRunner().invoke(app, ["transactions", "--bootstrap-server", "127.0.0.1:1",
                                    "list"])
    assert (done.exit_code, done.stdout) == (1, "")
    assert done.stderr == ("Failed to list transactions: Connection to 127.0.0.1:1 refused"
                           + ENABLE_DEBUG + "\n")
