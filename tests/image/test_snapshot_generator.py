"""The snapshot generator: when a listener's committed image is snapshotted, at which id,
with what content, and that the write happens in a later node step, never inside the
listener callback."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pykraft.errors import RaftError
from pykraft.image import ImageLoader, MetadataImage, SnapshotPolicy, snapshot_generator
from pykraft.image.snapshot_generator import SnapshotGenerator
from pykraft.raft.log import OffsetAndEpoch
from pykraft.records.batch import RecordBatch, encode_batch, iter_batches
from pykraft.records.metadata import (
    BeginTransactionRecord,
    EndTransactionRecord,
    FeatureLevelRecord,
    TopicRecord,
    encode_metadata_record,
)


@dataclass
class FakeCore:
    """Records snapshot writes; ``inside_callback`` is set while a listener callback runs."""

    written: dict[OffsetAndEpoch, list[bytes]] = field(default_factory=dict)
    refuse: bool = False
    inside_callback: bool = False

    def create_snapshot(self, now_ms: int, snapshot_id: OffsetAndEpoch,
                        batches: Iterable[Sequence[bytes]], *,
                        timestamp_ms: int | None = None) -> None:
        assert not self.inside_callback, "the core was re-entered from a listener callback"
        if self.refuse:
            raise RaftError(f"cannot snapshot at {snapshot_id}")
        self.written[snapshot_id] = [value for batch in batches for value in batch]


@dataclass
class Harness:
    """A listener replaying batches into an image, with a generator on a fake node."""

    policy: SnapshotPolicy
    core: FakeCore = field(default_factory=FakeCore)
    now: int = 1_000
    deferred: list[Callable[[], None]] = field(default_factory=list)
    loader: ImageLoader = field(default_factory=ImageLoader)
    next_offset: int = 0

    def __post_init__(self) -> None:
        self.generator = SnapshotGenerator(self.policy)
        self.steps = 0

    def attach(self) -> None:
        self.generator.attach(self.core, step=self._step, defer=self.deferred.append,
                              clock=lambda: self.now)

    def _step(self, action: Callable[[int], object]) -> None:
        self.steps += 1
        action(self.now)

    def commit(self, *records: object, epoch: int = 1) -> RecordBatch:
        values = [encode_metadata_record(r, 0) for r in records]
        data = encode_batch(self.next_offset, [(None, v) for v in values],
                            partition_leader_epoch=epoch, timestamp=self.now)
        batch = next(iter_batches(data))
        self.next_offset = batch.last_offset + 1
        self.core.inside_callback = True
        try:
            image = self.loader.load_batch(batch)
            self.generator.committed(image, batch)
        finally:
            self.core.inside_callback = False
        return batch

    def run_deferred(self) -> None:
        pending = list(self.deferred)
        self.deferred.clear()  # the generator holds this list's append
        for callback in pending:
            callback()


def topic(index: int) -> TopicRecord:
    return TopicRecord(name=f"t{index}", topic_id=uuid.UUID(int=index + 1))


MV = FeatureLevelRecord(name="metadata.version", feature_level=19)


def replayed(values: list[bytes]) -> MetadataImage:
    loader = ImageLoader()
    data = encode_batch(0, [(None, v) for v in values], partition_leader_epoch=0, timestamp=0)
    return loader.load_batch(next(iter_batches(data)))


def test_bytes_threshold_snapshots_the_image_at_the_batch_end_in_a_later_step() -> None:
    h = Harness(SnapshotPolicy(max_bytes_between=200, max_interval_ms=0))
    h.attach()
    h.commit(MV)
    assert h.deferred == []
    batch = h.commit(topic(1), topic(2), topic(3), epoch=3)
    assert len(h.deferred) == 1 and h.core.written == {}  # decided, not yet written
    image = h.loader.image
    h.commit(topic(4))  # more batches may arrive before the deferred write runs
    h.run_deferred()
    snapshot_id = OffsetAndEpoch(batch.last_offset + 1, 3)
    assert list(h.core.written) == [snapshot_id] == h.generator.written
    content = replayed(h.core.written[snapshot_id])
    assert content.topics == image.topics and "t4" not in content.topics.by_name
    assert h.steps == 1


def test_below_the_thresholds_nothing_is_written() -> None:
    h = Harness(SnapshotPolicy(max_bytes_between=1 << 20, max_interval_ms=60_000))
    h.attach()
    for index in range(5):
        h.commit(topic(index))
        h.now += 1_000
    assert h.deferred == [] and h.core.written == {}


def test_interval_counts_from_attach_and_needs_a_new_byte() -> None:
    h = Harness(SnapshotPolicy(max_bytes_between=1 << 20, max_interval_ms=60_000))
    h.now = 10_000_000  # a wall clock far from zero: the first commit must not trigger
    h.attach()
    h.commit(MV)
    assert h.deferred == []
    h.now += 60_000
    h.commit(topic(1))
    h.run_deferred()
    assert len(h.core.written) == 1
    h.now += 120_000
    h.run_deferred()
    assert len(h.core.written) == 1  # time alone, with no new record, takes no snapshot


def test_no_snapshot_inside_a_metadata_transaction() -> None:
    h = Harness(SnapshotPolicy(max_bytes_between=1, max_interval_ms=0))
    h.attach()
    h.commit(BeginTransactionRecord(name="bootstrap"), MV)
    h.commit(topic(1))
    assert h.deferred == []  # the image lags the log until the transaction ends
    end = h.commit(EndTransactionRecord())
    h.run_deferred()
    assert list(h.core.written) == [OffsetAndEpoch(end.last_offset + 1, 1)]
    assert "t1" in replayed(h.core.written[OffsetAndEpoch(end.last_offset + 1, 1)]) \
        .topics.by_name


def test_one_write_at_a_time_and_a_loaded_snapshot_cancels_the_pending_one() -> None:
    h = Harness(SnapshotPolicy(max_bytes_between=1, max_interval_ms=0))
    h.attach()
    h.commit(MV)
    h.commit(topic(1))
    assert len(h.deferred) == 1  # the second batch waits for the first write
    h.generator.loaded()
    h.run_deferred()
    assert h.core.written == {} and h.steps == 0
    h.commit(topic(2))
    h.run_deferred()
    assert len(h.core.written) == 1


def test_a_large_image_is_encoded_over_several_turns_then_written_in_one_step(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(snapshot_generator, "ENCODE_SLICE", 3)
    h = Harness(SnapshotPolicy(max_bytes_between=1, max_interval_ms=0))
    h.attach()
    batch = h.commit(MV, *(topic(i) for i in range(7)))  # 8 records: 3 + 3 + 2
    turns = 0
    while h.deferred:
        h.run_deferred()
        turns += 1
    assert turns == 3 and h.steps == 1
    values = h.core.written[OffsetAndEpoch(batch.last_offset + 1, 1)]
    assert len(values) == 8 and replayed(values).topics == h.loader.image.topics


def test_a_snapshot_loaded_while_encoding_drops_the_half_encoded_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(snapshot_generator, "ENCODE_SLICE", 3)
    h = Harness(SnapshotPolicy(max_bytes_between=1, max_interval_ms=0))
    h.attach()
    h.commit(MV, *(topic(i) for i in range(7)))
    h.run_deferred()  # the first slice
    h.generator.loaded()
    while h.deferred:
        h.run_deferred()
    assert h.core.written == {} and h.steps == 0


def test_nothing_is_scheduled_before_attach() -> None:
    h = Harness(SnapshotPolicy(max_bytes_between=1, max_interval_ms=0))
    h.commit(MV)
    assert h.deferred == []
    h.attach()
    h.commit(topic(1))
    assert len(h.deferred) == 1


def test_a_refused_write_is_skipped_and_the_next_threshold_tries_again(
    caplog: pytest.LogCaptureFixture,
) -> None:
    h = Harness(SnapshotPolicy(max_bytes_between=1, max_interval_ms=0))
    h.attach()
    h.core.refuse = True
    h.commit(MV)
    h.run_deferred()
    assert h.core.written == {} and h.generator.written == []
    assert "snapshot_skipped" in caplog.text
    h.core.refuse = False
    h.commit(topic(1))
    h.run_deferred()
    assert len(h.generator.written) == 1


@settings(max_examples=50, deadline=None)
@given(sizes=st.lists(st.integers(1, 6), min_size=1, max_size=30),
       threshold=st.integers(1, 2_000))
def test_every_snapshot_equals_the_image_at_its_offset(sizes: list[int], threshold: int) -> None:
    h = Harness(SnapshotPolicy(max_bytes_between=threshold, max_interval_ms=0))
    h.attach()
    first = h.commit(MV)
    images = {first.last_offset + 1: h.loader.image}
    counter = 0
    for size in sizes:
        batch = h.commit(*(topic(counter + i) for i in range(size)))
        counter += size
        images[batch.last_offset + 1] = h.loader.image
        h.run_deferred()
    assert h.generator.written == sorted(h.core.written)
    for snapshot_id, values in h.core.written.items():
        assert replayed(values).topics == images[snapshot_id.offset].topics
