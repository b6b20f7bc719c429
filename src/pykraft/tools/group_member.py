"""A classic-protocol consumer group member for the console consumer's ``--group``.

Kafka's console consumer joins its group as a ``KafkaConsumer`` does: JoinGroup (again with
the member id the coordinator hands out, KIP-394), the leader assigns the subscribed
topic's partitions with the ``range`` assignor and everyone gets its share by SyncGroup;
then Heartbeat every ``heartbeat.interval.ms`` (a rebalance answer means join again),
OffsetCommit with the generation and member id, and LeaveGroup at the end::

    member = GroupMember(brokers, "g", "topic", props)
    partitions = await member.join()          # this member's partitions of the topic
    committed = await member.committed(partitions)
    if await member.heartbeat_due():           # True: rejoin (the group rebalances)
        partitions = await member.join()
    await member.commit({0: 42})
    await member.leave()

The subscription and assignment are the Java consumer's (ConsumerProtocol, version 0).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Mapping
from typing import Any

from pykraft.group.assignors import MemberSpec, RangeAssignor
from pykraft.group.classic import CONSUMER_PROTOCOL_TYPE
from pykraft.group.subscriptions import read_consumer_protocol
from pykraft.ids import TopicPartition
from pykraft.messages import encode
from pykraft.messages.kafka.consumer_protocol_assignment import ConsumerProtocolAssignment
from pykraft.messages.kafka.consumer_protocol_assignment import (
    TopicPartition as AssignedPartitions,
)
from pykraft.messages.kafka.consumer_protocol_subscription import ConsumerProtocolSubscription
from pykraft.messages.kafka.heartbeat_request import HeartbeatRequest
from pykraft.messages.kafka.join_group_request import JoinGroupRequest, JoinGroupRequestProtocol
from pykraft.messages.kafka.join_group_response import JoinGroupResponseMember
from pykraft.messages.kafka.leave_group_request import LeaveGroupRequest, MemberIdentity
from pykraft.messages.kafka.offset_commit_request import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
)
from pykraft.messages.kafka.sync_group_request import (
    SyncGroupRequest,
    SyncGroupRequestAssignment,
)
from pykraft.protocol.errors import ErrorCode
from pykraft.tools.broker_clients import Brokers
from pykraft.tools.group_admin import (
    COORDINATOR_ERRORS,
    GroupClient,
    api_error,
)

ASSIGNOR = "range"
_VERSION = 0
#: KafkaConsumer's defaults (``session.timeout.ms``, ``heartbeat.interval.ms``,
#: ``max.poll.interval.ms``, ``auto.commit.interval.ms``).
_DEFAULTS = {"session.timeout.ms": 45_000, "heartbeat.interval.ms": 3_000,
             "max.poll.interval.ms": 300_000, "auto.commit.interval.ms": 5_000}
#: Answers after which the member joins again (its generation is over).
_REJOIN = frozenset({ErrorCode.REBALANCE_IN_PROGRESS, ErrorCode.ILLEGAL_GENERATION,
                     ErrorCode.UNKNOWN_MEMBER_ID})
_MAX_JOIN_ATTEMPTS = 10


def _ms(props: Mapping[str, str], key: str) -> int:
    return int(props.get(key, _DEFAULTS[key]))


def _protocol_bytes(version: int, message: object) -> bytes:
    return version.to_bytes(2, "big") + encode(message, version)


def _assign(topic: str, partitions: int,
            members: list[JoinGroupResponseMember]) -> dict[str, bytes]:
    """The leader's range assignment of ``topic`` over the members subscribed to it."""
    topic_key = uuid.uuid5(uuid.NAMESPACE_URL, topic)  # the assignor works on topic ids
    specs = {}
    for member in members:
        _, subscription = read_consumer_protocol(ConsumerProtocolSubscription,
                                                 bytes(member.metadata))
        specs[member.member_id] = MemberSpec(
            frozenset({topic_key} if topic in subscription.topics else ()))
    assigned = RangeAssignor().assign(specs, {topic_key: partitions})
    return {member: _protocol_bytes(_VERSION, ConsumerProtocolAssignment(
        assigned_partitions=(AssignedPartitions(topic, tuple(sorted(parts.get(
            topic_key, ())))),), user_data=None)) for member, parts in assigned.items()}


