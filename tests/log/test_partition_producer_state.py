"""Idempotent producer state (Kafka's ProducerStateManager) and its snapshot bytes."""

from __future__ import annotations

import struct

import crc32c
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pykraft.log.producer_snapshot import (
    CorruptSnapshotError,
    decode_snapshot,
    encode_snapshot,
    snapshot_file_name,
    snapshot_offset,
)
from pykraft.log.producer_state import (
    INT32_MAX,
    AppendOrigin,
    BatchMetadata,
    ProducerStateEntry,
    ProducerStateError,
    ProducerStateManager,
)
from pykraft.protocol.errors import ErrorCode
from pykraft.records.batch import ATTR_TRANSACTIONAL, BatchHeader

PID = 7


def header(seq: int, count: int = 1, *, offset: int = 0, epoch: int = 0, timestamp: int = 100,
           pid: int = PID, transactional: bool = False) -> BatchHeader:
    return BatchHeader(offset, 0, 0, 2, 0, ATTR_TRANSACTIONAL if transactional else 0,
                       count - 1, timestamp, timestamp, pid, epoch, seq, count)


class Log:
    """A partition's log end and producer state, appending as a leader would."""

    def __init__(self) -> None:
        self.state = ProducerStateManager(partition="t-0", producer_id_expiration_ms=1_000)
        self.end = 0

    def produce(self, seq: int, count: int = 1, **kwargs: int | bool
                ) -> BatchMetadata | ProducerStateEntry | None:
        h = header(seq, count, offset=self.end, **kwargs)  # type: ignore[arg-type]
        outcome = self.state.prepare(h)
        if isinstance(outcome, ProducerStateEntry):
            self.state.update(outcome)
            self.end += count
        return outcome


def refusal(log: Log, seq: int, **kwargs: int | bool) -> ProducerStateError:
    with pytest.raises(ProducerStateError) as info:
        log.produce(seq, **kwargs)
    return info.value


def test_an_unknown_producer_may_start_at_any_sequence() -> None:
    log = Log()
    assert isinstance(log.produce(42, 3), ProducerStateEntry)
    assert isinstance(log.produce(45), ProducerStateEntry)
    assert log.state.last_entry(PID).last_seq == 45  # type: ignore[union-attr]


def test_a_gap_or_a_repeat_out_of_the_window_is_out_of_order() -> None:
    log = Log()
    log.produce(0, 2)
    error = refusal(log, 3)
    assert error.error_code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert error.message == ("Out of order sequence number for producer 7 at offset 2 in "
                             "partition t-0: 3 (incoming seq. number), 1 (current end sequence "
                             "number)")


def test_an_older_epoch_is_invalid_producer_epoch() -> None:
    log = Log()
    log.produce(0, epoch=3)
    error = refusal(log, 1, epoch=2)
    assert error.error_code == ErrorCode.INVALID_PRODUCER_EPOCH
    assert "is 2, which is smaller than the last seen epoch 3" in error.message


def test_an_epoch_bump_restarts_at_sequence_zero_and_forgets_old_batches() -> None:
    log = Log()
    log.produce(0, epoch=0)
    assert refusal(log, 5, epoch=1).error_code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert isinstance(log.produce(0, epoch=1), ProducerStateEntry)
    entry = log.state.last_entry(PID)
    assert entry is not None and entry.producer_epoch == 1 and len(entry.batches) == 1


def test_sequences_wrap_from_int32_max_to_zero() -> None:
    log = Log()
    log.produce(INT32_MAX - 1, 2)
    assert isinstance(log.produce(0, 3), ProducerStateEntry)
    wrapping = Log()
    wrapping.produce(INT32_MAX - 1, 4)  # INT32_MAX-1, INT32_MAX, 0, 1
    assert wrapping.state.last_entry(PID).last_seq == 1  # type: ignore[union-attr]
    assert wrapping.produce(INT32_MAX - 1, 4) == BatchMetadata(1, 3, 3, 100)


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(sizes=st.lists(st.integers(1, 5), min_size=1, max_size=12), data=st.data())
def test_retries_within_the_last_five_batches_answer_the_original_offsets(
        sizes: list[int], data: st.DataObject) -> None:
    log = Log()
    sent = []
    seq = 0
    for size in sizes:
        first = log.end
        log.produce(seq, size)
        sent.append((seq, size, first))
        seq += size
    end = log.end
    window = sent[-5:]
    for seq, size, first in data.draw(st.permutations(window)):
        duplicate = log.produce(seq, size)
        assert isinstance(duplicate, BatchMetadata)
        assert (duplicate.first_offset, duplicate.last_offset) == (first, first + size - 1)
        assert (duplicate.first_seq, duplicate.last_seq) == (seq, seq + size - 1)
    assert log.end == end  # nothing appended
    for seq, size, _ in sent[:-5]:
        assert refusal(log, seq, count=size).error_code == (
            ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER)


