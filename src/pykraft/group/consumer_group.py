"""KIP-848 consumer groups: ConsumerGroupHeartbeat (68), ConsumerGroupDescribe (69), their
timers, records and the offset checks of members using them.

Every change is made by writing records (:mod:`pykraft.group.consumer_records`) and replaying
each at once, the path the log's load takes too, so the state a shard rebuilds after a
failover is the state it had. A heartbeat (Kafka's ``GroupMetadataManager``):

1. updates the member's subscription (record 5); a changed subscription, or changed
   metadata of the subscribed topics (record 4), bumps the group epoch (record 3);
2. when the group epoch is ahead of the target assignment's, the preferred assignor computes
   a new target (records 7 for the members whose target changed, then 6);
3. reconciles the member towards its target (record 8, :mod:`.consumer_member`).

A member that stops heartbeating for ``group.consumer.session.timeout.ms``, or that does not
revoke its partitions within its rebalance timeout, is fenced: removed (tombstones 8, 7, 5)
and the group epoch bumped. Timers are not persisted; after a load the shard starts every
member's session timer at its first input (:meth:`ConsumerGroups.arm`).
"""

from __future__ import annotations

import random
import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from pykraft.group.assignors import ASSIGNORS, DEFAULT_ASSIGNOR, Assignment, MemberSpec
from pykraft.group.config import GroupConfig
from pykraft.group.consumer_member import (
    LEAVE_EPOCH,
    STATIC_LEAVE_EPOCH,
    ConsumerMember,
    MemberState,
    Owned,
    partitions_of,
    reconcile,
)
from pykraft.group.consumer_records import (
    ConsumerGroupCurrentMemberAssignmentKey,
    ConsumerGroupCurrentMemberAssignmentValue,
    ConsumerGroupMemberMetadataKey,
    ConsumerGroupMemberMetadataValue,
    ConsumerGroupMetadataKey,
    ConsumerGroupMetadataValue,
    ConsumerGroupPartitionMetadataKey,
    ConsumerGroupPartitionMetadataValue,
    ConsumerGroupTargetAssignmentMemberKey,
    ConsumerGroupTargetAssignmentMemberValue,
    ConsumerGroupTargetAssignmentMetadataKey,
    ConsumerGroupTargetAssignmentMetadataValue,
    ConsumerKey,
    ConsumerValue,
    TopicMetadata,
    TopicPartitions,
    consumer_record,
)
from pykraft.group.errors import GroupError
from pykraft.group.metrics import GroupCounters
from pykraft.group.outcome import OffsetsRecord, Outcome, RequestContext, TopicInfo
from pykraft.group.records import GroupMetadataKey, group_metadata_record
from pykraft.group.registry import Groups
from pykraft.group.timers import Timers
from pykraft.ids import INTERNAL_TOPICS, random_uuid, uuid_to_str
from pykraft.messages.kafka import consumer_group_describe_response as describe_v1
from pykraft.messages.kafka import consumer_group_heartbeat_request as heartbeat_request
from pykraft.messages.kafka import consumer_group_heartbeat_response as heartbeat_v1
from pykraft.protocol.errors import ErrorCode

HeartbeatRequest = heartbeat_request.ConsumerGroupHeartbeatRequest
HeartbeatResponse = heartbeat_v1.ConsumerGroupHeartbeatResponse
DescribeResponse = describe_v1.ConsumerGroupDescribeResponse

#: ConsumerGroupHeartbeat v1+ (Kafka 4.0): the client generates its member id.
CLIENT_MEMBER_ID_VERSION = 1
CONSUMER_GROUP_TYPE = "consumer"
"""ListGroups' group type and protocol type of a KIP-848 group."""
CONSUMER_MEMBER_TYPE = 1
"""ConsumerGroupDescribe v1 ``member_type``: a member using the consumer protocol."""



