"""A broker leading the one partition of ``__consumer_offsets``, for the group coordinator's
runtime tests."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable

from replica_fixtures import broker, with_records

from pykraft.ids import OFFSETS_TOPIC_NAME
from pykraft.image.image import MetadataImage
from pykraft.records.metadata import (
    BrokerRegistrationChangeRecord,
    ConfigRecord,
    PartitionRecord,
    TopicRecord,
)

ME, OTHER = 1, 2
TOPIC_ID = uuid.UUID(int=50)


def offsets_image(*, leader: int = ME, epoch: int = 0, isr: tuple[int, ...] = (ME,),
                  replicas: tuple[int, ...] = (ME,), min_isr: int = 1,
                  max_message_bytes: int = 1_048_588) -> MetadataImage:
    unfenced = [BrokerRegistrationChangeRecord(broker_id=b, broker_epoch=10, fenced=-1)
                for b in (ME, OTHER)]
    image: MetadataImage = with_records(
        MetadataImage(), broker(ME, 9091), broker(OTHER, 9092), *unfenced,
        TopicRecord(name=OFFSETS_TOPIC_NAME, topic_id=TOPIC_ID),
        PartitionRecord(partition_id=0, topic_id=TOPIC_ID, replicas=replicas, isr=isr,
                        leader=leader, leader_epoch=epoch, partition_epoch=epoch),
        ConfigRecord(resource_type=2, resource_name=OFFSETS_TOPIC_NAME, name="min.insync.replicas",
                     value=str(min_isr)),
        ConfigRecord(resource_type=2, resource_name=OFFSETS_TOPIC_NAME, name="max.message.bytes",
                     value=str(max_message_bytes)))
    return image


def run(test: Callable[[], Awaitable[None]]) -> None:
    asyncio.run(asyncio.wait_for(test(), 5))
