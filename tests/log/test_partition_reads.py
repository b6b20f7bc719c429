"""The read path's decisions over a real partition log: isolation bounds, offset range,
the KIP-74 byte budget, ListOffsets' answers and DeleteRecords' target."""

from __future__ import annotations

import errno
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pykraft.log.partition_reads import (
    EARLIEST_LOCAL_TIMESTAMP,
    EARLIEST_PENDING_UPLOAD_TIMESTAMP,
    EARLIEST_TIMESTAMP,
    LATEST_TIERED_TIMESTAMP,
    LATEST_TIMESTAMP,
    MAX_TIMESTAMP,
    FetchIsolation,
    ListedOffset,
    PartitionFetch,
    PartitionRead,
    TimestampWalk,
    delete_records_target,
    fetch_isolation,
    list_offset,
    read_partition,
    read_partitions,
    records_size,
    walked_offset,
)
from pykraft.messages.splice import Splice
from pykraft.protocol.errors import ErrorCode
from pykraft.records.batch import encode_batch, iter_batches, records_field
from pykraft.storage.log_config import LogConfig
from pykraft.storage.partition_log import PartitionLog

HW = FetchIsolation.HIGH_WATERMARK


@dataclass
class Leader:
    """A leader replica as the ReplicaManager shows it, over a real log."""

    log: PartitionLog
    high_watermark: int
    leader_epoch: int = 0

    @property
    def log_start_offset(self) -> int:
        return self.log.log_start_offset

    @property
    def log_end_offset(self) -> int:
        return self.log.log_end_offset

    @property
    def last_stable_offset(self) -> int:
        return self.high_watermark  # no transactions in these logs


def _batch(offset: int, timestamp: int, records: int = 1, epoch: int = 0,
           size: int = 8) -> bytes:
    return encode_batch(offset, [(None, bytes([i]) * size) for i in range(records)],
                        partition_leader_epoch=epoch, timestamp=timestamp)


@pytest.fixture
def log(tmp_path: Path) -> Iterator[PartitionLog]:
    with PartitionLog.open(tmp_path / "t-0", LogConfig(), now_ms=0) as opened:
        yield opened


def _fill(log: PartitionLog, timestamps: list[int], *, epoch: int = 0) -> list[bytes]:
    """One single-record batch per timestamp; returns the batches."""
    batches = []
    for ts in timestamps:
        batch = _batch(log.log_end_offset, ts, epoch=epoch)
        log.append(batch, now_ms=0)
        batches.append(batch)
    return batches


def _offsets(records: bytes | Splice) -> list[int]:
    return [b.base_offset for b in iter_batches(records_field(records))]


def test_isolation_of_replicas_and_consumers() -> None:
    assert fetch_isolation(3, 0) is FetchIsolation.LOG_END
    assert fetch_isolation(-1, 0) is FetchIsolation.HIGH_WATERMARK
    assert fetch_isolation(-1, 1) is FetchIsolation.TXN_COMMITTED


def test_consumers_read_up_to_the_high_watermark_replicas_to_the_log_end(
        log: PartitionLog) -> None:
    _fill(log, [10, 20, 30, 40])
    leader = Leader(log, high_watermark=2)
    for isolation in (HW, FetchIsolation.TXN_COMMITTED):
        read = read_partition(leader, 0, 1 << 20, isolation=isolation, min_one_batch=True)
        assert (_offsets(read.records), read.high_watermark, read.last_stable_offset,
                read.log_start_offset) == ([0, 1], 2, 2, 0)
    replica = read_partition(leader, 0, 1 << 20, isolation=FetchIsolation.LOG_END,
                             min_one_batch=True)
    assert _offsets(replica.records) == [0, 1, 2, 3]


def test_an_offset_between_the_high_watermark_and_the_log_end_is_not_out_of_range(
        log: PartitionLog) -> None:
    _fill(log, [10, 20, 30])
    leader = Leader(log, high_watermark=1)
    for offset in (1, 2, 3):
        read = read_partition(leader, offset, 1 << 20, isolation=HW, min_one_batch=True)
        assert read == PartitionRead(ErrorCode.NONE, b"", 1, 1, 0, 3)
    for offset in (4, -1):
        read = read_partition(leader, offset, 1 << 20, isolation=HW, min_one_batch=True)
        assert read == PartitionRead(ErrorCode.OFFSET_OUT_OF_RANGE)  # -1 offsets


