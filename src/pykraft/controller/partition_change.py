"""PartitionChangeRecords for leader election and ISR changes (Kafka's PartitionChangeBuilder,
without reassignment and eligible leader replicas).

Rules of the ordinary election: the leader stays if it is still in the ISR and usable;
otherwise the first replica (in replica order) that is in the ISR and usable leads. With
none, a topic that allows unclean elections (``unclean.leader.election.enable``) takes the
first usable replica outside the ISR: the ISR becomes that leader alone and its leader
recovery state RECOVERING (KIP-704; from metadata.version 3.2-IV0), which its first
AlterPartition turns RECOVERED. Otherwise the partition has no leader (-1). Removing a
broker from an ISR that would become empty keeps it as the last member instead, so the
partition can recover when that broker comes back.

A preferred election (ElectLeaders, the automatic rebalance) asks first for the preferred
replica (the first one) if it is in the ISR and usable, then keeps a leader that still
qualifies, then takes the next replica that does; it is never unclean.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from pykraft.image.image import MetadataImage
from pykraft.image.topics import NO_LEADER, NO_LEADER_CHANGE, PartitionRegistration, TopicImage
from pykraft.records.metadata import PartitionChangeRecord
from pykraft.replica.leader import RECOVERING

Usable = Callable[[int], bool]


def _never(_topic: str) -> bool:
    return False


@dataclass(frozen=True, slots=True)
class Election:
    """Who may lead, and which topics allow a leader from outside the ISR."""

    usable: Usable
    unclean: Callable[[str], bool] = _never
    """Topic name -> ``unclean.leader.election.enable`` in effect for it."""
    leader_recovery: bool = True
    """The metadata.version records KIP-704's leader recovery state."""


def elect_leader(partition: PartitionRegistration, isr: tuple[int, ...], usable: Usable,
                 *, unclean: bool = False) -> tuple[int, bool]:
    """The leader the rules pick, and whether it was an unclean election."""
    if partition.leader in isr and usable(partition.leader):
        return partition.leader, False
    clean = next((r for r in partition.replicas if r in isr and usable(r)), None)
    if clean is not None:
        return clean, False
    if unclean:
        outside = next((r for r in partition.replicas if usable(r)), None)
        if outside is not None:
            return outside, True
    return NO_LEADER, False


def elect_preferred(partition: PartitionRegistration, usable: Usable) -> int:
    """The leader a preferred election picks (Kafka's ``electPreferredLeader``)."""
    def valid(replica: int) -> bool:
        return replica in partition.isr and usable(replica)
    if partition.replicas and valid(partition.replicas[0]):
        return partition.replicas[0]
    if valid(partition.leader):
        return partition.leader
    return next((r for r in partition.replicas[1:] if valid(r)), NO_LEADER)


def preferred_change(topic: TopicImage, partition_id: int, partition: PartitionRegistration,
                     usable: Usable) -> PartitionChangeRecord | None:
    """The record of a preferred election, if it moves the leader."""
    leader = elect_preferred(partition, usable)
    if leader == partition.leader:
        return None
    return PartitionChangeRecord(partition_id=partition_id, topic_id=topic.topic_id,
                                 leader=leader)


def partition_change(
    topic: TopicImage, partition_id: int, partition: PartitionRegistration,
    *, isr: tuple[int, ...], election: Election,
) -> PartitionChangeRecord | None:
    """The record moving ``partition`` to ``isr`` with the leader the rules pick, if any
    change."""
    leader, unclean = elect_leader(partition, isr, election.usable,
                                   unclean=election.unclean(topic.name))
    recovery = -1
    if unclean and leader != partition.leader:
        isr = (leader,)  # data the old ISR held may be lost: only the new leader is in sync
        if partition.leader_recovery_state != RECOVERING and election.leader_recovery:
            recovery = RECOVERING
    if isr == partition.isr and leader == partition.leader and recovery < 0:
        return None
    return PartitionChangeRecord(
        partition_id=partition_id, topic_id=topic.topic_id,
        isr=None if isr == partition.isr else isr,
        leader=NO_LEADER_CHANGE if leader == partition.leader else leader,
        leader_recovery_state=recovery,
    )


def _partitions(image: MetadataImage) -> Iterator[tuple[TopicImage, int, PartitionRegistration]]:
    for name in sorted(image.topics.by_name):
        topic = image.topics.by_name[name]
        for partition_id in sorted(topic.partitions):
            yield topic, partition_id, topic.partitions[partition_id]


def remove_from_isrs(image: MetadataImage, broker_id: int, election: Election) -> list[object]:
    """Changes taking ``broker_id`` out of every ISR and leadership (fencing, controlled
    shutdown, unregistration); ``election.usable`` already excludes the broker."""
    records: list[object] = []
    for topic, partition_id, partition in _partitions(image):
        if broker_id not in partition.isr and partition.leader != broker_id:
            continue
        isr = tuple(r for r in partition.isr if r != broker_id) or partition.isr
        change = partition_change(topic, partition_id, partition, isr=isr, election=election)
        if change is not None:
            records.append(change)
    return records


def _every_topic(_topic: str) -> bool:
    return True


def elect_leaderless(image: MetadataImage, election: Election,
                     topics: Callable[[str], bool] = _every_topic) -> list[object]:
    """Leaders for partitions that have none, in the ``topics`` chosen (unfencing, the
    periodic unclean election)."""
    records: list[object] = []
    for topic, partition_id, partition in _partitions(image):
        if partition.leader == NO_LEADER and topics(topic.name):
            change = partition_change(topic, partition_id, partition, isr=partition.isr,
                                      election=election)
            if change is not None:
                records.append(change)
    return records


def leads_any(image: MetadataImage, broker_id: int) -> bool:
    return any(p.leader == broker_id for _, _, p in _partitions(image))
