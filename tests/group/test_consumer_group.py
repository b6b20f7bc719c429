"""ConsumerGroupHeartbeat and ConsumerGroupDescribe: joins, reconciliation, leaves, timers,
errors, and the records that let another coordinator take over."""

from __future__ import annotations

import pytest
from consumer_harness import BAR, FOO, GROUP, Coordinator, assigned, request

from pykraft.group.classic import ClassicGroup, GroupState
from pykraft.group.config import GroupConfig
from pykraft.group.consumer_group import tombstones
from pykraft.group.consumer_member import MemberState
from pykraft.group.outcome import Outcome, TopicInfo
from pykraft.group.records import GroupMetadataKey, group_metadata_record
from pykraft.protocol.errors import ErrorCode

ALL_FOO = {FOO: set(range(6))}


def join(c: Coordinator, member: str, **kwargs: object) -> int:
    response = c.heartbeat(request(member, 0, **kwargs))
    assert response.error_code == ErrorCode.NONE, response.error_message
    return int(response.member_epoch)


def test_the_first_member_gets_every_partition_at_epoch_two() -> None:
    """A new group is at epoch 1 (Kafka 4.4's ModernGroup and TargetAssignmentMetadata
    .INITIAL); the first subscription bumps it to 2, the epoch Kafka answers."""
    c = Coordinator()
    response = c.heartbeat(request("m1", 0))
    assert response.error_code == ErrorCode.NONE
    assert (response.member_id, response.member_epoch) == ("m1", 2)
    assert response.heartbeat_interval_ms == 5_000
    assert assigned(response) == ALL_FOO
    group = c.group()
    assert (group.epoch, group.assignment_epoch, group.state) == (2, 2, "Stable")


def test_a_member_subscribing_to_nothing_joins_at_epoch_one_without_a_bump() -> None:
    """Kafka bumps the group epoch for a changed subscription only, not for a new member:
    one that subscribes to nothing joins the new group at its initial epoch, 1."""
    c = Coordinator()
    before = len(c.log)
    response = c.heartbeat(request("m1", 0, topics=()))
    assert (response.error_code, response.member_epoch) == (ErrorCode.NONE, 1)
    group = c.group()
    assert (group.epoch, group.assignment_epoch, group.state) == (1, 1, "Stable")
    assert len(c.log) == before + 2  # the member's subscription and assignment only


def test_a_heartbeat_without_changes_writes_nothing_and_omits_the_assignment() -> None:
    c = Coordinator()
    join(c, "m1")
    before = len(c.log)
    response = c.heartbeat(request("m1", 2))
    assert response.error_code == ErrorCode.NONE and response.member_epoch == 2
    assert response.assignment is None
    assert len(c.log) == before


def test_partitions_move_only_after_their_owner_revokes_them() -> None:
    c = Coordinator()
    join(c, "m1")
    # m2 joins: epoch 3, but m1 still owns everything, so m2 waits for them.
    second = c.heartbeat(request("m2", 0))
    assert second.member_epoch == 3 and assigned(second) == {}
    assert c.group().members["m2"].state is MemberState.UNRELEASED_PARTITIONS
    assert c.group().state == "Reconciling"
    # m1 is asked to revoke half; it keeps epoch 2 until it reports them gone.
    first = c.heartbeat(request("m1", 2))
    keep = assigned(first)
    assert first.member_epoch == 2 and keep is not None and len(keep[FOO]) == 3
    m1 = c.group().members["m1"]
    assert m1.state is MemberState.UNREVOKED_PARTITIONS
    # m2 still gets nothing while m1 holds them.
    assert assigned(c.heartbeat(request("m2", 3))) in (None, {})
    # m1 still reports all six: nothing moves.
    assert c.heartbeat(request("m1", 2, owned=ALL_FOO)).member_epoch == 2
    # m1 reports only what it keeps: it moves to epoch 3.
    assert c.heartbeat(request("m1", 2, owned=keep)).member_epoch == 3
    # Now m2 gets the released partitions.
    final = c.heartbeat(request("m2", 3))
    got = assigned(final)
    assert got is not None and got[FOO] == set(range(6)) - keep[FOO]
    assert c.group().state == "Stable"


