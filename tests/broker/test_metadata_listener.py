"""The broker's image: committed batches replayed in order, snapshots announced by the core
(possibly before the core can be read) replacing it."""

from __future__ import annotations

import uuid

import pytest

from pykraft.broker.metadata_listener import BrokerMetadataListener
from pykraft.errors import CorruptRecordError
from pykraft.image.loader import image_from_snapshot
from pykraft.raft.log import OffsetAndEpoch
from pykraft.records.batch import RecordBatch, encode_batch, iter_batches
from pykraft.records.metadata import (
    BeginTransactionRecord,
    TopicRecord,
    encode_metadata_record,
)


def batch_of(base_offset: int, records: list[object], epoch: int = 3) -> RecordBatch:
    values = [encode_metadata_record(r) for r in records]
    data = encode_batch(base_offset, [(None, v) for v in values], partition_leader_epoch=epoch,
                        timestamp=1000)
    return next(iter(iter_batches(data)))


def test_snapshot_loads_then_batches_follow() -> None:
    snapshot = [batch_of(0, [TopicRecord(name="a", topic_id=uuid.UUID(int=1))])]
    listener = BrokerMetadataListener()
    listener.snapshots.attach(lambda sid: snapshot if sid == OffsetAndEpoch(50, 3) else [])
    listener.handle_load_snapshot(OffsetAndEpoch(50, 3))
    assert set(listener.image.topics.by_name) == {"a"}
    assert listener.committed_offset == 49
    listener.handle_commit(batch_of(50, [TopicRecord(name="b", topic_id=uuid.UUID(int=2))]))
    assert set(listener.image.topics.by_name) == {"a", "b"}
    assert listener.committed_offset == 50


def test_snapshot_announced_before_attach_is_a_wiring_error() -> None:
    """Drivers deliver events after processes attach the reader; anything else is a bug."""
    listener = BrokerMetadataListener()
    with pytest.raises(RuntimeError, match=r"before SnapshotLoader\.attach"):
        listener.handle_load_snapshot(OffsetAndEpoch(50, 3))


def test_snapshot_replaces_what_was_replayed_before() -> None:
    listener = BrokerMetadataListener()
    listener.snapshots.attach(
        lambda sid: [batch_of(0, [TopicRecord(name="x", topic_id=uuid.UUID(int=1))])])
    listener.handle_commit(batch_of(0, [TopicRecord(name="old", topic_id=uuid.UUID(int=9))]))
    listener.handle_load_snapshot(OffsetAndEpoch(10, 1))
    assert set(listener.image.topics.by_name) == {"x"}


def test_snapshot_ending_inside_a_transaction_is_corrupt() -> None:
    with pytest.raises(CorruptRecordError, match="inside a metadata transaction"):
        image_from_snapshot([batch_of(0, [BeginTransactionRecord(name="t")])],
                            OffsetAndEpoch(1, 1))


def test_nothing_is_published_until_the_high_watermark_is_reached() -> None:
    """Kafka's MetadataLoader: a restarted broker replays history without acting it out; the
    first image published is the one at the high watermark, then every one."""
    listener = BrokerMetadataListener()
    published: list[set[str]] = []
    listener.publishers.append(lambda image: published.append(set(image.topics.by_name)))
    high_watermark: list[int | None] = [None]
    listener.high_watermark = lambda: high_watermark[0]
    listener.handle_commit(batch_of(0, [TopicRecord(name="a", topic_id=uuid.UUID(int=1))]))
    high_watermark[0] = 3
    listener.handle_commit(batch_of(1, [TopicRecord(name="b", topic_id=uuid.UUID(int=2))]))
    assert published == []  # offset 1 is below the high watermark 3
    listener.handle_commit(batch_of(2, [TopicRecord(name="c", topic_id=uuid.UUID(int=3))]))
    assert published == [{"a", "b", "c"}]
    high_watermark[0] = 10  # caught up once: later images are published as they come
    listener.handle_commit(batch_of(3, [TopicRecord(name="d", topic_id=uuid.UUID(int=4))]))
    assert published[-1] == {"a", "b", "c", "d"}
