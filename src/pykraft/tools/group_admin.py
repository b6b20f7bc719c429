"""The consumer-group admin calls of ``pykraft consumer-groups`` (Kafka's ``Admin`` methods
``listConsumerGroups``, ``describeConsumerGroups``, ``listConsumerGroupOffsets``,
``alterConsumerGroupOffsets``, ``deleteConsumerGroups``, ``deleteConsumerGroupOffsets``,
``listOffsets``)::

    async with BrokerClients(admin_settings(bootstrap)) as brokers:
        groups = GroupClient(brokers, timeout_s=5)
        states = await groups.list_groups()               # {group: state}
        description = await groups.describe("g")          # GroupDescription ("Dead": none)
        committed = await groups.committed_offsets("g")   # {(topic, partition): offset}
        ends = await groups.log_offsets(tps, LATEST)      # ListOffsets to each leader
        await groups.commit_offsets("g", {("t", 0): 5})   # a standalone commit (reset)
        errors = await groups.delete_groups(["g"])        # {group: error code}
        top, per = await groups.delete_offsets("g", tps)

As Kafka's admin client does, every group request goes to the group's coordinator, found
with FindCoordinator (the first of which creates ``__consumer_offsets``); while the
coordinator is not available, moving or loading, the request is retried until the
timeout. ListGroups goes to every broker and keeps the consumer groups (protocol type
``consumer`` or empty, as Kafka's ``listConsumerGroups``).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any, TypeVar

from pykraft.errors import PyKraftError
from pykraft.group.classic import CONSUMER_PROTOCOL_TYPE
from pykraft.group.subscriptions import read_consumer_protocol
from pykraft.ids import TopicPartition
from pykraft.messages.kafka.consumer_protocol_assignment import ConsumerProtocolAssignment
from pykraft.messages.kafka.delete_groups_request import DeleteGroupsRequest
from pykraft.messages.kafka.describe_groups_request import DescribeGroupsRequest
from pykraft.messages.kafka.find_coordinator_request import FindCoordinatorRequest
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
)
from pykraft.protocol.errors import ErrorCode
from pykraft.tools.admin_client import AdminError, ApiError
from pykraft.tools.broker_clients import Brokers, by_leader, java_exception
from pykraft.tools.consumer_groups_report import Coordinator, GroupDescription, Member
from pykraft.tools.get_offsets_tool import list_offsets_request

DEFAULT_TIMEOUT_MS = 5000
#: FindCoordinator's key types
GROUP_KEY, TRANSACTION_KEY = 0, 1
_BACKOFF_S = 0.1
#: Answers meaning the coordinator moved or is loading: the request is sent again.
COORDINATOR_ERRORS = frozenset({ErrorCode.COORDINATOR_NOT_AVAILABLE,
                                ErrorCode.NOT_COORDINATOR,
                                ErrorCode.COORDINATOR_LOAD_IN_PROGRESS})
#: Kafka's messages (``Errors``) for the codes the group APIs answer with.
_MESSAGES = {
    ErrorCode.COORDINATOR_NOT_AVAILABLE: "The coordinator is not available.",
    ErrorCode.NOT_COORDINATOR: "This is not the correct coordinator.",
    ErrorCode.COORDINATOR_LOAD_IN_PROGRESS:
        "The coordinator is loading and hence can't process requests.",
    ErrorCode.NON_EMPTY_GROUP: "The group is not empty.",
    ErrorCode.GROUP_ID_NOT_FOUND: "The group id does not exist.",
    ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC: "The consumer group is actively subscribed to the topic",
    ErrorCode.INVALID_GROUP_ID: "The configured groupId is invalid.",
    ErrorCode.GROUP_AUTHORIZATION_FAILED: "Group authorization failed.",
    ErrorCode.UNKNOWN_MEMBER_ID: "The coordinator is not aware of this member.",
    ErrorCode.REBALANCE_IN_PROGRESS: "The group is rebalancing, so a rejoin is needed.",
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: "This server does not host this topic-partition.",
}
T = TypeVar("T")


def api_error(code: int) -> ApiError:
    """The :class:`ApiError` of ``code`` with Kafka's message for it."""
    error = ErrorCode(code)
    return ApiError(error, _MESSAGES.get(error))


def exception_text(code: int) -> str:
    """How Kafka's tools print a failed future: the exception class, then its message."""
    return f"{java_exception(code)}: {api_error(code)}"


