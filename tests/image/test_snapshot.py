"""Snapshots of images: write/load round trips, batching, the snapshot policy, log replay."""

from __future__ import annotations

import gc
import uuid
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pykraft.errors import ConfigError, CorruptLogError, StorageError
from pykraft.image import (
    MetadataDelta,
    MetadataImage,
    Provenance,
    SnapshotPolicy,
    load_log_directory,
    load_snapshot,
    write_image_snapshot,
)
from pykraft.image.loader import ImageLoader, cyclic_gc_paused, image_from_snapshot
from pykraft.raft.log import OffsetAndEpoch
from pykraft.records.batch import RecordBatch, encode_batch
from pykraft.records.metadata import (
    BrokerEndpoint,
    ConfigRecord,
    FeatureLevelRecord,
    PartitionRecord,
    ProducerIdsRecord,
    RegisterBrokerRecord,
    TopicRecord,
    encode_metadata_record,
)
from pykraft.storage.snapshot_files import SnapshotReader


@st.composite
def images(draw: st.DrawFn) -> MetadataImage:
    mv = draw(st.integers(7, 29))
    records: list[object] = [FeatureLevelRecord(name="metadata.version", feature_level=mv)]
    brokers = draw(st.lists(st.integers(0, 20), unique=True, max_size=5))
    for b in brokers:
        records.append(RegisterBrokerRecord(
            broker_id=b, incarnation_id=uuid.UUID(int=b + 1), broker_epoch=b * 7,
            end_points=(BrokerEndpoint(name="P", host=f"h{b}", port=9000 + b,
                                       security_protocol=0),),
            features=(), rack=draw(st.sampled_from([None, "r1", "r2"])),
            fenced=draw(st.booleans()), in_controlled_shutdown=mv >= 7 and draw(st.booleans()),
            is_migrating_zk_broker=False))
    for index in range(draw(st.integers(0, 4))):
        topic_id = uuid.UUID(int=100 + index)
        records.append(TopicRecord(name=f"topic-{index}", topic_id=topic_id))
        for partition in range(draw(st.integers(1, 4))):
            replicas = tuple(draw(st.lists(st.integers(0, 20), unique=True, min_size=1,
                                           max_size=3)))
            records.append(PartitionRecord(
                partition_id=partition, topic_id=topic_id, replicas=replicas, isr=replicas[:1],
                leader=replicas[0], leader_epoch=draw(st.integers(0, 5)),
                partition_epoch=draw(st.integers(0, 5)),
                directories=(uuid.UUID(int=0),) * len(replicas) if mv >= 17 else ()))
        if draw(st.booleans()):
            records.append(ConfigRecord(resource_type=2, resource_name=f"topic-{index}",
                                        name="retention.ms", value=str(index)))
    if draw(st.booleans()):
        records.append(ProducerIdsRecord(broker_id=0, broker_epoch=0,
                                         next_producer_id=draw(st.integers(0, 10**6))))
    delta = MetadataDelta(MetadataImage())
    for record in records:
        delta.replay(record)
    return delta.apply(Provenance(draw(st.integers(0, 10**6)), draw(st.integers(0, 100)), 123))


@settings(max_examples=40, deadline=None)
@given(image=images(), per_batch=st.integers(1, 7))
def test_snapshot_round_trip(tmp_path_factory: pytest.TempPathFactory, image: MetadataImage,
                             per_batch: int) -> None:
    directory = tmp_path_factory.mktemp("snap")
    path = write_image_snapshot(directory, image, clock=lambda: 5,
                                max_records_per_batch=per_batch)
    p = image.provenance
    assert path.name == f"{p.last_offset + 1:020d}-{p.last_epoch:010d}.checkpoint"
    loaded = load_snapshot(path)
    assert loaded == image
    assert loaded.provenance == p
    with SnapshotReader(path) as reader:
        data = [b for b in reader.batches() if not b.is_control]
    assert all(len(b.records()) <= per_batch for b in data)
    assert sum(len(b.records()) for b in data) == len(image.records())