@dataclass(slots=True)
class ConsumerGroup:
    """One consumer group as its records describe it."""

    group_id: str
    #: Kafka 4.4's ModernGroup starts both at 1 (TargetAssignmentMetadata.INITIAL): a new
    #: group's first subscription bumps it to 2, a member subscribing to nothing gets 1
    epoch: int = 1
    assignment_epoch: int = 1
    members: dict[str, ConsumerMember] = field(default_factory=dict)
    target: dict[str, Assignment] = field(default_factory=dict)
    subscription: dict[str, TopicInfo] = field(default_factory=dict)

    @property
    def state(self) -> str:
        """Kafka's ``ConsumerGroupState`` name."""
        if not self.members:
            return "Empty"
        if self.epoch > self.assignment_epoch:
            return "Assigning"
        if any(not m.is_reconciled_to(self.assignment_epoch) for m in self.members.values()):
            return "Reconciling"
        return "Stable"

    def static_member(self, instance_id: str) -> ConsumerMember | None:
        return next(
            (m for m in self.members.values() if m.instance_id == instance_id), None
        )

    def owned(self) -> set[tuple[uuid.UUID, int]]:
        """Partitions some member holds (assigned or still pending revocation)."""
        return {
            (topic, p)
            for m in self.members.values()
            for held in (m.assigned, m.pending_revocation)
            for topic, parts in held.items()
            for p in parts
        }

    def preferred_assignor(self, default: str) -> str:
        """The assignor most members ask for, else the default (Kafka's rule)."""
        counts: dict[str, int] = {}
        for m in self.members.values():
            if m.server_assignor is not None:
                counts[m.server_assignor] = counts.get(m.server_assignor, 0) + 1
        if not counts:
            return default
        return max(sorted(counts), key=lambda name: counts[name])

    @property
    def group_type(self) -> str:
        return CONSUMER_GROUP_TYPE

    def is_empty(self) -> bool:
        return not self.members

    def state_name(self) -> str:
        return self.state

    def listed_protocol_type(self) -> str:
        return CONSUMER_GROUP_TYPE

    def is_subscribed_to(self, topic: str) -> bool:
        """Whether a member subscribes to ``topic`` (OffsetDelete refuses it; its offsets
        do not expire)."""
        return topic in self.subscribed_topic_names(self.subscription)

    def validate_offset_commit(
        self, member_id: str, instance_id: str | None, generation: int, api_version: int,
        transactional: bool = False,
    ) -> int | None:
        """The error refusing an OffsetCommit (Kafka's validateOffsetCommit), or None: epoch
        -1 commits only to an empty group; members commit at their own epoch, with v9+
        (TxnOffsetCommit at any version)."""
        if generation < 0 and not self.members:
            return None
        member = self.members.get(member_id)
        if member is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if not transactional and api_version < 9:
            return ErrorCode.UNSUPPORTED_VERSION
        if generation != member.member_epoch:
            return ErrorCode.STALE_MEMBER_EPOCH
        return None

    def validate_offset_fetch(self, member_id: str | None, member_epoch: int) -> int | None:
        """The error refusing an OffsetFetch v9+ naming a member (validateOffsetFetch)."""
        if member_id is None and member_epoch < 0:
            return None
        member = self.members.get(member_id or "")
        if member is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if member_epoch != member.member_epoch:
            return ErrorCode.STALE_MEMBER_EPOCH
        return None

    def subscribed_topic_names(self, topics: Mapping[str, TopicInfo]) -> set[str]:
        return {name for m in self.members.values() for name in _subscribed(m, topics)}


def _subscribed(member: ConsumerMember, topics: Mapping[str, TopicInfo]) -> set[str]:
    """The topic names a member subscribes to: its list plus its regex's matches."""
    names = set(member.subscribed_topic_names)
    if member.subscribed_topic_regex:
        pattern = re.compile(member.subscribed_topic_regex)
        names.update(
            t for t in topics if t not in INTERNAL_TOPICS and pattern.fullmatch(t) is not None
        )
    return names


def _to_wire(assignment: Assignment) -> tuple[TopicPartitions, ...]:
    return tuple(
        TopicPartitions(topic, tuple(sorted(parts))) for topic, parts in sorted(assignment.items())
    )


def _from_wire(parts: tuple[TopicPartitions, ...]) -> Assignment:
    return partitions_of((tp.topic_id, tp.partitions) for tp in parts)


def _fenced(received: int, known: int, word: str) -> GroupError:
    return GroupError(
        ErrorCode.FENCED_MEMBER_EPOCH,
        f"The consumer group member has a {word} member epoch ({received}) than the one known "
        f"by the group coordinator ({known}). The member must abandon all its partitions and "
        "rejoin.",
    )


def session_key(group_id: str, member_id: str) -> tuple[str, str, str]:
    return ("consumer-session", group_id, member_id)


def revocation_key(group_id: str, member_id: str) -> tuple[str, str, str]:
    return ("consumer-revocation", group_id, member_id)


