"""A KIP-848 consumer group member and its reconciliation towards the target assignment.

The coordinator never hands a partition to a member while another member still owns it.
A member moving to a new target first keeps ``assigned & target`` and must revoke the rest
(UNREVOKED_PARTITIONS: its epoch stays until its heartbeat no longer reports them); then it
takes the new epoch and the target partitions that are free, waiting for the others
(UNRELEASED_PARTITIONS) until their owners revoke them. Kafka's ``CurrentAssignmentBuilder``.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from enum import IntEnum

from pykraft.group.assignors import Assignment

LEAVE_EPOCH = -1
STATIC_LEAVE_EPOCH = -2


class MemberState(IntEnum):
    """Kafka's ``MemberState`` (the int8 stored in the current assignment record)."""

    STABLE = 0
    UNREVOKED_PARTITIONS = 1
    UNRELEASED_PARTITIONS = 2
    UNKNOWN = 127


def partitions_of(pairs: Iterable[tuple[uuid.UUID, Iterable[int]]]) -> Assignment:
    """A normalised assignment: empty topics dropped, partitions as frozensets."""
    merged: dict[uuid.UUID, set[int]] = {}
    for topic, parts in pairs:
        merged.setdefault(topic, set()).update(parts)
    return {topic: frozenset(parts) for topic, parts in merged.items() if parts}


def contains(assignment: Assignment, topic: uuid.UUID, partition: int) -> bool:
    return partition in assignment.get(topic, frozenset())


@dataclass(frozen=True, slots=True)
class ConsumerMember:
    """One member as the records describe it: subscription (record 5) and current
    assignment (record 8)."""

    member_id: str
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: tuple[str, ...] = ()
    subscribed_topic_regex: str | None = None
    rebalance_timeout_ms: int = -1
    server_assignor: str | None = None
    member_epoch: int = 0
    previous_member_epoch: int = 0
    state: MemberState = MemberState.STABLE
    assigned: Assignment = field(default_factory=dict)
    pending_revocation: Assignment = field(default_factory=dict)

    def is_reconciled_to(self, epoch: int) -> bool:
        return self.state is MemberState.STABLE and self.member_epoch == epoch

    def with_epoch(self, epoch: int) -> ConsumerMember:
        """Kafka's ``updateMemberEpoch``: the previous epoch follows the current one."""
        return replace(self, previous_member_epoch=self.member_epoch, member_epoch=epoch)

    def same_subscription(self, other: ConsumerMember) -> bool:
        return (
            self.subscribed_topic_names == other.subscribed_topic_names
            and self.subscribed_topic_regex == other.subscribed_topic_regex
        )

    def same_metadata(self, other: ConsumerMember) -> bool:
        """Whether the subscription record (5) would be the same."""
        return (
            self.instance_id == other.instance_id
            and self.rack_id == other.rack_id
            and self.client_id == other.client_id
            and self.client_host == other.client_host
            and self.same_subscription(other)
            and self.rebalance_timeout_ms == other.rebalance_timeout_ms
            and self.server_assignor == other.server_assignor
        )


Owned = Mapping[uuid.UUID, frozenset[int]] | None
"""The partitions a heartbeat reports owned; None when it left them out (unchanged)."""


def owns_any(owned: Owned, partitions: Assignment) -> bool:
    """Whether the member may still hold any of ``partitions`` (unknown counts as yes)."""
    if owned is None:
        return True
    return any(partitions.get(topic, frozenset()) & parts for topic, parts in owned.items())


def reconcile(
    member: ConsumerMember,
    target_epoch: int,
    target: Assignment,
    owned: Owned,
    owned_by_anyone: Callable[[uuid.UUID, int], bool],
) -> ConsumerMember:
    """The member's next state towards ``target`` at ``target_epoch``."""
    match member.state:
        case MemberState.STABLE:
            if member.member_epoch == target_epoch:
                return member
            return _next(member, member.member_epoch, target_epoch, target, owned, owned_by_anyone)
        case MemberState.UNREVOKED_PARTITIONS:
            if owns_any(owned, member.pending_revocation):
                return member
            return _next(
                member, member.member_epoch + 1, target_epoch, target, owned, owned_by_anyone
            )
        case MemberState.UNRELEASED_PARTITIONS:
            return _next(member, member.member_epoch, target_epoch, target, owned, owned_by_anyone)
    # UNKNOWN (a newer coordinator's state): start over from nothing.
    return _next(member, target_epoch, target_epoch, target, owned, owned_by_anyone)


def _next(
    member: ConsumerMember,
    epoch: int,
    target_epoch: int,
    target: Assignment,
    owned: Owned,
    owned_by_anyone: Callable[[uuid.UUID, int], bool],
) -> ConsumerMember:
    kept: list[tuple[uuid.UUID, frozenset[int]]] = []
    revoke: list[tuple[uuid.UUID, frozenset[int]]] = []
    gain: list[tuple[uuid.UUID, frozenset[int]]] = []
    unreleased = False
    for topic in set(target) | set(member.assigned):
        wanted = target.get(topic, frozenset())
        current = member.assigned.get(topic, frozenset())
        kept.append((topic, current & wanted))
        revoke.append((topic, current - wanted))
        free = frozenset(p for p in wanted - current if not owned_by_anyone(topic, p))
        unreleased = unreleased or len(free) < len(wanted - current)
        gain.append((topic, free))
    to_revoke = partitions_of(revoke)
    to_gain = partitions_of(gain)
    if to_revoke and owns_any(owned, to_revoke):
        return replace(
            member.with_epoch(epoch),
            state=MemberState.UNREVOKED_PARTITIONS,
            assigned=partitions_of(kept),
            pending_revocation=to_revoke,
        )
    state = MemberState.UNRELEASED_PARTITIONS if unreleased else MemberState.STABLE
    return replace(
        member.with_epoch(target_epoch),
        state=state,
        assigned=partitions_of([*kept, *to_gain.items()]),
        pending_revocation={},
    )
