"""A GroupShard driven as the runtime drives it, for the classic coordinator's tests: requests
built at their latest versions, a clock, reply tokens, and every record the shard returned."""

from __future__ import annotations

import random
from typing import Any

from pykraft.group.config import GroupConfig
from pykraft.group.outcome import OffsetsRecord, Outcome, RequestContext, TopicInfo
from pykraft.group.shard import GroupShard
from pykraft.messages.kafka.delete_groups_request import DeleteGroupsRequest
from pykraft.messages.kafka.describe_groups_request import DescribeGroupsRequest
from pykraft.messages.kafka.heartbeat_request import HeartbeatRequest
from pykraft.messages.kafka.join_group_request import JoinGroupRequest, JoinGroupRequestProtocol
from pykraft.messages.kafka.leave_group_request import LeaveGroupRequest, MemberIdentity
from pykraft.messages.kafka.list_groups_request import ListGroupsRequest
from pykraft.messages.kafka.offset_commit_request import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
)
from pykraft.messages.kafka.offset_delete_request import (
    OffsetDeleteRequest,
    OffsetDeleteRequestPartition,
    OffsetDeleteRequestTopic,
)
from pykraft.messages.kafka.offset_fetch_request import (
    OffsetFetchRequest,
    OffsetFetchRequestGroup,
    OffsetFetchRequestTopics,
)
from pykraft.messages.kafka.sync_group_request import (
    SyncGroupRequest,
    SyncGroupRequestAssignment,
)

JOIN, SYNC, HEARTBEAT, LEAVE = 11, 14, 12, 13
COMMIT, FETCH, DESCRIBE, LIST, DELETE_GROUPS, OFFSET_DELETE = 8, 9, 15, 16, 42, 47
LATEST = {JOIN: 9, SYNC: 5, HEARTBEAT: 4, LEAVE: 5, COMMIT: 9, FETCH: 9, DESCRIBE: 6,
          LIST: 5, DELETE_GROUPS: 2, OFFSET_DELETE: 0}


def subscription(*topics: str) -> bytes:
    """A ConsumerProtocolSubscription v0 (Kafka's layout) naming ``topics``."""
    body = b"\x00\x00" + len(topics).to_bytes(4, "big")
    for topic in topics:
        body += len(topic).to_bytes(2, "big") + topic.encode()
    return body + b"\xff\xff\xff\xff"  # null user data


def join_request(group: str, member_id: str = "", *, session_ms: int = 10_000,
                 rebalance_ms: int = 30_000, instance_id: str | None = None,
                 protocol_type: str = "consumer",
                 protocols: tuple[tuple[str, bytes], ...] = (("range", b"m"),)) -> JoinGroupRequest:
    return JoinGroupRequest(
        group_id=group, session_timeout_ms=session_ms, rebalance_timeout_ms=rebalance_ms,
        member_id=member_id,
        group_instance_id=instance_id, protocol_type=protocol_type,
        protocols=tuple(JoinGroupRequestProtocol(name=n, metadata=m) for n, m in protocols))


def sync_request(group: str, member_id: str, generation: int,
                 assignments: dict[str, bytes] | None = None,
                 instance_id: str | None = None) -> SyncGroupRequest:
    return SyncGroupRequest(
        group_id=group, generation_id=generation, member_id=member_id,
        group_instance_id=instance_id, protocol_type="consumer", protocol_name=None,
        assignments=tuple(SyncGroupRequestAssignment(member_id=k, assignment=v)
                          for k, v in (assignments or {}).items()))


def heartbeat_request(group: str, member_id: str, generation: int,
                      instance_id: str | None = None) -> HeartbeatRequest:
    return HeartbeatRequest(group_id=group, generation_id=generation, member_id=member_id,
                            group_instance_id=instance_id)


def leave_request(group: str, *members: tuple[str, str | None]) -> LeaveGroupRequest:
    return LeaveGroupRequest(group_id=group, members=tuple(
        MemberIdentity(member_id=m, group_instance_id=i) for m, i in members))


