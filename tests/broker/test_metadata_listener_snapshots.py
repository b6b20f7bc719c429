"""A broker-only node's listener snapshots its image through its generator, and a snapshot
the core hands it restarts both the image and the generator's byte count."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Sequence

from pykraft.broker.metadata_listener import BrokerMetadataListener
from pykraft.image import SnapshotPolicy
from pykraft.image.loader import image_from_snapshot
from pykraft.image.snapshot_generator import SnapshotGenerator
from pykraft.raft.log import OffsetAndEpoch
from pykraft.records.batch import RecordBatch, encode_batch, iter_batches
from pykraft.records.metadata import FeatureLevelRecord, TopicRecord, encode_metadata_record
from pykraft.records.snapshot import snapshot_batches


class FakeCore:
    """Keeps written snapshots as the core would (header, data, footer batches)."""

    def __init__(self) -> None:
        self.snapshots: dict[OffsetAndEpoch, list[RecordBatch]] = {}

    def create_snapshot(self, now_ms: int, snapshot_id: OffsetAndEpoch,
                        batches: Iterable[Sequence[bytes]], *,
                        timestamp_ms: int | None = None) -> None:
        data = b"".join(snapshot_batches(epoch=snapshot_id.epoch,
                                         last_contained_timestamp=timestamp_ms or 0,
                                         batches=batches, clock=lambda: 0))
        self.snapshots[snapshot_id] = list(iter_batches(data))

    def read_snapshot(self, snapshot_id: OffsetAndEpoch) -> list[RecordBatch]:
        return self.snapshots[snapshot_id]


def batch_of(base_offset: int, records: list[object], epoch: int = 2) -> RecordBatch:
    data = encode_batch(base_offset, [(None, encode_metadata_record(r)) for r in records],
                        partition_leader_epoch=epoch, timestamp=1000)
    return next(iter_batches(data))


def topic(name: str, index: int) -> TopicRecord:
    return TopicRecord(name=name, topic_id=uuid.UUID(int=index))


def listening(threshold: int) -> tuple[BrokerMetadataListener, FakeCore,
                                       list[Callable[[], None]]]:
    core = FakeCore()
    deferred: list[Callable[[], None]] = []
    listener = BrokerMetadataListener(SnapshotGenerator(SnapshotPolicy(threshold, 0)))
    listener.snapshots.attach(core.read_snapshot)
    assert listener.generator is not None
    listener.generator.attach(core, step=lambda action: action(0), defer=deferred.append,
                              clock=lambda: 0)
    return listener, core, deferred


def test_snapshot_written_from_the_broker_image_loads_back_equal() -> None:
    listener, core, deferred = listening(threshold=150)
    listener.handle_commit(batch_of(0, [FeatureLevelRecord(name="metadata.version",
                                                           feature_level=19)]))
    listener.handle_commit(batch_of(1, [topic("a", 1), topic("b", 2)]))
    assert core.snapshots == {} and len(deferred) == 1
    deferred.pop()()
    (snapshot_id,) = core.snapshots
    assert snapshot_id == OffsetAndEpoch(3, 2)
    assert image_from_snapshot(core.snapshots[snapshot_id], snapshot_id) == listener.image


def test_loaded_snapshot_restarts_the_image_and_the_byte_count() -> None:
    listener, core, deferred = listening(threshold=150)
    listener.handle_commit(batch_of(0, [topic("old", 9), topic("older", 8)]))  # 125 bytes
    assert deferred == []
    core.snapshots[OffsetAndEpoch(40, 2)] = [batch_of(0, [topic("x", 1), topic("y", 2)])]
    listener.handle_load_snapshot(OffsetAndEpoch(40, 2))
    assert set(listener.image.topics.by_name) == {"x", "y"}
    assert listener.committed_offset == 39
    listener.handle_commit(batch_of(40, [topic("z", 3)]))  # 90 bytes: 215 without the reset
    assert deferred == []  # the bytes before the snapshot no longer count
    assert set(listener.image.topics.by_name) == {"x", "y", "z"}
