"""The shard's other APIs and its life: offsets (commit, fetch, delete, expiry), group
deletion, listing and describing, loading from its records and unloading."""

from __future__ import annotations

import dataclasses
import uuid

from classic_driver import (
    COMMIT,
    DELETE_GROUPS,
    DESCRIBE,
    FETCH,
    HEARTBEAT,
    JOIN,
    LIST,
    OFFSET_DELETE,
    SYNC,
    Driver,
    commit_request,
    delete_groups_request,
    describe_request,
    fetch_request,
    heartbeat_request,
    join_request,
    list_request,
    offset_delete_request,
    subscription,
    sync_request,
)

from pykraft.group.classic import ClassicGroup, GroupState
from pykraft.group.config import GroupConfig
from pykraft.group.consumer_group import ConsumerGroup
from pykraft.group.consumer_member import ConsumerMember
from pykraft.group.outcome import TopicInfo
from pykraft.group.records import (
    GroupMetadataValue,
    OffsetCommitKey,
    OffsetCommitValue,
    decode_record,
)

G = "g"
TOPIC = "t"


def errors(reply: object) -> list[int]:
    return [p.error_code for t in reply.topics for p in t.partitions]  # type: ignore[attr-defined]


def fetched(d: Driver, group: str = G, topics: dict[str, list[int]] | None = None
            ) -> dict[tuple[str, int], int]:
    reply = d.call(FETCH, fetch_request(group, topics))
    [answer] = reply.groups
    return {(t.name, p.partition_index): p.committed_offset
            for t in answer.topics for p in t.partitions}


def consumer_group(d: Driver, *topics: str, session_ms: int = 10_000) -> str:
    """A Stable one-member consumer group subscribed to ``topics``; the member id."""
    protocols = (("range", subscription(*topics)),)
    member = d.join_new(G, protocols=protocols, session_ms=session_ms)
    token = d.send(JOIN, join_request(G, member, protocols=protocols, session_ms=session_ms))
    d.tick()
    assert d.replies[token].generation_id == 1
    d.call(SYNC, sync_request(G, member, 1, {member: b"x"}))
    return str(member)


def test_standalone_commit_creates_a_simple_group_and_is_fetched_back() -> None:
    d = Driver()
    d.topics[TOPIC] = TopicInfo(uuid.UUID(int=9), 3)
    reply = d.call(COMMIT, commit_request(G, {(TOPIC, 0): 5, (TOPIC, 1): 7}))
    assert errors(reply) == [0, 0]
    assert fetched(d, topics={TOPIC: [0, 1, 2]}) == {(TOPIC, 0): 5, (TOPIC, 1): 7, (TOPIC, 2): -1}
    assert fetched(d) == {(TOPIC, 0): 5, (TOPIC, 1): 7}  # topics null: all
    key, value = decode_record(d.records[-1])  # type: ignore[misc]
    assert key == OffsetCommitKey(G, TOPIC, 1)
    assert isinstance(value, OffsetCommitValue) and value.commit_timestamp == d.now
    assert value.topic_id == uuid.UUID(int=9)  # the image's id, as Kafka 4.4 writes it


def test_a_new_classic_groups_first_record_dates_its_state_from_the_join() -> None:
    """Kafka's ClassicGroup starts with its current state timestamp at creation: the empty
    group written for a join that must first get a member id carries the join's time."""
    d = Driver()
    d.join_new(G)
    _, value = decode_record(d.records[0])  # type: ignore[misc]
    assert isinstance(value, GroupMetadataValue)
    assert (value.generation, value.current_state_timestamp) == (0, d.now)


def test_fetch_of_an_unknown_group_answers_minus_one_and_no_topics_for_all() -> None:
    d = Driver()
    assert fetched(d, "nobody", {TOPIC: [0]}) == {(TOPIC, 0): -1}
    assert fetched(d, "nobody") == {}


def test_standalone_commit_to_a_group_with_members_is_refused_unknown_member() -> None:
    d = Driver()
    consumer_group(d, TOPIC)
    assert errors(d.call(COMMIT, commit_request(G, {(TOPIC, 0): 1}))) == [25]


