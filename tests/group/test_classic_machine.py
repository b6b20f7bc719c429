"""Random joins, syncs, heartbeats, leaves, commits, deletions and clock jumps of a few members
of one classic group, with Kafka's invariants checked after every step: a SyncGroup only ever
serves the assignment its generation's leader gave that member, every request is answered
exactly once once time has passed, and the records written so far load into a shard holding
the same groups and offsets."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from classic_driver import (
    COMMIT,
    DELETE_GROUPS,
    HEARTBEAT,
    JOIN,
    LEAVE,
    SYNC,
    Driver,
    commit_request,
    delete_groups_request,
    heartbeat_request,
    join_request,
    leave_request,
    sync_request,
)
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from pykraft.group.classic import ClassicGroup, GroupState
from pykraft.group.config import GroupConfig

G = "g"
SESSION_MS = 10_000
REBALANCE_MS = 20_000
SLOTS = 4
INSTANCES = {0: "static-0"}
"""Slot 0 is a static member (KIP-345); the others are dynamic."""


@dataclass
class Slot:
    """One client's view of its membership."""

    member_id: str = ""
    generation: int = -1
    leader_members: dict[str, str] = field(default_factory=dict)
    """From the leader's JoinGroup reply: member id -> the key its assignment names."""


def assignment_for(generation: int, key: str) -> bytes:
    return f"{generation}:{key}".encode()


class ClassicGroupMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.d = Driver(GroupConfig(initial_rebalance_delay_ms=1000, max_size=3), seed=11)
        self.slots = [Slot() for _ in range(SLOTS)]
        self.pending: dict[int, tuple[int, int, str, int]] = {}
        """token -> (api, slot, member id sent, generation sent), until answered."""
        self.sent: set[int] = set()

    # -- sending and reading replies ------------------------------------------------------

    def _send(self, api: int, slot: int, request: Any, generation: int = -1) -> None:
        token = self.d.send(api, request, client_id=f"c{slot}")
        self.sent.add(token)
        self.pending[token] = (api, slot, getattr(request, "member_id", ""), generation)
        self._absorb()

    def _absorb(self) -> None:
        while answered := [t for t in self.pending if t in self.d.replies]:
            api, slot, sent_id, generation = self.pending.pop(answered[0])
            self._read(api, self.slots[slot], slot, sent_id, generation,
                       self.d.replies[answered[0]])

    def _read(self, api: int, slot: Slot, index: int, sent_id: str, generation: int,
              reply: Any) -> None:
        if api == JOIN:
            if reply.error_code == 79:  # a client rejoins with its new id at once
                slot.member_id = reply.member_id
                self._send(JOIN, index, join_request(
                    G, slot.member_id, session_ms=SESSION_MS, rebalance_ms=REBALANCE_MS))
                return
            if reply.error_code == 0:
                slot.member_id = reply.member_id
            elif reply.error_code in (25, 82) and slot.member_id == sent_id:
                slot.member_id = ""
            if reply.error_code == 0:
                slot.generation = reply.generation_id
                slot.leader_members = {
                    m.member_id: m.group_instance_id or m.member_id for m in reply.members}
                if not reply.members:  # a follower syncs at once; the leader when a rule says
                    self.sync(index)
        elif api == SYNC and reply.error_code == 0:
            key = INSTANCES.get(index, sent_id)
            assert reply.assignment in (assignment_for(generation, key), b""), (
                f"slot {index} (gen {generation}) served {reply.assignment!r}")

    def _tick(self, ms: int) -> None:
        self.d.advance(ms)
        self._absorb()

    # -- rules -----------------------------------------------------------------------------

    @rule(slot=st.integers(0, SLOTS - 1))
    def join(self, slot: int) -> None:
        state = self.slots[slot]
        self._send(JOIN, slot, join_request(
            G, state.member_id, session_ms=SESSION_MS, rebalance_ms=REBALANCE_MS,
            instance_id=INSTANCES.get(slot)))

    @rule(slot=st.integers(0, SLOTS - 1))
    def sync(self, slot: int) -> None:
        state = self.slots[slot]
        assignments = {member: assignment_for(state.generation, key)
                       for member, key in state.leader_members.items()}
        self._send(SYNC, slot, sync_request(G, state.member_id, state.generation, assignments,
                                            instance_id=INSTANCES.get(slot)), state.generation)

    @rule()
    def leader_sync(self) -> None:
        """The client that got the latest leader JoinGroup reply runs its assignor."""
        leaders = [i for i, slot in enumerate(self.slots) if slot.leader_members]
        if leaders:
            self.sync(max(leaders, key=lambda i: self.slots[i].generation))

    @rule(slot=st.integers(0, SLOTS - 1))
    def heartbeat(self, slot: int) -> None:
        state = self.slots[slot]
        self._send(HEARTBEAT, slot, heartbeat_request(G, state.member_id, state.generation,
                                                      INSTANCES.get(slot)))

    @rule(slot=st.integers(0, SLOTS - 1), rarely=st.integers(0, 3))
    def leave(self, slot: int, rarely: int) -> None:
        if rarely:
            return
        state = self.slots[slot]
        self._send(LEAVE, slot, leave_request(G, (state.member_id, INSTANCES.get(slot))))

    @rule(slot=st.integers(0, SLOTS - 1), offset=st.integers(0, 100))
    def commit(self, slot: int, offset: int) -> None:
        state = self.slots[slot]
        self._send(COMMIT, slot, commit_request(G, {("t", slot): offset},
                                                generation=state.generation,
                                                member_id=state.member_id))

    @rule(offset=st.integers(0, 100))
    def standalone_commit(self, offset: int) -> None:
        self._send(COMMIT, 0, commit_request(G, {("t", 9): offset}))

    @precondition(lambda self: G in self.d.shard.groups)
    @rule(rarely=st.integers(0, 5))
    def delete_group(self, rarely: int) -> None:
        if rarely:
            return
        self._send(DELETE_GROUPS, 0, delete_groups_request(G))

    @rule(ms=st.sampled_from([0, 500, 1000, 4000, 11_000, 25_000]))
    def advance(self, ms: int) -> None:
        self._tick(ms)

    # -- invariants ------------------------------------------------------------------------

    @invariant()
    def stable_members_hold_their_leaders_assignment(self) -> None:
        group = self.d.shard.groups.get(G)
        if isinstance(group, ClassicGroup) and group.state is GroupState.STABLE:
            for member in group.members.values():
                key = member.group_instance_id or member.member_id
                assert member.assignment in (assignment_for(group.generation, key), b"")

    @invariant()
    def records_load_into_the_same_groups_and_offsets(self) -> None:
        live, loaded = self.d.shard, self.d.replayed()
        assert set(live.groups) == set(loaded.groups)
        for group_id in live.offsets.groups():
            assert dict(live.offsets.offsets(group_id)) == dict(loaded.offsets.offsets(group_id))
        assert live.offsets.groups() == loaded.offsets.groups()
        group, copy = live.groups.get(G), loaded.groups.get(G)
        if isinstance(group, ClassicGroup) and group.state in (GroupState.STABLE,
                                                               GroupState.EMPTY):
            assert isinstance(copy, ClassicGroup)
            assert (copy.state, copy.generation, copy.protocol_name, copy.leader_id) == (
                group.state, group.generation, group.protocol_name, group.leader_id)
            assert {m.member_id: (m.group_instance_id, m.assignment)
                    for m in copy.members.values()} == {
                m.member_id: (m.group_instance_id, m.assignment)
                for m in group.members.values()}

    def teardown(self) -> None:
        for _ in range(4):  # every timer that can answer a parked request has fired
            self._tick(REBALANCE_MS + SESSION_MS)
        assert not self.pending, f"requests never answered: {sorted(self.pending)}"
        assert not self.d.shard.unload().replies
        assert self.sent <= set(self.d.replies)


ClassicGroupMachine.TestCase.settings = settings(
    max_examples=150, stateful_step_count=50, deadline=None,
    suppress_health_check=[HealthCheck.too_slow])
TestClassicGroupMachine = ClassicGroupMachine.TestCase
