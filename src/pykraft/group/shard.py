"""One ``__consumer_offsets`` partition's group coordinator: its groups and offsets, the
requests for them, the timers that expire members and offsets, and its load from the log.

The runtime hands each request at its API's latest version (OffsetCommit v2-4 excepted: see
:meth:`ClassicOffsets.commit`), restricted to the groups of this partition, with a reply
token; every reply covers exactly the request's groups. See :mod:`pykraft.group.outcome`
for when records are appended and replies sent.

Loading: the runtime calls :meth:`GroupShard.replay` for every record from the log start,
then hands requests and ticks. The members' session timers and the offset expiry timer are
armed at the first request or tick after loading (Kafka arms them when the load completes),
so :meth:`GroupShard.next_deadline_ms` reports 0 (due now) until then.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable
from typing import Any

from pykraft.group.classic import ClassicGroup, GroupState, group_from_record
from pykraft.group.classic_membership import ClassicMembership, heartbeat_key
from pykraft.group.classic_offsets import ClassicOffsets
from pykraft.group.config import GroupConfig
from pykraft.group.consumer_group import (
    CONSUMER_GROUP_TYPE,
    ConsumerGroups,
    DescribeResponse,
)
from pykraft.group.consumer_group import tombstones as consumer_tombstones
from pykraft.group.consumer_records import decode_consumer_record
from pykraft.group.metrics import GroupCensus, GroupCounters
from pykraft.group.offsets import NO_PRODUCER_ID, OffsetStore
from pykraft.group.outcome import OffsetsRecord, Outcome, ReplyToken, RequestContext
from pykraft.group.records import (
    GroupMetadataKey,
    GroupMetadataValue,
    OffsetCommitKey,
    decode_record,
)
from pykraft.group.registry import Groups
from pykraft.group.timers import Timers
from pykraft.messages.kafka.consumer_group_describe_request import ConsumerGroupDescribeRequest
from pykraft.messages.kafka.consumer_group_heartbeat_request import (
    ConsumerGroupHeartbeatRequest,
)
from pykraft.messages.kafka.delete_groups_request import DeleteGroupsRequest
from pykraft.messages.kafka.describe_groups_request import DescribeGroupsRequest
from pykraft.messages.kafka.describe_groups_response import (
    DescribedGroup,
    DescribedGroupMember,
    DescribeGroupsResponse,
)
from pykraft.messages.kafka.heartbeat_request import HeartbeatRequest
from pykraft.messages.kafka.join_group_request import JoinGroupRequest
from pykraft.messages.kafka.leave_group_request import LeaveGroupRequest
from pykraft.messages.kafka.list_groups_request import ListGroupsRequest
from pykraft.messages.kafka.list_groups_response import ListedGroup, ListGroupsResponse
from pykraft.messages.kafka.offset_commit_request import OffsetCommitRequest
from pykraft.messages.kafka.offset_delete_request import OffsetDeleteRequest
from pykraft.messages.kafka.offset_fetch_request import OffsetFetchRequest
from pykraft.messages.kafka.sync_group_request import SyncGroupRequest
from pykraft.messages.kafka.txn_offset_commit_request import TxnOffsetCommitRequest
from pykraft.protocol.errors import ErrorCode

Handler = Callable[[ReplyToken, int, Any, RequestContext], Outcome]
"""One API's handling: (token, api_version, latest-version request, context)."""

_EXPIRY_KEY = ("offset-expiry",)
_FIRST_GROUP_ID_NOT_FOUND_DESCRIBE = 6