def test_member_commits_are_checked_against_generation_and_state() -> None:
    d = Driver()
    member = consumer_group(d, TOPIC)
    ok = commit_request(G, {(TOPIC, 0): 3}, generation=1, member_id=member)
    assert errors(d.call(COMMIT, ok)) == [0]
    stale = commit_request(G, {(TOPIC, 0): 4}, generation=0, member_id=member)
    assert errors(d.call(COMMIT, stale)) == [22]
    stranger = commit_request(G, {(TOPIC, 0): 4}, generation=1, member_id="x")
    assert errors(d.call(COMMIT, stranger)) == [25]
    d.send(JOIN, join_request(G, member, protocols=(("range", subscription(TOPIC)),)))
    assert group(d).state is GroupState.COMPLETING_REBALANCE
    during = commit_request(G, {(TOPIC, 0): 4}, generation=2, member_id=member)
    assert errors(d.call(COMMIT, during)) == [27]
    assert fetched(d, topics={TOPIC: [0]}) == {(TOPIC, 0): 3}


def test_commit_with_a_generation_to_an_unknown_group() -> None:
    d = Driver()
    request = commit_request("nobody", {(TOPIC, 0): 1}, generation=3, member_id="m")
    assert errors(d.call(COMMIT, request, version=8)) == [22]
    assert errors(d.call(COMMIT, request, version=9)) == [69]


def test_commit_counts_as_a_heartbeat_of_the_member() -> None:
    d = Driver()
    member = consumer_group(d, TOPIC, session_ms=10_000)
    d.advance(9000)
    d.call(COMMIT, commit_request(G, {(TOPIC, 0): 1}, generation=1, member_id=member))
    d.advance(9000)
    assert member in group(d).members


def test_metadata_over_offset_metadata_max_bytes_is_refused_per_partition() -> None:
    d = Driver(GroupConfig(initial_rebalance_delay_ms=0, offset_metadata_max_bytes=4))
    assert errors(d.call(COMMIT, commit_request(G, {(TOPIC, 0): 1}, metadata="12345"))) == [12]
    assert errors(d.call(COMMIT, commit_request(G, {(TOPIC, 0): 1}, metadata="1234"))) == [0]


def test_commit_v4_retention_sets_an_explicit_expire_timestamp_that_expiry_honours() -> None:
    d = Driver(GroupConfig(offsets_retention_check_interval_ms=1000))
    request = dataclasses.replace(commit_request(G, {(TOPIC, 0): 9}), retention_time_ms=5000)
    assert errors(d.call(COMMIT, request, version=4)) == [0]
    _, value = decode_record(d.records[-1])  # type: ignore[misc]
    assert isinstance(value, OffsetCommitValue) and value.expire_timestamp == d.now + 5000
    d.advance(4000)
    assert fetched(d, topics={TOPIC: [0]}) == {(TOPIC, 0): 9}
    d.advance(1000)
    assert fetched(d, topics={TOPIC: [0]}) == {(TOPIC, 0): -1}


def test_offsets_of_an_empty_group_expire_a_retention_after_it_emptied_then_the_group() -> None:
    d = Driver(GroupConfig(initial_rebalance_delay_ms=0, offsets_retention_ms=60_000,
                           offsets_retention_check_interval_ms=10_000))
    member = consumer_group(d, TOPIC, session_ms=10_000)
    d.call(COMMIT, commit_request(G, {(TOPIC, 0): 1}, generation=1, member_id=member))
    for _ in range(30):  # 150 s Stable and subscribed: kept past the retention
        d.advance(5000)
        d.call(HEARTBEAT, heartbeat_request(G, member, 1))
    assert fetched(d, topics={TOPIC: [0]}) == {(TOPIC, 0): 1}
    d.advance(10_000)  # the member's session ends: the group empties
    assert group(d).state is GroupState.EMPTY
    emptied = d.now
    d.advance(50_000)
    assert fetched(d, topics={TOPIC: [0]}) == {(TOPIC, 0): 1}
    d.advance(emptied + 70_000 - d.now)
    assert fetched(d, topics={TOPIC: [0]}) == {(TOPIC, 0): -1}
    assert G not in d.shard.groups
    assert G not in d.replayed().groups


