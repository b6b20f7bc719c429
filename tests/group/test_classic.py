"""The classic group state machine through the shard: joins, the rebalance and its timers,
sync, heartbeats, leaves, static membership and every error Kafka gives on the way."""

from __future__ import annotations

import dataclasses
import logging
import re

import pytest
from classic_driver import (
    COMMIT,
    HEARTBEAT,
    JOIN,
    LEAVE,
    SYNC,
    Driver,
    commit_request,
    heartbeat_request,
    join_request,
    leave_request,
    sync_request,
)

from pykraft.group.classic import ClassicGroup, GroupState
from pykraft.group.config import GroupConfig
from pykraft.group.records import GroupMetadataValue, decode_record

G = "g"


def group(d: Driver, group_id: str = G) -> ClassicGroup:
    found = d.shard.groups[group_id]
    assert isinstance(found, ClassicGroup)
    return found


def stable_group(d: Driver, count: int, **join_kwargs: object) -> list[str]:
    """A Stable group of ``count`` dynamic members (joined in one initial rebalance); their ids,
    leader first, each assigned its own id as bytes."""
    if join_kwargs.get("instance_id") is not None:
        tokens = [d.send(JOIN, join_request(G, **join_kwargs))]
    else:
        ids = [d.join_new(G, **join_kwargs) for _ in range(count)]
        tokens = [d.send(JOIN, join_request(G, m, **join_kwargs))
                  for m in ids]
    d.advance(d.config.initial_rebalance_delay_ms)
    replies = [d.replies[t] for t in tokens]
    ids = [r.member_id for r in replies]
    generation = replies[0].generation_id
    leader = replies[0].leader
    assignment = {m: m.encode() for m in ids}
    for member in ids:
        if member != leader:
            d.send(SYNC, sync_request(G, member, generation))
    d.call(SYNC, sync_request(G, leader, generation, assignment))
    assert group(d).state is GroupState.STABLE
    return [leader] + [m for m in ids if m != leader]


def last_group_record(d: Driver) -> GroupMetadataValue | None:
    for record in reversed(d.records):
        decoded = decode_record(record)
        if decoded is not None and not hasattr(decoded[0], "topic"):
            value = decoded[1]
            assert value is None or isinstance(value, GroupMetadataValue)
            return value
    raise AssertionError("no group record")


def test_first_join_from_v4_requires_a_member_id_generated_from_the_client_id() -> None:
    d = Driver()
    reply = d.call(JOIN, join_request(G), client_id="rdkafka")
    assert reply.error_code == 79
    assert re.fullmatch(r"rdkafka-[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-"
                        r"[0-9a-f]{12}", reply.member_id)
    assert reply.member_id in group(d).pending_join_members
    value = last_group_record(d)  # the new group is written, empty
    assert value is not None and value.members == () and value.generation == 0


def test_member_ids_come_from_the_seeded_rng() -> None:
    first, second = Driver(seed=3), Driver(seed=3)
    assert first.join_new(G) == second.join_new(G)
    assert Driver(seed=4).join_new(G) != Driver(seed=3).join_new(G)


def test_pending_member_that_does_not_rejoin_within_its_session_expires() -> None:
    d = Driver()
    member = d.join_new(G, session_ms=6000)
    d.advance(6000)
    assert member not in group(d).pending_join_members
    assert d.call(JOIN, join_request(G, member)).error_code == 25


def test_join_before_v4_adds_the_member_without_member_id_required() -> None:
    d = Driver(GroupConfig(initial_rebalance_delay_ms=100))
    token = d.send(JOIN, join_request(G), version=3)
    assert token not in d.replies
    d.advance(100)
    reply = d.replies[token]
    assert reply.error_code == 0 and reply.generation_id == 1 and reply.leader == reply.member_id


def test_one_member_rebalance_then_sync_makes_the_group_stable_with_its_assignment() -> None:
    d = Driver()
    member = d.join_new(G)
    token = d.send(JOIN, join_request(G, member))
    assert token not in d.replies  # the initial rebalance waits for its delay, even of 0
    d.tick()
    reply = d.replies[token]
    assert (reply.error_code, reply.generation_id, reply.leader, reply.protocol_name) == (
        0, 1, member, "range")
    assert [m.member_id for m in reply.members] == [member]
    assert group(d).state is GroupState.COMPLETING_REBALANCE
    synced = d.call(SYNC, sync_request(G, member, 1, {member: b"a"}))
    assert synced.error_code == 0 and synced.assignment == b"a"
    assert synced.protocol_type == "consumer" and synced.protocol_name == "range"
    value = last_group_record(d)
    assert value is not None and value.generation == 1 and value.leader == member
    assert [(m.member_id, m.assignment) for m in value.members] == [(member, b"a")]
    assert group(d).state is GroupState.STABLE


