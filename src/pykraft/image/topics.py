"""Topics and their partitions: created by TopicRecord + PartitionRecord, changed by
PartitionChangeRecord (and ClearElrRecord), deleted by RemoveTopicRecord."""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TypeVar

from pykraft.errors import MetadataImageError
from pykraft.ids import uuid_to_str
from pykraft.image.versions import record_version
from pykraft.records.metadata import (
    ClearElrRecord,
    PartitionChangeRecord,
    PartitionRecord,
    RemoveTopicRecord,
    TopicRecord,
)

NO_LEADER = -1
NO_LEADER_CHANGE = -2

T = TypeVar("T")


def _pick(new: T | None, old: T) -> T:
    """A PartitionChangeRecord field: None means "unchanged"."""
    return old if new is None else new


@dataclass(frozen=True, slots=True)
class PartitionRegistration:
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    leader: int
    leader_epoch: int
    partition_epoch: int
    removing_replicas: tuple[int, ...] = ()
    adding_replicas: tuple[int, ...] = ()
    leader_recovery_state: int = 0
    directories: tuple[uuid.UUID, ...] = ()
    eligible_leader_replicas: tuple[int, ...] | None = None
    last_known_elr: tuple[int, ...] | None = None

    @classmethod
    def from_record(cls, record: PartitionRecord) -> PartitionRegistration:
        return cls(record.replicas, record.isr, record.leader, record.leader_epoch,
                   record.partition_epoch, record.removing_replicas, record.adding_replicas,
                   record.leader_recovery_state, record.directories,
                   record.eligible_leader_replicas, record.last_known_elr)

    def to_record(self, topic_id: uuid.UUID, partition_id: int) -> PartitionRecord:
        return PartitionRecord(
            partition_id=partition_id, topic_id=topic_id, replicas=self.replicas,
            isr=self.isr, removing_replicas=self.removing_replicas,
            adding_replicas=self.adding_replicas, leader=self.leader,
            leader_recovery_state=self.leader_recovery_state, leader_epoch=self.leader_epoch,
            partition_epoch=self.partition_epoch, directories=self.directories,
            eligible_leader_replicas=self.eligible_leader_replicas,
            last_known_elr=self.last_known_elr,
        )

    def merge(self, change: PartitionChangeRecord) -> PartitionRegistration:
        """Kafka's rule: every change bumps the partition epoch, a leader change (any value
        but -2) also bumps the leader epoch."""
        leader_changed = change.leader != NO_LEADER_CHANGE
        return PartitionRegistration(
            replicas=_pick(change.replicas, self.replicas),
            isr=_pick(change.isr, self.isr),
            leader=change.leader if leader_changed else self.leader,
            leader_epoch=self.leader_epoch + 1 if leader_changed else self.leader_epoch,
            partition_epoch=self.partition_epoch + 1,
            removing_replicas=_pick(change.removing_replicas, self.removing_replicas),
            adding_replicas=_pick(change.adding_replicas, self.adding_replicas),
            leader_recovery_state=(
                self.leader_recovery_state if change.leader_recovery_state == -1
                else change.leader_recovery_state
            ),
            directories=_pick(change.directories, self.directories),
            eligible_leader_replicas=_pick(change.eligible_leader_replicas,
                                          self.eligible_leader_replicas),
            last_known_elr=_pick(change.last_known_elr, self.last_known_elr),
        )


@dataclass(frozen=True, slots=True)
class TopicImage:
    name: str
    topic_id: uuid.UUID
    partitions: Mapping[int, PartitionRegistration] = dataclasses.field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class TopicsImage:
    by_id: Mapping[uuid.UUID, TopicImage] = dataclasses.field(default_factory=dict)
    by_name: Mapping[str, TopicImage] = dataclasses.field(default_factory=dict)

    def records(self, metadata_version: int) -> Iterator[tuple[object, int]]:
        """Each topic (by name) as its TopicRecord followed by its PartitionRecords."""
        version = record_version(PartitionRecord, metadata_version)
        for name in sorted(self.by_name):
            topic = self.by_name[name]
            yield TopicRecord(name=name, topic_id=topic.topic_id), 0
            for partition_id in sorted(topic.partitions):
                registration = topic.partitions[partition_id]
                yield registration.to_record(topic.topic_id, partition_id), version


