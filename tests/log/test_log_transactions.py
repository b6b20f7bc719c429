"""Markers in a partition log: the two phases of an append, the ``.txnindex`` entries, the
committed read, and the index rebuilt by the replay after a crash."""

from __future__ import annotations

from pathlib import Path

from pykraft.log.producer_snapshot_files import load_producer_state
from pykraft.log.producer_state import AppendOrigin, ProducerStateManager
from pykraft.log.transactions import (
    Marker,
    apply_batches,
    end_transactions,
    marker_batch,
    read_marker,
)
from pykraft.records.batch import (
    ATTR_TRANSACTIONAL,
    Record,
    assemble_batch,
    encode_records,
    unpack_header,
)
from pykraft.records.control import ControlType, control_key
from pykraft.storage.log_config import LogConfig
from pykraft.storage.partition_log import PartitionLog
from pykraft.storage.txn_index import AbortedTxn

NOW = 1_700_000_000_000


def data_batch(offset: int, pid: int, seq: int, *, count: int = 1) -> bytes:
    body = encode_records([Record(offset + i, NOW, None, b"v") for i in range(count)],
                          offset, NOW)
    return assemble_batch(body, base_offset=offset, partition_leader_epoch=0,
                          attributes=ATTR_TRANSACTIONAL, last_offset_delta=count - 1,
                          base_timestamp=NOW, max_timestamp=NOW, records_count=count,
                          producer_id=pid, producer_epoch=0, base_sequence=seq)


def marker(offset: int, pid: int, *, aborted: bool) -> bytes:
    return marker_batch(base_offset=offset, leader_epoch=0, producer_id=pid,
                        producer_epoch=0, aborted=aborted, coordinator_epoch=4,
                        timestamp=NOW + offset)


class Leader:
    """Appends one batch at a time, as the leader's produce and marker paths do."""

    def __init__(self, partition_log: PartitionLog) -> None:
        self.log = partition_log
        self.state = ProducerStateManager(partition="t-0")
        self.seq: dict[int, int] = {}

    def produce(self, pid: int, count: int = 1) -> None:
        seq = self.seq.get(pid, 0)
        self._append(data_batch(self.log.log_end_offset, pid, seq, count=count))
        self.seq[pid] = seq + count

    def end(self, pid: int, *, aborted: bool) -> None:
        self._append(marker(self.log.log_end_offset, pid, aborted=aborted))

    def _append(self, batch: bytes) -> None:
        header = unpack_header(batch)
        found = read_marker(header, batch) if header.is_control else None
        self.log.append(batch, now_ms=NOW)
        completed = apply_batches(self.state, [(header, found)], AppendOrigin.REPLICATION)
        end_transactions(self.state, self.log, completed)


def reset_from(partition_log: PartitionLog) -> int | None:
    """Read afresh (the log changes it behind the test's back)."""
    return partition_log.txn_index_reset_from


def test_a_marker_batch_is_kafkas_end_transaction_marker() -> None:
    batch = marker(7, 42, aborted=True)
    header = unpack_header(batch)
    assert header.is_control and header.is_transactional
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (42, 0, -1)
    assert read_marker(header, batch) == Marker(aborted=True, coordinator_epoch=4,
                                                timestamp=NOW + 7)
    commit = marker(8, 42, aborted=False)
    assert read_marker(unpack_header(commit), commit) == Marker(False, 4, NOW + 8)
    assert control_key(ControlType.ABORT) in batch


def test_aborts_are_indexed_and_a_committed_read_lists_them(tmp_path: Path) -> None:
    with PartitionLog.open(tmp_path / "t-0", LogConfig(), now_ms=NOW) as log:
        leader = Leader(log)
        leader.produce(1, 2)        # 0-1: producer 1 opens
        leader.produce(2)           # 2: producer 2 opens
        leader.end(1, aborted=True)  # 3: producer 2 still open at 2
        leader.end(2, aborted=False)  # 4
        leader.produce(3)           # 5
        leader.end(3, aborted=True)  # 6
        assert log.active.txn_index.all() == [AbortedTxn(1, 0, 3, 2), AbortedTxn(3, 5, 6, 7)]
        records, aborted = log.read_committed(0, 1 << 20, max_offset=7)
        assert isinstance(records, bytes) and len(records) > 0
        assert aborted == [AbortedTxn(1, 0, 3, 2), AbortedTxn(3, 5, 6, 7)]
        _, late = log.read_committed(4, 1 << 20, max_offset=7)
        assert late == [AbortedTxn(3, 5, 6, 7)]
        assert log.read_committed(7, 1 << 20, max_offset=7) == (b"", [])


def test_recovery_drops_the_entries_and_the_replay_rebuilds_them(tmp_path: Path) -> None:
    directory = tmp_path / "t-0"
    config = LogConfig(segment_bytes=300)  # a few batches per segment
    with PartitionLog.open(directory, config, now_ms=NOW) as log:
        leader = Leader(log)
        for pid in range(1, 6):
            leader.produce(pid)
            leader.produce(pid + 10)
            leader.end(pid, aborted=pid % 2 == 1)
            leader.end(pid + 10, aborted=True)
        before = log.collect_aborted(0, log.log_end_offset)
        assert len(before) == 8 and len(log.segment_stats()) > 2
        log.flush()
    # a crash: nothing vouched for past offset 0, so every segment is rescanned
    reopened = PartitionLog.open(directory, config, now_ms=NOW, recovery_point=0)
    with reopened:
        assert reset_from(reopened) == 0
        assert reopened.collect_aborted(0, reopened.log_end_offset) == []
        state = load_producer_state(reopened, partition="t-0", now_ms=NOW,
                                    expiration_ms=86_400_000)
        assert reset_from(reopened) is None
        assert reopened.collect_aborted(0, reopened.log_end_offset) == before
        assert state.first_unstable_offset() is not None  # markers above the HW (none yet)
        state.on_high_watermark_updated(reopened.log_end_offset)
        assert state.first_unstable_offset() is None


def test_truncation_drops_the_entries_of_the_markers_cut(tmp_path: Path) -> None:
    with PartitionLog.open(tmp_path / "t-0", LogConfig(), now_ms=NOW) as log:
        leader = Leader(log)
        leader.produce(1)
        leader.end(1, aborted=True)   # 1
        leader.produce(2)
        leader.end(2, aborted=True)   # 3
        log.truncate_to(3, now_ms=NOW)
        assert log.collect_aborted(0, 10) == [AbortedTxn(1, 0, 1, 2)]
