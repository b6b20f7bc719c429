"""Transactions in a partition's producer state: markers, the first unstable offset, and the
stable offset an aborted transaction's index entry records (Kafka's ProducerStateManager)."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pykraft.log.producer_state import (
    AppendOrigin,
    CompletedTxn,
    ProducerStateEntry,
    ProducerStateError,
    ProducerStateManager,
)
from pykraft.protocol.errors import ErrorCode
from pykraft.records.batch import ATTR_CONTROL, ATTR_TRANSACTIONAL, BatchHeader


def data_header(pid: int, seq: int, offset: int, *, epoch: int = 0, count: int = 1,
                transactional: bool = True) -> BatchHeader:
    return BatchHeader(offset, 0, 0, 2, 0, ATTR_TRANSACTIONAL if transactional else 0,
                       count - 1, 100, 100, pid, epoch, seq, count)


def marker_header(pid: int, offset: int, *, epoch: int = 0) -> BatchHeader:
    return BatchHeader(offset, 0, 0, 2, 0, ATTR_CONTROL | ATTR_TRANSACTIONAL, 0, 200, 200,
                       pid, epoch, -1, 1)


@dataclass
class Partition:
    """A leader's log end and producer state, appending as UnifiedLog.append does."""

    state: ProducerStateManager = field(
        default_factory=lambda: ProducerStateManager(partition="t-0"))
    end: int = 0
    sequences: dict[int, int] = field(default_factory=dict)
    aborted_index: list[tuple[int, int, int, int]] = field(default_factory=list)

    def produce(self, pid: int, *, count: int = 1, epoch: int = 0,
                transactional: bool = True) -> int:
        seq = self.sequences.get(pid, 0)
        outcome = self.state.prepare(data_header(pid, seq, self.end, epoch=epoch, count=count,
                                                 transactional=transactional))
        assert isinstance(outcome, ProducerStateEntry)
        self.state.update(outcome)
        self.sequences[pid] = seq + count
        first, self.end = self.end, self.end + count
        return first

    def marker(self, pid: int, *, aborted: bool, epoch: int = 0, coordinator_epoch: int = 0,
               version: int = 0, origin: AppendOrigin = AppendOrigin.COORDINATOR
               ) -> CompletedTxn | None:
        append = self.state.prepare_marker(
            marker_header(pid, self.end, epoch=epoch), aborted=aborted,
            coordinator_epoch=coordinator_epoch, timestamp=200, origin=origin,
            transaction_version=version)
        self.end += 1
        if append.completed is not None:
            completed = append.completed
            if completed.is_aborted:
                self.aborted_index.append((completed.producer_id, completed.first_offset,
                                           completed.last_offset,
                                           self.state.last_stable_offset(completed)))
            self.state.complete_txn(completed)
        self.state.update(append.entry)
        if epoch != 0:
            self.sequences[pid] = 0
        return append.completed


def test_a_transactional_batch_opens_and_a_marker_closes_the_transaction() -> None:
    p = Partition()
    p.produce(1, count=3)
    assert p.state.first_unstable_offset() == 0
    assert p.state.last_entry(1).current_txn_first_offset == 0  # type: ignore[union-attr]
    completed = p.marker(1, aborted=False)
    assert completed == CompletedTxn(producer_id=1, first_offset=0, last_offset=3,
                                     is_aborted=False)
    entry = p.state.last_entry(1)
    assert entry is not None and entry.current_txn_first_offset is None
    # ended, but the marker is not replicated yet: still unstable
    assert p.state.first_unstable_offset() == 0
    assert p.state.first_undecided_offset() is None
    p.state.on_high_watermark_updated(3)
    assert p.state.first_unstable_offset() == 0  # the marker (offset 3) is not below the HW
    p.state.on_high_watermark_updated(4)
    assert p.state.first_unstable_offset() is None


def test_a_marker_without_an_open_transaction_completes_nothing() -> None:
    p = Partition()
    assert p.marker(1, aborted=True) is None
    assert p.state.first_unstable_offset() is None
    assert p.aborted_index == []


def test_the_aborted_entry_records_the_next_open_transaction_of_another_producer() -> None:
    p = Partition()
    p.produce(1)          # offset 0: producer 1 opens
    p.produce(2)          # offset 1: producer 2 opens
    p.produce(1)          # offset 2
    p.marker(1, aborted=True)  # offset 3: producer 1 aborts; producer 2 is still open at 1
    assert p.aborted_index == [(1, 0, 3, 1)]
    p.marker(2, aborted=True)  # offset 4: nothing else open -> just past its marker
    assert p.aborted_index == [(1, 0, 3, 1), (2, 1, 4, 5)]


def test_a_non_transactional_write_inside_a_transaction_is_invalid_txn_state() -> None:
    p = Partition()
    p.produce(1)
    with pytest.raises(ProducerStateError) as info:
        p.produce(1, transactional=False)
    assert info.value.error_code == ErrorCode.INVALID_TXN_STATE


