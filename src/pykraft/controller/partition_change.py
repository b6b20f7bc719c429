"""PartitionChangeRecords for leader election and ISR changes (a simplified
PartitionChangeBuilder: no reassignment, no eligible leader replicas, no unclean election).

Rules: the leader stays if it is still in the ISR and usable; otherwise the first replica
(in replica order) that is in the ISR and usable leads; with none, the partition has no
leader (-1). Removing a broker from an ISR that would become empty keeps it as the last
member instead, so the partition can recover when that broker comes back.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator

from pykraft.image.image import MetadataImage
from pykraft.image.topics import NO_LEADER, NO_LEADER_CHANGE, PartitionRegistration
from pykraft.records.metadata import PartitionChangeRecord

Usable = Callable[[int], bool]


def elect_leader(partition: PartitionRegistration, isr: tuple[int, ...], usable: Usable) -> int:
    if partition.leader in isr and usable(partition.leader):
        return partition.leader
    return next((r for r in partition.replicas if r in isr and usable(r)), NO_LEADER)


def partition_change(
    topic_id: uuid.UUID, partition_id: int, partition: PartitionRegistration,
    *, isr: tuple[int, ...], usable: Usable,
) -> PartitionChangeRecord | None:
    """The record moving ``partition`` to ``isr`` with the leader the rules pick, if any
    change."""
    leader = elect_leader(partition, isr, usable)
    if isr == partition.isr and leader == partition.leader:
        return None
    return PartitionChangeRecord(
        partition_id=partition_id, topic_id=topic_id,
        isr=None if isr == partition.isr else isr,
        leader=NO_LEADER_CHANGE if leader == partition.leader else leader,
    )


def _partitions(image: MetadataImage) -> Iterator[tuple[uuid.UUID, int, PartitionRegistration]]:
    for name in sorted(image.topics.by_name):
        topic = image.topics.by_name[name]
        for partition_id in sorted(topic.partitions):
            yield topic.topic_id, partition_id, topic.partitions[partition_id]


def remove_from_isrs(image: MetadataImage, broker_id: int, usable: Usable) -> list[object]:
    """Changes taking ``broker_id`` out of every ISR and leadership (fencing, controlled
    shutdown, unregistration); ``usable`` already reflects the broker's new state."""
    records: list[object] = []
    for topic_id, partition_id, partition in _partitions(image):
        if broker_id not in partition.isr and partition.leader != broker_id:
            continue
        isr = tuple(r for r in partition.isr if r != broker_id) or partition.isr
        change = partition_change(topic_id, partition_id, partition, isr=isr, usable=usable)
        if change is not None:
            records.append(change)
    return records


def elect_leaderless(image: MetadataImage, usable: Usable) -> list[object]:
    """Leaders for partitions that have none but now have a usable ISR member (unfencing)."""
    records: list[object] = []
    for topic_id, partition_id, partition in _partitions(image):
        if partition.leader == NO_LEADER:
            change = partition_change(topic_id, partition_id, partition, isr=partition.isr,
                                      usable=usable)
            if change is not None:
                records.append(change)
    return records


def leads_any(image: MetadataImage, broker_id: int) -> bool:
    return any(p.leader == broker_id for _, _, p in _partitions(image))