def test_below_the_log_start_is_out_of_range(log: PartitionLog) -> None:
    _fill(log, [10, 20, 30])
    log.increment_log_start_offset(2, high_watermark=3)
    leader = Leader(log, high_watermark=3)
    assert read_partition(leader, 1, 100, isolation=HW, min_one_batch=True).error == (
        ErrorCode.OFFSET_OUT_OF_RANGE)
    assert _offsets(read_partition(leader, 2, 1 << 20, isolation=HW,
                                   min_one_batch=True).records) == [2]


def test_the_first_batch_is_whole_then_the_budget_holds(tmp_path: Path) -> None:
    """KIP-74: a batch larger than every limit still comes back first; the partitions
    after it get what is left of max_bytes (nothing here)."""
    logs = {}
    for name in ("a", "b"):
        logs[name] = PartitionLog.open(tmp_path / f"{name}-0", LogConfig(), now_ms=0)
        logs[name].append(_batch(0, 10, records=4, size=100), now_ms=0)
    big = logs["a"].size
    leaders = {name: Leader(log, high_watermark=4) for name, log in logs.items()}
    wanted = [PartitionFetch("a", 0, 10), PartitionFetch("b", 0, 10)]
    reads = read_partitions(wanted, leaders.__getitem__, max_bytes=10, isolation=HW)
    assert [records_size(r.records) for r in reads] == [big, 0]
    assert [r.error for r in reads] == [ErrorCode.NONE] * 2
    # with room for both, each partition is limited by its own partition_max_bytes
    wanted = [PartitionFetch("a", 0, big), PartitionFetch("b", 0, big - 1)]
    reads = read_partitions(wanted, leaders.__getitem__, max_bytes=10 * big, isolation=HW)
    assert [records_size(r.records) for r in reads] == [big, big - 1]
    for log in logs.values():
        log.close()


def test_refused_partitions_keep_their_place(log: PartitionLog) -> None:
    _fill(log, [10])
    leader = Leader(log, high_watermark=1)

    def resolve(key: str) -> Leader | ErrorCode:
        return leader if key == "ok" else ErrorCode.NOT_LEADER_OR_FOLLOWER

    reads = read_partitions([PartitionFetch("no", 0, 100), PartitionFetch("ok", 0, 100)],
                            resolve, max_bytes=100, isolation=HW)
    assert reads[0] == PartitionRead(ErrorCode.NOT_LEADER_OR_FOLLOWER)
    assert _offsets(reads[1].records) == [0]


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(sizes=st.lists(st.integers(1, 300), min_size=1, max_size=5),
       max_bytes=st.integers(0, 2000), partition_max=st.integers(0, 800))
def test_a_fetch_never_exceeds_max_bytes_but_for_one_whole_batch(
        tmp_path_factory: pytest.TempPathFactory, sizes: list[int], max_bytes: int,
        partition_max: int) -> None:
    directory = tmp_path_factory.mktemp("budget")
    logs = []
    for number, size in enumerate(sizes):
        log = PartitionLog.open(directory / f"p-{number}", LogConfig(), now_ms=0)
        log.append(_batch(0, 10, size=size), now_ms=0)
        log.append(_batch(1, 10, size=size), now_ms=0)
        logs.append(log)
    leaders = [Leader(log, high_watermark=2) for log in logs]
    wanted = [PartitionFetch(number, 0, partition_max) for number in range(len(logs))]
    reads = read_partitions(wanted, leaders.__getitem__, max_bytes=max_bytes, isolation=HW)
    total = sum(records_size(r.records) for r in reads)
    first = next((r for r in reads if records_size(r.records)), None)
    if first is None:
        assert total == 0
    else:
        first_batch = len(_batch(0, 10, size=sizes[reads.index(first)]))
        assert total <= max(max_bytes, first_batch)
        assert all(records_size(r.records) <= partition_max for r in reads if r is not first)
    # left in the files, the same bytes are answered
    in_files = read_partitions(wanted, leaders.__getitem__, max_bytes=max_bytes,
                               isolation=HW, in_files=True)
    assert [records_field(r.records) for r in in_files] == [r.records for r in reads]
    for log in logs:
        log.close()


