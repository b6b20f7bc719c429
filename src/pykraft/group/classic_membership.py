"""The classic rebalance protocol: JoinGroup, SyncGroup, Heartbeat, LeaveGroup and the timers
that drive a group through its states (Kafka's ``GroupMetadataManager`` classic half).

Every step changes the group at once and returns the records that persist it and the replies
it completes, including parked ones: a JoinGroup waits for the rebalance's end, a follower's
SyncGroup for the leader's. Each parked request is answered exactly once, by the step that
completes it, by a later request that supersedes it, or by ``unload``.
"""

from __future__ import annotations

import logging
import random
import uuid
from collections.abc import Callable
from typing import Any

from pykraft.group.classic import GROUP_TYPE, ClassicGroup, ClassicMember, GroupState
from pykraft.group.config import NEW_MEMBER_JOIN_TIMEOUT_MS, GroupConfig
from pykraft.group.errors import GroupError
from pykraft.group.metrics import GroupCounters
from pykraft.group.outcome import OffsetsRecord, Outcome, ReplyToken
from pykraft.group.records import GroupMetadataKey, group_metadata_record
from pykraft.group.registry import Groups
from pykraft.group.replies import heartbeat_reply, join_error, join_success, sync_reply
from pykraft.group.timers import Timers
from pykraft.messages.kafka.heartbeat_request import HeartbeatRequest
from pykraft.messages.kafka.join_group_request import JoinGroupRequest
from pykraft.messages.kafka.join_group_response import JoinGroupResponseMember
from pykraft.messages.kafka.leave_group_request import LeaveGroupRequest
from pykraft.messages.kafka.leave_group_response import LeaveGroupResponse, MemberResponse
from pykraft.messages.kafka.sync_group_request import SyncGroupRequest
from pykraft.protocol.errors import ErrorCode

E = ErrorCode
#: Kafka's INFO lines for a group's life (the only way an operator sees rebalances).
log = logging.getLogger(__name__)
_FIRST_MEMBER_ID_REQUIRED_VERSION = 4
_FIRST_SKIP_ASSIGNMENT_VERSION = 9


def heartbeat_key(group_id: str, member_id: str) -> tuple[str, str, str]:
    return ("heartbeat", group_id, member_id)


def _join_key(group_id: str) -> tuple[str, str]:
    return ("join", group_id)


def _sync_key(group_id: str) -> tuple[str, str]:
    return ("sync", group_id)


