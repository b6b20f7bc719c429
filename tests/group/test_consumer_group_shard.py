"""Consumer groups through the shard, as the runtime drives it: the KIP-848 APIs, their
records replayed by a new coordinator, timers through ``tick``, and the classic APIs that
meet consumer groups (ListGroups, DescribeGroups, OffsetCommit v9)."""

from __future__ import annotations

from typing import Any

from classic_driver import (
    COMMIT,
    DESCRIBE,
    LIST,
    Driver,
    commit_request,
    describe_request,
    list_request,
)
from consumer_harness import FOO, TOPICS, request

from pykraft.group.outcome import RequestContext
from pykraft.group.shard import GroupShard
from pykraft.messages.kafka.consumer_group_describe_request import ConsumerGroupDescribeRequest
from pykraft.protocol.errors import ErrorCode

HEARTBEAT, CONSUMER_DESCRIBE = 68, 69


def call(d: Driver, api_key: int, req: Any, version: int = 1, shard: GroupShard | None = None
         ) -> Any:
    """One KIP-848 request answered at once; its records join the driver's log."""
    d.tokens += 1
    outcome = (shard or d.shard).handle(
        d.tokens, api_key, version, req, RequestContext(d.now, "client", "/127.0.0.1", TOPICS))
    d.records.extend(outcome.records)
    ((token, reply),) = outcome.replies
    assert token == d.tokens
    return reply


def describe(*groups: str) -> ConsumerGroupDescribeRequest:
    return ConsumerGroupDescribeRequest(group_ids=groups)


def test_a_consumer_group_survives_a_coordinator_change() -> None:
    d = Driver()
    joined = call(d, HEARTBEAT, request("m1", 0))
    assert (joined.error_code, joined.member_epoch) == (ErrorCode.NONE, 2)
    assert d.records  # the join is durable only through its records
    fresh = d.replayed()
    # The new coordinator starts the member's session timer at its first input.
    assert fresh.next_deadline_ms() == 0
    d.now += 1_000
    (group,) = call(d, CONSUMER_DESCRIBE, describe("g"), shard=fresh).groups
    assert (group.group_state, group.group_epoch) == ("Stable", 2)
    (member,) = group.members
    assert member.member_id == "m1" and member.assignment.topic_partitions[0].topic_id == FOO
    session = ("consumer-session", "g", "m1")
    assert fresh.timers.deadline(session) == d.now + 45_000
    # The member carries on with the new coordinator at its epoch.
    again = call(d, HEARTBEAT, request("m1", 2), shard=fresh)
    assert (again.error_code, again.member_epoch) == (ErrorCode.NONE, 2)


def test_list_groups_shows_consumer_groups_and_describe_groups_does_not() -> None:
    d = Driver()
    call(d, HEARTBEAT, request("m1", 0))
    (listed,) = d.call(LIST, list_request()).groups
    assert (listed.group_id, listed.group_state, listed.group_type, listed.protocol_type) == (
        "g", "Stable", "consumer", "consumer")
    assert d.call(LIST, list_request(types=("classic",))).groups == ()
    assert len(d.call(LIST, list_request(types=("consumer",))).groups) == 1
    (described,) = d.call(DESCRIBE, describe_request("g")).groups
    assert (described.error_code, described.group_state) == (
        ErrorCode.GROUP_ID_NOT_FOUND, "Dead")


def test_a_silent_member_is_fenced_by_the_shards_tick() -> None:
    d = Driver()
    call(d, HEARTBEAT, request("m1", 0))
    d.advance(45_000)
    (listed,) = d.call(LIST, list_request()).groups
    assert listed.group_state == "Empty"
    assert call(d, HEARTBEAT, request("m1", 1)).error_code == ErrorCode.UNKNOWN_MEMBER_ID


def test_offset_commits_of_consumer_group_members_are_checked_by_member_epoch() -> None:
    d = Driver()
    call(d, HEARTBEAT, request("m1", 0))

    def commit(epoch: int, version: int = 9) -> int:
        reply = d.call(COMMIT, commit_request("g", {("foo", 0): 5}, generation=epoch,
                                              member_id="m1"), version=version)
        return int(reply.topics[0].partitions[0].error_code)

    assert commit(2) == ErrorCode.NONE
    assert commit(1) == ErrorCode.STALE_MEMBER_EPOCH
    assert commit(2, version=8) == ErrorCode.UNSUPPORTED_VERSION