def test_followers_sync_waits_for_the_leaders_and_each_gets_its_own_assignment() -> None:
    d = Driver(GroupConfig(initial_rebalance_delay_ms=3000))
    a, b = d.join_new(G), d.join_new(G)
    ta, tb = d.send(JOIN, join_request(G, a)), d.send(JOIN, join_request(G, b))
    d.advance(3000)  # b joined during the delay: one more delay
    assert ta not in d.replies
    d.advance(3000)
    leader = d.replies[ta].leader
    follower = b if leader == a else a
    assert d.replies[ta].generation_id == d.replies[tb].generation_id == 1
    leader_token, follower_token = (ta, tb) if leader == a else (tb, ta)
    assert len(d.replies[leader_token].members) == 2
    assert d.replies[follower_token].members == ()
    parked = d.send(SYNC, sync_request(G, follower, 1))
    assert parked not in d.replies
    d.call(SYNC, sync_request(G, leader, 1, {leader: b"L", follower: b"F"}))
    assert d.replies[parked].assignment == b"F"


def test_initial_rebalance_delay_is_extended_by_each_new_join_up_to_the_rebalance_timeout() -> None:
    d = Driver(GroupConfig(initial_rebalance_delay_ms=3000))
    a = d.join_new(G, rebalance_ms=7000)
    ta = d.send(JOIN, join_request(G, a, rebalance_ms=7000))
    d.advance(2000)
    b = d.join_new(G, rebalance_ms=7000)
    d.send(JOIN, join_request(G, b, rebalance_ms=7000))
    d.advance(1000)  # first delay over, but a member came: wait min(3000, 7000-3000)
    assert ta not in d.replies
    d.advance(2999)
    assert ta not in d.replies
    d.advance(1)
    assert d.replies[ta].error_code == 0 and len(d.replies[ta].members) == 2


def test_initial_rebalance_without_new_members_completes_after_one_delay() -> None:
    d = Driver(GroupConfig(initial_rebalance_delay_ms=3000))
    a = d.join_new(G)
    ta = d.send(JOIN, join_request(G, a))
    d.advance(2999)
    assert ta not in d.replies
    d.advance(1)
    assert ta in d.replies


def test_new_member_in_a_stable_group_starts_a_rebalance_the_others_learn_by_heartbeat() -> None:
    d = Driver()
    [a] = stable_group(d, 1)
    b = d.join_new(G)
    tb = d.send(JOIN, join_request(G, b))
    assert group(d).state is GroupState.PREPARING_REBALANCE
    assert d.call(HEARTBEAT, heartbeat_request(G, a, 1)).error_code == 27
    assert tb not in d.replies
    ta = d.send(JOIN, join_request(G, a))
    assert d.replies[ta].generation_id == d.replies[tb].generation_id == 2
    assert d.replies[ta].leader == a and len(d.replies[ta].members) == 2


def test_members_that_do_not_rejoin_within_the_rebalance_timeout_are_removed() -> None:
    d = Driver()
    a, b = stable_group(d, 2, rebalance_ms=20_000)
    c = d.join_new(G)
    tc = d.send(JOIN, join_request(G, c, rebalance_ms=20_000))
    ta = d.send(JOIN, join_request(G, a, rebalance_ms=20_000))
    d.advance(9000)
    d.call(HEARTBEAT, heartbeat_request(G, b, 1))  # alive, but not rejoining
    d.advance(9000)
    d.call(HEARTBEAT, heartbeat_request(G, b, 1))
    assert ta not in d.replies
    d.advance(2000)
    assert d.replies[ta].generation_id == 2 and d.replies[tc].generation_id == 2
    assert set(group(d).members) == {a, c}