def test_a_leave_removes_the_member_and_bumps_the_epoch() -> None:
    c = Coordinator()
    join(c, "m1")
    join(c, "m2")
    response = c.heartbeat(request("m2", -1))
    assert (response.error_code, response.member_id, response.member_epoch) == (
        ErrorCode.NONE, "m2", -1)
    group = c.group()
    assert set(group.members) == {"m1"} and group.epoch == 4
    # m1's next heartbeat gets the whole topic back at epoch 4.
    c.heartbeat(request("m1", 2, owned=assigned(c.heartbeat(request("m1", 2)))))
    final = c.heartbeat(request("m1", 4))
    assert group.members["m1"].assigned == {FOO: frozenset(range(6))}
    assert final.member_epoch == 4


def test_the_member_id_is_generated_from_the_rng_for_v0_and_required_from_v1() -> None:
    c = Coordinator()
    v0 = c.heartbeat(request("", 0), api_version=0)
    assert v0.error_code == ErrorCode.NONE and v0.member_id and len(v0.member_id) == 22
    again = Coordinator().heartbeat(request("", 0), api_version=0)
    assert again.member_id == v0.member_id  # same seed, same id: no global randomness
    v1 = c.heartbeat(request("", 0), api_version=1)
    assert (v1.error_code, v1.error_message) == (
        ErrorCode.INVALID_REQUEST, "MemberId can't be empty.")


@pytest.mark.parametrize(
    ("req", "message"),
    [
        (request("m", 0, group=""), "GroupId can't be empty."),
        (request("m", 0, instance_id=""), "InstanceId can't be empty."),
        (request("m", 0, rack_id=""), "RackId can't be empty."),
        (request("m", 0, rebalance_timeout_ms=-1),
         "RebalanceTimeoutMs must be provided in first request."),
        (request("m", 0, owned={FOO: {0}}), "TopicPartitions must be empty when (re-)joining."),
        (request("m", 0, owned=None), "TopicPartitions must be empty when (re-)joining."),
        (request("m", 0, topics=None),
         "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when "
         "(re-)joining."),
        (request("", 3), "MemberId can't be empty."),
        (request("", -1, group=""), "MemberId can't be empty."),
        (request("m", -3), "MemberEpoch is invalid."),
        (request("m", -2), "InstanceId can't be null."),
    ],
)
def test_bad_heartbeats_are_invalid_requests(req: object, message: str) -> None:
    response = Coordinator().heartbeat(req)
    assert (response.error_code, response.error_message) == (ErrorCode.INVALID_REQUEST, message)
    assert response.member_id is None


def test_an_unknown_assignor_is_unsupported() -> None:
    response = Coordinator().heartbeat(request("m", 0, assignor="sticky"))
    assert response.error_code == ErrorCode.UNSUPPORTED_ASSIGNOR
    assert response.error_message == (
        "ServerAssignor sticky is not supported. Supported assignors: uniform, range.")


def test_an_invalid_regex_is_refused() -> None:
    response = Coordinator().heartbeat(request("m", 0, regex="foo("))
    assert response.error_code == ErrorCode.INVALID_REGULAR_EXPRESSION


def test_heartbeats_of_unknown_groups_and_members() -> None:
    c = Coordinator()
    # Kafka 4.4's words: a heartbeat's lookup says "Consumer group", a leave's "Group"
    assert (c.heartbeat(request("m", 1)).error_code, c.heartbeat(request("m", 1)).error_message
            ) == (ErrorCode.GROUP_ID_NOT_FOUND, "Consumer group g not found.")
    assert (c.heartbeat(request("m", -1)).error_code, c.heartbeat(request("m", -1)).error_message
            ) == (ErrorCode.GROUP_ID_NOT_FOUND, "Group g not found.")
    join(c, "m1")
    response = c.heartbeat(request("ghost", 1))
    assert (response.error_code, response.error_message) == (
        ErrorCode.UNKNOWN_MEMBER_ID, "Member ghost is not a member of group g.")
    assert c.heartbeat(request("ghost", -1)).error_code == ErrorCode.UNKNOWN_MEMBER_ID


