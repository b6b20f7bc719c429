"""Which partitions a broker hosts and leads after a metadata image change (sans-I/O; the
replicas' own decisions are :mod:`pykraft.replica`). The I/O driver is
:class:`pykraft.broker.replica_manager.ReplicaManager`.

Interface::

    changes = local_changes(old.topics, new.topics, broker_id)
    #   .deleted  (partitions this broker no longer hosts: topic deleted, recreated or the
    #              replica reassigned away), then .leaders and .followers (new or changed
    #              registrations), in Kafka's order: deletes, leaders, followers
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from pykraft.ids import TopicPartition
from pykraft.image.topics import PartitionRegistration, TopicsImage


@dataclass(frozen=True, slots=True)
class LocalPartition:
    """A partition of the image with a replica on this broker."""

    tp: TopicPartition
    topic_id: uuid.UUID
    registration: PartitionRegistration


@dataclass(frozen=True, slots=True)
class LocalChanges:
    deleted: tuple[TopicPartition, ...]
    leaders: tuple[LocalPartition, ...]
    followers: tuple[LocalPartition, ...]

    def __bool__(self) -> bool:
        return bool(self.deleted or self.leaders or self.followers)


def _hosted(image: TopicsImage, broker_id: int) -> dict[TopicPartition, LocalPartition]:
    return {TopicPartition(topic.name, index): LocalPartition(
                TopicPartition(topic.name, index), topic.topic_id, registration)
            for topic in image.by_id.values()
            for index, registration in topic.partitions.items()
            if broker_id in registration.replicas}


def local_changes(old: TopicsImage, new: TopicsImage, broker_id: int) -> LocalChanges:
    """Kafka's ``TopicsDelta.localChanges``: what ``broker_id`` must do between two images.

    A topic recreated under the same name (new topic id) is a delete of the old replica and
    a new one; only changed registrations are listed, so replaying an image twice is a
    no-op.
    """
    if old is new:
        return LocalChanges((), (), ())
    before, after = _hosted(old, broker_id), _hosted(new, broker_id)
    deleted = tuple(sorted(tp for tp, part in before.items()
                           if tp not in after or after[tp].topic_id != part.topic_id))
    leaders: list[LocalPartition] = []
    followers: list[LocalPartition] = []
    for tp in sorted(after):
        part = after[tp]
        previous = before.get(tp)
        if previous is not None and previous == part:
            continue
        (leaders if part.registration.leader == broker_id else followers).append(part)
    return LocalChanges(deleted, tuple(leaders), tuple(followers))