class ConsumerGroups:
    """The consumer groups of one ``__consumer_offsets`` partition (one shard), kept in the
    shard's registry beside its classic groups, with their timers in the shard's timers
    (keys ``(kind, group id, member id)``)."""

    def __init__(
        self, groups: Groups, config: GroupConfig, rng: random.Random, timers: Timers,
        counters: GroupCounters | None = None,
    ) -> None:
        self.groups = groups
        self.config = config
        self._rng = rng
        self.timers = timers
        self.counters = GroupCounters() if counters is None else counters

    def group(self, group_id: str) -> ConsumerGroup | None:
        """The consumer group ``group_id``; None when absent or of another type."""
        group = self.groups.get(group_id)
        return group if isinstance(group, ConsumerGroup) else None

    # --- replay: the only place state changes --------------------------------------------

    def replay(self, key: ConsumerKey, value: ConsumerValue | None) -> None:
        """Apply one record, read from the log or just written."""
        group = self.group(key.group_id)
        if group is None:
            if value is None:
                return
            group = ConsumerGroup(key.group_id)
            self.groups[key.group_id] = group
        match key, value:
            case ConsumerGroupMetadataKey(), ConsumerGroupMetadataValue(epoch=epoch):
                group.epoch = epoch
            case ConsumerGroupMetadataKey(), None:
                del self.groups[key.group_id]
            case ConsumerGroupPartitionMetadataKey(), ConsumerGroupPartitionMetadataValue():
                group.subscription = {
                    t.topic_name: TopicInfo(t.topic_id, t.num_partitions) for t in value.topics
                }
            case ConsumerGroupPartitionMetadataKey(), None:
                group.subscription = {}
            case ConsumerGroupTargetAssignmentMetadataKey(), _:
                group.assignment_epoch = (
                    value.assignment_epoch
                    if isinstance(value, ConsumerGroupTargetAssignmentMetadataValue)
                    else -1
                )
            case ConsumerGroupTargetAssignmentMemberKey(member_id=member_id), _:
                if isinstance(value, ConsumerGroupTargetAssignmentMemberValue):
                    group.target[member_id] = _from_wire(value.topic_partitions)
                else:
                    group.target.pop(member_id, None)
            case ConsumerGroupMemberMetadataKey(member_id=member_id), _:
                self._replay_member(group, member_id, value)
            case ConsumerGroupCurrentMemberAssignmentKey(member_id=member_id), _:
                self._replay_assignment(group, member_id, value)

    def _replay_member(
        self, group: ConsumerGroup, member_id: str, value: ConsumerValue | None
    ) -> None:
        if not isinstance(value, ConsumerGroupMemberMetadataValue):
            group.members.pop(member_id, None)
            self._forget(group.group_id, member_id)
            return
        old = group.members.get(member_id) or ConsumerMember(member_id)
        group.members[member_id] = replace(
            old,
            instance_id=value.instance_id,
            rack_id=value.rack_id,
            client_id=value.client_id,
            client_host=value.client_host,
            subscribed_topic_names=tuple(value.subscribed_topic_names),
            subscribed_topic_regex=value.subscribed_topic_regex,
            rebalance_timeout_ms=value.rebalance_timeout_ms,
            server_assignor=value.server_assignor,
        )

    def _replay_assignment(
        self, group: ConsumerGroup, member_id: str, value: ConsumerValue | None
    ) -> None:
        old = group.members.get(member_id)
        if not isinstance(value, ConsumerGroupCurrentMemberAssignmentValue):
            if old is not None:
                group.members[member_id] = replace(
                    old, member_epoch=LEAVE_EPOCH, previous_member_epoch=LEAVE_EPOCH,
                    assigned={}, pending_revocation={},
                )
            return
        if old is None:
            old = ConsumerMember(member_id)
        try:
            state = MemberState(value.state)
        except ValueError:
            state = MemberState.UNKNOWN
        group.members[member_id] = replace(
            old,
            member_epoch=value.member_epoch,
            previous_member_epoch=value.previous_member_epoch,
            state=state,
            assigned=_from_wire(value.assigned_partitions),
            pending_revocation=_from_wire(value.partitions_pending_revocation),
        )

    def _write(
        self, out: list[OffsetsRecord], key: ConsumerKey, value: ConsumerValue | None
    ) -> None:
        out.append(consumer_record(key, value))
        self.replay(key, value)

    # --- ConsumerGroupHeartbeat ----------------------------------------------------------

    def heartbeat(
        self, request: HeartbeatRequest, api_version: int, context: RequestContext
    ) -> tuple[HeartbeatResponse, list[OffsetsRecord]]:
        """Answer one heartbeat; the records make its changes durable."""
        try:
            self._validate(request, api_version)
            if request.member_epoch in (LEAVE_EPOCH, STATIC_LEAVE_EPOCH):
                return self._leave(request)
            return self._heartbeat(request, api_version, context)
        except GroupError as error:
            return _error_response(error), []

    def _validate(self, request: HeartbeatRequest, api_version: int) -> None:
        def invalid(message: str) -> GroupError:
            return GroupError(ErrorCode.INVALID_REQUEST, message)

        epoch = request.member_epoch
        needs_id = api_version >= CLIENT_MEMBER_ID_VERSION or epoch > 0 or epoch == LEAVE_EPOCH
        if needs_id and not request.member_id:
            raise invalid("MemberId can't be empty.")
        if not request.group_id:
            raise invalid("GroupId can't be empty.")
        if request.instance_id == "":
            raise invalid("InstanceId can't be empty.")
        if request.rack_id == "":
            raise invalid("RackId can't be empty.")
        if epoch == 0:
            if request.rebalance_timeout_ms == -1:
                raise invalid("RebalanceTimeoutMs must be provided in first request.")
            if request.topic_partitions is None or request.topic_partitions:
                raise invalid("TopicPartitions must be empty when (re-)joining.")
            # An empty list or regex is a member subscribed to nothing, still in the group.
            if request.subscribed_topic_names is None and request.subscribed_topic_regex is None:
                raise invalid("Either SubscribedTopicNames or SubscribedTopicRegex must be "
                              "non-null when (re-)joining.")
        elif epoch == STATIC_LEAVE_EPOCH and request.instance_id is None:
            raise invalid("InstanceId can't be null.")
        elif epoch < STATIC_LEAVE_EPOCH:
            raise invalid("MemberEpoch is invalid.")
        if request.server_assignor is not None and request.server_assignor not in ASSIGNORS:
            raise GroupError(
                ErrorCode.UNSUPPORTED_ASSIGNOR,
                f"ServerAssignor {request.server_assignor} is not supported. Supported "
                f"assignors: {', '.join(ASSIGNORS)}.",
            )
        if request.subscribed_topic_regex:
            try:
                re.compile(request.subscribed_topic_regex)
            except re.error as exc:
                raise GroupError(
                    ErrorCode.INVALID_REGULAR_EXPRESSION,
                    f"SubscribedTopicRegex `{request.subscribed_topic_regex}` is not a valid "
                    f"regular expression: {exc}.",
                ) from None

    def _existing(self, group_id: str, missing: str = "Group") -> ConsumerGroup:
        """The consumer group ``group_id``, else GROUP_ID_NOT_FOUND in Kafka's words: a
        heartbeat's lookup names a missing group "Consumer group", a leave's and a
        describe's "Group" (GroupMetadataManager getOrMaybeCreateConsumerGroup vs group)."""
        group = self.groups.get(group_id)
        if group is None:
            raise GroupError(ErrorCode.GROUP_ID_NOT_FOUND, f"{missing} {group_id} not found.")
        if not isinstance(group, ConsumerGroup):
            raise GroupError(
                ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a consumer group."
            )
        return group

    def _for_join(self, group_id: str) -> ConsumerGroup | None:
        """The group a join enters, None when it creates it. An empty classic group of that
        id gives way (Kafka converts non-empty ones online, which pykraft does not)."""
        group = self.groups.get(group_id)
        if group is None or (not isinstance(group, ConsumerGroup) and group.is_empty()):
            return None
        return self._existing(group_id)

    def _drop_classic(self, records: list[OffsetsRecord], group_id: str) -> None:
        """Delete the empty classic group whose id a consumer group takes (its offsets
        stay, as in Kafka)."""
        if group_id in self.groups and self.group(group_id) is None:
            records.append(group_metadata_record(GroupMetadataKey(group_id), None))
            del self.groups[group_id]
            self.timers.cancel_where(
                lambda key: isinstance(key, tuple) and len(key) > 1 and key[1] == group_id
            )

    def _heartbeat(
        self, request: HeartbeatRequest, api_version: int, context: RequestContext
    ) -> tuple[HeartbeatResponse, list[OffsetsRecord]]:
        group_id = request.group_id
        joining = request.member_epoch == 0
        group = (self._for_join(group_id) if joining
                 else self._existing(group_id, missing="Consumer group"))
        member_id = request.member_id or uuid_to_str(random_uuid(self._random_uuid))
        owned = _owned(request.topic_partitions)
        if (
            group is not None
            and len(group.members) >= self.config.consumer_max_size
            and (not request.member_id or member_id not in group.members)
        ):
            raise GroupError(
                ErrorCode.GROUP_MAX_SIZE_REACHED,
                "The consumer group has reached its maximum capacity of "
                f"{self.config.consumer_max_size} members.",
            )
        # Everything that can refuse the heartbeat is checked before the first record.
        replaced = self._find_member(group, member_id, request, owned)
        records: list[OffsetsRecord] = []
        self._drop_classic(records, group_id)
        group = self.group(group_id) or ConsumerGroup(group_id)
        self.groups[group_id] = group
        if replaced is not None and replaced.member_id != member_id:
            member = self._replace_static(records, group, replaced, member_id)
        else:
            member = group.members.get(member_id) or ConsumerMember(member_id)
        updated = replace(
            member,
            instance_id=request.instance_id or member.instance_id,
            rack_id=request.rack_id or member.rack_id,
            rebalance_timeout_ms=(
                request.rebalance_timeout_ms
                if request.rebalance_timeout_ms != -1
                else member.rebalance_timeout_ms
            ),
            server_assignor=request.server_assignor or member.server_assignor,
            subscribed_topic_names=(
                tuple(sorted(set(request.subscribed_topic_names)))
                if request.subscribed_topic_names is not None
                else member.subscribed_topic_names
            ),
            subscribed_topic_regex=(
                request.subscribed_topic_regex or None
                if request.subscribed_topic_regex is not None
                else member.subscribed_topic_regex
            ),
            client_id=context.client_id,
            client_host=context.client_host,
        )
        bump = False
        if member_id not in group.members or not updated.same_metadata(member):
            self._write(records, *_member_record(group_id, updated))
            # a new member is compared with an empty one, as Kafka's hasMemberSubscriptionChanged
            bump = not updated.same_subscription(member)
        bump = self._refresh_subscription(records, group, context.topics) or bump
        if bump:
            self._write(records, ConsumerGroupMetadataKey(group_id),
                        ConsumerGroupMetadataValue(group.epoch + 1))
            self.counters.consumer_rebalances += 1
        if group.epoch > group.assignment_epoch:
            self._assign(records, group)
        before = group.members[member_id]
        after = self._reconcile(records, group, before, owned)
        self._schedule_session(group_id, member_id, context.now_ms)
        if after != before:
            self._schedule_revocation(group_id, after, context.now_ms)
        full = joining or (
            request.rebalance_timeout_ms != -1
            and request.subscribed_topic_names is not None
            and request.topic_partitions is not None
        )
        assignment = None
        if full or after.assigned != member.assigned:
            assignment = heartbeat_v1.Assignment(
                topic_partitions=tuple(
                    heartbeat_v1.TopicPartitions(topic_id=t.topic_id, partitions=t.partitions)
                    for t in _to_wire(after.assigned)
                )
            )
        return (
            HeartbeatResponse(
                member_id=member_id,
                member_epoch=after.member_epoch,
                heartbeat_interval_ms=self.config.consumer_heartbeat_interval_ms,
                assignment=assignment,
            ),
            records,
        )

    def _random_uuid(self) -> uuid.UUID:
        return uuid.UUID(int=self._rng.getrandbits(128), version=4)

    def _find_member(
        self, group: ConsumerGroup | None, member_id: str, request: HeartbeatRequest, owned: Owned
    ) -> ConsumerMember | None:
        """Check the member may heartbeat; returns the static member its instance id names
        (to replace when it rejoins under a new member id)."""
        joining = request.member_epoch == 0
        instance_id = request.instance_id
        if instance_id is None:
            member = None if group is None else group.members.get(member_id)
            if member is None:
                if joining:
                    return None
                raise GroupError(
                    ErrorCode.UNKNOWN_MEMBER_ID,
                    f"Member {member_id} is not a member of group {request.group_id}.",
                )
            _check_epoch(member, request.member_epoch, owned)
            return None
        existing = None if group is None else group.static_member(instance_id)
        if joining:
            if existing is not None and existing.member_id != member_id:
                if existing.member_epoch != STATIC_LEAVE_EPOCH:
                    raise GroupError(
                        ErrorCode.UNRELEASED_INSTANCE_ID,
                        f"Static member {member_id} with instance id {instance_id} cannot join "
                        f"the group because the instance id is owned by {existing.member_id} "
                        "member.",
                    )
            elif existing is not None:
                _check_epoch(existing, request.member_epoch, owned)
            return existing
        existing = self._static(group, instance_id, member_id)
        _check_epoch(existing, request.member_epoch, owned)
        return existing

    @staticmethod
    def _static(group: ConsumerGroup | None, instance_id: str, member_id: str) -> ConsumerMember:
        existing = None if group is None else group.static_member(instance_id)
        if existing is None:
            raise GroupError(ErrorCode.UNKNOWN_MEMBER_ID, f"Instance id {instance_id} is unknown.")
        if existing.member_id != member_id:
            raise GroupError(
                ErrorCode.FENCED_INSTANCE_ID,
                f"Static member {member_id} with instance id {instance_id} was fenced by member "
                f"{existing.member_id}.",
            )
        return existing

    def _replace_static(
        self, records: list[OffsetsRecord], group: ConsumerGroup, old: ConsumerMember, new_id: str
    ) -> ConsumerMember:
        """A static member rejoining under a new member id takes over the old member's
        subscription and assignment (Kafka's replaceMember)."""
        new = replace(old, member_id=new_id, member_epoch=0, previous_member_epoch=0)
        target = group.target.get(old.member_id, {})
        self._remove(records, group, old.member_id)
        self._write(records, *_member_record(group.group_id, new))
        self._write(records, ConsumerGroupTargetAssignmentMemberKey(group.group_id, new_id),
                    ConsumerGroupTargetAssignmentMemberValue(_to_wire(target)))
        self._write(records, *_assignment_record(group.group_id, new))
        return new

    def _refresh_subscription(
        self, records: list[OffsetsRecord], group: ConsumerGroup, topics: Mapping[str, TopicInfo]
    ) -> bool:
        """Write the subscribed topics' metadata when it changed; True if it did."""
        metadata = {
            name: topics[name] for name in sorted(group.subscribed_topic_names(topics))
            if name in topics
        }
        if metadata == group.subscription:
            return False
        value = ConsumerGroupPartitionMetadataValue(
            tuple(TopicMetadata(info.topic_id, name, info.partitions)
                  for name, info in metadata.items())
        )
        self._write(records, ConsumerGroupPartitionMetadataKey(group.group_id), value)
        return True

    def _assign(self, records: list[OffsetsRecord], group: ConsumerGroup) -> None:
        """Compute the target assignment for the group epoch (records 7, then 6)."""
        assignor = ASSIGNORS[group.preferred_assignor(DEFAULT_ASSIGNOR)]
        ids = {name: info.topic_id for name, info in group.subscription.items()}
        specs = {
            m.member_id: MemberSpec(
                frozenset(ids[n] for n in _subscribed(m, group.subscription) if n in ids),
                group.target.get(m.member_id, {}),
                m.instance_id,
            )
            for m in group.members.values()
        }
        counts = {info.topic_id: info.partitions for info in group.subscription.values()}
        result = assignor.assign(specs, counts)
        for member_id in sorted(result):
            if result[member_id] != group.target.get(member_id, {}):
                self._write(records,
                            ConsumerGroupTargetAssignmentMemberKey(group.group_id, member_id),
                            ConsumerGroupTargetAssignmentMemberValue(_to_wire(result[member_id])))
        self._write(records, ConsumerGroupTargetAssignmentMetadataKey(group.group_id),
                    ConsumerGroupTargetAssignmentMetadataValue(group.epoch))

    def _reconcile(
        self, records: list[OffsetsRecord], group: ConsumerGroup, member: ConsumerMember,
        owned: Owned,
    ) -> ConsumerMember:
        if member.is_reconciled_to(group.assignment_epoch):
            return member
        held = group.owned()
        updated = reconcile(
            member, group.assignment_epoch, group.target.get(member.member_id, {}), owned,
            lambda topic, partition: (topic, partition) in held,
        )
        if updated != member:
            self._write(records, *_assignment_record(group.group_id, updated))
        return updated

    def _schedule_session(self, group_id: str, member_id: str, now_ms: int) -> None:
        self.timers.schedule(
            session_key(group_id, member_id), now_ms + self.config.consumer_session_timeout_ms,
            lambda _: self._expire(group_id, member_id, None),
        )

    def _schedule_revocation(self, group_id: str, member: ConsumerMember, now_ms: int) -> None:
        """A member asked to revoke must do so within its rebalance timeout, else it is
        fenced (unless it has left that epoch by then)."""
        key = revocation_key(group_id, member.member_id)
        if member.state is not MemberState.UNREVOKED_PARTITIONS:
            self.timers.cancel(key)
            return
        epoch = member.member_epoch
        self.timers.schedule(
            key, now_ms + max(member.rebalance_timeout_ms, 0),
            lambda _: self._expire(group_id, member.member_id, epoch),
        )

    def _expire(self, group_id: str, member_id: str, epoch: int | None) -> Outcome:
        """A timer fired: fence the member if it is still there (at ``epoch`` if given)."""
        group = self.group(group_id)
        member = None if group is None else group.members.get(member_id)
        records: list[OffsetsRecord] = []
        if group is not None and member is not None and epoch in (None, member.member_epoch):
            self._fence(records, group, member_id)
        return Outcome(records=records)

    def arm(self, now_ms: int) -> None:
        """Start the timers of the members a load brought in (Kafka's onLoaded)."""
        for group in list(self.groups.values()):
            if not isinstance(group, ConsumerGroup):
                continue
            for member in group.members.values():
                if self.timers.deadline(session_key(group.group_id, member.member_id)) is None:
                    self._schedule_session(group.group_id, member.member_id, now_ms)
                key = revocation_key(group.group_id, member.member_id)
                if self.timers.deadline(key) is None:
                    self._schedule_revocation(group.group_id, member, now_ms)

    # --- leaving and fencing -------------------------------------------------------------

    def _leave(self, request: HeartbeatRequest) -> tuple[HeartbeatResponse, list[OffsetsRecord]]:
        group = self._existing(request.group_id)
        records: list[OffsetsRecord] = []
        if request.instance_id is None:
            member = group.members.get(request.member_id)
            if member is None:
                raise GroupError(
                    ErrorCode.UNKNOWN_MEMBER_ID,
                    f"Member {request.member_id} is not a member of group {request.group_id}.",
                )
            self._fence(records, group, member.member_id)
        else:
            member = self._static(group, request.instance_id, request.member_id)
            if request.member_epoch == STATIC_LEAVE_EPOCH:
                # Kept with epoch -2 (its partitions stay reserved) until it rejoins or its
                # session expires.
                away = replace(member, member_epoch=STATIC_LEAVE_EPOCH, pending_revocation={})
                self._write(records, *_assignment_record(group.group_id, away))
            else:
                self._fence(records, group, member.member_id)
        return (
            HeartbeatResponse(member_id=request.member_id, member_epoch=request.member_epoch),
            records,
        )

    def _remove(self, records: list[OffsetsRecord], group: ConsumerGroup, member_id: str) -> None:
        gid = group.group_id
        self._write(records, ConsumerGroupCurrentMemberAssignmentKey(gid, member_id), None)
        self._write(records, ConsumerGroupTargetAssignmentMemberKey(gid, member_id), None)
        self._write(records, ConsumerGroupMemberMetadataKey(gid, member_id), None)

    def _fence(self, records: list[OffsetsRecord], group: ConsumerGroup, member_id: str) -> None:
        """Remove a member and bump the group epoch so the others get its partitions. The
        subscribed topics' metadata can only shrink here: no image comes with a timer."""
        self._remove(records, group, member_id)
        self._refresh_subscription(records, group, group.subscription)
        self._write(records, ConsumerGroupMetadataKey(group.group_id),
                    ConsumerGroupMetadataValue(group.epoch + 1))

    def _forget(self, group_id: str, member_id: str) -> None:
        self.timers.cancel(session_key(group_id, member_id))
        self.timers.cancel(revocation_key(group_id, member_id))

    # --- ConsumerGroupDescribe and what other APIs ask ---------------------------------

    def describe(
        self, group_ids: tuple[str, ...], topics: Mapping[str, TopicInfo]
    ) -> list[describe_v1.DescribedGroup]:
        names = {info.topic_id: name for name, info in topics.items()}
        described = []
        # One (frozen) refusal per distinct id: a 1 MiB request naming one unknown id a
        # million times costs one message, not a million (the answer's memory is bounded by
        # the distinct ids, as the request's own strings are).
        refusals: dict[str, describe_v1.DescribedGroup] = {}
        for group_id in group_ids:
            if (refusal := refusals.get(group_id)) is not None:
                described.append(refusal)
                continue
            try:
                group = self._existing(group_id)
            except GroupError as error:
                refusal = refusals[group_id] = describe_v1.DescribedGroup(
                    error_code=error.code, error_message=error.message, group_id=group_id)
                described.append(refusal)
                continue
            described.append(describe_v1.DescribedGroup(
                group_id=group_id,
                group_state=group.state,
                group_epoch=group.epoch,
                assignment_epoch=group.assignment_epoch,
                assignor_name=group.preferred_assignor(DEFAULT_ASSIGNOR),
                members=tuple(
                    _describe_member(m, group.target.get(m.member_id, {}), names)
                    for m in group.members.values()
                ),
            ))
        return described