def test_session_timeout_removes_a_silent_member_and_rebalances() -> None:
    d = Driver()
    a, b = stable_group(d, 2, session_ms=10_000)
    d.advance(6000)
    d.call(HEARTBEAT, heartbeat_request(G, a, 1))
    d.advance(4000)
    assert b not in group(d).members and a in group(d).members
    assert group(d).state is GroupState.PREPARING_REBALANCE
    assert d.call(HEARTBEAT, heartbeat_request(G, a, 1)).error_code == 27
    ta = d.send(JOIN, join_request(G, a))
    assert d.replies[ta].generation_id == 2 and len(d.replies[ta].members) == 1


def test_leader_sync_that_never_comes_expires_the_pending_members() -> None:
    d = Driver()
    a = d.join_new(G, rebalance_ms=8000)
    d.send(JOIN, join_request(G, a, rebalance_ms=8000))
    d.tick()
    assert group(d).state is GroupState.COMPLETING_REBALANCE
    d.advance(7000)
    d.call(HEARTBEAT, heartbeat_request(G, a, 1))
    d.advance(1000)
    assert a not in group(d).members
    assert group(d).state is GroupState.EMPTY


def test_batched_leave_answers_per_member_and_rebalances() -> None:
    d = Driver()
    a, b = stable_group(d, 2)
    reply = d.call(LEAVE, leave_request(G, (b, None), ("nobody", None)))
    assert reply.error_code == 0
    assert [(m.member_id, m.error_code) for m in reply.members] == [(b, 0), ("nobody", 25)]
    assert set(group(d).members) == {a}
    assert group(d).state is GroupState.PREPARING_REBALANCE


def test_last_member_leaving_empties_the_group_with_a_new_generation_written() -> None:
    d = Driver()
    [a] = stable_group(d, 1)
    d.call(LEAVE, leave_request(G, (a, None)))
    assert group(d).state is GroupState.EMPTY and group(d).generation == 2
    value = last_group_record(d)
    assert value is not None and value.generation == 2 and value.members == ()
    assert value.protocol is None


def test_leave_of_unknown_group_answers_every_member_unknown() -> None:
    reply = Driver().call(LEAVE, leave_request("none", ("m", None), ("n", "i")))
    assert [m.error_code for m in reply.members] == [25, 25]


def test_a_member_leaving_while_its_join_is_parked_gets_its_join_answered() -> None:
    d = Driver()
    a, _ = stable_group(d, 2)
    ta = d.send(JOIN, join_request(G, a))
    assert ta not in d.replies
    d.call(LEAVE, leave_request(G, (a, None)))
    assert d.replies[ta].error_code == 25


@pytest.mark.parametrize(("session_ms", "code"), [(5999, 26), (1_800_001, 26), (6000, 79)])
def test_session_timeout_must_be_within_the_brokers_bounds(session_ms: int, code: int) -> None:
    assert Driver().call(JOIN, join_request(G, session_ms=session_ms)).error_code == code


def test_empty_group_id_is_invalid() -> None:
    d = Driver()
    assert d.call(JOIN, join_request("")).error_code == 24
    assert d.call(SYNC, sync_request("", "m", 1)).error_code == 24
    assert d.call(HEARTBEAT, heartbeat_request("", "m", 1)).error_code == 24
    assert d.call(LEAVE, leave_request("", ("m", None))).error_code == 24


def test_unknown_member_and_group_errors() -> None:
    d = Driver()
    assert d.call(JOIN, join_request("nope", "m-1")).error_code == 25
    assert d.call(SYNC, sync_request("nope", "m-1", 1)).error_code == 25
    assert d.call(HEARTBEAT, heartbeat_request("nope", "m-1", 1)).error_code == 25
    stable_group(d, 1)
    assert d.call(HEARTBEAT, heartbeat_request(G, "stranger", 1)).error_code == 25
    assert d.call(SYNC, sync_request(G, "stranger", 1)).error_code == 25


def test_wrong_generation_is_illegal() -> None:
    d = Driver()
    [a] = stable_group(d, 1)
    assert d.call(HEARTBEAT, heartbeat_request(G, a, 7)).error_code == 22
    assert d.call(SYNC, sync_request(G, a, 7)).error_code == 22


def test_sync_while_preparing_a_rebalance_is_refused() -> None:
    d = Driver()
    [a] = stable_group(d, 1)
    d.send(JOIN, join_request(G, d.join_new(G)))
    assert d.call(SYNC, sync_request(G, a, 1)).error_code == 27


def test_protocols_no_member_shares_are_inconsistent() -> None:
    d = Driver()
    stable_group(d, 1)
    assert d.call(JOIN, join_request(G, protocols=(("other", b""),))).error_code == 23
    assert d.call(JOIN, join_request(G, protocol_type="connect")).error_code == 23


