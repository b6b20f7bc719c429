"""The segmented metadata log: append, flush, read, truncate, roll, delete, reopen."""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

from pykraft.errors import CorruptRecordError, OffsetOutOfRangeError, StorageError
from pykraft.ids import ONE_UUID, uuid_to_str
from pykraft.records.batch import encode_batch, iter_batches
from pykraft.storage.leader_epoch import encode_epoch_checkpoint
from pykraft.storage.metadata_log import MetadataLog
from pykraft.storage.segment import segment_name


def batch(base: int, count: int = 1, epoch: int = 1, size: int = 10) -> bytes:
    return encode_batch(base, [(None, bytes([base % 256]) * size)] * count,
                        partition_leader_epoch=epoch, timestamp=1000 + base)


def log_files(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(".log"))


@pytest.fixture
def log_dir(tmp_path: Path) -> Path:
    return tmp_path / "__cluster_metadata-0"


def test_open_empty_directory_creates_first_segment(log_dir: Path) -> None:
    with MetadataLog.open(log_dir) as log:
        assert (log.log_start_offset, log.log_end_offset, log.flushed_offset) == (0, 0, 0)
        assert log.last_epoch is None
        assert log.read(0, 100) == b""
    assert log_files(log_dir) == [segment_name(0)]
    assert (log_dir / "partition.metadata").read_text() == "version: 0\ntopic_id: " + uuid_to_str(
        ONE_UUID)


def test_append_flush_read(log_dir: Path) -> None:
    b0, b1, b2 = batch(0, 3), batch(3, 2, epoch=2), batch(5, 1, epoch=2)
    with MetadataLog.open(log_dir) as log:
        assert log.append(b0 + b1) == 5
        assert log.append(b2) == 6
        assert log.flushed_offset == 0
        assert log.flush() == 6
        assert log.flush() == 6  # nothing new: no-op
        assert log.flushed_offset == 6
        assert log.last_epoch == 2
        assert log.epoch_entries == [(1, 0), (2, 3)]
        assert log.read(0, 10**6) == b0 + b1 + b2
        assert log.read(1, 10**6) == b0 + b1 + b2  # from the batch holding offset 1
        assert log.read(4, 10**6) == b1 + b2
        assert log.read(0, 1) == b0  # at least one whole batch
        assert log.read(0, len(b0) + len(b1) - 1) == b0
        assert log.read(0, len(b0) + len(b1)) == b0 + b1
        assert log.read(6, 100) == b""
        with pytest.raises(OffsetOutOfRangeError):
            log.read(7, 100)
        assert log.end_offset_for_epoch(1) == (1, 3)
        assert log.end_offset_for_epoch(2) == (2, 6)
        assert log.end_offset_for_epoch(3) == (-1, -1)
    assert (log_dir / "leader-epoch-checkpoint").read_bytes() == b"0\n2\n1 0\n2 3\n"


def _flip_last(data: bytes) -> bytes:
    return data[:-1] + bytes([data[-1] ^ 1])


def test_group_commit_one_fsync_per_flush(log_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    synced: list[int] = []
    real_fsync = os.fsync

    def counting_fsync(fd: int) -> None:
        synced.append(fd)
        real_fsync(fd)

    with MetadataLog.open(log_dir) as log:
        log.append(batch(0))
        log.flush()
        monkeypatch.setattr(os, "fsync", counting_fsync)
        for offset in range(1, 11):
            log.append(batch(offset))
        assert synced == []  # appends never fsync
        assert log.flush() == 11
        # one fsync of the segment for ten appends, and one of each index (Kafka's
        # LogSegment.flush); the epoch checkpoint is unchanged
        assert len(synced) == 3
        (log_dir / "leader-epoch-checkpoint").unlink()
        assert log.flush() == 11
        assert len(synced) == 3  # nothing new: no fsync and no checkpoint rewrite
        assert not (log_dir / "leader-epoch-checkpoint").exists()


def test_roll_makes_the_old_segment_durable(log_dir: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    synced: list[int] = []
    real_fsync = os.fsync

    def counting_fsync(fd: int) -> None:
        synced.append(fd)
        real_fsync(fd)

    with MetadataLog.open(log_dir, segment_bytes=2 * len(batch(0))) as log:
        log.append(batch(0))
        log.flush()
        monkeypatch.setattr(os, "fsync", counting_fsync)
        log.append(batch(1))
        assert synced == []
        log.append(batch(2))  # rolls: the unflushed segment 0 and its indexes are fsynced
        assert log.segment_base_offsets == [0, 2]
        assert len(synced) == 3
        log.flush()
        assert len(synced) == 7  # then only the new segment, its indexes and the directory


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (batch(3), "base offset 3 does not continue the log at 2"),
        (batch(2, epoch=0), "leader epoch 0 is below the previous epoch 1"),
        (batch(2)[:-1], "truncated batch: 78 bytes declared, 77 present"),
        (batch(2)[:30], "truncated batch header"),
        (_flip_last(batch(2)), "CRC mismatch"),
        (batch(2) + batch(3)[:-3], "truncated batch"),
        (batch(2) + batch(5), "base offset 5 does not continue the log at 3"),
    ],
    ids=["gap", "epoch", "short", "header", "crc", "second-short", "second-gap"],
)
def test_append_rejects_bad_batches_without_writing(
    log_dir: Path, data: bytes, message: str
) -> None:
    first = batch(0, 2, epoch=1)
    with MetadataLog.open(log_dir) as log:
        log.append(first)
        with pytest.raises(CorruptRecordError, match=message):
            log.append(data)
        assert log.log_end_offset == 2
        assert log.read(0, 10**6) == first
    assert (log_dir / segment_name(0)).stat().st_size == len(first)