def test_fixture_bootstrap_checkpoint(kafka37_dir: Path) -> None:
    image = load_snapshot(kafka37_dir / "bootstrap.checkpoint")
    assert image.features.finalized == {"metadata.version": 19}
    assert image.provenance == Provenance(2, 0, 0)


def test_snapshot_needs_provenance(tmp_path: Path) -> None:
    with pytest.raises(StorageError):
        write_image_snapshot(tmp_path, MetadataImage(), clock=lambda: 0)


def test_corrupt_snapshot_is_refused(tmp_path: Path) -> None:
    image = MetadataDelta(MetadataImage())
    image.replay(FeatureLevelRecord(name="metadata.version", feature_level=19))
    path = write_image_snapshot(tmp_path, image.apply(Provenance(9, 1, 0)), clock=lambda: 0)
    data = bytearray(path.read_bytes())
    data[-20] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(CorruptLogError):
        load_snapshot(path)


def test_log_directory_replays_snapshot_then_segments(tmp_path: Path) -> None:
    base = MetadataDelta(MetadataImage())
    base.replay(FeatureLevelRecord(name="metadata.version", feature_level=19))
    write_image_snapshot(tmp_path, base.apply(Provenance(4, 1, 0)), clock=lambda: 0)
    topic = uuid.UUID(int=3)
    old = encode_batch(0, [(None, encode_metadata_record(
        TopicRecord(name="already-in-snapshot", topic_id=uuid.UUID(int=4))))],
        partition_leader_epoch=1, timestamp=0)
    new = encode_batch(5, [(None, encode_metadata_record(TopicRecord(name="t", topic_id=topic)))],
                       partition_leader_epoch=1, timestamp=0)
    (tmp_path / "00000000000000000000.log").write_bytes(old + new)
    image = load_log_directory(tmp_path)
    assert list(image.topics.by_name) == ["t"]
    assert image.provenance.last_offset == 5


def test_snapshot_policy() -> None:
    policy = SnapshotPolicy(max_bytes_between=100, max_interval_ms=1000, last_snapshot_ms=0)
    assert policy.reason(5000) is None  # nothing new: no snapshot even after the interval
    policy.committed(60)
    assert policy.reason(999) is None
    assert policy.reason(1000) is not None
    policy.committed(40)
    assert "bytes" in (policy.reason(10) or "")
    policy.snapshot_taken(2000)
    assert policy.reason(2500) is None
    no_time = SnapshotPolicy(max_bytes_between=100, max_interval_ms=0)
    no_time.committed(1)
    assert no_time.reason(10**9) is None
    with pytest.raises(ConfigError):
        SnapshotPolicy(max_bytes_between=0)


def test_cyclic_gc_is_paused_only_while_an_image_loads() -> None:
    assert gc.isenabled()
    with cyclic_gc_paused():
        assert not gc.isenabled()
    assert gc.isenabled()
    gc.disable()
    try:
        with cyclic_gc_paused():
            pass
        assert not gc.isenabled()  # a caller that had it off keeps it off
    finally:
        gc.enable()


def test_snapshot_and_segment_replays_run_with_the_cyclic_gc_paused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: list[bool] = []
    load_batch = ImageLoader.load_batch

    def recording(self: ImageLoader, batch: RecordBatch) -> MetadataImage:
        seen.append(gc.isenabled())
        return load_batch(self, batch)

    monkeypatch.setattr(ImageLoader, "load_batch", recording)
    base = MetadataDelta(MetadataImage())
    base.replay(FeatureLevelRecord(name="metadata.version", feature_level=19))
    path = write_image_snapshot(tmp_path, base.apply(Provenance(4, 1, 0)), clock=lambda: 0)
    (tmp_path / "00000000000000000000.log").write_bytes(encode_batch(
        5, [(None, encode_metadata_record(TopicRecord(name="t", topic_id=uuid.UUID(int=3))))],
        partition_leader_epoch=1, timestamp=0))
    load_log_directory(tmp_path)  # the snapshot, then the segment
    with SnapshotReader(path) as reader:
        image_from_snapshot(list(reader.batches()), OffsetAndEpoch(5, 1))
    assert len(seen) == 3 and not any(seen)
    assert gc.isenabled()