def tombstones(group_id: str) -> list[OffsetsRecord]:
    """The records deleting an empty consumer group (DeleteGroups, offsets expiry): its
    target assignment epoch, subscribed topics' metadata and group epoch, as Kafka orders
    them; the caller drops the group from the registry."""
    return [
        consumer_record(ConsumerGroupTargetAssignmentMetadataKey(group_id), None),
        consumer_record(ConsumerGroupPartitionMetadataKey(group_id), None),
        consumer_record(ConsumerGroupMetadataKey(group_id), None),
    ]


def _check_epoch(member: ConsumerMember, received: int, owned: Owned) -> None:
    """Kafka's epoch check: a member one epoch behind is accepted when it owns only what it
    is assigned (the response bumping it may have been lost)."""
    if received > member.member_epoch:
        raise _fenced(received, member.member_epoch, "greater")
    if received < member.member_epoch:
        subset = owned is not None and all(
            parts <= member.assigned.get(topic, frozenset()) for topic, parts in owned.items()
        )
        if received != member.previous_member_epoch or not subset:
            raise _fenced(received, member.member_epoch, "smaller")


def _owned(parts: tuple[heartbeat_request.TopicPartitions, ...] | None) -> Owned:
    if parts is None:
        return None
    return partitions_of((tp.topic_id, tp.partitions) for tp in parts)