class GroupClient:
    """Consumer-group admin calls over :class:`~pykraft.tools.broker_clients.Brokers`."""

    def __init__(self, brokers: Brokers, timeout_s: float = DEFAULT_TIMEOUT_MS / 1000) -> None:
        self.brokers = brokers
        self.timeout_s = timeout_s

    async def _retrying(self, what: str, attempt: Callable[[], Awaitable[tuple[int, T]]]) -> T:
        """``attempt``'s result once its error code is not a coordinator one to wait out."""
        deadline = time.monotonic() + self.timeout_s
        while True:
            code, result = await attempt()
            if code == ErrorCode.NONE:
                return result
            if code not in COORDINATOR_ERRORS or time.monotonic() >= deadline:
                if code in COORDINATOR_ERRORS:
                    raise AdminError(f"Timed out waiting for {what}: "
                                     f"{exception_text(code)}")
                raise api_error(code)
            await asyncio.sleep(_BACKOFF_S)

    async def coordinator(self, key: str, key_type: int = GROUP_KEY) -> Coordinator:
        """The coordinator of a group (or, ``key_type`` TRANSACTION_KEY, of a transactional
        id), from FindCoordinator to any broker."""
        cluster = await self.brokers.metadata([])
        if not cluster.brokers:
            raise AdminError("No broker is alive in the cluster's metadata")
        asked = min(cluster.brokers)

        async def attempt() -> tuple[int, Coordinator]:
            answer = await self.brokers.request_to(asked, FindCoordinatorRequest(
                key_type=key_type, coordinator_keys=(key,)))
            found = answer.coordinators[0]
            return int(found.error_code), Coordinator(int(found.node_id), found.host,
                                                      int(found.port))

        return await self._retrying(_coordinator_of(key, key_type), attempt)

    async def to_coordinator(self, key: str, body: Any, code_of: Callable[[Any], int],
                             key_type: int = GROUP_KEY) -> tuple[Coordinator, Any]:
        """(coordinator, answer) of ``body`` sent to the coordinator of ``key`` (a group, or
        a transactional id), found again whenever the answer says it moved or is loading."""
        async def attempt() -> tuple[int, tuple[Coordinator, Any]]:
            coordinator = await self.coordinator(key, key_type)
            answer = await self.brokers.request_to(coordinator.node_id, body)
            return code_of(answer), (coordinator, answer)

        return await self._retrying(_coordinator_of(key, key_type), attempt)

    async def list_groups(self) -> dict[str, str]:
        """Every consumer group of the cluster and its state, from each broker."""
        cluster = await self.brokers.metadata([])
        groups: dict[str, str] = {}
        for broker in sorted(cluster.brokers):
            answer = await self.brokers.request_to(
                broker, ListGroupsRequest())
            if answer.error_code != ErrorCode.NONE:
                raise api_error(answer.error_code)
            for listed in answer.groups:
                if listed.protocol_type in (CONSUMER_PROTOCOL_TYPE, ""):
                    groups[str(listed.group_id)] = listed.group_state
        return groups

    async def describe(self, group: str) -> GroupDescription:
        """DescribeGroups of ``group`` at its coordinator; members' assignments decoded. A
        group the coordinator does not know is ``Dead`` (Kafka answers so, or with
        GROUP_ID_NOT_FOUND)."""
        coordinator, answer = await self.to_coordinator(
            group, DescribeGroupsRequest(groups=(group,)),
            lambda a: _unless_not_found(int(a.groups[0].error_code)))
        described = answer.groups[0]
        if described.error_code == ErrorCode.GROUP_ID_NOT_FOUND:
            return GroupDescription(group, "Dead", "", (), coordinator)
        protocol_type = described.protocol_type
        if protocol_type not in (CONSUMER_PROTOCOL_TYPE, ""):
            raise AdminError(f"GroupId {group} is not a consumer group ({protocol_type}).")
        members = tuple(
            Member(m.member_id, m.group_instance_id, m.client_id, m.client_host,
                   _assignment(m.member_assignment) if protocol_type else ())
            for m in described.members)
        return GroupDescription(group, described.group_state, described.protocol_data,
                                members, coordinator)

    async def committed_offsets(self, group: str) -> dict[TopicPartition, int]:
        """Every offset ``group`` committed (OffsetFetch of all topics)."""
        _, answer = await self.to_coordinator(
            group, OffsetFetchRequest(groups=(OffsetFetchRequestGroup(
                group_id=group, topics=None),)),
            lambda a: int(a.groups[0].error_code))
        offsets = {}
        for topic in answer.groups[0].topics:
            for part in topic.partitions:
                if part.error_code != ErrorCode.NONE:
                    raise api_error(part.error_code)
                if int(part.committed_offset) >= 0:
                    offsets[TopicPartition(str(topic.name), int(part.partition_index))] = int(
                        part.committed_offset)
        return offsets

    async def log_offsets(self, tps: Iterable[TopicPartition], timestamp: int) -> dict[
            TopicPartition, int]:
        """ListOffsets at ``timestamp`` from each partition's leader; a partition with no
        leader or an error is left out, an offset of -1 (nothing at that time) kept."""
        wanted = sorted(set(tps))
        if not wanted:
            return {}
        cluster = await self.brokers.metadata(sorted({t for t, _ in wanted}))
        leaders, _ = by_leader(cluster, wanted)
        offsets = {}
        for leader, owned in sorted(leaders.items()):
            answer = await self.brokers.request_to(leader, list_offsets_request(owned, timestamp))
            for topic in answer.topics:
                for part in topic.partitions:
                    if part.error_code == ErrorCode.NONE:
                        offsets[TopicPartition(topic.name, part.partition_index)] = part.offset
        return offsets

    async def topic_partitions(self, topics: Iterable[str]) -> list[TopicPartition]:
        """Every partition of ``topics``; a topic that does not exist is an error."""
        names = sorted(set(topics))
        cluster = await self.brokers.metadata(names)
        missing = [t for t in names if t not in cluster.topics]
        if missing:
            raise api_error(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        return [TopicPartition(t, p.partition) for t in names for p in cluster.topics[t].partitions]

    async def commit_offsets(self, group: str, offsets: Mapping[TopicPartition, int]) -> None:
        """Kafka's ``alterConsumerGroupOffsets``: a standalone commit (generation -1, no
        member), which the coordinator takes only while the group has no members."""
        by_topic: dict[str, list[tuple[int, int]]] = {}
        for (topic, partition), offset in sorted(offsets.items()):
            by_topic.setdefault(topic, []).append((partition, offset))
        body = OffsetCommitRequest(group_id=group, topics=tuple(OffsetCommitRequestTopic(
            name=topic, partitions=tuple(OffsetCommitRequestPartition(
                partition_index=p, committed_offset=o, committed_metadata="")
                for p, o in parts)) for topic, parts in by_topic.items()))
        _, answer = await self.to_coordinator(group, body, _first_partition_error)
        for topic in answer.topics:
            for part in topic.partitions:
                if part.error_code != ErrorCode.NONE:
                    raise api_error(part.error_code)

    async def delete_groups(self, groups: Iterable[str]) -> dict[str, int]:
        """DeleteGroups of each group at its coordinator: {group: error code}."""
        results = {}
        for group in groups:
            try:
                _, answer = await self.to_coordinator(
                    group, DeleteGroupsRequest(groups_names=(group,)),
                    lambda a: int(a.results[0].error_code))
                results[group] = int(answer.results[0].error_code)
            except ApiError as exc:
                results[group] = int(exc.error)
        return results

    async def delete_offsets(self, group: str, tps: Iterable[TopicPartition]) -> tuple[
            int, dict[TopicPartition, int]]:
        """OffsetDelete: (the group's error code, {partition: error code})."""
        by_topic: dict[str, list[int]] = {}
        for topic, partition in sorted(set(tps)):
            by_topic.setdefault(topic, []).append(partition)
        body = OffsetDeleteRequest(group_id=group, topics=tuple(
            OffsetDeleteRequestTopic(name=t, partitions=tuple(
                OffsetDeleteRequestPartition(partition_index=p) for p in parts))
            for t, parts in by_topic.items()))
        try:
            _, answer = await self.to_coordinator(group, body, lambda a: int(a.error_code))
        except ApiError as exc:
            return int(exc.error), {TopicPartition(t, p): int(exc.error)
                                    for t, ps in by_topic.items() for p in ps}
        per = {TopicPartition(str(topic.name), int(part.partition_index)): int(part.error_code)
               for topic in answer.topics for part in topic.partitions}
        failed = [code for code in per.values() if code != ErrorCode.NONE]
        return (failed[0] if failed else ErrorCode.NONE), per


def _coordinator_of(key: str, key_type: int) -> str:
    return f"the coordinator of {'group' if key_type == GROUP_KEY else 'transactional id'} {key}"


def _unless_not_found(code: int) -> int:
    return ErrorCode.NONE if code == ErrorCode.GROUP_ID_NOT_FOUND else code


def _first_partition_error(answer: Any) -> int:
    """OffsetCommit has no top-level error: a coordinator error repeats on every partition."""
    for topic in answer.topics:
        for part in topic.partitions:
            if part.error_code in COORDINATOR_ERRORS:
                return int(part.error_code)
    return ErrorCode.NONE


def _assignment(data: bytes) -> tuple[TopicPartition, ...]:
    """The partitions of a consumer's assignment bytes (empty bytes: none yet)."""
    if not data:
        return ()
    try:
        _, assignment = read_consumer_protocol(ConsumerProtocolAssignment, data)
    except PyKraftError as exc:
        raise AdminError(f"Could not read a member's assignment: {exc}") from None
    return tuple(TopicPartition(tp.topic, p)
                 for tp in assignment.assigned_partitions for p in tp.partitions)