def test_the_protocol_most_members_prefer_among_those_all_support_wins() -> None:
    d = Driver(GroupConfig(initial_rebalance_delay_ms=1000))
    prefs = [(("rr", b"1"), ("range", b"2")), (("range", b"3"), ("rr", b"4")),
             (("rr", b"5"), ("range", b"6"), ("sticky", b"7"))]
    tokens = [d.send(JOIN, join_request(G, d.join_new(G, protocols=p), protocols=p))
              for p in prefs]
    d.advance(1000)  # the later joins extended the initial delay once
    d.advance(1000)
    leader_reply = next(d.replies[t] for t in tokens if d.replies[t].members)
    assert leader_reply.protocol_name == "rr"
    assert sorted(m.metadata for m in leader_reply.members) == [b"1", b"4", b"5"]


def test_group_max_size_refuses_members_beyond_it() -> None:
    d = Driver(GroupConfig(initial_rebalance_delay_ms=0, max_size=1))
    stable_group(d, 1)
    assert d.call(JOIN, join_request(G)).error_code == 81


def test_static_member_rejoining_a_stable_group_keeps_its_assignment_without_rebalance() -> None:
    d = Driver()
    [a] = stable_group(d, 1, instance_id="i-1")
    reply = d.call(JOIN, join_request(G, instance_id="i-1"), client_id="c")
    assert reply.error_code == 0 and reply.member_id != a
    assert reply.member_id.startswith("i-1-")
    assert reply.generation_id == 1 and reply.skip_assignment and reply.leader == reply.member_id
    assert group(d).state is GroupState.STABLE
    synced = d.call(SYNC, sync_request(G, reply.member_id, 1, instance_id="i-1"))
    assert synced.assignment == a.encode()
    assert d.call(HEARTBEAT, heartbeat_request(G, a, 1, "i-1")).error_code == 82


def test_static_rejoin_before_v9_gets_the_old_leader_and_no_skip() -> None:
    d = Driver()
    [a] = stable_group(d, 1, instance_id="i-1")
    reply = d.call(JOIN, join_request(G, instance_id="i-1"), version=8)
    assert reply.leader == a and not reply.skip_assignment


def test_static_member_rejoining_with_other_protocols_triggers_a_rebalance() -> None:
    d = Driver()
    stable_group(d, 1, instance_id="i-1")
    protocols = (("sticky", b""), ("range", b"m"))
    token = d.send(JOIN, join_request(G, instance_id="i-1", protocols=protocols))
    # its only member rejoined: the rebalance completes at once
    assert d.replies[token].generation_id == 2 and d.replies[token].protocol_name == "sticky"
    assert group(d).state is GroupState.COMPLETING_REBALANCE


def test_a_parked_join_of_a_replaced_static_member_is_fenced() -> None:
    d = Driver()
    first = d.send(JOIN, join_request(G, instance_id="i-1"))
    d.send(JOIN, join_request(G, instance_id="i-2"))
    d.tick()
    g = group(d)
    id1, id2 = g.static_members["i-1"], g.static_members["i-2"]
    leader_instance = "i-1" if g.leader_id == id1 else "i-2"
    d.call(SYNC, sync_request(G, g.leader_id or "", d.replies[first].generation_id,
                              {id1: b"1", id2: b"2"}, instance_id=leader_instance))
    d.send(JOIN, join_request(G, d.join_new(G)))  # a newcomer: rebalance
    parked = d.send(JOIN, join_request(G, id1, instance_id="i-1"))
    assert parked not in d.replies  # i-2 has not rejoined yet
    d.send(JOIN, join_request(G, instance_id="i-1"))  # i-1 restarted with no id
    assert d.replies[parked].error_code == 82
    assert d.call(HEARTBEAT, heartbeat_request(G, id1, 1, "i-1")).error_code == 82


def test_leave_by_instance_id_alone_removes_the_static_member() -> None:
    d = Driver()
    [a] = stable_group(d, 1, instance_id="i-1")
    reply = d.call(LEAVE, leave_request(G, ("", "i-1"), ("", "i-9")))
    assert [m.error_code for m in reply.members] == [0, 25]
    assert a not in group(d).members


