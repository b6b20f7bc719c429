"""A state machine over heartbeats of several members, leaves, subscription changes, topic
growth and timer ticks. Clients behave like the Java consumer: they take new partitions at
once, but revoking takes them a while (commits, callbacks), so until a later heartbeat they
still own and report what a response took away; they rejoin when fenced."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from consumer_harness import TOPICS, Coordinator, assigned, request
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from pykraft.group.consumer_group import ConsumerGroup
from pykraft.group.outcome import TopicInfo
from pykraft.protocol.errors import ErrorCode

MEMBERS = ("m1", "m2", "m3", "m4")
SUBSCRIPTIONS = st.sampled_from([("foo",), ("bar",), ("foo", "bar")])


@dataclass
class Client:
    epoch: int = 0
    owned: dict[uuid.UUID, set[int]] = field(default_factory=dict)
    revoking_towards: dict[uuid.UUID, set[int]] | None = None
    topics: tuple[str, ...] = ("foo",)


class ConsumerGroupMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.c = Coordinator()
        self.clients: dict[str, Client] = {}
        self.group_epoch = 0
        self.assignment_epoch = 0
        self.member_epochs: dict[str, int] = {}

    def group(self) -> ConsumerGroup | None:
        group: ConsumerGroup | None = self.c.groups.group("g")
        return group

    def send(
        self, member: str, topics: tuple[str, ...] | None = None, revoked: bool = True
    ) -> None:
        client = self.clients[member]
        if revoked and client.revoking_towards is not None:
            client.owned, client.revoking_towards = client.revoking_towards, None
        req = request(member, client.epoch, topics=topics, owned=client.owned)
        response = self.c.heartbeat(req)
        if response.error_code in (ErrorCode.FENCED_MEMBER_EPOCH, ErrorCode.UNKNOWN_MEMBER_ID):
            del self.clients[member]  # the Java consumer drops everything and rejoins later
            self.member_epochs.pop(member, None)
            return
        assert response.error_code == ErrorCode.NONE, response.error_message
        client.epoch = int(response.member_epoch)
        new = assigned(response)
        if new is None:
            return
        if all(parts <= new.get(t, set()) for t, parts in client.owned.items()):
            client.owned, client.revoking_towards = new, None
        else:
            client.revoking_towards = new

    @rule(member=st.sampled_from(MEMBERS), topics=SUBSCRIPTIONS)
    def join(self, member: str, topics: tuple[str, ...]) -> None:
        if member in self.clients:
            return
        self.clients[member] = Client(topics=topics)
        self.send(member, topics)

    @precondition(lambda self: bool(self.clients))
    @rule(data=st.data(), revoked=st.booleans())
    def heartbeat(self, data: st.DataObject, revoked: bool) -> None:
        self.send(data.draw(st.sampled_from(sorted(self.clients))), revoked=revoked)

    @precondition(lambda self: bool(self.clients))
    @rule(data=st.data(), topics=SUBSCRIPTIONS)
    def resubscribe(self, data: st.DataObject, topics: tuple[str, ...]) -> None:
        member = data.draw(st.sampled_from(sorted(self.clients)))
        self.clients[member].topics = topics
        self.send(member, topics)

    @precondition(lambda self: bool(self.clients))
    @rule(data=st.data())
    def leave(self, data: st.DataObject) -> None:
        member = data.draw(st.sampled_from(sorted(self.clients)))
        response = self.c.heartbeat(request(member, -1))
        assert response.error_code == ErrorCode.NONE
        del self.clients[member]
        self.member_epochs.pop(member, None)

    @rule(ms=st.integers(0, 50_000))
    def time_passes(self, ms: int) -> None:
        self.c.advance(ms)
        group = self.group()
        live = set() if group is None else set(group.members)
        for member in set(self.clients) - live:
            # Fenced by a timer: the client learns it at its next heartbeat.
            self.send(member)

    @rule(extra=st.integers(1, 4))
    def topic_grows(self, extra: int) -> None:
        info = self.c.topics["bar"]
        self.c.topics["bar"] = TopicInfo(info.topic_id, info.partitions + extra)

    @rule()
    def settle(self) -> None:
        """With everyone heartbeating and no time passing, the group converges: every
        subscribed partition assigned to exactly one member, every member stable."""
        for _ in range(10):
            for member in sorted(self.clients):
                self.send(member)
        group = self.group()
        if group is None or not group.members:
            return
        assert group.state == "Stable"
        wanted = {
            (self.c.topics[t].topic_id, p)
            for client in self.clients.values()
            for t in client.topics
            for p in range(self.c.topics[t].partitions)
        }
        held = [
            (topic, p)
            for m in group.members.values()
            for topic, parts in m.assigned.items()
            for p in parts
        ]
        assert sorted(held) == sorted(wanted)
        for member, client in self.clients.items():
            assert client.revoking_towards is None
            assert client.owned == {t: set(p) for t, p in group.members[member].assigned.items()}
        assert self.c.reloaded().groups == self.c.registry

    @invariant()
    def no_partition_has_two_owners(self) -> None:
        group = self.group()
        if group is None:
            return
        seen: set[tuple[uuid.UUID, int]] = set()
        for m in group.members.values():
            for held in (m.assigned, m.pending_revocation):
                for topic, parts in held.items():
                    for p in parts:
                        assert (topic, p) not in seen
                        seen.add((topic, p))
        live = [c for name, c in self.clients.items() if name in group.members]
        owned = [(t, p) for c in live for t, parts in c.owned.items() for p in parts]
        assert len(owned) == len(set(owned))

    @invariant()
    def epochs_never_go_backwards(self) -> None:
        group = self.group()
        if group is None:
            return
        assert group.epoch >= self.group_epoch
        assert group.assignment_epoch >= self.assignment_epoch
        assert group.assignment_epoch <= group.epoch
        self.group_epoch, self.assignment_epoch = group.epoch, group.assignment_epoch
        for name, m in group.members.items():
            assert m.member_epoch >= self.member_epochs.get(name, 0)
            self.member_epochs[name] = m.member_epoch


ConsumerGroupMachine.TestCase.settings = settings(
    max_examples=60, stateful_step_count=40, deadline=None
)
TestConsumerGroupMachine = ConsumerGroupMachine.TestCase


def test_the_harness_topics_are_known() -> None:
    assert set(TOPICS) == {"foo", "bar"}