def test_list_offsets_special_timestamps(log: PartitionLog) -> None:
    _fill(log, [100, 300, 200], epoch=0)
    _fill(log, [250], epoch=2)
    leader = Leader(log, high_watermark=4, leader_epoch=2)
    assert list_offset(leader, EARLIEST_TIMESTAMP, isolation=HW) == ListedOffset(
        ErrorCode.NONE, -1, 0, 0)
    assert list_offset(leader, EARLIEST_LOCAL_TIMESTAMP, isolation=HW) == ListedOffset(
        ErrorCode.NONE, -1, 0, 0)
    assert list_offset(leader, LATEST_TIMESTAMP, isolation=HW) == ListedOffset(
        ErrorCode.NONE, -1, 4, 2)
    assert list_offset(leader, MAX_TIMESTAMP, isolation=HW) == ListedOffset(
        ErrorCode.NONE, 300, 1, 0)
    assert list_offset(leader, LATEST_TIERED_TIMESTAMP, isolation=HW) == ListedOffset(
        ErrorCode.NONE)
    assert list_offset(leader, EARLIEST_PENDING_UPLOAD_TIMESTAMP, isolation=HW) == (
        ListedOffset(ErrorCode.NONE))  # nothing is tiered (KIP-1023)
    # by timestamp: the first record at or after it
    assert list_offset(leader, 150, isolation=HW) == ListedOffset(ErrorCode.NONE, 300, 1, 0)
    assert list_offset(leader, 240, isolation=HW) == ListedOffset(ErrorCode.NONE, 300, 1, 0)
    assert list_offset(leader, 301, isolation=HW) == ListedOffset(ErrorCode.NONE)
    log.increment_log_start_offset(3, high_watermark=4)
    assert list_offset(leader, EARLIEST_TIMESTAMP, isolation=HW) == ListedOffset(
        ErrorCode.NONE, -1, 3, 2)


def test_list_offsets_hides_what_consumers_cannot_fetch_yet(log: PartitionLog) -> None:
    _fill(log, [100, 200, 300])
    leader = Leader(log, high_watermark=1)
    assert _walked(leader, LATEST_TIMESTAMP, isolation=HW).offset == 1
    assert _walked(leader, LATEST_TIMESTAMP, isolation=None).offset == 3  # a replica
    assert list_offset(leader, 200, isolation=HW) == ListedOffset(ErrorCode.NONE)
    assert _walked(leader, 200, isolation=None).offset == 1
    assert list_offset(leader, MAX_TIMESTAMP, isolation=HW) == ListedOffset(ErrorCode.NONE)


def test_a_new_leader_behind_its_epoch_start_answers_offset_not_available(
        log: PartitionLog) -> None:
    """Trap 20: the epoch-3 leader's first batch is at 2 while its HW is still 1."""
    _fill(log, [100, 200])
    _fill(log, [300], epoch=3)
    leader = Leader(log, high_watermark=1, leader_epoch=3)
    assert list_offset(leader, LATEST_TIMESTAMP, isolation=HW) == ListedOffset(
        ErrorCode.OFFSET_NOT_AVAILABLE)
    assert list_offset(leader, 250, isolation=HW) == ListedOffset(
        ErrorCode.OFFSET_NOT_AVAILABLE)
    assert _walked(leader, EARLIEST_TIMESTAMP).offset == 0
    assert _walked(leader, LATEST_TIMESTAMP, isolation=None).offset == 3
    leader.high_watermark = 3
    assert _walked(leader, LATEST_TIMESTAMP, isolation=HW).offset == 3


def test_delete_records_target(log: PartitionLog) -> None:
    _fill(log, [1, 2, 3])
    leader = Leader(log, high_watermark=2)
    assert delete_records_target(leader, -1) == 2
    assert delete_records_target(leader, 0) == 0
    assert delete_records_target(leader, 2) == 2
    assert delete_records_target(leader, 3) == ErrorCode.OFFSET_OUT_OF_RANGE
    assert delete_records_target(leader, -2) == ErrorCode.OFFSET_OUT_OF_RANGE