def test_roll_by_size_and_explicitly(log_dir: Path) -> None:
    size = len(batch(0))
    with MetadataLog.open(log_dir, segment_bytes=2 * size) as log:
        for offset in range(5):
            log.append(batch(offset))
        assert log.segment_base_offsets == [0, 2, 4]
        log.roll()
        log.roll()  # the new active segment is empty: no second roll
        assert log.segment_base_offsets == [0, 2, 4, 5]
        log.append(batch(5))
        assert log.read(1, 3 * size) == batch(1) + batch(2) + batch(3)  # across segments
        assert log.read(0, 10**6) == b"".join(batch(i) for i in range(6))
        log.flush()
    assert log_files(log_dir) == [segment_name(o) for o in (0, 2, 4, 5)]


def test_truncate_to_is_batch_aligned_and_durable(log_dir: Path) -> None:
    size = len(batch(0, 3))
    with MetadataLog.open(log_dir, segment_bytes=size) as log:
        log.append(batch(0, 3, epoch=1))
        log.append(batch(3, 3, epoch=2))
        log.append(batch(6, 3, epoch=4))
        log.flush()
        assert log.segment_base_offsets == [0, 3, 6]
        assert log.truncate_to(9) == 9
        assert log.truncate_to(7) == 6  # inside the batch [6, 8]
        assert log.segment_base_offsets == [0, 3, 6]
        assert log.epoch_entries == [(1, 0), (2, 3)]
        assert (log_dir / "leader-epoch-checkpoint").read_bytes() == b"0\n2\n1 0\n2 3\n"
        assert log.truncate_to(1) == 0
        assert log.segment_base_offsets == [0]
        assert (log.log_end_offset, log.flushed_offset, log.last_epoch) == (0, 0, None)
        log.append(batch(0, 1, epoch=7))
        assert log.epoch_entries == [(7, 0)]
    assert log_files(log_dir) == [segment_name(0)]


