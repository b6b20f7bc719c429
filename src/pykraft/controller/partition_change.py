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

import uuid
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


@dataclass(frozen=True, slots=True)
class Assignment:
    """A partition's replicas as a change targets them (Kafka's targetReplicas,
    targetRemoving, targetAdding): while a reassignment is under way, ``replicas`` lists
    the target replicas then those being removed."""

    replicas: tuple[int, ...]
    removing: tuple[int, ...] = ()
    adding: tuple[int, ...] = ()

    @classmethod
    def of(cls, partition: PartitionRegistration) -> Assignment:
        return cls(partition.replicas, partition.removing_replicas, partition.adding_replicas)

    @property
    def reassigning(self) -> bool:
        return bool(self.removing or self.adding)

    def completed(self, isr: tuple[int, ...]) -> tuple[Assignment, tuple[int, ...]] | None:
        """The assignment and ISR once the reassignment completes, if ``isr`` lets it:
        every target replica in sync (Kafka's ``maybeCompleteReassignment``)."""
        if not self.reassigning:
            return None
        replicas = self.replicas
        if self.removing:
            isr = tuple(r for r in isr if r not in self.removing)
            replicas = tuple(r for r in self.replicas if r not in self.removing)
            if not isr or not replicas:
                return None
        if not set(replicas) <= set(isr):
            return None
        return Assignment(replicas), isr


def elect_leader(partition: PartitionRegistration, isr: tuple[int, ...], usable: Usable,
                 *, unclean: bool = False,
                 replicas: tuple[int, ...] | None = None) -> tuple[int, bool]:
    """The leader the rules pick among ``replicas`` (default: the partition's, in order),
    and whether it was an unclean election."""
    order = partition.replicas if replicas is None else replicas
    if partition.leader in isr and usable(partition.leader):
        return partition.leader, False
    clean = next((r for r in order if r in isr and usable(r)), None)
    if clean is not None:
        return clean, False
    if unclean:
        outside = next((r for r in order if usable(r)), None)
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
    *, isr: tuple[int, ...], election: Election, assignment: Assignment | None = None,
    recovery: int = -1, default_dir: Callable[[int], uuid.UUID] | None = None,
) -> PartitionChangeRecord | None:
    """The record moving ``partition`` to ``isr`` (and ``assignment``, the leader recovery
    state ``recovery`` if not -1) with the leader the rules pick, if any change (Kafka's
    PartitionChangeBuilder.build without eligible leader replicas). A reassignment whose
    target replicas are all in the ISR completes in the same record; a change dropping
    replicas bumps the leader epoch. ``default_dir`` (from metadata.version 3.7-IV2) gives
    a new replica's directory."""
    target = Assignment.of(partition) if assignment is None else assignment
    completed = target.completed(isr)
    if completed is not None:
        target, isr = completed
    leader, unclean = elect_leader(partition, isr, election.usable,
                                   unclean=election.unclean(topic.name),
                                   replicas=target.replicas)
    if unclean and leader != partition.leader:
        isr = (leader,)  # data the old ISR held may be lost: only the new leader is in sync
        if partition.leader_recovery_state != RECOVERING and election.leader_recovery:
            recovery = RECOVERING
    if recovery == partition.leader_recovery_state:
        recovery = -1
    if leader == partition.leader and not set(partition.replicas) <= set(target.replicas):
        leader_field = partition.leader  # a replica leaves: its epoch must not serve again
    else:
        leader_field = NO_LEADER_CHANGE if leader == partition.leader else leader
    current = Assignment.of(partition)
    record = PartitionChangeRecord(
        partition_id=partition_id, topic_id=topic.topic_id,
        isr=None if isr == partition.isr else isr,
        leader=leader_field, leader_recovery_state=recovery,
        replicas=None if target.replicas == current.replicas else target.replicas,
        removing_replicas=None if target.removing == current.removing else target.removing,
        adding_replicas=None if target.adding == current.adding else target.adding,
        directories=_directories(partition, target.replicas, default_dir),
    )
    return None if record == PartitionChangeRecord(
        partition_id=partition_id, topic_id=topic.topic_id) else record


def _directories(partition: PartitionRegistration, replicas: tuple[int, ...],
                 default_dir: Callable[[int], uuid.UUID] | None
                 ) -> tuple[uuid.UUID, ...] | None:
    """The directories of ``replicas`` when they differ from the partition's: a kept
    replica keeps its directory, a new one gets ``default_dir``'s."""
    if default_dir is None or replicas == partition.replicas:
        return None
    known = dict(zip(partition.replicas, partition.directories, strict=False))
    directories = tuple(known.get(r) or default_dir(r) for r in replicas)
    return None if directories == partition.directories else directories


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