def test_a_stale_marker_epoch_is_refused_and_a_newer_one_resets_the_batches() -> None:
    p = Partition()
    p.produce(1, epoch=3)
    with pytest.raises(ProducerStateError) as info:
        p.marker(1, aborted=True, epoch=2)
    assert info.value.error_code == ErrorCode.INVALID_PRODUCER_EPOCH
    assert p.marker(1, aborted=True, epoch=4) is not None  # a fencing abort bumps the epoch
    entry = p.state.last_entry(1)
    assert entry is not None and entry.producer_epoch == 4 and not entry.batches


def test_transaction_version_2_needs_a_strictly_newer_marker_epoch() -> None:
    p = Partition()
    p.produce(1, epoch=5)
    with pytest.raises(ProducerStateError) as info:
        p.marker(1, aborted=False, epoch=5, version=2)
    assert info.value.error_code == ErrorCode.INVALID_PRODUCER_EPOCH
    assert "<= the last seen epoch 5 (TV2)" in info.value.message
    assert p.marker(1, aborted=False, epoch=5, version=1) is not None  # TV1: same epoch


def test_an_older_coordinator_epoch_is_fenced_but_a_follower_takes_it() -> None:
    p = Partition()
    p.produce(1)
    p.marker(1, aborted=False, coordinator_epoch=7)
    p.produce(1)
    with pytest.raises(ProducerStateError) as info:
        p.marker(1, aborted=False, coordinator_epoch=6)
    assert info.value.error_code == ErrorCode.TRANSACTION_COORDINATOR_FENCED
    assert p.marker(1, aborted=False, coordinator_epoch=6,
                    origin=AppendOrigin.REPLICATION) is not None


def test_a_coordinator_write_with_a_stale_epoch_is_refused() -> None:
    p = Partition()
    p.produce(1, epoch=2)
    header = data_header(1, 0, p.end, epoch=1)
    with pytest.raises(ProducerStateError) as info:
        p.state.prepare(header, AppendOrigin.COORDINATOR)
    assert info.value.error_code == ErrorCode.INVALID_PRODUCER_EPOCH
    assert isinstance(p.state.prepare(header, AppendOrigin.REPLICATION), ProducerStateEntry)


def test_a_loaded_snapshot_reopens_its_transactions_in_offset_order() -> None:
    p = Partition()
    p.produce(9)   # 0
    p.produce(3)   # 1
    p.produce(9)   # 2
    loaded = ProducerStateManager(partition="t-0")
    loaded.load(p.state.snapshot(), now_ms=0, end_offset=p.end)
    assert loaded.first_unstable_offset() == 0
    completed = CompletedTxn(producer_id=9, first_offset=0, last_offset=3, is_aborted=True)
    assert loaded.last_stable_offset(completed) == 1
    loaded.complete_txn(completed)
    loaded.on_high_watermark_updated(4)
    assert loaded.first_unstable_offset() == 1


def test_an_open_transaction_keeps_its_producer_from_expiring() -> None:
    state = ProducerStateManager(partition="t-0", producer_id_expiration_ms=10)
    outcome = state.prepare(data_header(1, 0, 0))
    assert isinstance(outcome, ProducerStateEntry)
    state.update(outcome)
    assert state.remove_expired(now_ms=1_000_000) == []


def test_completing_a_transaction_never_started_is_a_bug() -> None:
    state = ProducerStateManager(partition="t-0")
    with pytest.raises(KeyError):
        state.complete_txn(CompletedTxn(1, 0, 1, False))


# -- against a model -----------------------------------------------------------------------

Step = tuple[str, int]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["data", "commit", "abort", "hw"]),
                          st.integers(min_value=1, max_value=4)), max_size=60))
def test_the_first_unstable_offset_matches_a_model(steps: list[Step]) -> None:
    """Open transactions (first offset), ended ones with their marker's offset, and the
    high watermark: the first unstable offset is the smallest first offset of a transaction
    open or ended by a marker at or above the high watermark; an abort's index entry records
    the oldest other producer's open transaction, else the offset after its marker."""
    p = Partition()
    open_first: dict[int, int] = {}
    ended: list[tuple[int, int]] = []  # (first offset, marker offset)
    aborted: list[tuple[int, int, int, int]] = []
    hw = 0
    for kind, pid in steps:
        if kind == "data":
            first = p.produce(pid)
            open_first.setdefault(pid, first)
        elif kind in ("commit", "abort"):
            marker_offset = p.end
            others = [f for q, f in open_first.items() if q != pid]
            completed = p.marker(pid, aborted=kind == "abort")
            if pid in open_first:
                assert completed is not None and completed.first_offset == open_first[pid]
                if kind == "abort":
                    aborted.append((pid, open_first[pid], marker_offset,
                                    min(others) if others else marker_offset + 1))
                ended.append((open_first.pop(pid), marker_offset))
            else:
                assert completed is None
        else:
            hw = min(p.end, hw + pid)
            p.state.on_high_watermark_updated(hw)
        unstable = [*open_first.values(), *(f for f, m in ended if m >= hw)]
        assert p.state.first_unstable_offset() == (min(unstable) if unstable else None)
        assert p.state.first_undecided_offset() == (
            min(open_first.values()) if open_first else None)
    assert p.aborted_index == aborted