TopicsRecord = (
    TopicRecord | PartitionRecord | PartitionChangeRecord | RemoveTopicRecord | ClearElrRecord
)


class TopicsDelta:
    """Copy-on-write changes to a :class:`TopicsImage`."""

    def __init__(self, image: TopicsImage) -> None:
        self._by_id = dict(image.by_id)
        self._changed: dict[uuid.UUID, dict[int, PartitionRegistration]] = {}

    def topic(self, topic_id: uuid.UUID) -> TopicImage | None:
        return self._by_id.get(topic_id)

    def replay(self, record: TopicsRecord) -> str | None:
        """Apply one record; for RemoveTopicRecord, returns the removed topic's name."""
        if isinstance(record, TopicRecord):
            self._by_id[record.topic_id] = TopicImage(record.name, record.topic_id, {})
            self._changed[record.topic_id] = {}
            return None
        if isinstance(record, RemoveTopicRecord):
            removed = self._require(record.topic_id)
            del self._by_id[record.topic_id]
            self._changed.pop(record.topic_id, None)
            return removed.name
        if isinstance(record, ClearElrRecord):
            self._clear_elr(record.topic_name)
            return None
        partitions = self._partitions(record.topic_id)
        if isinstance(record, PartitionRecord):
            partitions[record.partition_id] = PartitionRegistration.from_record(record)
        else:
            current = partitions.get(record.partition_id)
            if current is None:
                raise MetadataImageError(
                    f"PartitionChangeRecord for unknown partition "
                    f"{uuid_to_str(record.topic_id)}-{record.partition_id}"
                )
            partitions[record.partition_id] = current.merge(record)
        return None

    def _clear_elr(self, topic_name: str) -> None:
        """Kafka's TopicsDelta: every partition of the named topic (of every topic when the
        name is empty) with eligible or last known leader replicas gets both emptied, as a
        PartitionChangeRecord setting them would (its partition epoch moves on)."""
        topic_ids = [topic.topic_id for topic in self._by_id.values()
                     if not topic_name or topic.name == topic_name]
        if topic_name and not topic_ids:
            raise MetadataImageError(
                f"Unable to clear elr for topic with name {topic_name}: no such topic found."
            )
        for topic_id in topic_ids:
            partitions = self._partitions(topic_id)
            for partition_id, partition in partitions.items():
                if partition.eligible_leader_replicas or partition.last_known_elr:
                    partitions[partition_id] = partition.merge(PartitionChangeRecord(
                        partition_id=partition_id, topic_id=topic_id,
                        eligible_leader_replicas=(), last_known_elr=(),
                    ))

    def _require(self, topic_id: uuid.UUID) -> TopicImage:
        topic = self._by_id.get(topic_id)
        if topic is None:
            raise MetadataImageError(f"record for unknown topic id {uuid_to_str(topic_id)}")
        return topic

    def _partitions(self, topic_id: uuid.UUID) -> dict[int, PartitionRegistration]:
        topic = self._require(topic_id)
        changed = self._changed.get(topic_id)
        if changed is None:
            changed = self._changed[topic_id] = dict(topic.partitions)
        return changed

    def apply(self) -> TopicsImage:
        by_id = {
            topic_id: (
                dataclasses.replace(topic, partitions=dict(self._changed[topic_id]))
                if topic_id in self._changed else topic
            )
            for topic_id, topic in self._by_id.items()
        }
        return TopicsImage(by_id, {topic.name: topic for topic in by_id.values()})
