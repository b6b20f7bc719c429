"""The raft-only state machine's snapshots: when it asks for one, what it holds, and going
on from one (as a follower does after FetchSnapshot, or a restart after cleaning)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pykraft.errors import CorruptRecordError
from pykraft.image.snapshot import SnapshotPolicy
from pykraft.raft.log import OffsetAndEpoch
from pykraft.records.batch import RecordBatch, encode_batch, iter_batches
from pykraft.runtime.committed_counter import (
    CommittedCounter,
    CounterSnapshot,
    records_in_snapshot,
)


def _batch(base_offset: int, count: int, *, epoch: int = 1, size: int = 100) -> RecordBatch:
    data = encode_batch(base_offset, [(None, b"v" * size)] * count,
                        partition_leader_epoch=epoch, timestamp=0)
    return next(iter_batches(data))


def _snapshot_batches(snapshot: CounterSnapshot) -> list[RecordBatch]:
    data = b"".join(encode_batch(0, [(None, value) for value in values],
                                 partition_leader_epoch=snapshot.snapshot_id.epoch, timestamp=0)
                    for values in snapshot.batches())
    return list(iter_batches(data))


def test_snapshot_is_due_once_the_byte_threshold_passes() -> None:
    counter = CommittedCounter(1, SnapshotPolicy(max_bytes_between=1000, max_interval_ms=0))
    counter.handle_commit(_batch(0, 3, size=100))
    assert counter.take_snapshot_due() is None
    counter.handle_commit(_batch(3, 10, epoch=2, size=100))
    due = counter.take_snapshot_due()
    assert due == CounterSnapshot(OffsetAndEpoch(13, 2), 13)
    assert counter.take_snapshot_due() is None
    counter.handle_commit(_batch(13, 1))  # counting restarted after the snapshot
    assert counter.take_snapshot_due() is None


def test_without_a_policy_the_counter_never_asks() -> None:
    counter = CommittedCounter(1)
    counter.handle_commit(_batch(0, 100, size=1000))
    assert counter.take_snapshot_due() is None


def test_loading_a_snapshot_goes_on_from_its_count() -> None:
    stored = CounterSnapshot(OffsetAndEpoch(50, 3), 42)
    reads: list[OffsetAndEpoch] = []

    def reader(snapshot_id: OffsetAndEpoch) -> list[RecordBatch]:
        reads.append(snapshot_id)
        return _snapshot_batches(stored)

    counter = CommittedCounter(2, SnapshotPolicy())
    counter.attach(reader)
    counter.handle_load_snapshot(stored.snapshot_id)
    assert (counter.records, counter.next_offset, reads) == (42, 50, [stored.snapshot_id])
    counter.handle_commit(_batch(50, 5))
    assert (counter.records, counter.next_offset) == (47, 55)


def test_next_to_a_metadata_listener_the_counter_only_skips_to_the_snapshot() -> None:
    """Without a policy the snapshots are the controller's or broker's image: the counter
    must not read them as counts (that crashed restarted metadata nodes)."""
    metadata = list(iter_batches(encode_batch(0, [(None, b"a topic record")] * 3,
                                              partition_leader_epoch=1, timestamp=0)))
    counter = CommittedCounter(3)
    counter.attach(lambda snapshot_id: metadata)
    counter.handle_commit(_batch(0, 4))
    counter.handle_load_snapshot(OffsetAndEpoch(26, 1))
    assert (counter.records, counter.next_offset) == (4, 26)


def test_a_foreign_snapshot_is_a_corrupt_record_error() -> None:
    snapshot_id = OffsetAndEpoch(10, 1)
    two_records = list(iter_batches(encode_batch(0, [(None, b"12345678")] * 2,
                                                 partition_leader_epoch=1, timestamp=0)))
    wrong_size = list(iter_batches(encode_batch(0, [(None, b"1234")],
                                                partition_leader_epoch=1, timestamp=0)))
    too_many = _snapshot_batches(CounterSnapshot(snapshot_id, 11))
    for batches in (two_records, wrong_size, too_many, []):
        with pytest.raises(CorruptRecordError, match="snapshot"):
            records_in_snapshot(batches, snapshot_id)


@given(offset=st.integers(1, 2**62), epoch=st.integers(0, 2**31 - 1), data=st.data())
def test_snapshot_count_round_trips(offset: int, epoch: int, data: st.DataObject) -> None:
    count = data.draw(st.integers(0, offset))
    snapshot = CounterSnapshot(OffsetAndEpoch(offset, epoch), count)
    assert records_in_snapshot(_snapshot_batches(snapshot), snapshot.snapshot_id) == count