def test_member_epochs_ahead_or_behind_are_fenced() -> None:
    c = Coordinator()
    join(c, "m1")
    ahead = c.heartbeat(request("m1", 5))
    assert ahead.error_code == ErrorCode.FENCED_MEMBER_EPOCH
    assert ahead.error_message is not None and "greater member epoch (5)" in ahead.error_message
    join(c, "m2")  # epoch 3; m1 must revoke, then moves to 3
    keep = assigned(c.heartbeat(request("m1", 2)))
    assert c.heartbeat(request("m1", 2, owned=keep)).member_epoch == 3
    # The previous epoch is accepted when it owns a subset of its assignment (lost reply)...
    assert c.heartbeat(request("m1", 2, owned=keep)).error_code == ErrorCode.NONE
    # ...but not when it owns more, nor when it does not say what it owns.
    assert c.heartbeat(request("m1", 2, owned=ALL_FOO)).error_code == (
        ErrorCode.FENCED_MEMBER_EPOCH)
    assert c.heartbeat(request("m1", 2)).error_code == ErrorCode.FENCED_MEMBER_EPOCH
    # A known member rejoining with epoch 0 is behind too.
    assert c.heartbeat(request("m1", 0)).error_code == ErrorCode.FENCED_MEMBER_EPOCH


def test_a_full_group_refuses_new_members_only() -> None:
    c = Coordinator(config=GroupConfig(consumer_max_size=1))
    join(c, "m1")
    full = c.heartbeat(request("m2", 0))
    assert (full.error_code, full.error_message) == (
        ErrorCode.GROUP_MAX_SIZE_REACHED,
        "The consumer group has reached its maximum capacity of 1 members.")
    assert c.heartbeat(request("m1", 2)).error_code == ErrorCode.NONE


def test_static_members_leave_with_minus_two_and_come_back_without_a_rebalance() -> None:
    c = Coordinator()
    join(c, "a1", instance_id="A")
    join(c, "b1", instance_id="B")
    keep = assigned(c.heartbeat(request("a1", 2, instance_id="A")))
    c.heartbeat(request("a1", 2, instance_id="A", owned=keep))
    final_b = c.heartbeat(request("b1", 3, instance_id="B"))
    assert final_b.member_epoch == 3
    group = c.group()
    a_parts = group.members["a1"].assigned
    epoch = group.epoch
    # The same instance id may not join under another member id while a1 is active.
    taken = c.heartbeat(request("a2", 0, instance_id="A"))
    assert taken.error_code == ErrorCode.UNRELEASED_INSTANCE_ID
    # Another member id using A's instance id in a heartbeat is fenced.
    assert c.heartbeat(request("a2", 3, instance_id="A")).error_code == (
        ErrorCode.FENCED_INSTANCE_ID)
    assert c.heartbeat(request("a2", 3, instance_id="Z")).error_code == (
        ErrorCode.UNKNOWN_MEMBER_ID)
    away = c.heartbeat(request("a1", -2, instance_id="A"))
    assert (away.error_code, away.member_epoch) == (ErrorCode.NONE, -2)
    assert group.members["a1"].member_epoch == -2 and group.epoch == epoch
    # b does not get a's partitions while a is away.
    assert group.target["b1"] != {FOO: frozenset(range(6))}
    back = c.heartbeat(request("a2", 0, instance_id="A"))
    assert back.error_code == ErrorCode.NONE and back.member_epoch == epoch
    assert assigned(back) == {t: set(p) for t, p in a_parts.items()}
    assert "a1" not in group.members and group.epoch == epoch


def test_a_static_member_leaving_for_good_is_removed() -> None:
    c = Coordinator()
    join(c, "a1", instance_id="A")
    gone = c.heartbeat(request("a1", -1, instance_id="A"))
    assert gone.error_code == ErrorCode.NONE
    assert c.group().members == {}
    assert c.group().state == "Empty"


def test_the_session_timeout_fences_a_silent_member() -> None:
    c = Coordinator()
    join(c, "m1")
    join(c, "m2")
    assert c.timers.next_deadline_ms() == c.now_ms + 45_000
    assert c.advance(44_999) == []
    c.heartbeat(request("m1", 2))  # m1 heartbeats; m2 stays silent
    c.advance(1)
    group = c.group()
    assert set(group.members) == {"m1"} and group.epoch == 4


def test_a_member_that_does_not_revoke_within_its_rebalance_timeout_is_fenced() -> None:
    c = Coordinator()
    join(c, "m1", rebalance_timeout_ms=10_000)
    join(c, "m2")
    c.heartbeat(request("m1", 2))  # asked to revoke; never confirms
    assert c.group().members["m1"].state is MemberState.UNREVOKED_PARTITIONS
    assert c.timers.next_deadline_ms() == c.now_ms + 10_000
    c.heartbeat(request("m2", 3))
    c.advance(10_000)
    group = c.group()
    assert set(group.members) == {"m2"}
    final = c.heartbeat(request("m2", 3))
    assert final.member_epoch == 4 and assigned(final) == ALL_FOO