def commit_request(group: str, offsets: dict[tuple[str, int], int], *, generation: int = -1,
                   member_id: str = "", metadata: str | None = None) -> OffsetCommitRequest:
    topics: dict[str, list[OffsetCommitRequestPartition]] = {}
    for (topic, partition), offset in offsets.items():
        topics.setdefault(topic, []).append(OffsetCommitRequestPartition(
            partition_index=partition, committed_offset=offset, committed_metadata=metadata))
    return OffsetCommitRequest(
        group_id=group, generation_id_or_member_epoch=generation, member_id=member_id,
        topics=tuple(OffsetCommitRequestTopic(name=t, partitions=tuple(p))
            for t, p in topics.items()))


def fetch_request(group: str, topics: dict[str, list[int]] | None = None) -> OffsetFetchRequest:
    wanted = None if topics is None else tuple(
        OffsetFetchRequestTopics(name=t, partition_indexes=tuple(ps)) for t, ps in topics.items())
    return OffsetFetchRequest(groups=(OffsetFetchRequestGroup(group_id=group, topics=wanted),))


def offset_delete_request(group: str, topics: dict[str, list[int]]) -> OffsetDeleteRequest:
    return OffsetDeleteRequest(group_id=group, topics=tuple(
        OffsetDeleteRequestTopic(name=t, partitions=tuple(
            OffsetDeleteRequestPartition(partition_index=p) for p in ps))
        for t, ps in topics.items()))


def describe_request(*groups: str) -> DescribeGroupsRequest:
    return DescribeGroupsRequest(groups=groups)


def list_request(states: tuple[str, ...] = (), types: tuple[str, ...] = ()) -> ListGroupsRequest:
    return ListGroupsRequest(states_filter=states, types_filter=types)


def delete_groups_request(*groups: str) -> DeleteGroupsRequest:
    return DeleteGroupsRequest(groups_names=groups)


class Driver:
    """Sends requests and ticks to one shard; keeps replies by token and every record."""

    def __init__(self, config: GroupConfig | None = None, seed: int = 7) -> None:
        self.config = config or GroupConfig(initial_rebalance_delay_ms=0)
        self.shard = GroupShard(0, self.config, random.Random(seed))
        self.now = 1_000_000
        self.tokens = 0
        self.replies: dict[int, Any] = {}
        self.records: list[OffsetsRecord] = []
        #: the image's topics the runtime hands each request (none unless a test adds some)
        self.topics: dict[str, TopicInfo] = {}

    def _take(self, outcome: Outcome) -> None:
        self.records.extend(outcome.records)
        for token, reply in outcome.replies:
            assert token not in self.replies, f"token {token} answered twice"
            self.replies[token] = reply

    def send(self, api_key: int, request: Any, *, version: int | None = None,
             client_id: str = "client") -> int:
        """The token of a request handed to the shard now."""
        self.tokens += 1
        outcome = self.shard.handle(self.tokens, api_key, LATEST[api_key] if version is None
                                    else version, request,
                                    RequestContext(self.now, client_id, "/127.0.0.1",
                                                   self.topics))
        self._take(outcome)
        return self.tokens

    def call(self, api_key: int, request: Any, **kwargs: Any) -> Any:
        """Send a request that must be answered at once; its reply."""
        token = self.send(api_key, request, **kwargs)
        assert token in self.replies, "request parked"
        return self.replies[token]

    def advance(self, ms_: int) -> None:
        self.now += ms_
        self.tick()

    def tick(self) -> None:
        """Fire what is due now, including timers that firing made due (bounded)."""
        for _ in range(10):
            self._take(self.shard.tick(self.now))
            deadline = self.shard.next_deadline_ms()
            if deadline is None or deadline > self.now:
                return
        raise AssertionError("timers keep firing at one instant")

    def join_new(self, group: str, **kwargs: Any) -> str:
        """A dynamic member's first JoinGroup (v9: MEMBER_ID_REQUIRED); its member id."""
        reply = self.call(JOIN, join_request(group, **kwargs))
        assert reply.error_code == 79, reply
        member_id: str = reply.member_id
        return member_id

    def replayed(self) -> GroupShard:
        """A fresh shard loaded from every record so far."""
        fresh = GroupShard(0, self.config, random.Random(99))
        for offset, record in enumerate(self.records):
            fresh.replay(offset, record)
        return fresh
