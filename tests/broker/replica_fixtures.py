"""Images and client batches for the replica manager and Produce tests."""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from kafka.record.default_records import DefaultRecordBatchBuilder

from pykraft.image.image import MetadataDelta, MetadataImage
from pykraft.records.metadata import (
    BrokerEndpoint,
    PartitionRecord,
    RegisterBrokerRecord,
    TopicRecord,
)


def with_records(image: MetadataImage, *records: object) -> MetadataImage:
    delta = MetadataDelta(image)
    for record in records:
        delta.replay(record)
    return delta.apply()


def topic(name: str, topic_id: uuid.UUID, *partitions: tuple[int, ...]) -> list[object]:
    """A topic whose partition i has replicas (and ISR) ``partitions[i]``, led by the first."""
    return [TopicRecord(name=name, topic_id=topic_id), *(
        PartitionRecord(partition_id=i, topic_id=topic_id, replicas=r, isr=r, leader=r[0],
                        leader_epoch=0, partition_epoch=0)
        for i, r in enumerate(partitions))]


def broker(broker_id: int, port: int) -> RegisterBrokerRecord:
    return RegisterBrokerRecord(
        broker_id=broker_id, incarnation_id=uuid.UUID(int=broker_id), broker_epoch=10,
        end_points=(BrokerEndpoint(name="PLAINTEXT", host="127.0.0.1", port=port,
                                   security_protocol=0),), rack="r1")


def client_batch(values: Sequence[bytes], *, producer_id: int = -1, epoch: int = -1,
                 sequence: int = -1, timestamp: int = 1_000, key: bytes | None = b"k") -> bytes:
    """A producer's batch as kafka-python writes it."""
    builder = DefaultRecordBatchBuilder(
        magic=2, compression_type=0, is_transactional=False, producer_id=producer_id,
        producer_epoch=epoch, base_sequence=sequence, batch_size=1 << 24)
    for index, value in enumerate(values):
        builder.append(index, timestamp=timestamp + index, key=key, value=value, headers=[])
    return bytes(builder.build())
