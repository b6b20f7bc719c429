"""The transaction coordinator shard, driven as the runtime drives it: writes committed (or
failed) when the test says, markers reported per partition."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import pytest

from pykraft.ids import TopicPartition
from pykraft.protocol.errors import ErrorCode
from pykraft.txn.config import TxnConfig
from pykraft.txn.metadata import TxnMetadata
from pykraft.txn.records import TxnRecord, read_txn_record, txn_record, value_version
from pykraft.txn.requests import (
    AddPartitions,
    DescribedTxn,
    DescribeTxn,
    EndTxn,
    ErrorReply,
    InitTxnProducer,
    ListedTxns,
    ListTxns,
    MarkerOrder,
    ProducerReply,
    TxnContext,
    TxnOutcome,
    TxnReply,
    TxnRequest,
    VerifyReply,
)
from pykraft.txn.shard import TxnShard, write_error
from pykraft.txn.state import TxnState

TP0, TP1 = TopicPartition("t", 0), TopicPartition("t", 1)


@dataclass
class Runtime:
    """What the broker's runtime does around a shard, minus the I/O: every write commits
    at once unless ``fail_next`` names an error, markers wait in :attr:`markers`."""

    version: int = 0
    now: int = 1_000
    shard: TxnShard = field(default_factory=lambda: TxnShard(0, 5, TxnConfig()))
    log: list[TxnRecord] = field(default_factory=list)
    markers: list[MarkerOrder] = field(default_factory=list)
    replies: dict[int, TxnReply] = field(default_factory=dict)
    fail_next: ErrorCode | None = None
    _tokens: itertools.count[int] = field(default_factory=lambda: itertools.count(1))
    _pids: itertools.count[int] = field(default_factory=lambda: itertools.count(1000))

    def ctx(self) -> TxnContext:
        return TxnContext(self.now, self.version, lambda: next(self._pids))

    def ask(self, request: TxnRequest) -> TxnReply | None:
        token = next(self._tokens)
        self.apply(self.shard.handle(token, request, self.ctx()))
        return self.replies.get(token)

    def apply(self, outcome: TxnOutcome) -> None:
        for token, reply in outcome.replies:
            self.replies[token] = reply
        self.markers.extend(outcome.markers)
        for write in outcome.writes:
            error, self.fail_next = self.fail_next, None
            if error is None:
                self.log.extend(write.records)
            self.apply(self.shard.written(write.write_id, error, self.ctx()))

    def deliver_markers(self) -> list[MarkerOrder]:
        delivered, self.markers = self.markers, []
        for order in delivered:
            for partition in sorted(order.partitions):
                self.apply(self.shard.marker_written(order.transactional_id, order.producer_id,
                                                     order.producer_epoch, partition,
                                                     self.ctx()))
        return delivered

    def tick(self, advance_ms: int) -> None:
        self.now += advance_ms
        self.apply(self.shard.tick(self.ctx()))

    def state(self, transactional_id: str = "tx") -> TxnState:
        return self.shard.transactions[transactional_id].state


def logged(runtime: Runtime) -> list[TxnMetadata]:
    """The metadata each record of the log holds (no tombstones expected)."""
    found = []
    for record in runtime.log:
        read = read_txn_record(record)
        assert read is not None and read[1] is not None
        found.append(read[1])
    return found


def loaded(version: int = 0) -> Runtime:
    runtime = Runtime(version=version)
    runtime.apply(runtime.shard.loaded(runtime.ctx()))
    return runtime


def init(runtime: Runtime, tx: str = "tx", **kwargs: int) -> ProducerReply:
    reply = runtime.ask(InitTxnProducer(tx, 60_000, **kwargs))
    assert isinstance(reply, ProducerReply)
    return reply


def ids(reply: ProducerReply) -> tuple[int, int]:
    """The producer id and epoch an answer gives."""
    return reply.producer_id, reply.producer_epoch


def test_a_new_id_gets_a_producer_id_at_epoch_0_and_then_bumps() -> None:
    runtime = loaded()
    assert init(runtime) == ProducerReply(ErrorCode.NONE, 1000, 0)
    assert init(runtime) == ProducerReply(ErrorCode.NONE, 1000, 1)
    assert [m.producer_epoch for m in logged(runtime)] == [0, 1]


def test_invalid_ids_and_timeouts() -> None:
    runtime = loaded()
    assert runtime.ask(InitTxnProducer("", 1000)) == ProducerReply(ErrorCode.INVALID_REQUEST)
    assert runtime.ask(InitTxnProducer("tx", 900_001)) == ProducerReply(
        ErrorCode.INVALID_TRANSACTION_TIMEOUT)
    assert runtime.ask(InitTxnProducer("tx", 0)) == ProducerReply(
        ErrorCode.INVALID_TRANSACTION_TIMEOUT)


def test_commit_writes_prepare_then_markers_then_complete() -> None:
    runtime = loaded()
    pid, epoch = ids(init(runtime))
    assert runtime.ask(AddPartitions("tx", pid, epoch, frozenset({TP0, TP1}))) == ErrorReply(
        ErrorCode.NONE)
    assert runtime.state() is TxnState.ONGOING
    # already in: answered without a write
    writes = len(runtime.log)
    assert runtime.ask(AddPartitions("tx", pid, epoch, frozenset({TP0}))) == ErrorReply(
        ErrorCode.NONE)
    assert len(runtime.log) == writes
    reply = runtime.ask(EndTxn("tx", pid, epoch, commit=True))
    assert isinstance(reply, ProducerReply) and reply.error is ErrorCode.NONE
    assert runtime.state() is TxnState.PREPARE_COMMIT
    # while the markers are written, every change waits
    assert runtime.ask(AddPartitions("tx", pid, epoch, frozenset({TP0}))) == ErrorReply(
        ErrorCode.CONCURRENT_TRANSACTIONS)
    [order] = runtime.deliver_markers()
    assert (order.commit, order.producer_epoch, order.coordinator_epoch,
            order.partitions) == (True, epoch, 5, frozenset({TP0, TP1}))
    assert runtime.state() is TxnState.COMPLETE_COMMIT
    assert [m.state for m in logged(runtime)] == [
        TxnState.EMPTY, TxnState.ONGOING, TxnState.PREPARE_COMMIT, TxnState.COMPLETE_COMMIT]
    # version 1: repeating the commit is NONE; an abort now is INVALID_TXN_STATE
    assert runtime.ask(EndTxn("tx", pid, epoch, commit=True)) == ProducerReply(ErrorCode.NONE)
    assert runtime.ask(EndTxn("tx", pid, epoch, commit=False)) == ProducerReply(
        ErrorCode.INVALID_TXN_STATE)


def test_wrong_producer_or_epoch() -> None:
    runtime = loaded()
    pid, epoch = ids(init(runtime))
    assert runtime.ask(AddPartitions("tx", pid + 1, epoch, frozenset({TP0}))) == ErrorReply(
        ErrorCode.INVALID_PRODUCER_ID_MAPPING)
    assert runtime.ask(AddPartitions("tx", pid, epoch + 1, frozenset({TP0}))) == ErrorReply(
        ErrorCode.PRODUCER_FENCED)
    assert runtime.ask(AddPartitions("other", pid, epoch, frozenset({TP0}))) == ErrorReply(
        ErrorCode.INVALID_PRODUCER_ID_MAPPING)
    assert runtime.ask(EndTxn("tx", pid, epoch, commit=True)) == ProducerReply(
        ErrorCode.INVALID_TXN_STATE)  # nothing open (version 1)


def test_a_new_producer_fences_the_open_transaction_and_aborts_it() -> None:
    runtime = loaded()
    pid, epoch = ids(init(runtime))
    runtime.ask(AddPartitions("tx", pid, epoch, frozenset({TP0})))
    assert init(runtime) == ProducerReply(ErrorCode.CONCURRENT_TRANSACTIONS)
    assert runtime.state() is TxnState.PREPARE_ABORT
    [order] = runtime.deliver_markers()
    assert not order.commit and order.producer_epoch == epoch + 1  # the zombie's is fenced
    assert runtime.state() is TxnState.COMPLETE_ABORT
    assert init(runtime) == ProducerReply(ErrorCode.NONE, pid, epoch + 2)
    # the zombie is fenced
    assert runtime.ask(AddPartitions("tx", pid, epoch, frozenset({TP0}))) == ErrorReply(
        ErrorCode.PRODUCER_FENCED)


def test_kip_360_recovery_with_the_producers_own_id_and_epoch() -> None:
    runtime = loaded()
    pid, epoch = ids(init(runtime))
    assert init(runtime, producer_id=pid, producer_epoch=epoch) == ProducerReply(
        ErrorCode.NONE, pid, epoch + 1)
    # a retry of that call (its answer was lost): the same epoch again
    assert init(runtime, producer_id=pid, producer_epoch=epoch) == ProducerReply(
        ErrorCode.NONE, pid, epoch + 1)
    assert init(runtime, producer_id=pid, producer_epoch=epoch - 1) == ProducerReply(
        ErrorCode.PRODUCER_FENCED)
    assert init(runtime, producer_id=pid + 7, producer_epoch=0) == ProducerReply(
        ErrorCode.PRODUCER_FENCED)


def test_version_2_bumps_the_epoch_at_each_end_and_knows_retries() -> None:
    runtime = loaded(version=2)
    pid, epoch = ids(init(runtime))
    runtime.ask(AddPartitions("tx", pid, epoch, frozenset({TP0}), client_version=2))
    end = EndTxn("tx", pid, epoch, commit=True, client_version=2)
    assert runtime.ask(end) == ProducerReply(ErrorCode.NONE, pid, epoch + 1)
    [order] = runtime.deliver_markers()
    assert order.producer_epoch == epoch + 1 and order.transaction_version == 2
    assert runtime.ask(end) == ProducerReply(ErrorCode.NONE, pid, epoch + 1)  # a retry
    # an abort of nothing at the current epoch: an epoch bump without markers
    assert runtime.ask(EndTxn("tx", pid, epoch + 1, commit=False, client_version=2)) == \
        ProducerReply(ErrorCode.NONE, pid, epoch + 2)
    assert runtime.markers == [] and runtime.state() is TxnState.COMPLETE_ABORT
    assert runtime.ask(EndTxn("tx", pid, epoch + 2, commit=True, client_version=2)) == \
        ProducerReply(ErrorCode.INVALID_TXN_STATE)
    assert value_version(2) == 1
    assert all(r.value is not None and r.value[:2] == b"\x00\x01" for r in runtime.log)


def test_version_2_hands_over_to_the_next_producer_id_at_the_last_epoch() -> None:
    runtime = loaded(version=2)
    pid, _ = ids(init(runtime))
    metadata = runtime.shard.transactions["tx"]
    metadata.producer_epoch = 32766  # as after many transactions
    runtime.ask(AddPartitions("tx", pid, 32766, frozenset({TP0}), client_version=2))
    reply = runtime.ask(EndTxn("tx", pid, 32766, commit=True, client_version=2))
    assert reply == ProducerReply(ErrorCode.NONE, pid, 32767)
    runtime.deliver_markers()
    assert (metadata.producer_id, metadata.producer_epoch) == (1001, 0)
    assert metadata.prev_producer_id == pid
    # the retry of that EndTxn, from the previous id at its last epoch
    assert runtime.ask(EndTxn("tx", pid, 32766, commit=True, client_version=2)) == \
        ProducerReply(ErrorCode.NONE, 1001, 0)


def test_a_timed_out_transaction_is_aborted_at_the_next_check() -> None:
    runtime = loaded()
    pid, epoch = ids(init(runtime))
    runtime.ask(AddPartitions("tx", pid, epoch, frozenset({TP0})))
    runtime.tick(10_000)
    assert runtime.state() is TxnState.ONGOING  # 10 s of its 60 s
    runtime.tick(60_000)
    assert runtime.state() is TxnState.PREPARE_ABORT
    [order] = runtime.deliver_markers()
    assert not order.commit and order.producer_epoch == epoch + 1
    assert runtime.state() is TxnState.COMPLETE_ABORT
    assert runtime.ask(EndTxn("tx", pid, epoch, commit=True)) == ProducerReply(
        ErrorCode.PRODUCER_FENCED)


def test_an_idle_id_expires_with_a_tombstone() -> None:
    runtime = loaded()
    init(runtime)
    runtime.tick(3_600_000)
    assert "tx" in runtime.shard.transactions  # idle 1 h of its 7 days
    runtime.now += 7 * 86_400_000
    runtime.tick(0)
    assert "tx" not in runtime.shard.transactions
    assert runtime.log[-1].value is None
    assert read_txn_record(runtime.log[-1]) == ("tx", None)


def test_a_failed_write_answers_its_error_and_changes_nothing() -> None:
    runtime = loaded()
    pid, epoch = ids(init(runtime))
    runtime.fail_next = write_error(ErrorCode.NOT_LEADER_OR_FOLLOWER)
    assert runtime.ask(AddPartitions("tx", pid, epoch, frozenset({TP0}))) == ErrorReply(
        ErrorCode.NOT_COORDINATOR)
    assert runtime.state() is TxnState.EMPTY
    assert runtime.shard.transactions["tx"].pending is None
    assert write_error(ErrorCode.REQUEST_TIMED_OUT) is ErrorCode.COORDINATOR_NOT_AVAILABLE
    assert write_error(ErrorCode.RECORD_LIST_TOO_LARGE) is ErrorCode.UNKNOWN_SERVER_ERROR


def test_a_completion_write_is_retried_while_the_partition_is_unavailable() -> None:
    runtime = loaded()
    pid, epoch = ids(init(runtime))
    runtime.ask(AddPartitions("tx", pid, epoch, frozenset({TP0})))
    runtime.ask(EndTxn("tx", pid, epoch, commit=False))
    runtime.fail_next = ErrorCode.COORDINATOR_NOT_AVAILABLE
    runtime.deliver_markers()
    assert runtime.state() is TxnState.COMPLETE_ABORT


def test_loading_resends_the_markers_of_a_transaction_left_preparing() -> None:
    runtime = loaded()
    pid, epoch = ids(init(runtime))
    runtime.ask(AddPartitions("tx", pid, epoch, frozenset({TP0, TP1})))
    runtime.ask(EndTxn("tx", pid, epoch, commit=True))
    # the leader dies before the markers: the next leader loads the log
    successor = TxnShard(0, 6, TxnConfig())
    for record in runtime.log:
        successor.replay(record)
    outcome = successor.loaded(runtime.ctx())
    [order] = outcome.markers
    assert order.commit and order.coordinator_epoch == 6 and order.partitions == {TP0, TP1}
    assert successor.transactions["tx"].last_producer_epoch == -1  # not in the log


def test_verification_of_partitions() -> None:
    runtime = loaded()
    pid, epoch = ids(init(runtime))
    runtime.ask(AddPartitions("tx", pid, epoch, frozenset({TP0})))
    reply = runtime.ask(AddPartitions("tx", pid, epoch, frozenset({TP0, TP1}),
                                      verify_only=True))
    assert reply == VerifyReply({TP0: ErrorCode.NONE, TP1: ErrorCode.TRANSACTION_ABORTABLE})
    fenced = runtime.ask(AddPartitions("tx", pid, epoch + 1, frozenset({TP0}),
                                       verify_only=True))
    assert fenced == VerifyReply({TP0: ErrorCode.PRODUCER_FENCED})


def test_describe_and_list_with_filters() -> None:
    runtime = loaded()
    pid, epoch = ids(init(runtime, "a"))
    init(runtime, "b")
    runtime.ask(AddPartitions("a", pid, epoch, frozenset({TP1})))
    described = runtime.ask(DescribeTxn("a"))
    assert described == DescribedTxn("a", ErrorCode.NONE, "Ongoing", 60_000, runtime.now,
                                     pid, epoch, frozenset({TP1}))
    assert runtime.ask(DescribeTxn("zz")) == DescribedTxn("zz",
                                                           ErrorCode.TRANSACTIONAL_ID_NOT_FOUND)
    everything = runtime.ask(ListTxns())
    assert isinstance(everything, ListedTxns)
    assert sorted(everything.transactions) == [("a", pid, "Ongoing"), ("b", 1001, "Empty")]
    ongoing = runtime.ask(ListTxns(states=("Ongoing", "Bogus")))
    assert ongoing == ListedTxns((("a", pid, "Ongoing"),), ("Bogus",))
    only_unknown = runtime.ask(ListTxns(states=("Bogus",)))  # no state filter left: all
    assert isinstance(only_unknown, ListedTxns) and only_unknown.unknown_states == ("Bogus",)
    assert sorted(only_unknown.transactions) == sorted(everything.transactions)
    assert runtime.ask(ListTxns(producer_ids=frozenset({1001}))) == ListedTxns(
        (("b", 1001, "Empty"),))
    runtime.now += 5_000
    assert runtime.ask(ListTxns(duration_ms=10_000)) == ListedTxns(())
    assert runtime.ask(ListTxns(pattern="a.*")) == ListedTxns((("a", pid, "Ongoing"),))


@pytest.mark.parametrize("version", [0, 2])
def test_records_round_trip(version: int) -> None:
    runtime = loaded(version)
    pid, epoch = ids(init(runtime))
    runtime.ask(AddPartitions("tx", pid, epoch, frozenset({TP0, TP1, TopicPartition("u", 3)})))
    record = runtime.log[-1]
    read = read_txn_record(record)
    assert read is not None and read[1] is not None
    metadata = read[1]
    assert (metadata.state, metadata.producer_id, metadata.producer_epoch,
            metadata.partitions) == (TxnState.ONGOING, pid, epoch,
                                     frozenset({TP0, TP1, TopicPartition("u", 3)}))
    assert txn_record("tx", metadata.as_transit(), version) == record
    assert read_txn_record(TxnRecord(b"\x00\x07junk", None)) is None  # another key version
