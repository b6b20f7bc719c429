"""A write the runtime could not append is reverted alone: the keys it changed go back to
their last records in the log, the classic group put back answers its parked requests with
the write's error, and every other group of the shard goes on as if nothing happened."""

from __future__ import annotations

from classic_driver import (
    COMMIT,
    FETCH,
    JOIN,
    SYNC,
    Driver,
    commit_request,
    fetch_request,
    join_request,
    sync_request,
)
from consumer_harness import request

from pykraft.group.classic import ClassicGroup, GroupState
from pykraft.group.config import GroupConfig
from pykraft.group.outcome import OffsetsRecord
from pykraft.group.records import GroupMetadataKey, decode_record

UNKNOWN_SERVER_ERROR = -1
CONSUMER_HEARTBEAT = 68
DELAY_MS = 3_000


def _last_group_record(d: Driver, group: str) -> tuple[int, OffsetsRecord]:
    for offset in range(len(d.records) - 1, -1, -1):
        decoded = decode_record(d.records[offset])
        if decoded is not None and decoded[0] == GroupMetadataKey(group):
            return offset, d.records[offset]
    raise AssertionError(f"no record of group {group}")


def _stable(d: Driver, group: str) -> str:
    """A Stable group of one member; the member id."""
    member: str = d.join_new(group)
    token = d.send(JOIN, join_request(group, member))
    d.advance(DELAY_MS)
    generation = d.replies[token].generation_id
    assert d.call(SYNC, sync_request(group, member, generation, {member: b"a"})).error_code == 0
    return member


def test_a_reverted_write_leaves_the_logged_state_and_other_groups_untouched() -> None:
    d = Driver(GroupConfig(initial_rebalance_delay_ms=DELAY_MS))
    member = _stable(d, "g")
    d.call(COMMIT, commit_request("o", {("t", 0): 5}))
    newcomer = d.join_new("g")
    parked_g = d.send(JOIN, join_request("g", newcomer))  # until the member rejoins
    parked_h = d.send(JOIN, join_request("h", d.join_new("h")))  # h's initial delay
    assert parked_g not in d.replies and parked_h not in d.replies
    # a commit of o's that the runtime could not append, and g's metadata put back
    written = len(d.records)
    d.call(COMMIT, commit_request("o", {("t", 0): 9, ("t", 1): 1}))
    failed = d.records[written:]
    del d.records[written:]
    last = {record.key: (offset, record) for offset, record in enumerate(d.records)}
    reverted = [last.get(r.key, (-1, OffsetsRecord(r.key, None))) for r in failed]
    out = d.shard.revert([*reverted, _last_group_record(d, "g")], UNKNOWN_SERVER_ERROR)

    assert [(token, reply.error_code) for token, reply in out.replies] == [
        (parked_g, UNKNOWN_SERVER_ERROR)]
    (topic,) = d.call(FETCH, fetch_request("o", {"t": [0, 1]})).groups[0].topics
    assert [(p.partition_index, p.committed_offset) for p in topic.partitions] == [
        (0, 5), (1, -1)]
    g = d.shard.groups["g"]
    assert isinstance(g, ClassicGroup) and g.state is GroupState.STABLE
    assert list(g.members) == [member] and g.generation == 1
    d.advance(DELAY_MS)
    assert d.replies[parked_h].error_code == 0  # h's rebalance went on as usual


def test_a_consumer_group_join_that_was_not_written_is_forgotten() -> None:
    """KIP-848: a member's first heartbeat whose records were not appended; putting its
    keys back (none in the log: tombstones) forgets the group, and the member's heartbeat
    from epoch 0 joins it again as the first time."""
    d = Driver()
    written = len(d.records)
    assert d.replies[d.send(CONSUMER_HEARTBEAT, request("m1", 0), version=1)].member_epoch == 2
    failed = d.records[written:]
    del d.records[written:]
    out = d.shard.revert([(-1, OffsetsRecord(r.key, None)) for r in failed],
                         UNKNOWN_SERVER_ERROR)
    assert out.replies == [] and "g" not in d.shard.groups
    d.tick()  # the forgotten member's timers find no group
    again = d.replies[d.send(CONSUMER_HEARTBEAT, request("m1", 0), version=1)]
    assert (again.error_code, again.member_epoch) == (0, 2)