def test_delete_before_and_log_start(log_dir: Path) -> None:
    size = len(batch(0))
    with MetadataLog.open(log_dir, segment_bytes=size) as log:
        for offset in range(4):
            log.append(batch(offset, epoch=1 + offset // 2))
        assert log.delete_before(2) == 2
        assert log.segment_base_offsets == [2, 3]
        assert log.log_start_offset == 2
        assert log.epoch_entries == [(2, 2)]
        with pytest.raises(OffsetOutOfRangeError):
            log.read(1, 100)
        with pytest.raises(StorageError, match="below the log start"):
            log.truncate_to(1)
        with pytest.raises(StorageError, match="must lie between"):
            log.log_start_offset = 1
        with pytest.raises(StorageError, match="must lie between"):
            log.log_start_offset = 5
        assert log.delete_before(4) == 1  # the active segment is never deleted
        assert log.segment_base_offsets == [3]
        assert log.read(4, 100) == b""
        assert log.epoch_entries == []  # nothing left after the start: no epochs
        log.flush()
    assert log_files(log_dir) == [segment_name(3)]
    with MetadataLog.open(log_dir) as log:
        assert log.log_start_offset == 3  # the snapshot layer would move it to 4
        assert log.epoch_entries == [(2, 3)]
        log.log_start_offset = 4
        assert log.epoch_entries == []


def test_truncate_fully_and_start_at(log_dir: Path) -> None:
    with MetadataLog.open(log_dir) as log:
        log.append(batch(0, 5))
        log.truncate_fully_and_start_at(100)
        assert (log.log_start_offset, log.log_end_offset, log.last_epoch) == (100, 100, None)
        log.append(batch(100, epoch=3))
        log.flush()
    assert log_files(log_dir) == [segment_name(100)]
    with MetadataLog.open(log_dir) as log:
        assert (log.log_start_offset, log.log_end_offset) == (100, 101)


def test_reopen_restores_state(log_dir: Path) -> None:
    with MetadataLog.open(log_dir, segment_bytes=200) as log:
        for offset in range(0, 30, 3):
            log.append(batch(offset, 3, epoch=1 + offset // 7))
        log.flush()
        state = (log.log_end_offset, log.epoch_entries, log.segment_base_offsets,
                 log.read(0, 10**6))
    with MetadataLog.open(log_dir, segment_bytes=200) as log:
        assert (log.log_end_offset, log.epoch_entries, log.segment_base_offsets,
                log.read(0, 10**6)) == state
        assert log.flushed_offset == log.log_end_offset


def test_side_files_are_kept_leftovers_removed_indexes_rebuilt(log_dir: Path) -> None:
    """As Kafka's loader: other files stay, ``.deleted``/``.cleaned`` leftovers of an
    interrupted operation go, and damaged indexes are rebuilt from the segment."""
    with MetadataLog.open(log_dir) as log:
        log.append(batch(0))
        log.flush()
    kept = ["00000000000000000001.snapshot", "quorum-state",
            "00000000000000000001-0000000001.checkpoint"]
    leftovers = ["00000000000000000009.log.deleted", "00000000000000000009.log.cleaned"]
    indexes = ["00000000000000000000.index", "00000000000000000000.timeindex"]
    for name in kept + leftovers + indexes:
        (log_dir / name).write_bytes(b"junk")
    with MetadataLog.open(log_dir) as log:
        assert log.log_end_offset == 1
        assert log.read(0, 100) == batch(0)
    for name in kept:
        assert (log_dir / name).read_bytes() == b"junk"
    for name in leftovers:
        assert not (log_dir / name).exists()
    assert (log_dir / indexes[1]).read_bytes() == (1000).to_bytes(8, "big") + bytes(4)


def test_bad_names_and_foreign_topic_are_rejected(log_dir: Path) -> None:
    MetadataLog.open(log_dir).close()
    (log_dir / "1.log").write_bytes(b"")
    with pytest.raises(StorageError, match=r"1\.log: not a segment name"):
        MetadataLog.open(log_dir)
    (log_dir / "1.log").unlink()
    (log_dir / "partition.metadata").write_text("version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAg")
    with pytest.raises(StorageError, match="is not the metadata topic"):
        MetadataLog.open(log_dir)


def test_kafka_written_directory_opens(kafka37_dir: Path, tmp_path: Path) -> None:
    copy = tmp_path / "__cluster_metadata-0"
    shutil.copytree(kafka37_dir / "__cluster_metadata-0", copy)
    with MetadataLog.open(copy) as log:
        assert log.log_end_offset == 0
        log.append(batch(0, 1, epoch=1))
        log.flush()
    assert (copy / "leader-epoch-checkpoint").read_bytes() == (
        kafka37_dir / "__cluster_metadata-0" / "leader-epoch-checkpoint").read_bytes()
    assert (copy / "partition.metadata").read_bytes() == (
        kafka37_dir / "__cluster_metadata-0" / "partition.metadata").read_bytes()


def test_closed_log_refuses_work(log_dir: Path) -> None:
    log = MetadataLog.open(log_dir)
    log.close()
    log.close()
    with pytest.raises(StorageError, match="is closed"):
        log.append(batch(0))


# ------------------------------------------------------------------ property-based model


@dataclass(frozen=True)
class ModelBatch:
    base: int
    next: int
    epoch: int
    data: bytes


def expected_entries(batches: list[ModelBatch], log_start: int) -> list[tuple[int, int]]:
    """Where each epoch first appears among the batches from the (batch-aligned) log start."""
    entries: list[tuple[int, int]] = []
    for item in batches:
        if item.base >= log_start and (not entries or entries[-1][0] != item.epoch):
            entries.append((item.epoch, item.base))
    return entries


class LogMachine(RuleBasedStateMachine):
    """Random interleavings against a list-of-batches model of the log."""

    def __init__(self) -> None:
        super().__init__()
        self.tmp = Path(tempfile.mkdtemp())
        self.directory = self.tmp / "__cluster_metadata-0"
        self.batches: list[ModelBatch] = []
        self.log_start = 0
        self.segment_bytes = 1

    @initialize(segment_bytes=st.integers(80, 3000))
    def open_log(self, segment_bytes: int) -> None:
        self.segment_bytes = segment_bytes
        self.log = MetadataLog.open(self.directory, segment_bytes=segment_bytes)

    @property
    def end(self) -> int:
        return self.batches[-1].next if self.batches else self.log_start

    @rule(sizes=st.lists(st.tuples(st.integers(1, 5), st.integers(0, 400)), min_size=1,
                         max_size=3),
          bumps=st.lists(st.sampled_from([0, 0, 1, 3]), min_size=3, max_size=3))
    def append(self, sizes: list[tuple[int, int]], bumps: list[int]) -> None:
        data = b""
        epoch = self.batches[-1].epoch if self.batches else 0
        offset = self.end
        for (count, size), bump in zip(sizes, bumps, strict=False):
            epoch += bump
            raw = encode_batch(offset, [(None, bytes([offset % 251]) * size)] * count,
                               partition_leader_epoch=epoch, timestamp=offset)
            self.batches.append(ModelBatch(offset, offset + count, epoch, raw))
            data += raw
            offset += count
        assert self.log.append(data) == offset

    @rule()
    def flush(self) -> None:
        assert self.log.flush() == self.end
        assert self.log.flushed_offset == self.end
        path = self.directory / "leader-epoch-checkpoint"
        assert path.read_bytes() == encode_epoch_checkpoint(self.log.epoch_entries)

    @rule(data=st.data(), max_bytes=st.integers(0, 3000))
    def read(self, data: st.DataObject, max_bytes: int) -> None:
        offset = data.draw(st.integers(self.log_start, self.end))
        present = [b for b in self.batches if b.next > offset]
        expected = b""
        for item in present:
            if expected and len(expected) + len(item.data) > max_bytes:
                break
            expected += item.data
            if len(expected) >= max_bytes:
                break
        assert self.log.read(offset, max_bytes) == expected

    @rule(data=st.data())
    def truncate(self, data: st.DataObject) -> None:
        offset = data.draw(st.integers(self.log_start, self.end + 2))
        holding = [b for b in self.batches if b.base <= offset < b.next]
        point = holding[0].base if holding else min(offset, self.end)
        assert self.log.truncate_to(offset) == point
        self.batches = [b for b in self.batches if b.base < point]
        assert self.log.flushed_offset <= point

    @rule()
    def roll(self) -> None:
        self.log.roll()

    @precondition(lambda self: self.batches)
    @rule(data=st.data())
    def delete_before(self, data: st.DataObject) -> None:
        candidates = [b.base for b in self.batches if b.base >= self.log_start] + [self.end]
        start = data.draw(st.sampled_from(candidates))
        self.log.delete_before(start)
        self.log_start = start
        bases = self.log.segment_base_offsets
        assert bases[0] <= start
        assert len(bases) == 1 or bases[1] > start

    @rule()
    def reopen(self) -> None:
        self.log.close()
        self.log = MetadataLog.open(self.directory, segment_bytes=self.segment_bytes)
        assert self.log.log_start_offset <= self.log_start
        self.log.log_start_offset = self.log_start  # what the snapshot layer does

    @invariant()
    def matches_model(self) -> None:
        if not hasattr(self, "log"):
            return
        assert self.log.log_end_offset == self.end
        assert self.log.log_start_offset == self.log_start
        assert self.log.epoch_entries == expected_entries(self.batches, self.log_start)
        bases = self.log.segment_base_offsets
        assert log_files(self.directory) == [segment_name(b) for b in bases]
        on_disk = b"".join((self.directory / segment_name(b)).read_bytes() for b in bases)
        present = [b for b in self.batches if b.next > bases[0]]
        assert on_disk == b"".join(b.data for b in present)
        offsets = [item.base_offset for item in iter_batches(on_disk)]
        assert offsets == [b.base for b in present]

    def teardown(self) -> None:
        if hasattr(self, "log"):
            self.log.close()
        shutil.rmtree(self.tmp, ignore_errors=True)


LogMachine.TestCase.settings = settings(max_examples=150, stateful_step_count=30,
                                        deadline=None)
test_log_against_model = LogMachine.TestCase


def test_rolls_by_metadata_log_segment_ms(log_dir: Path) -> None:
    """``metadata.log.segment.ms``: a batch stamped later than the first batch of the active
    segment by more than that rolls, as any partition log does."""
    def stamped(base: int, timestamp: int) -> bytes:
        return encode_batch(base, [(None, b"v")], partition_leader_epoch=1, timestamp=timestamp)

    with MetadataLog.open(log_dir, segment_ms=1000, clock=lambda: 5000) as log:
        log.append(stamped(0, 10_000))
        log.append(stamped(1, 11_000))  # exactly segment.ms later: no roll yet
        assert log.segment_base_offsets == [0]
        log.append(stamped(2, 11_001))
        assert log.segment_base_offsets == [0, 2]
