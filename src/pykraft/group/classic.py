"""A classic-protocol group and its members: Kafka's ``ClassicGroup`` state, without the
coordinator's timers and replies (``classic_membership`` drives it).

A member's parked JoinGroup or SyncGroup is the runtime's reply token, held here until the
rebalance step that answers it, so a group always knows which requests it still owes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from pykraft.errors import PyKraftError
from pykraft.group.errors import GroupError
from pykraft.group.outcome import OffsetsRecord, ReplyToken
from pykraft.group.records import (
    GroupMetadataKey,
    GroupMetadataValue,
    MemberMetadata,
    group_metadata_record,
)
from pykraft.group.subscriptions import read_consumer_protocol
from pykraft.messages.kafka.consumer_protocol_subscription import ConsumerProtocolSubscription
from pykraft.protocol.errors import ErrorCode

CONSUMER_PROTOCOL_TYPE = "consumer"
"""The protocol type of Kafka consumers, whose metadata the coordinator can read."""
GROUP_TYPE = "classic"
"""What ListGroups v5 and the group registry call these groups."""


class GroupState(Enum):
    """Kafka's ``ClassicGroupState``; the value is the name Kafka reports."""

    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


_VALID_PREVIOUS: dict[GroupState, frozenset[GroupState]] = {
    GroupState.EMPTY: frozenset({GroupState.PREPARING_REBALANCE}),
    GroupState.PREPARING_REBALANCE: frozenset(
        {GroupState.STABLE, GroupState.COMPLETING_REBALANCE, GroupState.EMPTY}),
    GroupState.COMPLETING_REBALANCE: frozenset({GroupState.PREPARING_REBALANCE}),
    GroupState.STABLE: frozenset({GroupState.COMPLETING_REBALANCE}),
    GroupState.DEAD: frozenset(GroupState),
}



