"""Server-side assignors of KIP-848 consumer groups: ``uniform`` (the default) and ``range``.

An assignor maps every partition of the topics the members subscribe to onto exactly one
subscribed member. ``uniform`` balances the partition counts and is sticky: a member keeps
what the previous target assignment gave it as far as balance allows, so a join or leave
moves as few partitions as possible. ``range`` gives each member contiguous ranges of each
topic in a fixed member order (static members by instance id first, then member ids), as
Kafka's server-side RangeAssignor does; it is not sticky.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

Assignment = Mapping[uuid.UUID, frozenset[int]]
"""One member's partitions: topic id -> partition numbers."""


@dataclass(frozen=True, slots=True)
class MemberSpec:
    """What an assignor knows of a member: its subscription (topic ids that exist) and its
    partitions in the current target assignment."""

    subscribed: frozenset[uuid.UUID]
    current: Assignment = field(default_factory=dict)
    instance_id: str | None = None


class Assignor(Protocol):
    """A server-side assignor (Kafka's ``ConsumerGroupPartitionAssignor``)."""

    name: str

    def assign(
        self, members: Mapping[str, MemberSpec], partition_counts: Mapping[uuid.UUID, int]
    ) -> dict[str, Assignment]:
        """The new target assignment of every member in ``members``."""
        ...


def _freeze(assignment: dict[uuid.UUID, set[int]]) -> dict[uuid.UUID, frozenset[int]]:
    return {topic: frozenset(parts) for topic, parts in assignment.items() if parts}


class UniformAssignor:
    """Balanced and sticky. With one shared subscription each member gets floor(P/N) or one
    more; otherwise every partition goes to the least loaded member subscribed to its topic,
    then partitions move from the most to the least loaded eligible members until no move
    narrows the gap."""

    name = "uniform"

    def assign(
        self, members: Mapping[str, MemberSpec], partition_counts: Mapping[uuid.UUID, int]
    ) -> dict[str, Assignment]:
        if not members:
            return {}
        subscriptions = {spec.subscribed for spec in members.values()}
        kept = self._kept(members, partition_counts)
        if len(subscriptions) == 1:
            result = self._homogeneous(members, partition_counts, kept)
        else:
            result = self._heterogeneous(members, partition_counts, kept)
        return {member: _freeze(parts) for member, parts in result.items()}

    @staticmethod
    def _kept(
        members: Mapping[str, MemberSpec], partition_counts: Mapping[uuid.UUID, int]
    ) -> dict[str, dict[uuid.UUID, set[int]]]:
        """Each member's current partitions that still exist and that it still subscribes
        to (the starting point of stickiness)."""
        return {
            member: {
                topic: {p for p in parts if p < partition_counts.get(topic, 0)}
                for topic, parts in spec.current.items()
                if topic in spec.subscribed
            }
            for member, spec in members.items()
        }

    @staticmethod
    def _homogeneous(
        members: Mapping[str, MemberSpec],
        partition_counts: Mapping[uuid.UUID, int],
        kept: dict[str, dict[uuid.UUID, set[int]]],
    ) -> dict[str, dict[uuid.UUID, set[int]]]:
        topics = sorted(next(iter(members.values())).subscribed & partition_counts.keys())
        total = sum(partition_counts[t] for t in topics)
        minimum, extra = divmod(total, len(members))
        # The members holding the most keep the extra partitions: fewer moves.
        order = sorted(members, key=lambda m: (-_count(kept[m]), m))
        owned: set[tuple[uuid.UUID, int]] = set()
        result: dict[str, dict[uuid.UUID, set[int]]] = {}
        room: list[tuple[str, int]] = []
        for rank, member in enumerate(order):
            quota = minimum + (1 if rank < extra else 0)
            mine: dict[uuid.UUID, set[int]] = {}
            for topic in sorted(kept[member]):
                for partition in sorted(kept[member][topic]):
                    if quota > 0 and (topic, partition) not in owned:
                        mine.setdefault(topic, set()).add(partition)
                        owned.add((topic, partition))
                        quota -= 1
            result[member] = mine
            if quota > 0:
                room.append((member, quota))
        free = iter(
            (t, p) for t in topics for p in range(partition_counts[t]) if (t, p) not in owned
        )
        for member, quota in room:
            for _ in range(quota):
                topic, partition = next(free)
                result[member].setdefault(topic, set()).add(partition)
        return result

    @staticmethod
    def _heterogeneous(
        members: Mapping[str, MemberSpec],
        partition_counts: Mapping[uuid.UUID, int],
        kept: dict[str, dict[uuid.UUID, set[int]]],
    ) -> dict[str, dict[uuid.UUID, set[int]]]:
        result: dict[str, dict[uuid.UUID, set[int]]] = {m: {} for m in members}
        load = dict.fromkeys(members, 0)
        owner: dict[tuple[uuid.UUID, int], str] = {}
        for member in sorted(members):
            for topic in sorted(kept[member]):
                for partition in sorted(kept[member][topic]):
                    if (topic, partition) not in owner:
                        owner[(topic, partition)] = member
                        result[member].setdefault(topic, set()).add(partition)
                        load[member] += 1
        eligible = {
            topic: sorted(m for m, spec in members.items() if topic in spec.subscribed)
            for topic in partition_counts
        }
        for topic in sorted(partition_counts):
            if not eligible[topic]:
                continue
            for partition in range(partition_counts[topic]):
                if (topic, partition) in owner:
                    continue
                member = min(eligible[topic], key=lambda m: (load[m], m))
                owner[(topic, partition)] = member
                result[member].setdefault(topic, set()).add(partition)
                load[member] += 1
        # Balance: move a partition to an eligible member holding at least two fewer.
        moved = True
        while moved:
            moved = False
            for (topic, partition), member in sorted(owner.items(), key=lambda kv: -load[kv[1]]):
                target = min(eligible[topic], key=lambda m: (load[m], m))
                if load[target] + 1 < load[member]:
                    result[member][topic].discard(partition)
                    result[target].setdefault(topic, set()).add(partition)
                    owner[(topic, partition)] = target
                    load[member] -= 1
                    load[target] += 1
                    moved = True
        return result


class RangeAssignor:
    """Kafka's server-side ``range``: per topic, members subscribed to it in order (static
    members by instance id, then the others by member id) take contiguous ranges, the first
    ``P % N`` one partition more."""

    name = "range"

    def assign(
        self, members: Mapping[str, MemberSpec], partition_counts: Mapping[uuid.UUID, int]
    ) -> dict[str, Assignment]:
        order = sorted(
            members,
            key=lambda m: (
                (0, members[m].instance_id or "") if members[m].instance_id is not None
                else (1, m)
            ),
        )
        result: dict[str, dict[uuid.UUID, set[int]]] = {m: {} for m in members}
        for topic in sorted(partition_counts):
            takers = [m for m in order if topic in members[m].subscribed]
            if not takers:
                continue
            minimum, extra = divmod(partition_counts[topic], len(takers))
            start = 0
            for rank, member in enumerate(takers):
                end = start + minimum + (1 if rank < extra else 0)
                if end > start:
                    result[member][topic] = set(range(start, end))
                start = end
        return {member: _freeze(parts) for member, parts in result.items()}


def _count(assignment: Mapping[uuid.UUID, set[int]] | Assignment) -> int:
    return sum(len(parts) for parts in assignment.values())


ASSIGNORS: Mapping[str, Assignor] = {a.name: a for a in (UniformAssignor(), RangeAssignor())}
"""Kafka's ``group.consumer.assignors`` default: uniform, range (the first is the default)."""
DEFAULT_ASSIGNOR = "uniform"