def test_offset_delete_refuses_subscribed_topics_and_deletes_the_others() -> None:
    d = Driver()
    member = consumer_group(d, TOPIC)
    d.call(COMMIT, commit_request(G, {(TOPIC, 0): 1, ("other", 0): 2},
                                  generation=1, member_id=member))
    reply = d.call(OFFSET_DELETE, offset_delete_request(G, {TOPIC: [0], "other": [0]}))
    assert reply.error_code == 0
    assert [(t.name, [p.error_code for p in t.partitions]) for t in reply.topics] == [
        (TOPIC, [86]), ("other", [0])]
    assert fetched(d) == {(TOPIC, 0): 1}
    assert set(d.replayed().offsets.offsets(G)) == {(TOPIC, 0)}


def test_offset_delete_of_unknown_or_busy_non_consumer_groups() -> None:
    d = Driver()
    assert d.call(OFFSET_DELETE, offset_delete_request("nobody", {TOPIC: [0]})).error_code == 69
    member = d.join_new(G, protocol_type="connect")
    d.send(JOIN, join_request(G, member, protocol_type="connect"))
    d.tick()
    assert d.call(OFFSET_DELETE, offset_delete_request(G, {TOPIC: [0]})).error_code == 68


def test_delete_groups_needs_them_empty_and_writes_tombstones() -> None:
    d = Driver()
    consumer_group(d, TOPIC)
    d.call(COMMIT, commit_request("simple", {(TOPIC, 0): 1}))
    reply = d.call(DELETE_GROUPS, delete_groups_request(G, "simple", "nobody"))
    assert [(r.group_id, r.error_code) for r in reply.results] == [
        (G, 68), ("simple", 0), ("nobody", 69)]
    tombstones = [decode_record(r) for r in d.records[-2:]]
    assert [(type(k).__name__, v) for k, v in tombstones] == [  # type: ignore[misc]
        ("OffsetCommitKey", None), ("GroupMetadataKey", None)]
    assert "simple" not in d.shard.groups and "simple" not in d.replayed().groups
    assert fetched(d, "simple") == {}


def test_list_groups_filters_by_state_and_type() -> None:
    d = Driver()
    consumer_group(d, TOPIC)
    d.call(COMMIT, commit_request("simple", {(TOPIC, 0): 1}))
    listed = d.call(LIST, list_request())
    assert sorted((g.group_id, g.group_state, g.protocol_type, g.group_type)
                  for g in listed.groups) == [
        (G, "Stable", "consumer", "classic"), ("simple", "Empty", "", "classic")]
    assert [g.group_id for g in d.call(LIST, list_request(states=("sTaBlE",))).groups] == [G]
    assert len(d.call(LIST, list_request(types=("Classic",))).groups) == 2
    assert d.call(LIST, list_request(types=("consumer",))).groups == ()


def test_describe_shows_members_with_metadata_only_when_stable() -> None:
    d = Driver()
    member = consumer_group(d, TOPIC)
    [described] = d.call(DESCRIBE, describe_request(G)).groups
    assert (described.group_state, described.protocol_type, described.protocol_data) == (
        "Stable", "consumer", "range")
    [m] = described.members
    assert (m.member_id, m.client_id, m.client_host) == (member, "client", "/127.0.0.1")
    assert m.member_metadata == subscription(TOPIC) and m.member_assignment == b"x"
    assert described.authorized_operations == -2147483648
    d.send(JOIN, join_request(G, d.join_new(G, protocols=(("range", b""),)),
                              protocols=(("range", b""),)))
    [preparing] = d.call(DESCRIBE, describe_request(G)).groups
    assert preparing.group_state == "PreparingRebalance" and preparing.protocol_data == ""
    assert all(m.member_metadata == b"" and m.member_assignment == b""
               for m in preparing.members)


def test_describe_of_an_unknown_group_is_dead_and_from_v6_not_found() -> None:
    d = Driver()
    [old] = d.call(DESCRIBE, describe_request("nobody"), version=5).groups
    assert (old.error_code, old.group_state) == (0, "Dead")
    [new] = d.call(DESCRIBE, describe_request("nobody")).groups
    assert (new.error_code, new.group_state, new.error_message) == (
        69, "Dead", "Group nobody not found.")