def test_a_new_partition_count_bumps_the_group_epoch() -> None:
    c = Coordinator()
    join(c, "m1")
    c.topics["foo"] = TopicInfo(FOO, 8)
    response = c.heartbeat(request("m1", 2))
    assert response.member_epoch == 3 and assigned(response) == {FOO: set(range(8))}


def test_subscription_changes_and_regex_subscriptions() -> None:
    c = Coordinator()
    join(c, "m1", topics=None, regex="b.*")
    group = c.group()
    assert group.members["m1"].assigned == {BAR: frozenset(range(3))}
    response = c.heartbeat(request("m1", 2, topics=("foo",), regex=""))
    assert response.member_epoch == 2  # bar must be revoked first
    c.heartbeat(request("m1", 2, owned={}))
    assert group.members["m1"].assigned == {FOO: frozenset(range(6))}
    assert group.members["m1"].subscribed_topic_regex is None


def test_range_is_used_when_members_ask_for_it() -> None:
    c = Coordinator()
    join(c, "m1", assignor="range", topics=("foo", "bar"))
    assert c.group().preferred_assignor("uniform") == "range"


def test_describe_reports_the_group_and_its_members() -> None:
    c = Coordinator()
    join(c, "m1", topics=("foo", "bar"), instance_id="i1", rack_id="r1")
    (found, missing) = c.groups.describe(("g", "nope"), c.topics)
    assert (missing.error_code, missing.error_message, missing.group_id) == (
        ErrorCode.GROUP_ID_NOT_FOUND, "Group nope not found.", "nope")
    assert (found.error_code, found.group_state, found.group_epoch, found.assignment_epoch,
            found.assignor_name) == (ErrorCode.NONE, "Stable", 2, 2, "uniform")
    (member,) = found.members
    assert (member.member_id, member.instance_id, member.rack_id, member.member_epoch,
            member.client_id, member.client_host, member.member_type) == (
        "m1", "i1", "r1", 2, "client-1", "/127.0.0.1", 1)
    assert member.subscribed_topic_names == ("bar", "foo")
    names = {tp.topic_name: set(tp.partitions) for tp in member.assignment.topic_partitions}
    assert names == {"foo": set(range(6)), "bar": set(range(3))}
    assert member.target_assignment == member.assignment


def test_a_repeated_unknown_id_is_refused_by_one_shared_answer() -> None:
    """Memory follows the distinct ids: a hostile request naming one id a million times
    gets a million references to one refusal (a resource-abuse bound failed on the copies)."""
    c = Coordinator()
    described = c.groups.describe(("",) * 1000 + ("x",), c.topics)
    assert len(described) == 1001
    assert len({id(group) for group in described}) == 2
    assert (described[0].error_message, described[-1].error_message) == (
        "Group  not found.", "Group x not found.")


def test_offset_commit_and_fetch_checks_use_member_epochs() -> None:
    c = Coordinator()
    join(c, "m1")
    group = c.group()
    assert group.validate_offset_commit("m1", None, 2, 9) is None
    assert group.validate_offset_commit("m1", None, 1, 9) == ErrorCode.STALE_MEMBER_EPOCH
    assert group.validate_offset_commit("m1", None, 2, 8) == ErrorCode.UNSUPPORTED_VERSION
    assert group.validate_offset_commit("x", None, 2, 9) == ErrorCode.UNKNOWN_MEMBER_ID
    assert group.validate_offset_commit("", None, -1, 9) == ErrorCode.UNKNOWN_MEMBER_ID
    assert group.validate_offset_fetch(None, -1) is None
    assert group.validate_offset_fetch("m1", 2) is None
    assert group.validate_offset_fetch("m1", 3) == ErrorCode.STALE_MEMBER_EPOCH
    assert group.validate_offset_fetch("x", 2) == ErrorCode.UNKNOWN_MEMBER_ID
    c.heartbeat(request("m1", -1))
    assert group.validate_offset_commit("", None, -1, 9) is None  # empty: simple commits