def test_leave_with_a_fenced_member_id_is_refused() -> None:
    d = Driver()
    stable_group(d, 1, instance_id="i-1")
    reply = d.call(LEAVE, leave_request(G, ("old-id", "i-1")))
    assert [m.error_code for m in reply.members] == [82]


def test_a_second_join_of_a_waiting_member_supersedes_the_first() -> None:
    d = Driver()
    a, _ = stable_group(d, 2)
    first = d.send(JOIN, join_request(G, a))
    second = d.send(JOIN, join_request(G, a))
    assert d.replies[first].error_code == 27 and second not in d.replies


def test_a_second_sync_of_a_waiting_follower_supersedes_the_first() -> None:
    d = Driver(GroupConfig(initial_rebalance_delay_ms=1000))
    a, b = d.join_new(G), d.join_new(G)
    ta, tb = d.send(JOIN, join_request(G, a)), d.send(JOIN, join_request(G, b))
    d.advance(1000)  # b joined during the first delay: one more
    d.advance(1000)
    follower = b if d.replies[ta].leader == a else a
    first = d.send(SYNC, sync_request(G, follower, 1))
    second = d.send(SYNC, sync_request(G, follower, 1))
    assert d.replies[first].error_code == 27 and second not in d.replies
    del tb


def test_rejoin_with_the_same_protocols_while_completing_or_stable_needs_no_rebalance() -> None:
    d = Driver(GroupConfig(initial_rebalance_delay_ms=1000))
    a, b = d.join_new(G), d.join_new(G)
    ta = d.send(JOIN, join_request(G, a))
    d.send(JOIN, join_request(G, b))
    d.advance(1000)
    d.advance(1000)
    leader = d.replies[ta].leader
    follower = b if leader == a else a
    again = d.call(JOIN, join_request(G, follower))  # CompletingRebalance: answered at once
    assert again.generation_id == 1 and again.members == ()
    assert d.call(HEARTBEAT, heartbeat_request(G, follower, 1)).error_code == 0
    d.call(SYNC, sync_request(G, leader, 1, {a: b"a", b: b"b"}))
    stable = d.call(JOIN, join_request(G, follower))  # Stable follower: no rebalance
    assert stable.generation_id == 1 and group(d).state is GroupState.STABLE


def test_a_pending_member_that_never_rejoins_holds_the_rebalance_until_it_expires() -> None:
    d = Driver()
    [a] = stable_group(d, 1, session_ms=30_000)
    d.send(JOIN, join_request(G, d.join_new(G, session_ms=6000)))  # a joins: rebalance
    d.join_new(G, session_ms=6000)  # pending, never rejoins
    ta = d.send(JOIN, join_request(G, a, session_ms=30_000))
    assert ta not in d.replies
    d.advance(6000)
    assert d.replies[ta].generation_id == 2 and len(d.replies[ta].members) == 2


def test_a_fenced_static_member_cannot_commit() -> None:
    d = Driver()
    [old] = stable_group(d, 1, instance_id="i-1")
    d.call(JOIN, join_request(G, instance_id="i-1"))
    request = commit_request(G, {("t", 0): 1}, generation=1, member_id=old)
    request = dataclasses.replace(request, group_instance_id="i-1")
    reply = d.call(COMMIT, request)
    assert [p.error_code for t in reply.topics for p in t.partitions] == [82]


def test_a_groups_life_is_logged_as_kafka_logs_it(caplog: pytest.LogCaptureFixture) -> None:
    """Operators see rebalances in the broker's log: Kafka's INFO lines for a rebalance,
    a new generation, a member that left and one whose session expired."""
    caplog.set_level(logging.INFO, logger="pykraft.group.classic_membership")
    d = Driver()
    first = d.join_new(G, session_ms=6000)
    d.send(JOIN, join_request(G, first, session_ms=6000))
    d.tick()
    d.call(SYNC, sync_request(G, first, 1, {first: b"a"}))
    d.call(LEAVE, leave_request(G, (first, None)))
    second = d.join_new(G, session_ms=6000)
    d.send(JOIN, join_request(G, second, session_ms=6000))
    d.tick()
    d.advance(6000)
    lines = [r.getMessage() for r in caplog.records]
    assert f"Preparing to rebalance group {G} in state Empty with old generation 0" in lines
    assert f"Stabilized group {G} generation 1 with 1 members" in lines
    assert f"Member {first} has left group {G} through explicit LeaveGroup" in lines
    assert any(line.startswith(f"Member {second} in group {G} has failed") for line in lines)