def _member_record(
    group_id: str, m: ConsumerMember
) -> tuple[ConsumerGroupMemberMetadataKey, ConsumerGroupMemberMetadataValue]:
    return ConsumerGroupMemberMetadataKey(group_id, m.member_id), ConsumerGroupMemberMetadataValue(
        instance_id=m.instance_id, rack_id=m.rack_id, client_id=m.client_id,
        client_host=m.client_host, subscribed_topic_names=m.subscribed_topic_names,
        subscribed_topic_regex=m.subscribed_topic_regex,
        rebalance_timeout_ms=m.rebalance_timeout_ms, server_assignor=m.server_assignor,
    )


def _assignment_record(
    group_id: str, m: ConsumerMember
) -> tuple[ConsumerGroupCurrentMemberAssignmentKey, ConsumerGroupCurrentMemberAssignmentValue]:
    return (
        ConsumerGroupCurrentMemberAssignmentKey(group_id, m.member_id),
        ConsumerGroupCurrentMemberAssignmentValue(
            member_epoch=m.member_epoch, previous_member_epoch=m.previous_member_epoch,
            state=int(m.state), assigned_partitions=_to_wire(m.assigned),
            partitions_pending_revocation=_to_wire(m.pending_revocation),
        ),
    )


def _describe_member(
    m: ConsumerMember, target: Assignment, names: Mapping[uuid.UUID, str]
) -> describe_v1.Member:
    def assignment(parts: Assignment) -> describe_v1.Assignment:
        return describe_v1.Assignment(topic_partitions=tuple(
            describe_v1.TopicPartitions(
                topic_id=tp.topic_id,
                topic_name=names[tp.topic_id],
                partitions=tp.partitions,
            )
            for tp in _to_wire(parts) if tp.topic_id in names
        ))

    return describe_v1.Member(
        member_id=m.member_id, instance_id=m.instance_id, rack_id=m.rack_id,
        member_epoch=m.member_epoch, client_id=m.client_id, client_host=m.client_host,
        subscribed_topic_names=m.subscribed_topic_names,
        subscribed_topic_regex=m.subscribed_topic_regex,
        assignment=assignment(m.assigned), target_assignment=assignment(target),
        member_type=CONSUMER_MEMBER_TYPE,
    )


def _error_response(error: GroupError) -> HeartbeatResponse:
    """Kafka's error answer: no member epoch nor heartbeat interval (0, the defaults)."""
    return HeartbeatResponse(error_code=error.code, error_message=error.message)