class ClassicMembership:
    """Join, sync, heartbeat and leave for the classic groups of one shard's registry."""

    def __init__(self, groups: Groups, config: GroupConfig, rng: random.Random,
                 timers: Timers, counters: GroupCounters | None = None) -> None:
        self.groups = groups
        self.config = config
        self.rng = rng
        self.timers = timers
        self.counters = GroupCounters() if counters is None else counters
        self.deleters: dict[str, Callable[[str], list[OffsetsRecord]]] = {
            GROUP_TYPE: _classic_tombstones}
        """Per group type: the records deleting an empty group of that type (Kafka's
        ``createGroupTombstoneRecords``); the shard adds the consumer groups'."""

    def classic(self, group_id: str) -> ClassicGroup | None:
        group = self.groups.get(group_id)
        return group if isinstance(group, ClassicGroup) else None

    # -- JoinGroup ------------------------------------------------------------------------

    def join(self, token: ReplyToken, version: int, request: JoinGroupRequest,
             client_id: str, client_host: str, now: int) -> Outcome:
        out = Outcome()
        session_ms = request.session_timeout_ms
        if not request.group_id:
            return _reply(out, token, join_error(E.INVALID_GROUP_ID, request.member_id))
        if not (self.config.min_session_timeout_ms <= session_ms
                <= self.config.max_session_timeout_ms):
            return _reply(out, token, join_error(E.INVALID_SESSION_TIMEOUT, request.member_id))
        unknown = request.member_id == ""
        existing = self.groups.get(request.group_id)
        if existing is not None and not isinstance(existing, ClassicGroup):
            if not existing.is_empty():
                # Kafka would move the member into the consumer group; pykraft does not
                # mix the protocols in one group.
                return _reply(out, token, join_error(E.INCONSISTENT_GROUP_PROTOCOL))
            if unknown:
                # An empty consumer group gives its id to the classic group (its offsets stay).
                out.records.extend(self.deleters[existing.group_type](request.group_id))
                del self.groups[request.group_id]
            existing = None
        if existing is None and not unknown:
            return _reply(out, token, join_error(E.UNKNOWN_MEMBER_ID, request.member_id))
        written = len(out.records)
        # a new group's state dates from its creation (Kafka's ClassicGroup constructor):
        # the empty group's first record carries it
        group = (existing if existing is not None
                 else ClassicGroup(request.group_id, state_timestamp_ms=now))
        if existing is None:
            self.groups[group.group_id] = group
        if not self._accepts(group, request.member_id):
            member = group.members.get(request.member_id)
            if member is not None:
                self._answer_parked(out, member, E.UNKNOWN_MEMBER_ID)
            group.remove(request.member_id)
            _reply(out, token, join_error(E.GROUP_MAX_SIZE_REACHED))
        elif unknown:
            out.extend(self._join_new_member(token, version, request, group,
                                             client_id, client_host, now))
        else:
            out.extend(self._join_existing_member(token, request, group,
                                                  client_id, client_host, now))
        if existing is None and len(out.records) == written:
            out.records.append(group.metadata_record())
        return out

    def _accepts(self, group: ClassicGroup, member_id: str) -> bool:
        """group.max.size: counted over members awaiting join while preparing a rebalance."""
        limit = self.config.max_size
        member = group.members.get(member_id)
        if group.in_state(GroupState.EMPTY, GroupState.DEAD):
            return True
        if group.in_state(GroupState.PREPARING_REBALANCE):
            return (member is not None and member.awaiting_join) or (
                group.num_awaiting_join() < limit)
        return member is not None or len(group.members) < limit

    def _join_new_member(self, token: ReplyToken, version: int, request: JoinGroupRequest,
                         group: ClassicGroup, client_id: str, client_host: str,
                         now: int) -> Outcome:
        out = Outcome()
        if group.in_state(GroupState.DEAD):
            return _reply(out, token, join_error(E.COORDINATOR_NOT_AVAILABLE))
        if not group.supports_protocols(request.protocol_type,
                                        {p.name for p in request.protocols}):
            return _reply(out, token, join_error(E.INCONSISTENT_GROUP_PROTOCOL))
        instance_id = request.group_instance_id
        new_id = f"{instance_id if instance_id is not None else client_id}-{self._uuid()}"
        if instance_id is not None:
            existing_id = group.static_members.get(instance_id)
            if existing_id is not None:
                return self._rejoin_static_member(token, version, request, group,
                                                  existing_id, new_id, now)
        elif version >= _FIRST_MEMBER_ID_REQUIRED_VERSION:
            # KIP-394: the member must come back with this id within its session timeout.
            group.pending_join_members.add(new_id)
            self.timers.schedule(heartbeat_key(group.group_id, new_id),
                                 now + request.session_timeout_ms,
                                 self._expire_heartbeat_action(group.group_id, new_id))
            return _reply(out, token, join_error(E.MEMBER_ID_REQUIRED, new_id))
        return self._add_member(token, request, group, new_id,
                                client_id, client_host, now)

    def _uuid(self) -> uuid.UUID:
        return uuid.UUID(int=self.rng.getrandbits(128), version=4)

    def _join_existing_member(self, token: ReplyToken, request: JoinGroupRequest,
                              group: ClassicGroup,
                              client_id: str, client_host: str, now: int) -> Outcome:
        out = Outcome()
        member_id = request.member_id
        if group.in_state(GroupState.DEAD):
            return _reply(out, token, join_error(E.COORDINATOR_NOT_AVAILABLE, member_id))
        if not group.supports_protocols(request.protocol_type,
                                        {p.name for p in request.protocols}):
            return _reply(out, token, join_error(E.INCONSISTENT_GROUP_PROTOCOL, member_id))
        if member_id in group.pending_join_members:
            if request.group_instance_id is not None:
                # Pending ids are only handed to dynamic members (Kafka throws here).
                return _reply(out, token, join_error(E.UNKNOWN_MEMBER_ID, member_id))
            return self._add_member(token, request, group, member_id,
                                    client_id, client_host, now)
        try:
            group.validate_member(member_id, request.group_instance_id)
        except GroupError as refused:
            return _reply(out, token, join_error(refused.code, member_id))
        member = group.members[member_id]
        protocols = _protocols(request)
        if group.in_state(GroupState.PREPARING_REBALANCE):
            return self._update_member(token, request, group, member, now)
        if group.in_state(GroupState.COMPLETING_REBALANCE):
            if member.protocols == protocols:
                return _reply(out, token, self._join_reply(group, member_id))
            return self._update_member(token, request, group, member, now)
        if group.in_state(GroupState.STABLE):
            if group.is_leader(member_id) or member.protocols != protocols:
                return self._update_member(token, request, group, member, now)
            return _reply(out, token, self._join_reply(group, member_id, with_members=False))
        return _reply(out, token, join_error(E.UNKNOWN_MEMBER_ID, member_id))

    def _join_reply(self, group: ClassicGroup, member_id: str, *,
                    with_members: bool = True, skip_assignment: bool = False) -> Any:
        members: tuple[JoinGroupResponseMember, ...] = ()
        if with_members and group.is_leader(member_id):
            members = tuple(
                JoinGroupResponseMember(member_id=m.member_id,
                                        group_instance_id=m.group_instance_id,
                                        metadata=m.metadata(group.protocol_name))
                for m in group.members.values())
        return join_success(member_id=member_id, generation=group.generation,
                            protocol_type=group.protocol_type,
                            protocol_name=group.protocol_name, leader=group.leader_id,
                            members=members, skip_assignment=skip_assignment)

    def _add_member(self, token: ReplyToken, request: JoinGroupRequest, group: ClassicGroup,
                    member_id: str, client_id: str, client_host: str, now: int) -> Outcome:
        session_ms = request.session_timeout_ms
        member = ClassicMember(
            member_id, request.group_instance_id, client_id, client_host,
            _rebalance_timeout(request), session_ms, request.protocol_type,
            _protocols(request), join_token=token, is_new=True)
        if group.in_state(GroupState.PREPARING_REBALANCE) and (
                group.previous_state is GroupState.EMPTY):
            group.new_member_added = True
        group.add(member)
        self.reschedule_heartbeat(group, member, now, NEW_MEMBER_JOIN_TIMEOUT_MS)
        return self._rebalance_or_complete_join(group, now)

    def _update_member(self, token: ReplyToken, request: JoinGroupRequest,
                       group: ClassicGroup, member: ClassicMember, now: int) -> Outcome:
        out = Outcome()
        self._park_join(out, member, token)
        member.protocols = _protocols(request)
        member.rebalance_timeout_ms = _rebalance_timeout(request)
        member.session_timeout_ms = request.session_timeout_ms
        out.extend(self._rebalance_or_complete_join(group, now))
        return out

    def _park_join(self, out: Outcome, member: ClassicMember, token: ReplyToken) -> None:
        """Hold ``token`` for the rebalance's end; a JoinGroup it supersedes is answered
        REBALANCE_IN_PROGRESS (Kafka drops it), so no request waits forever."""
        if member.join_token is not None:
            out.replies.append((member.join_token, join_error(E.REBALANCE_IN_PROGRESS,
                                                              member.member_id)))
        member.join_token = token

    def _rejoin_static_member(self, token: ReplyToken, version: int,
                              request: JoinGroupRequest, group: ClassicGroup, old_id: str,
                              new_id: str, now: int) -> Outcome:
        """KIP-345: a known instance id with a new member id replaces the old id (fenced),
        and in a Stable group whose protocol stays keeps its assignment without a rebalance."""
        out = Outcome()
        old_leader = group.leader_id
        instance_id = request.group_instance_id
        assert instance_id is not None
        old = group.replace_static_member(instance_id, old_id, new_id)
        self.timers.cancel(heartbeat_key(group.group_id, old_id))
        if old.join_token is not None:
            out.replies.append((old.join_token, join_error(E.FENCED_INSTANCE_ID, old_id)))
        if old.sync_token is not None:
            out.replies.append((old.sync_token, sync_reply(E.FENCED_INSTANCE_ID)))
        member = group.members[new_id]
        self.reschedule_heartbeat(group, member, now, member.session_timeout_ms)
        member.protocols = _protocols(request)
        member.rebalance_timeout_ms = _rebalance_timeout(request)
        member.session_timeout_ms = request.session_timeout_ms
        if group.in_state(GroupState.STABLE):
            if group.protocol_name == group.select_protocol():
                out.records.append(group.metadata_record())
                if version >= _FIRST_SKIP_ASSIGNMENT_VERSION:
                    leader = group.is_leader(new_id)
                    reply = self._join_reply(group, new_id, with_members=leader,
                                             skip_assignment=leader)
                else:
                    reply = join_success(
                        member_id=new_id, generation=group.generation,
                        protocol_type=group.protocol_type, protocol_name=group.protocol_name,
                        leader=old_leader)
                return _reply(out, token, reply)
            self._park_join(out, member, token)
            out.extend(self._rebalance_or_complete_join(group, now))
            return out
        self._park_join(out, member, token)
        if group.in_state(GroupState.COMPLETING_REBALANCE):
            out.extend(self.prepare_rebalance(group, now))
        else:
            out.extend(self._maybe_complete_join_phase(group, now))
        return out

    # -- the rebalance --------------------------------------------------------------------

    def _rebalance_or_complete_join(self, group: ClassicGroup, now: int) -> Outcome:
        if group.can_rebalance():
            return self.prepare_rebalance(group, now)
        return self._maybe_complete_join_phase(group, now)

    def prepare_rebalance(self, group: ClassicGroup, now: int) -> Outcome:
        out = Outcome()
        if group.in_state(GroupState.COMPLETING_REBALANCE):
            for member in group.members.values():
                member.assignment = b""
            self._propagate_assignment(out, group, E.REBALANCE_IN_PROGRESS, now)
        log.info("Preparing to rebalance group %s in state %s with old generation %d",
                 group.group_id, group.state_name(), group.generation)
        group.pending_sync_members.clear()
        self.timers.cancel(_sync_key(group.group_id))
        initial = group.in_state(GroupState.EMPTY)
        if initial:
            # InitialDelayedJoin: wait for more members, extended per join, capped by the
            # rebalance timeout.
            delay = self.config.initial_rebalance_delay_ms
            remaining = max(group.rebalance_timeout_ms() - delay, 0)
            self.timers.schedule(_join_key(group.group_id), now + delay,
                                 self._initial_join_action(group.group_id, delay, remaining))
        group.transition(GroupState.PREPARING_REBALANCE, now)
        if not initial:
            if group.has_all_members_joined():
                out.extend(self._complete_join(group, now))
            else:
                self.timers.schedule(_join_key(group.group_id),
                                     now + group.rebalance_timeout_ms(),
                                     self._complete_join_action(group.group_id))
        return out

    def _initial_join_action(self, group_id: str, delay: int, remaining: int) -> Any:
        def fire(now: int) -> Outcome:
            group = self.classic(group_id)
            if group is None:
                return Outcome()
            if group.new_member_added and remaining != 0:
                group.new_member_added = False
                next_delay = min(self.config.initial_rebalance_delay_ms, remaining)
                self.timers.schedule(
                    _join_key(group_id), now + next_delay,
                    self._initial_join_action(group_id, next_delay,
                                              max(remaining - delay, 0)))
                return Outcome()
            return self._complete_join(group, now)
        return fire

    def _complete_join_action(self, group_id: str) -> Any:
        def fire(now: int) -> Outcome:
            group = self.classic(group_id)
            return Outcome() if group is None else self._complete_join(group, now)
        return fire

    def _maybe_complete_join_phase(self, group: ClassicGroup, now: int) -> Outcome:
        if (not group.in_state(GroupState.PREPARING_REBALANCE)
                or group.previous_state is GroupState.EMPTY
                or not group.has_all_members_joined()):
            return Outcome()
        return self._complete_join(group, now)

    def _complete_join(self, group: ClassicGroup, now: int) -> Outcome:
        """End the join phase: drop dynamic members that did not rejoin, start the next
        generation and answer every parked JoinGroup (the leader gets the members)."""
        out = Outcome()
        self.timers.cancel(_join_key(group.group_id))
        for member in [m for m in group.members.values()
                       if not m.awaiting_join and m.group_instance_id is None]:
            self._drop_member(out, group, member, E.UNKNOWN_MEMBER_ID)
        if group.in_state(GroupState.DEAD):
            return out
        if not group.maybe_elect_joined_leader() and group.members:
            self.timers.schedule(_join_key(group.group_id), now + group.rebalance_timeout_ms(),
                                 self._complete_join_action(group.group_id))
            return out
        group.init_next_generation(now)
        log.info("Stabilized group %s generation %d with %d members", group.group_id,
                 group.generation, len(group.members))
        if group.is_empty():
            out.records.append(group.metadata_record({}))
            return out
        for member in group.members.values():
            if member.join_token is not None:
                out.replies.append((member.join_token, self._join_reply(group, member.member_id)))
                member.join_token = None
            self.reschedule_heartbeat(group, member, now, member.session_timeout_ms)
            member.is_new = False
            group.pending_sync_members.add(member.member_id)
        self.timers.schedule(_sync_key(group.group_id), now + group.rebalance_timeout_ms(),
                             self._expire_sync_action(group.group_id, group.generation))
        return out

    def _expire_sync_action(self, group_id: str, generation: int) -> Any:
        def fire(now: int) -> Outcome:
            out = Outcome()
            group = self.classic(group_id)
            if (group is None or group.generation != generation
                    or not group.in_state(GroupState.COMPLETING_REBALANCE, GroupState.STABLE)
                    or not group.pending_sync_members):
                return out
            for member_id in sorted(group.pending_sync_members):
                self._drop_member(out, group, group.members[member_id], E.UNKNOWN_MEMBER_ID)
            out.extend(self.prepare_rebalance(group, now))
            return out
        return fire

    def _propagate_assignment(self, out: Outcome, group: ClassicGroup, error: int,
                              now: int) -> None:
        ok = error == E.NONE
        for member in group.members.values():
            if member.sync_token is None:
                continue
            out.replies.append((member.sync_token, sync_reply(
                error, member.assignment,
                group.protocol_type if ok else None, group.protocol_name if ok else None)))
            member.sync_token = None
            self.reschedule_heartbeat(group, member, now, member.session_timeout_ms)

    # -- members leaving and failing ------------------------------------------------------

    def reschedule_heartbeat(self, group: ClassicGroup, member: ClassicMember, now: int,
                              timeout_ms: int) -> None:
        self.timers.schedule(heartbeat_key(group.group_id, member.member_id), now + timeout_ms,
                             self._expire_heartbeat_action(group.group_id, member.member_id))

    def _expire_heartbeat_action(self, group_id: str, member_id: str) -> Any:
        def fire(now: int) -> Outcome:
            out = Outcome()
            group = self.classic(group_id)
            if group is None or group.in_state(GroupState.DEAD):
                return out
            if member_id in group.pending_join_members:
                group.remove(member_id)
                if (group.in_state(GroupState.PREPARING_REBALANCE)
                        and group.has_all_members_joined()):
                    out.extend(self._complete_join(group, now))
                return out
            member = group.members.get(member_id)
            if member is not None and not member.has_satisfied_heartbeat:
                log.info("Member %s in group %s has failed (no heartbeat within its session "
                         "timeout of %d ms), removing it from the group", member_id, group_id,
                         member.session_timeout_ms)
                self._drop_member(out, group, member, E.UNKNOWN_MEMBER_ID)
                out.extend(self._after_removal(group, now))
            return out
        return fire

    def _after_removal(self, group: ClassicGroup, now: int) -> Outcome:
        if group.in_state(GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
            return self._rebalance_or_complete_join(group, now)
        if group.in_state(GroupState.PREPARING_REBALANCE) and group.has_all_members_joined():
            return self._complete_join(group, now)
        return Outcome()

    def _drop_member(self, out: Outcome, group: ClassicGroup, member: ClassicMember,
                     error: int) -> None:
        self.timers.cancel(heartbeat_key(group.group_id, member.member_id))
        self._answer_parked(out, member, error)
        group.remove(member.member_id)

    @staticmethod
    def _answer_parked(out: Outcome, member: ClassicMember, error: int) -> None:
        if member.join_token is not None:
            out.replies.append((member.join_token, join_error(error)))
            member.join_token = None
        if member.sync_token is not None:
            out.replies.append((member.sync_token, sync_reply(error)))
            member.sync_token = None

    # -- SyncGroup, Heartbeat, LeaveGroup -------------------------------------------------

    def sync(self, token: ReplyToken, request: SyncGroupRequest, now: int) -> Outcome:
        out = Outcome()
        if not request.group_id:
            return _reply(out, token, sync_reply(E.INVALID_GROUP_ID))
        group = self.classic(request.group_id)
        if group is None or group.is_empty():
            return _reply(out, token, sync_reply(E.UNKNOWN_MEMBER_ID))
        error = self._sync_error(group, request)
        if error is not None:
            return _reply(out, token, sync_reply(error))
        member = group.members[request.member_id]
        if group.in_state(GroupState.PREPARING_REBALANCE):
            return _reply(out, token, sync_reply(E.REBALANCE_IN_PROGRESS))
        if group.in_state(GroupState.STABLE):
            group.pending_sync_members.discard(member.member_id)
            return _reply(out, token, sync_reply(E.NONE, member.assignment,
                                                 group.protocol_type, group.protocol_name))
        if member.sync_token is not None:
            out.replies.append((member.sync_token, sync_reply(E.REBALANCE_IN_PROGRESS)))
        member.sync_token = token
        group.pending_sync_members.discard(member.member_id)
        if not group.pending_sync_members:
            self.timers.cancel(_sync_key(group.group_id))
        if group.is_leader(member.member_id):
            assignment = {a.member_id: a.assignment for a in request.assignments}
            out.records.append(group.metadata_record(assignment))
            for each in group.members.values():
                each.assignment = assignment.get(each.member_id, b"")
            self._propagate_assignment(out, group, E.NONE, now)
            group.transition(GroupState.STABLE, now)
            self.counters.completed_rebalances += 1
        return out

    @staticmethod
    def _sync_error(group: ClassicGroup, request: SyncGroupRequest) -> int | None:
        if group.in_state(GroupState.DEAD):
            return E.COORDINATOR_NOT_AVAILABLE
        try:
            group.validate_member(request.member_id, request.group_instance_id)
        except GroupError as refused:
            return refused.code
        if request.generation_id != group.generation:
            return E.ILLEGAL_GENERATION
        if (_inconsistent(request.protocol_type, group.protocol_type)
                or _inconsistent(request.protocol_name, group.protocol_name)):
            return E.INCONSISTENT_GROUP_PROTOCOL
        return None

    def heartbeat(self, token: ReplyToken, request: HeartbeatRequest, now: int) -> Outcome:
        out = Outcome()
        if not request.group_id:
            return _reply(out, token, heartbeat_reply(E.INVALID_GROUP_ID))
        group = self.classic(request.group_id)
        if group is None:
            return _reply(out, token, heartbeat_reply(E.UNKNOWN_MEMBER_ID))
        if group.in_state(GroupState.DEAD):
            return _reply(out, token, heartbeat_reply(E.COORDINATOR_NOT_AVAILABLE))
        try:
            group.validate_member(request.member_id, request.group_instance_id)
        except GroupError as refused:
            return _reply(out, token, heartbeat_reply(refused.code))
        if request.generation_id != group.generation:
            return _reply(out, token, heartbeat_reply(E.ILLEGAL_GENERATION))
        if group.is_empty():
            return _reply(out, token, heartbeat_reply(E.UNKNOWN_MEMBER_ID))
        member = group.members[request.member_id]
        self.reschedule_heartbeat(group, member, now, member.session_timeout_ms)
        if group.in_state(GroupState.PREPARING_REBALANCE):
            return _reply(out, token, heartbeat_reply(E.REBALANCE_IN_PROGRESS))
        return _reply(out, token, heartbeat_reply(E.NONE))

    def touch(self, group: ClassicGroup, member_id: str, now: int) -> None:
        """An offset commit from a member counts as a heartbeat (Stable or rebalancing)."""
        member = group.members.get(member_id)
        if member is not None and group.in_state(GroupState.STABLE,
                                                 GroupState.PREPARING_REBALANCE):
            self.reschedule_heartbeat(group, member, now, member.session_timeout_ms)

    def leave(self, token: ReplyToken, request: LeaveGroupRequest, now: int) -> Outcome:
        out = Outcome()
        if not request.group_id:
            return _reply(out, token, _leave_reply(E.INVALID_GROUP_ID, ()))
        group = self.classic(request.group_id)
        left: dict[tuple[str, str | None, int], MemberResponse] = {}
        if group is None:
            return _reply(out, token, _leave_reply(E.NONE, tuple(
                _left(left, m.member_id, m.group_instance_id, E.UNKNOWN_MEMBER_ID)
                for m in request.members)))
        if group.in_state(GroupState.DEAD):
            return _reply(out, token, _leave_reply(E.COORDINATOR_NOT_AVAILABLE, ()))
        answers = []
        for identity in request.members:
            error = self._leave_one(out, group, identity.member_id, identity.group_instance_id)
            answers.append(_left(left, identity.member_id, identity.group_instance_id, error))
        if any(answer.error_code == E.NONE for answer in answers):
            if group.in_state(GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
                out.extend(self._rebalance_or_complete_join(group, now))
            elif group.in_state(GroupState.PREPARING_REBALANCE):
                out.extend(self._maybe_complete_join_phase(group, now))
        return _reply(out, token, _leave_reply(E.NONE, tuple(answers)))

    def _leave_one(self, out: Outcome, group: ClassicGroup, member_id: str,
                   instance_id: str | None) -> int:
        if member_id == "":
            # An admin removing a static member by its instance id alone.
            static_id = None if instance_id is None else group.static_members.get(instance_id)
            if static_id is None:
                return E.UNKNOWN_MEMBER_ID
            self._drop_member(out, group, group.members[static_id], E.UNKNOWN_MEMBER_ID)
            return E.NONE
        if member_id in group.pending_join_members:
            group.remove(member_id)
            self.timers.cancel(heartbeat_key(group.group_id, member_id))
            return E.NONE
        try:
            group.validate_member(member_id, instance_id)
        except GroupError as refused:
            return refused.code
        log.info("Member %s has left group %s through explicit LeaveGroup", member_id,
                 group.group_id)
        self._drop_member(out, group, group.members[member_id], E.UNKNOWN_MEMBER_ID)
        return E.NONE

    def answer_all_parked(self, error: int) -> list[tuple[ReplyToken, Any]]:
        """Every parked JoinGroup and SyncGroup of every group, answered with ``error``."""
        return [reply for group in self.groups.values() if isinstance(group, ClassicGroup)
                for reply in self.answer_parked(group, error)]

    def answer_parked(self, group: ClassicGroup, error: int) -> list[tuple[ReplyToken, Any]]:
        """The group's parked JoinGroup and SyncGroup requests, answered with ``error``."""
        out = Outcome()
        for member in group.members.values():
            self._answer_parked(out, member, error)
        return out.replies


def _classic_tombstones(group_id: str) -> list[OffsetsRecord]:
    return [group_metadata_record(GroupMetadataKey(group_id), None)]


def _reply(out: Outcome, token: ReplyToken, response: Any) -> Outcome:
    out.replies.append((token, response))
    return out


def _protocols(request: JoinGroupRequest) -> tuple[tuple[str, bytes], ...]:
    return tuple((p.name, p.metadata) for p in request.protocols)


def _rebalance_timeout(request: JoinGroupRequest) -> int:
    """JoinGroup v0 has no rebalance timeout: Kafka uses the session timeout."""
    rebalance = request.rebalance_timeout_ms
    return request.session_timeout_ms if rebalance < 0 else rebalance


def _inconsistent(requested: str | None, current: str | None) -> bool:
    return requested is not None and current is not None and requested != current


def _left(made: dict[tuple[str, str | None, int], MemberResponse], member_id: str,
          instance_id: str | None, error: int) -> MemberResponse:
    """A member's answer, made once per distinct answer of one request (``made``): a
    member named again is answered with the same entry, which the codec writes once."""
    key = (member_id, instance_id, error)
    found = made.get(key)
    if found is None:
        found = made[key] = MemberResponse(member_id=member_id, group_instance_id=instance_id,
                                           error_code=error)
    return found


def _leave_reply(error: int, members: tuple[MemberResponse, ...]) -> LeaveGroupResponse:
    return LeaveGroupResponse(error_code=error, members=members)