@pytest.mark.parametrize("codec", [1, 2, 3, 4])  # gzip, snappy, lz4, zstd
def test_list_offsets_by_timestamp_inside_a_compressed_batch(log: PartitionLog,
                                                             codec: int) -> None:
    """The batch holding the target is decompressed to find the record (Kafka's
    LogSegment.findOffsetByTimestamp iterates a compressed batch's records)."""
    from kafka.record.default_records import DefaultRecordBatchBuilder

    builder = DefaultRecordBatchBuilder(
        magic=2, compression_type=codec, is_transactional=False, producer_id=-1,
        producer_epoch=-1, base_sequence=-1, batch_size=1 << 20)
    for offset, timestamp in enumerate([100, 200, 300]):
        builder.append(offset, timestamp=timestamp, key=b"k", value=b"v" * 100, headers=[])
    log.append(bytes(builder.build()), now_ms=0)
    leader = Leader(log, high_watermark=3)
    assert isinstance(list_offset(leader, 150, isolation=HW), TimestampWalk)  # walked apart
    assert _walked(leader, 150) == ListedOffset(ErrorCode.NONE, 200, 1, 0)
    assert _walked(leader, 300) == ListedOffset(ErrorCode.NONE, 300, 2, 0)
    assert _walked(leader, 301) == ListedOffset(ErrorCode.NONE)


def _walked(leader: Leader, timestamp: int,
            isolation: FetchIsolation | None = HW) -> ListedOffset:
    """ListOffsets with every batch it must read walked here."""
    answer = list_offset(leader, timestamp, isolation=isolation)
    while isinstance(answer, TimestampWalk):
        answer = walked_offset(leader, answer, answer.walk(), isolation=isolation)
    return answer


def test_a_walked_batch_is_judged_by_the_partition_after_the_walk(log: PartitionLog) -> None:
    """The walk reads a copy of the batch: a log truncated meanwhile neither changes what it
    reads nor lets it show a record the log no longer holds."""
    _fill(log, [10, 20])
    leader = Leader(log, high_watermark=2)
    found = log.batch_for_timestamp(20, 0)
    assert found is not None
    walk = TimestampWalk(*found, timestamp=20, after=0)
    log.truncate_to(1, now_ms=0)
    leader.high_watermark = 1
    assert walk.walk() == (20, 1, 0)
    assert walked_offset(leader, walk, walk.walk(), isolation=HW) == ListedOffset(ErrorCode.NONE)


def test_an_unreadable_segment_is_a_storage_error_of_its_partition(
        log: PartitionLog, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An I/O error reading one partition is KAFKA_STORAGE_ERROR for it alone (Kafka's
    IOException on read), reported to ``failed``; the next partition is still read."""
    _fill(log, [10])
    with PartitionLog.open(tmp_path / "u-0", LogConfig(), now_ms=0) as broken:
        _fill(broken, [10])

        def unreadable(*_: object, **__: object) -> None:
            raise OSError(errno.EIO, "Input/output error")

        monkeypatch.setattr(broken.active, "locate", unreadable)
        leaders = {"ok": Leader(log, high_watermark=1), "bad": Leader(broken, high_watermark=1)}
        wanted = [PartitionFetch("bad", 0, 100), PartitionFetch("ok", 0, 100)]
        for in_files in (False, True):
            assert read_partitions(wanted, leaders.__getitem__, max_bytes=100, isolation=HW,
                                   in_files=in_files)[0] == PartitionRead(
                ErrorCode.KAFKA_STORAGE_ERROR)
        failures: list[tuple[PartitionLog, Exception]] = []
        reads = read_partitions(
            wanted, leaders.__getitem__, max_bytes=100, isolation=HW,
            failed=lambda part, exc: failures.append((part.log, exc)))
    assert reads[0] == PartitionRead(ErrorCode.KAFKA_STORAGE_ERROR)
    assert _offsets(reads[1].records) == [0]
    assert [(part_log, type(exc)) for part_log, exc in failures] == [(broken, OSError)]
