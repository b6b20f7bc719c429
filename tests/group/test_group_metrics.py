"""What a shard counts for Kafka's group coordinator metrics: offsets committed (OffsetCommit),
deleted (OffsetDelete) and expired, classic rebalances completed (the leader's SyncGroup
makes the group Stable), consumer group epoch bumps, and the census of groups by type and
state with the offsets held."""

from __future__ import annotations

from classic_driver import (
    COMMIT,
    JOIN,
    OFFSET_DELETE,
    SYNC,
    Driver,
    commit_request,
    join_request,
    offset_delete_request,
    sync_request,
)
from consumer_harness import Coordinator, request

from pykraft.group.config import GroupConfig


def test_a_classic_group_counts_rebalances_and_offsets() -> None:
    driver = Driver(GroupConfig(initial_rebalance_delay_ms=0, offsets_retention_ms=60_000,
                                offsets_retention_check_interval_ms=1_000))
    counters = driver.shard.counters
    member = driver.join_new("g")
    token = driver.send(JOIN, join_request("g", member))
    driver.tick()  # the initial rebalance's delay, of 0
    joined = driver.replies[token]
    assert driver.shard.census().groups == {("classic", "CompletingRebalance"): 1}
    assert counters.completed_rebalances == 0
    driver.call(SYNC, sync_request("g", member, joined.generation_id, {member: b"a"}))
    assert counters.completed_rebalances == 1
    driver.call(COMMIT, commit_request("g", {("t", 0): 5, ("t", 1): 6},
                                       generation=joined.generation_id, member_id=member))
    driver.call(COMMIT, commit_request("other", {("t", 0): 1}))  # a simple consumer's
    census = driver.shard.census()
    assert census.offsets == 3 and counters.offset_commits == 3
    assert census.groups == {("classic", "Stable"): 1, ("classic", "Empty"): 1}
    driver.call(OFFSET_DELETE, offset_delete_request("other", {"t": [0, 1]}))
    assert counters.offset_deletions == 1  # the offset it had
    assert driver.shard.census().offsets == 2
    assert counters.offset_expirations == 0


def test_expired_offsets_are_counted() -> None:
    driver = Driver(GroupConfig(initial_rebalance_delay_ms=0, offsets_retention_ms=60_000,
                                offsets_retention_check_interval_ms=1_000))
    driver.call(COMMIT, commit_request("simple", {("t", 0): 1, ("t", 1): 2}))
    driver.tick()
    driver.advance(61_000)
    assert driver.shard.counters.offset_expirations == 2
    assert driver.shard.census().offsets == 0


def test_a_consumer_group_counts_its_epoch_bumps() -> None:
    coordinator = Coordinator()
    first = coordinator.heartbeat(request("m1", 0))
    assert coordinator.groups.counters.consumer_rebalances == 1
    coordinator.heartbeat(request("m1", first.member_epoch))  # nothing changed
    assert coordinator.groups.counters.consumer_rebalances == 1
    coordinator.heartbeat(request("m2", 0))
    assert coordinator.groups.counters.consumer_rebalances == 2