class GroupMember:
    """This process's membership of ``group``, subscribed to ``topic``."""

    def __init__(self, brokers: Brokers, group: str, topic: str,
                 props: Mapping[str, str]) -> None:
        self.brokers = brokers
        self.group = group
        self.topic = topic
        self.admin = GroupClient(brokers, timeout_s=_ms(props, "session.timeout.ms") / 1000)
        self.session_ms = _ms(props, "session.timeout.ms")
        self.rebalance_ms = _ms(props, "max.poll.interval.ms")
        self.heartbeat_s = _ms(props, "heartbeat.interval.ms") / 1000
        self.commit_interval_s = _ms(props, "auto.commit.interval.ms") / 1000
        self.member_id = ""
        self.generation = -1
        self._next_heartbeat = 0.0

    async def join(self) -> list[int]:
        """Join (or rejoin) the group; this member's partitions of the topic, sorted."""
        for _ in range(_MAX_JOIN_ATTEMPTS):
            coordinator, joined = await self.admin.to_coordinator(
                self.group, self._join_request(), _moved)
            if joined.error_code == ErrorCode.MEMBER_ID_REQUIRED:
                self.member_id = joined.member_id
                continue
            if joined.error_code != ErrorCode.NONE:
                raise api_error(joined.error_code)
            self.member_id, self.generation = joined.member_id, int(joined.generation_id)
            assignments = ({} if joined.leader != self.member_id else _assign(
                self.topic, await self._partition_count(), list(joined.members)))
            synced = await self.brokers.request_to(coordinator.node_id, SyncGroupRequest(
                group_id=self.group, generation_id=self.generation,
                member_id=self.member_id, protocol_type=CONSUMER_PROTOCOL_TYPE,
                protocol_name=ASSIGNOR, assignments=tuple(
                    SyncGroupRequestAssignment(member_id=m, assignment=a)
                    for m, a in sorted(assignments.items()))))
            if synced.error_code in _REJOIN:
                continue
            if synced.error_code != ErrorCode.NONE:
                raise api_error(synced.error_code)
            self._next_heartbeat = time.monotonic() + self.heartbeat_s
            return self._own_partitions(bytes(synced.assignment))
        raise api_error(ErrorCode.REBALANCE_IN_PROGRESS)

    def _join_request(self) -> JoinGroupRequest:
        subscription = _protocol_bytes(_VERSION, ConsumerProtocolSubscription(
            topics=(self.topic,), user_data=None, owned_partitions=()))
        return JoinGroupRequest(
            group_id=self.group, session_timeout_ms=self.session_ms,
            rebalance_timeout_ms=self.rebalance_ms, member_id=self.member_id,
            protocol_type=CONSUMER_PROTOCOL_TYPE,
            protocols=(JoinGroupRequestProtocol(name=ASSIGNOR, metadata=subscription),))

    async def _partition_count(self) -> int:
        cluster = await self.brokers.metadata([self.topic])
        return len(cluster.topics[self.topic].partitions)

    def _own_partitions(self, data: bytes) -> list[int]:
        if not data:
            return []
        _, assignment = read_consumer_protocol(ConsumerProtocolAssignment, data)
        return sorted(p for owned in assignment.assigned_partitions if owned.topic == self.topic
                      for p in owned.partitions)

    async def heartbeat_due(self) -> bool:
        """A heartbeat when one is due; True when the group rebalances (join again)."""
        if time.monotonic() < self._next_heartbeat:
            return False
        self._next_heartbeat = time.monotonic() + self.heartbeat_s
        _, answer = await self.admin.to_coordinator(self.group, HeartbeatRequest(
            group_id=self.group, generation_id=self.generation,
            member_id=self.member_id), _moved)
        if answer.error_code in _REJOIN:
            return True
        if answer.error_code != ErrorCode.NONE:
            raise api_error(answer.error_code)
        return False

    async def committed(self, partitions: list[int]) -> dict[int, int]:
        """The group's committed offsets of this member's partitions (those it has)."""
        offsets = await self.admin.committed_offsets(self.group)
        return {p: offsets[TopicPartition(self.topic, p)] for p in partitions
                if TopicPartition(self.topic, p) in offsets}

    async def commit(self, positions: Mapping[int, int]) -> None:
        """Commit ``positions`` (partition -> next offset) as this generation's member."""
        if not positions:
            return
        body = OffsetCommitRequest(
            group_id=self.group, generation_id_or_member_epoch=self.generation,
            member_id=self.member_id, topics=(OffsetCommitRequestTopic(
                name=self.topic, partitions=tuple(OffsetCommitRequestPartition(
                    partition_index=p, committed_offset=o, committed_metadata="")
                    for p, o in sorted(positions.items()))),))
        _, answer = await self.admin.to_coordinator(self.group, body, _moved_partition)
        code = _first_error(answer)
        if code != ErrorCode.NONE and code not in _REJOIN:
            raise api_error(code)

    async def leave(self) -> None:
        """LeaveGroup, so the others get this member's partitions at once."""
        if self.member_id:
            await self.admin.to_coordinator(self.group, LeaveGroupRequest(
                group_id=self.group, members=(MemberIdentity(
                    member_id=self.member_id, reason="the console consumer is closing"),)),
                _moved)


def _moved_partition(answer: Any) -> int:
    code = _first_error(answer)
    return code if code in COORDINATOR_ERRORS else int(ErrorCode.NONE)


def _first_error(answer: Any) -> int:
    return next((int(p.error_code) for t in answer.topics for p in t.partitions
                 if p.error_code != ErrorCode.NONE), int(ErrorCode.NONE))



def _moved(answer: Any) -> int:
    """The answer's error when it says the coordinator moved or loads (sent again, to the
    coordinator found anew); the member handles every other error itself."""
    code = int(answer.error_code)
    return code if code in COORDINATOR_ERRORS else int(ErrorCode.NONE)