@dataclass(slots=True)
class ClassicMember:
    """One member: what it joined with, its assignment and the requests it waits on."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    protocols: tuple[tuple[str, bytes], ...]
    assignment: bytes = b""
    join_token: ReplyToken | None = None
    sync_token: ReplyToken | None = None
    is_new: bool = False

    @property
    def awaiting_join(self) -> bool:
        return self.join_token is not None

    @property
    def has_satisfied_heartbeat(self) -> bool:
        """Members waiting in a rebalance count as alive, except new ones (Kafka's rule: a
        new member that vanished must not hold its first rebalance)."""
        if self.is_new:
            return False
        return self.join_token is not None or self.sync_token is not None

    def metadata_names(self) -> set[str]:
        return {name for name, _ in self.protocols}

    def metadata(self, protocol: str | None) -> bytes:
        for name, metadata in self.protocols:
            if name == protocol:
                return metadata
        return b""

    def vote(self, candidates: set[str]) -> str:
        """The first of its protocols, in its order of preference, that all members have."""
        return next(name for name, _ in self.protocols if name in candidates)


@dataclass(slots=True)
class ClassicGroup:
    """Kafka's ``ClassicGroup``: state, generation, chosen protocol, leader and members."""

    group_id: str
    state: GroupState = GroupState.EMPTY
    previous_state: GroupState = GroupState.DEAD
    state_timestamp_ms: int | None = None
    protocol_type: str | None = None
    protocol_name: str | None = None
    generation: int = 0
    leader_id: str | None = None
    members: dict[str, ClassicMember] = field(default_factory=dict)
    static_members: dict[str, str] = field(default_factory=dict)
    pending_join_members: set[str] = field(default_factory=set)
    pending_sync_members: set[str] = field(default_factory=set)
    subscribed_topics: frozenset[str] | None = None
    new_member_added: bool = False

    group_type = GROUP_TYPE

    def in_state(self, *states: GroupState) -> bool:
        return self.state in states

    def is_empty(self) -> bool:
        return self.state is GroupState.EMPTY

    def state_name(self) -> str:
        return self.state.value

    def listed_protocol_type(self) -> str:
        return self.protocol_type or ""

    def transition(self, state: GroupState, now_ms: int) -> None:
        if self.state not in _VALID_PREVIOUS[state]:
            raise AssertionError(f"group {self.group_id}: {self.state.value} -> {state.value}")
        self.previous_state, self.state = self.state, state
        self.state_timestamp_ms = now_ms

    def can_rebalance(self) -> bool:
        return self.state in _VALID_PREVIOUS[GroupState.PREPARING_REBALANCE]

    def is_leader(self, member_id: str) -> bool:
        return self.leader_id == member_id

    def num_awaiting_join(self) -> int:
        return sum(1 for member in self.members.values() if member.awaiting_join)

    def has_all_members_joined(self) -> bool:
        return (self.num_awaiting_join() == len(self.members)
                and not self.pending_join_members)

    def rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    def add(self, member: ClassicMember) -> None:
        if member.group_instance_id is not None:
            self.static_members[member.group_instance_id] = member.member_id
        if not self.members:
            self.protocol_type = member.protocol_type
        if self.leader_id is None:
            self.leader_id = member.member_id
        self.members[member.member_id] = member
        self.pending_join_members.discard(member.member_id)

    def remove(self, member_id: str) -> None:
        member = self.members.pop(member_id, None)
        if member is not None and member.group_instance_id is not None:
            self.static_members.pop(member.group_instance_id, None)
        if self.is_leader(member_id):
            self.leader_id = next(iter(self.members), None)
        self.pending_join_members.discard(member_id)
        self.pending_sync_members.discard(member_id)

    def replace_static_member(self, instance_id: str, old_id: str, new_id: str) -> ClassicMember:
        """Give a static member a new id; the old one's parked requests are the caller's to
        answer FENCED_INSTANCE_ID (returned member keeps them until then)."""
        old = self.members.pop(old_id)
        new = ClassicMember(new_id, old.group_instance_id, old.client_id, old.client_host,
                            old.rebalance_timeout_ms, old.session_timeout_ms,
                            old.protocol_type, old.protocols, old.assignment)
        self.members[new_id] = new
        if self.is_leader(old_id):
            self.leader_id = new_id
        self.static_members[instance_id] = new_id
        self.pending_sync_members.discard(old_id)
        return old

    def maybe_elect_joined_leader(self) -> bool:
        """Keep a leader that rejoined, else pick a member that did; False if none did."""
        if self.leader_id is None:
            return False
        if self.members[self.leader_id].awaiting_join:
            return True
        for member in self.members.values():
            if member.awaiting_join:
                self.leader_id = member.member_id
                return True
        return False

    def supports_protocols(self, protocol_type: str, names: set[str]) -> bool:
        """Can a member with these protocols join? (empty group: any non-empty set; else the
        same type and one protocol every current member has)."""
        if self.is_empty():
            return bool(protocol_type) and bool(names)
        return self.protocol_type == protocol_type and any(
            all(name in member.metadata_names() for member in self.members.values())
            for name in names)

    def select_protocol(self) -> str:
        """Kafka's vote: each member votes for its preferred candidate; most votes wins (ties
        to the protocol that got its first vote first)."""
        members = list(self.members.values())
        candidates = set.intersection(*(member.metadata_names() for member in members))
        votes: dict[str, int] = {}
        for member in members:
            choice = member.vote(candidates)
            votes[choice] = votes.get(choice, 0) + 1
        return max(votes, key=lambda name: votes[name])

    def validate_member(self, member_id: str, instance_id: str | None) -> None:
        """Kafka's ``validateMember``: a static instance id must map to this member id."""
        if instance_id is not None:
            existing = self.static_members.get(instance_id)
            if existing is None:
                raise GroupError(ErrorCode.UNKNOWN_MEMBER_ID)
            if existing != member_id:
                raise GroupError(ErrorCode.FENCED_INSTANCE_ID)
        if member_id not in self.members:
            raise GroupError(ErrorCode.UNKNOWN_MEMBER_ID)

    def validate_offset_commit(self, member_id: str, instance_id: str | None,
                               generation: int, api_version: int,
                               transactional: bool = False) -> int | None:
        """Kafka's ``ClassicGroup.validateOffsetCommit``: the error code refusing a commit, or
        None. Generation -1 with no member is a standalone commit, allowed while Empty; a
        transactional one (TxnOffsetCommit v0-2 name no member) at any state."""
        if self.in_state(GroupState.DEAD):
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        if generation < 0 and self.is_empty():
            return None
        if generation >= 0 or member_id or instance_id is not None:
            try:
                self.validate_member(member_id, instance_id)
            except GroupError as refused:
                return refused.code
            if generation != self.generation:
                return ErrorCode.ILLEGAL_GENERATION
        elif not transactional and not self.is_empty():
            return ErrorCode.UNKNOWN_MEMBER_ID
        if not transactional and self.in_state(GroupState.COMPLETING_REBALANCE):
            return ErrorCode.REBALANCE_IN_PROGRESS
        return None

    def validate_offset_fetch(self, member_id: str | None, member_epoch: int) -> int | None:
        """Classic groups let anyone read their offsets (Kafka checks only for Dead)."""
        return None

    def init_next_generation(self, now_ms: int) -> None:
        self.generation += 1
        if self.members:
            self.protocol_name = self.select_protocol()
            self.subscribed_topics = self.compute_subscribed_topics()
            self.transition(GroupState.COMPLETING_REBALANCE, now_ms)
        else:
            self.protocol_name = None
            self.subscribed_topics = self.compute_subscribed_topics()
            self.transition(GroupState.EMPTY, now_ms)
        self.pending_sync_members.clear()

    def compute_subscribed_topics(self) -> frozenset[str] | None:
        """The topics the members subscribe to, read from the consumer protocol's metadata;
        None when unknown (another protocol type, or metadata that does not parse)."""
        if self.protocol_type != CONSUMER_PROTOCOL_TYPE:
            return None
        if not self.members:
            return frozenset()
        if self.protocol_name is None:
            return None
        topics: set[str] = set()
        try:
            for member in self.members.values():
                _, subscription = read_consumer_protocol(
                    ConsumerProtocolSubscription, member.metadata(self.protocol_name))
                topics.update(subscription.topics)
        except PyKraftError:
            return None  # Kafka logs it: the coordinator does not know the topics
        return frozenset(topics)

    def is_subscribed_to(self, topic: str) -> bool:
        if self.subscribed_topics is None:
            return self.protocol_type == CONSUMER_PROTOCOL_TYPE
        return topic in self.subscribed_topics

    def metadata_value(self, assignment: dict[str, bytes] | None = None) -> GroupMetadataValue:
        """The GroupMetadata record value of this group, with ``assignment`` (member id to
        bytes) instead of the members' current ones when given."""
        members = tuple(
            MemberMetadata(
                member_id=m.member_id, group_instance_id=m.group_instance_id,
                client_id=m.client_id, client_host=m.client_host,
                rebalance_timeout=m.rebalance_timeout_ms, session_timeout=m.session_timeout_ms,
                subscription=m.metadata(self.protocol_name),
                assignment=m.assignment if assignment is None else assignment.get(
                    m.member_id, b""))
            for m in self.members.values())
        return GroupMetadataValue(
            protocol_type=self.protocol_type or "", generation=self.generation,
            protocol=self.protocol_name, leader=self.leader_id,
            current_state_timestamp=-1 if self.state_timestamp_ms is None
            else self.state_timestamp_ms,
            members=members)

    def metadata_record(self, assignment: dict[str, bytes] | None = None) -> OffsetsRecord:
        return group_metadata_record(GroupMetadataKey(self.group_id),
                                     self.metadata_value(assignment))


def group_from_record(group_id: str, value: GroupMetadataValue) -> ClassicGroup:
    """The group a GroupMetadata record describes: Stable with its members, or Empty."""
    group = ClassicGroup(
        group_id,
        state=GroupState.STABLE if value.members else GroupState.EMPTY,
        state_timestamp_ms=None if value.current_state_timestamp == -1
        else value.current_state_timestamp,
        protocol_type=value.protocol_type or None,
        protocol_name=value.protocol, generation=value.generation, leader_id=value.leader)
    for m in value.members:
        group.add(ClassicMember(
            m.member_id, m.group_instance_id, m.client_id, m.client_host,
            m.session_timeout if m.rebalance_timeout == -1 else m.rebalance_timeout,
            m.session_timeout, value.protocol_type,
            ((value.protocol or "", m.subscription),), m.assignment))
    group.leader_id = value.leader
    group.subscribed_topics = group.compute_subscribed_topics()
    return group