class GroupShard:
    """The coordinator of the groups whose ``__consumer_offsets`` partition is ``partition``."""

    def __init__(self, partition: int, config: GroupConfig, rng: random.Random,
                 counters: GroupCounters | None = None) -> None:
        self.partition = partition
        self.config = config
        self.counters = GroupCounters() if counters is None else counters
        """Kafka's group coordinator sensors, the broker's (shared by its shards)."""
        self.groups: Groups = {}
        self.timers = Timers()
        self.offsets = OffsetStore()
        self.membership = ClassicMembership(self.groups, config, rng, self.timers,
                                            self.counters)
        self.offset_apis = ClassicOffsets(self.groups, self.offsets, config, self.membership,
                                          self.counters)
        self.consumer = ConsumerGroups(self.groups, config, rng, self.timers, self.counters)
        self.membership.deleters[CONSUMER_GROUP_TYPE] = consumer_tombstones
        self._armed = False
        self.handlers: dict[int, Handler] = {
            8: self._offset_commit,
            9: self._offset_fetch,
            28: self._txn_offset_commit,
            11: self._join,
            12: self._heartbeat,
            13: self._leave,
            14: self._sync,
            15: self._describe,
            16: self._list,
            42: self._delete_groups,
            47: self._offset_delete,
            68: self._consumer_heartbeat,
            69: self._consumer_describe,
        }

    # -- the runtime's interface ----------------------------------------------------------

    def census(self) -> GroupCensus:
        """The shard's groups by (type, state) and its committed offsets (Kafka's
        group-count, classic-group-count, consumer-group-count and offset-count)."""
        return GroupCensus(Counter((group.group_type, group.state_name())
                                   for group in self.groups.values()), self.offsets.count())

    def replay(self, offset: int, record: OffsetsRecord,
               producer_id: int = NO_PRODUCER_ID) -> None:
        """Apply one record of this partition's log while loading (``producer_id``: its
        batch's, when a transaction wrote it)."""
        decoded = decode_record(record)
        if decoded is None:
            consumer = decode_consumer_record(record)  # None: share-group records
            if consumer is not None:
                self.consumer.replay(*consumer)
            self._armed = False
            return
        key, value = decoded
        if isinstance(key, OffsetCommitKey) and not isinstance(value, GroupMetadataValue):
            self.offsets.replay(key, value, producer_id)
            if value is not None and key.group not in self.groups:
                self.groups[key.group] = ClassicGroup(key.group)  # a standalone commit's
        elif isinstance(key, GroupMetadataKey) and isinstance(value, GroupMetadataValue):
            self.groups[key.group] = group_from_record(key.group, value)
        elif isinstance(key, GroupMetadataKey) and isinstance(
                self.groups.get(key.group), ClassicGroup):
            del self.groups[key.group]
        self._armed = False

    def end_transaction(self, producer_id: int, committed: bool) -> None:
        """A transaction marker of this partition's log, while loading or once written:
        the producer's pending offsets committed or dropped."""
        self.offsets.end_transaction(producer_id, committed)

    def has_open_transactions(self) -> bool:
        """Whether any group holds pending transactional offsets (a failed write is then
        undone by a reload: :meth:`revert` restores committed state only)."""
        return self.offsets.has_open_transactions()

    def handle(self, token: ReplyToken, api_key: int, api_version: int, request: Any,
               context: RequestContext) -> Outcome:
        out = self._arm(context.now_ms)
        out.extend(self.handlers[api_key](token, api_version, request, context))
        return out

    def tick(self, now_ms: int) -> Outcome:
        out = self._arm(now_ms)
        out.extend(self.timers.fire(now_ms))
        return out

    def next_deadline_ms(self) -> int | None:
        return 0 if not self._armed else self.timers.next_deadline_ms()

    def unload(self) -> Outcome:
        """Leadership lost: answer every parked request NOT_COORDINATOR, stop every timer."""
        replies = self.membership.answer_all_parked(ErrorCode.NOT_COORDINATOR)
        self.timers.clear()
        return Outcome(replies=replies)

    def revert(self, records: list[tuple[int, OffsetsRecord]], error: int) -> Outcome:
        """A write failed: replay each of its keys' last record in the log (offset, record;
        -1 and a tombstone for a key the log does not hold), so the groups it changed are
        as the log has them, as after a load, and no other group notices. A classic group
        whose metadata goes back first answers its parked JoinGroup and SyncGroup requests
        with ``error`` (their members join again). Only for a shard without open
        transactions (:meth:`has_open_transactions`)."""
        out = Outcome()
        for offset, record in records:
            decoded = decode_record(record)
            if decoded is not None and isinstance(decoded[0], GroupMetadataKey):
                group = self.groups.get(decoded[0].group)
                if isinstance(group, ClassicGroup):
                    out.replies.extend(self.membership.answer_parked(group, error))
            if decoded is not None and isinstance(decoded[0], OffsetCommitKey) and (
                    not isinstance(decoded[1], GroupMetadataValue)):
                self.offsets.restore(decoded[0], decoded[1])
                self._armed = False
            else:
                self.replay(offset, record)
        return out

    def _arm(self, now: int) -> Outcome:
        """Kafka's ``onLoaded``: session timers of loaded members from now, a rebalance of
        groups over group.max.size (so their members can commit and leave), expiry timer."""
        out = Outcome()
        if self._armed:
            return out
        self._armed = True
        for group in list(self.groups.values()):
            if not isinstance(group, ClassicGroup):
                continue
            for member in group.members.values():
                if self.timers.deadline(heartbeat_key(group.group_id, member.member_id)) is None:
                    self.membership.reschedule_heartbeat(
                        group, member, now, member.session_timeout_ms)
            if len(group.members) > self.config.max_size and group.can_rebalance():
                out.extend(self.membership.prepare_rebalance(group, now))
        self.consumer.arm(now)
        if self.timers.deadline(_EXPIRY_KEY) is None:
            self._schedule_expiry(now)
        return out

    def _schedule_expiry(self, now: int) -> None:
        self.timers.schedule(_EXPIRY_KEY, now + self.config.offsets_retention_check_interval_ms,
                             self._expire_offsets)

    def _expire_offsets(self, now: int) -> Outcome:
        self._schedule_expiry(now)
        return Outcome(records=self.offset_apis.expire(now))

    # -- handlers -------------------------------------------------------------------------

    def _join(self, token: ReplyToken, version: int, request: JoinGroupRequest,
              context: RequestContext) -> Outcome:
        return self.membership.join(token, version, request, context.client_id,
                                    context.client_host, context.now_ms)

    def _sync(self, token: ReplyToken, version: int, request: SyncGroupRequest,
              context: RequestContext) -> Outcome:
        return self.membership.sync(token, request, context.now_ms)

    def _heartbeat(self, token: ReplyToken, version: int, request: HeartbeatRequest,
                   context: RequestContext) -> Outcome:
        return self.membership.heartbeat(token, request, context.now_ms)

    def _leave(self, token: ReplyToken, version: int, request: LeaveGroupRequest,
               context: RequestContext) -> Outcome:
        return self.membership.leave(token, request, context.now_ms)

    def _consumer_heartbeat(self, token: ReplyToken, version: int,
                            request: ConsumerGroupHeartbeatRequest,
                            context: RequestContext) -> Outcome:
        reply, records = self.consumer.heartbeat(request, version, context)
        return Outcome(records=records, replies=[(token, reply)])

    def _consumer_describe(self, token: ReplyToken, version: int,
                           request: ConsumerGroupDescribeRequest,
                           context: RequestContext) -> Outcome:
        groups = self.consumer.describe(request.group_ids, context.topics)
        return Outcome(replies=[(token, DescribeResponse(groups=tuple(groups)))])

    def _offset_commit(self, token: ReplyToken, version: int, request: OffsetCommitRequest,
                       context: RequestContext) -> Outcome:
        records, reply = self.offset_apis.commit(version, request, context.now_ms,
                                                 context.topics)
        self.counters.offset_commits += len(records)
        return Outcome(records=records, replies=[(token, reply)])

    def _txn_offset_commit(self, token: ReplyToken, version: int,
                           request: TxnOffsetCommitRequest, context: RequestContext) -> Outcome:
        written, reply = self.offset_apis.commit_transactional(version, request,
                                                               context.now_ms, context.topics)
        self.counters.offset_commits += 0 if written is None else len(written.records)
        return Outcome(replies=[(token, reply)], transactional=written)

    def _offset_fetch(self, token: ReplyToken, version: int, request: OffsetFetchRequest,
                      context: RequestContext) -> Outcome:
        return Outcome(replies=[(token, self.offset_apis.fetch(request))])

    def _offset_delete(self, token: ReplyToken, version: int, request: OffsetDeleteRequest,
                       context: RequestContext) -> Outcome:
        records, reply = self.offset_apis.delete_offsets(request)
        self.counters.offset_deletions += len(records)
        return Outcome(records=records, replies=[(token, reply)])

    def _delete_groups(self, token: ReplyToken, version: int, request: DeleteGroupsRequest,
                       context: RequestContext) -> Outcome:
        records, reply = self.offset_apis.delete_groups(request)
        return Outcome(records=records, replies=[(token, reply)])

    def _list(self, token: ReplyToken, version: int, request: ListGroupsRequest,
              context: RequestContext) -> Outcome:
        states = {state.strip().lower() for state in request.states_filter}
        types = {kind.strip().lower() for kind in request.types_filter}
        listed = []
        for group in self.groups.values():
            state = group.state_name()
            if states and state.lower() not in states:
                continue
            if types and group.group_type not in types:
                continue
            listed.append(ListedGroup(
                group_id=group.group_id, protocol_type=group.listed_protocol_type(),
                group_state=state, group_type=group.group_type))
        return Outcome(replies=[(token, ListGroupsResponse(groups=tuple(listed)))])

    def _describe(self, token: ReplyToken, version: int, request: DescribeGroupsRequest,
                  context: RequestContext) -> Outcome:
        described = tuple(self._describe_one(group_id, version) for group_id in request.groups)
        return Outcome(replies=[(token, DescribeGroupsResponse(groups=described))])

    def _describe_one(self, group_id: str, version: int) -> DescribedGroup:
        group = self.groups.get(group_id)
        if not isinstance(group, ClassicGroup):
            # Unknown (or not a classic group): Dead, and from v6 GROUP_ID_NOT_FOUND.
            not_found = version >= _FIRST_GROUP_ID_NOT_FOUND_DESCRIBE
            message = (f"Group {group_id} not found." if group is None
                       else f"Group {group_id} is not a classic group.")
            return DescribedGroup(
                error_code=ErrorCode.GROUP_ID_NOT_FOUND if not_found else ErrorCode.NONE,
                error_message=message if not_found else None,
                group_id=group_id, group_state=GroupState.DEAD.value)
        stable = group.in_state(GroupState.STABLE)
        return DescribedGroup(
            group_id=group_id, group_state=group.state.value,
            protocol_type=group.protocol_type or "",
            protocol_data=(group.protocol_name or "") if stable else "",
            members=tuple(DescribedGroupMember(
                member_id=m.member_id, group_instance_id=m.group_instance_id,
                client_id=m.client_id, client_host=m.client_host,
                member_metadata=m.metadata(group.protocol_name) if stable else b"",
                member_assignment=m.assignment if stable else b"")
                for m in group.members.values()))