def test_replay_rebuilds_a_stable_group_whose_sessions_start_at_load() -> None:
    d = Driver()
    member = consumer_group(d, TOPIC, session_ms=10_000)
    d.call(COMMIT, commit_request(G, {(TOPIC, 0): 4}, generation=1, member_id=member))
    loaded = d.replayed()
    g = loaded.groups[G]
    assert isinstance(g, ClassicGroup)
    assert (g.state, g.generation, g.leader_id, g.protocol_name) == (
        GroupState.STABLE, 1, member, "range")
    assert g.members[member].assignment == b"x" and g.subscribed_topics == frozenset({TOPIC})
    assert loaded.offsets.get(G, TOPIC, 0) == d.shard.offsets.get(G, TOPIC, 0)
    assert loaded.next_deadline_ms() == 0  # timers not armed until the first tick
    later = d.now + 50_000
    loaded.tick(later)
    assert loaded.next_deadline_ms() == later + 10_000
    loaded.tick(later + 10_000)
    assert g.state is GroupState.EMPTY  # the member never came back after the load


def test_unload_answers_parked_requests_not_coordinator() -> None:
    d = Driver()
    member = d.join_new(G)
    token = d.send(JOIN, join_request(G, member))
    assert token not in d.replies
    outcome = d.shard.unload()
    assert [(t, r.error_code) for t, r in outcome.replies] == [(token, 16)]
    assert d.shard.timers.next_deadline_ms() is None


def group(d: Driver) -> ClassicGroup:
    found = d.shard.groups[G]
    assert isinstance(found, ClassicGroup)
    return found


def test_a_group_loaded_over_group_max_size_rebalances_at_load() -> None:
    d = Driver()
    stable = Driver(GroupConfig(initial_rebalance_delay_ms=0))
    for _ in range(2):
        member = stable.join_new(G)
        stable.send(JOIN, join_request(G, member))
    stable.tick()
    leader = group(stable).leader_id or ""
    stable.call(SYNC, sync_request(G, leader, 1, {}))
    assert group(stable).state is GroupState.STABLE
    d.records = list(stable.records)
    d.config = GroupConfig(initial_rebalance_delay_ms=0, max_size=1)
    loaded = d.replayed()
    loaded.tick(d.now)
    reloaded = loaded.groups[G]
    assert isinstance(reloaded, ClassicGroup)
    assert reloaded.state is GroupState.PREPARING_REBALANCE


def test_join_of_a_consumer_protocol_group_id_is_inconsistent() -> None:
    d = Driver()
    d.shard.groups[G] = ConsumerGroup(G, members={"m": ConsumerMember("m")})
    assert d.call(JOIN, join_request(G)).error_code == 23
    assert d.call(HEARTBEAT, heartbeat_request(G, "m", 1)).error_code == 25
    [described] = d.call(DESCRIBE, describe_request(G)).groups
    assert (described.group_state, described.error_message) == (
        "Dead", "Group g is not a classic group.")


def test_deleting_an_empty_consumer_protocol_group_writes_its_own_tombstones() -> None:
    d = Driver()
    d.shard.groups[G] = ConsumerGroup(G)
    reply = d.call(DELETE_GROUPS, delete_groups_request(G))
    assert [r.error_code for r in reply.results] == [0]
    assert G not in d.shard.groups
    assert len(d.records) == 3
    assert all(decode_record(r) is None for r in d.records)  # key versions 3+, not classic


def test_an_empty_consumer_protocol_group_without_offsets_is_deleted_at_expiry() -> None:
    d = Driver(GroupConfig(offsets_retention_check_interval_ms=1000))
    d.tick()
    d.shard.groups[G] = ConsumerGroup(G)
    d.advance(1000)
    assert G not in d.shard.groups and len(d.records) == 3


def test_a_join_takes_the_id_of_an_empty_consumer_protocol_group() -> None:
    d = Driver()
    d.call(COMMIT, commit_request(G, {(TOPIC, 0): 3}))
    d.shard.groups[G] = ConsumerGroup(G)
    written = len(d.records)
    assert d.call(JOIN, join_request(G, "m-1")).error_code == 25  # a member of nothing
    assert len(d.records) == written
    assert d.call(JOIN, join_request(G)).error_code == 79
    assert isinstance(d.shard.groups[G], ClassicGroup)
    new = [decode_record(r) for r in d.records[written:]]
    assert new[:3] == [None, None, None]  # the consumer group's tombstones, then the classic
    assert [type(entry[0]).__name__ for entry in new[3:] if entry is not None] == [
        "GroupMetadataKey"]
    assert fetched(d, topics={TOPIC: [0]}) == {(TOPIC, 0): 3}  # its offsets stay