def test_an_empty_group_is_deleted_by_tombstones() -> None:
    c = Coordinator()
    join(c, "m1")
    c.heartbeat(request("m1", -1))
    assert c.group().is_empty()
    c.log.extend(tombstones(GROUP))
    assert c.reloaded().groups == {}


def test_a_reloaded_coordinator_has_the_same_groups_and_arms_their_sessions() -> None:
    c = Coordinator()
    join(c, "m1", topics=("foo", "bar"))
    join(c, "m2", instance_id="i2")
    keep = assigned(c.heartbeat(request("m1", 2)))
    c.heartbeat(request("m1", 2, owned=keep))
    fresh = c.reloaded()
    assert fresh.groups == c.registry
    assert fresh.timers.next_deadline_ms() is None
    fresh.arm(c.now_ms)
    assert fresh.timers.next_deadline_ms() == c.now_ms + 45_000
    (described,) = fresh.describe((GROUP,), c.topics)
    assert described.group_epoch == 3 and len(described.members) == 2


def test_what_list_groups_and_offset_delete_ask_of_a_group() -> None:
    c = Coordinator()
    join(c, "m1", topics=("foo", "bar"))
    group = c.group()
    assert (group.group_type, group.state_name(), group.listed_protocol_type()) == (
        "consumer", "Stable", "consumer")
    assert group.is_subscribed_to("foo") and not group.is_subscribed_to("baz")
    assert not group.is_empty()


def test_a_group_id_held_by_a_classic_group_is_not_a_consumer_group() -> None:
    c = Coordinator()
    c.registry["classic"] = ClassicGroup("classic", state=GroupState.STABLE)
    response = c.heartbeat(request("m1", 1, group="classic"))
    assert (response.error_code, response.error_message) == (
        ErrorCode.GROUP_ID_NOT_FOUND, "Group classic is not a consumer group.")
    joined = c.heartbeat(request("m1", 0, group="classic"))
    assert joined.error_code == ErrorCode.GROUP_ID_NOT_FOUND
    assert isinstance(c.registry["classic"], ClassicGroup)
    (described,) = c.groups.describe(("classic",), c.topics)
    assert (described.error_code, described.error_message) == (
        ErrorCode.GROUP_ID_NOT_FOUND, "Group classic is not a consumer group.")


def test_an_empty_classic_group_gives_way_to_a_consumer_group() -> None:
    c = Coordinator()
    c.registry["old"] = ClassicGroup("old")
    c.timers.schedule(("heartbeat", "old", "x"), 10**9, lambda now: Outcome())
    response = c.heartbeat(request("m1", 0, group="old"))
    assert response.error_code == ErrorCode.NONE and response.member_epoch == 2
    assert c.log[0] == group_metadata_record(GroupMetadataKey("old"), None)
    assert c.group("old").members.keys() == {"m1"}
    assert c.timers.deadline(("heartbeat", "old", "x")) is None


def test_a_topic_created_after_the_join_is_assigned_at_the_next_heartbeat() -> None:
    """Kafka's ConsumerGroupHeartbeatRequestTest, from a group's initial epoch 1: epoch 2
    with an empty assignment, then epoch 3 with the new topic's partitions; deleting it
    takes them back (still epoch 3, waiting for the member to let them go)."""
    c = Coordinator()
    c.topics.pop("foo")
    first = c.heartbeat(request("m1", 0, topics=None, regex="fo.*"))
    assert (first.member_epoch, assigned(first)) == (2, {})
    c.topics["foo"] = TopicInfo(FOO, 3)
    second = c.heartbeat(request("m1", 2))
    assert (second.member_epoch, assigned(second)) == (3, {FOO: {0, 1, 2}})
    c.topics.pop("foo")
    third = c.heartbeat(request("m1", 3))
    assert (third.member_epoch, assigned(third)) == (3, {})


def test_a_static_member_expired_by_its_session_gives_its_instance_id_back() -> None:
    c = Coordinator()
    join(c, "a1", instance_id="A")
    assert c.heartbeat(request("a2", 0, instance_id="A")).error_code == (
        ErrorCode.UNRELEASED_INSTANCE_ID)
    c.advance(45_000)
    back = c.heartbeat(request("a2", 0, instance_id="A"))
    assert (back.error_code, back.member_epoch, assigned(back)) == (
        ErrorCode.NONE, 4, ALL_FOO)
