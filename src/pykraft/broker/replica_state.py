"""A broker's pure replica decisions (sans-I/O): which partitions it hosts and leads after a
metadata image change, the leader-epoch check of a request and when an acks=all produce is
satisfied (the leader's ISR and high watermark rules are
:mod:`pykraft.replica.leader`). The I/O driver is
:class:`pykraft.broker.replica_manager.ReplicaManager`.

Interface::

    changes = local_changes(old.topics, new.topics, broker_id)
    #   .deleted  (partitions this broker no longer hosts: topic deleted, recreated or the
    #              replica reassigned away), then .leaders and .followers (new or changed
    #              registrations), in Kafka's order: deletes, leaders, followers
    code = check_leader_epoch(request_epoch, local_epoch)   # NONE, FENCED or UNKNOWN
    outcome = acks_all_outcome(...)                        # None while still waiting
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from pykraft.ids import TopicPartition
from pykraft.image.topics import PartitionRegistration, TopicsImage
from pykraft.protocol.errors import ErrorCode
from pykraft.replica.leader import effective_min_isr


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


def check_leader_epoch(request_epoch: int, local_epoch: int) -> ErrorCode:
    """Kafka's ``Partition.checkCurrentLeaderEpoch``: -1 skips the check; an older epoch
    than ours is FENCED_LEADER_EPOCH, a newer one UNKNOWN_LEADER_EPOCH (we lag behind)."""
    if request_epoch in (-1, local_epoch):
        return ErrorCode.none
    if request_epoch < local_epoch:
        return ErrorCode.fenced_leader_epoch
    return ErrorCode.unknown_leader_epoch


def acks_all_outcome(*, is_leader: bool, high_watermark: int, required_offset: int,
                     isr_size: int, min_isr: int, replication_factor: int
                     ) -> ErrorCode | None:
    """Kafka's ``checkEnoughReplicasReachOffset`` for an acks=all partition waiting until
    the high watermark reaches ``required_offset`` (its last offset + 1): None while it
    waits; NOT_LEADER_OR_FOLLOWER once leadership moved; NONE, or
    NOT_ENOUGH_REPLICAS_AFTER_APPEND when the ISR (``isr_size``: the maximal ISR, with a
    pending expansion's member) shrank under the min ISR meanwhile."""
    if not is_leader:
        return ErrorCode.not_leader_or_follower
    if high_watermark < required_offset:
        return None
    if isr_size < effective_min_isr(min_isr, replication_factor):
        return ErrorCode.not_enough_replicas_after_append
    return ErrorCode.none
