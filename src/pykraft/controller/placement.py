"""Replica placement for new partitions, in the spirit of Kafka's StripedReplicaPlacer.

Usable brokers (registered, unfenced, not shutting down) are shuffled within each rack and
interleaved rack by rack, so neighbours in the list sit on different racks. Partition ``p``
is led by the broker at ``start + p`` (a random start per call): leaders go round-robin, so
no broker leads more than one partition more than another. Followers are taken from the
list after the leader, shifted by one more position on every lap so successive laps do not
repeat the same replica sets, preferring racks the partition does not use yet. Hence
replicas are distinct and span ``min(replication factor, racks)`` racks.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class UsableBroker:
    broker_id: int
    rack: str | None


def place_replicas(
    brokers: Sequence[UsableBroker],
    *,
    num_partitions: int,
    replication_factor: int,
    rng: random.Random,
) -> list[tuple[int, ...]]:
    """Replica lists (leader first) for ``num_partitions`` partitions.

    The caller checks ``1 <= replication_factor <= len(brokers)`` first.
    """
    if not 1 <= replication_factor <= len(brokers):
        raise ValueError(f"replication factor {replication_factor} with {len(brokers)} brokers")
    ordered = _interleave_racks(brokers, rng)
    count = len(ordered)
    start = rng.randrange(count)
    placements: list[tuple[int, ...]] = []
    for partition in range(num_partitions):
        first = (start + partition) % count
        shift = partition // count
        leader = ordered[first]
        followers = [ordered[(first + 1 + shift + i) % count] for i in range(count)]
        followers = [b for b in followers if b is not leader]
        chosen = [leader]
        racks = {leader.rack}
        for broker in followers:
            if len(chosen) < replication_factor and broker.rack not in racks:
                chosen.append(broker)
                racks.add(broker.rack)
        for broker in followers:
            if len(chosen) < replication_factor and broker not in chosen:
                chosen.append(broker)
        placements.append(tuple(b.broker_id for b in chosen))
    return placements


def _interleave_racks(brokers: Sequence[UsableBroker], rng: random.Random) -> list[UsableBroker]:
    by_rack: dict[str | None, list[UsableBroker]] = {}
    for broker in sorted(brokers, key=lambda b: b.broker_id):
        by_rack.setdefault(broker.rack, []).append(broker)
    groups = [by_rack[rack] for rack in sorted(by_rack, key=lambda r: (r is None, r or ""))]
    for group in groups:
        rng.shuffle(group)
    ordered: list[UsableBroker] = []
    for index in range(max(len(group) for group in groups)):
        ordered.extend(group[index] for group in groups if index < len(group))
    return ordered
