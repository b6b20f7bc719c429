"""A broker leading the one partition of ``__consumer_offsets``, for the group coordinator's
runtime tests."""

from __future__ import annotations

import asyncio
import random
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path

from replica_fixtures import broker, until, with_records

from pykraft.broker.coordinator_topics import OffsetsTopicConfig
from pykraft.broker.group_coordinator import GroupCoordinatorService
from pykraft.broker.replica_manager import ReplicaManager
from pykraft.group.config import GroupConfig
from pykraft.group.shard import GroupShard
from pykraft.ids import OFFSETS_TOPIC_NAME
from pykraft.image.image import MetadataImage
from pykraft.log.log_manager import LogManager
from pykraft.records.metadata import (
    BrokerRegistrationChangeRecord,
    ConfigRecord,
    PartitionChangeRecord,
    PartitionRecord,
    TopicRecord,
)
from pykraft.storage.log_config import LogConfig

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


class ShardCoordinator:
    """A broker's group coordinator, with a real group shard, for the one partition of
    ``__consumer_offsets`` (its log under ``directory``)."""

    def __init__(self, directory: Path, max_message_bytes: int = 1_048_588) -> None:
        logs = LogManager([directory], LogConfig())
        logs.startup(1_000)
        self.replicas = ReplicaManager(ME, logs, {}, clock_ms=lambda: 1_000)
        self.service = GroupCoordinatorService(
            self.replicas, lambda: 1_000,
            lambda p: GroupShard(p, GroupConfig(), random.Random(1)),
            OffsetsTopicConfig(num_partitions=1))
        self.replicas.apply_image(offsets_image(max_message_bytes=max_message_bytes), 1_000)

    async def loaded(self) -> None:
        await until(lambda: self.service.partition_states == {0: "loaded"}, "shard loaded")

    async def reload(self) -> None:
        """A new leader epoch of ours: the shard is loaded again from the log."""
        self.replicas.apply_image(with_records(self.replicas.image, PartitionChangeRecord(
            partition_id=0, topic_id=TOPIC_ID, leader=ME)), 1_000)
        await self.loaded()