def test_a_retry_with_another_epoch_is_not_a_duplicate() -> None:
    log = Log()
    log.produce(0, epoch=0)
    assert isinstance(log.produce(0, epoch=1), ProducerStateEntry)


def test_followers_skip_sequence_and_duplicate_checks() -> None:
    state = ProducerStateManager()
    for offset, seq, epoch in [(0, 0, 5), (1, 9, 5), (2, 9, 4)]:
        outcome = state.prepare(header(seq, offset=offset, epoch=epoch), AppendOrigin.REPLICATION)
        assert isinstance(outcome, ProducerStateEntry)
        state.update(outcome)


def test_batches_without_a_producer_id_have_no_state() -> None:
    assert ProducerStateManager().prepare(header(-1, pid=-1)) is None


def test_a_plain_write_inside_an_open_transaction_is_invalid_txn_state() -> None:
    log = Log()
    log.produce(0, transactional=True)
    assert log.state.last_entry(PID).current_txn_first_offset == 0  # type: ignore[union-attr]
    assert refusal(log, 1).error_code == ErrorCode.INVALID_TXN_STATE


def test_idle_producers_expire_unless_in_a_transaction() -> None:
    log = Log()
    log.produce(0, timestamp=100)
    log.produce(0, timestamp=100, pid=8, transactional=True)
    assert log.state.remove_expired(1_099) == []
    assert log.state.remove_expired(1_100) == [PID]
    assert list(log.state.producers) == [8]
    assert isinstance(log.produce(17), ProducerStateEntry)  # gone: any sequence again


def entry(pid: int, **kwargs: int | None) -> ProducerStateEntry:
    e = ProducerStateEntry(pid, 2, 4, 1_234, kwargs.get("txn"))
    e.batches.append(BatchMetadata(10, 55, 3, 1_234))
    return e


def test_snapshot_bytes_match_kafkas_layout() -> None:
    data = encode_snapshot([entry(7, txn=50)])
    body = struct.pack(">i", 1) + struct.pack(">qhiqiqiq", 7, 2, 10, 55, 3, 1_234, 4, 50)
    assert data == struct.pack(">hI", 1, crc32c.crc32c(body)) + body
    assert len(data) == 6 + 4 + 46


def test_snapshot_round_trip_and_the_one_batch_window_after_a_restart() -> None:
    log = Log()
    for seq in range(0, 12, 3):
        log.produce(seq, 3)
    restored = ProducerStateManager(partition="t-0", producer_id_expiration_ms=1_000)
    restored.load(decode_snapshot(encode_snapshot(log.state.snapshot())), now_ms=500,
                  end_offset=12)
    assert restored.map_end_offset == 12
    again = Log()
    again.state, again.end = restored, 12
    assert again.produce(9, 3) == BatchMetadata(11, 11, 2, 100)
    assert refusal(again, 6, count=3).error_code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert isinstance(again.produce(12), ProducerStateEntry)


def test_loading_drops_expired_producers_and_keeps_empty_entries_empty() -> None:
    empty = ProducerStateEntry(9, 1, -1, 5_000)
    decoded = decode_snapshot(encode_snapshot([entry(7), empty]))
    assert decoded[1] == empty and decoded[0].batches[0] == BatchMetadata(10, 55, 3, 1_234)
    state = ProducerStateManager(producer_id_expiration_ms=1_000)
    state.load(decoded, now_ms=3_000, end_offset=60)
    assert list(state.producers) == [9]


@pytest.mark.parametrize(("mutate", "message"), [
    (lambda d: d[:1], "Snapshot failed schema validation"),
    (lambda d: b"\x00\x02" + d[2:], "Snapshot contained an unknown file version 2"),
    (lambda d: d[:-1] + bytes([d[-1] ^ 1]), "Snapshot is corrupt (CRC is no longer valid)"),
    (lambda d: d[:20], "Snapshot failed schema validation"),
])
def test_corrupt_snapshots_are_refused(mutate, message: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(CorruptSnapshotError, match=message.replace("(", r"\(").replace(")", r"\)")):
        decode_snapshot(mutate(encode_snapshot([entry(7)])))


def test_snapshot_file_names() -> None:
    assert snapshot_file_name(42) == "00000000000000000042.snapshot"
    assert snapshot_offset("00000000000000000042.snapshot") == 42
    with pytest.raises(ValueError, match="not a producer snapshot"):
        snapshot_offset("00000000000000000042.log")
