"""The pure pieces: config, memory log, election maths, accumulator, leader progress."""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st
from raft_harness import config, data_batches

from pykraft.errors import ConfigError, RecordTooLargeError, StorageError
from pykraft.raft.accumulator import BatchAccumulator
from pykraft.raft.config import QuorumConfig
from pykraft.raft.election import (
    EpochElection,
    election_backoff_ms,
    end_quorum_backoff_ms,
    is_log_up_to_date,
    random_election_timeout,
)
from pykraft.raft.leader import LeaderProgress
from pykraft.raft.log import OffsetAndEpoch, is_valid_fetch_position, truncation_offset
from pykraft.raft.memory_log import MemoryLog
from pykraft.raft.voter_set import ReplicaKey, VoterSet
from pykraft.records.batch import iter_batches

# -- config -------------------------------------------------------------------------------

def test_config_defaults_are_kafkas() -> None:
    c = QuorumConfig(voters=frozenset({1}))
    assert (c.election_timeout_ms, c.fetch_timeout_ms, c.append_linger_ms) == (1000, 2000, 25)
    assert c.check_quorum_timeout_ms == 3000
    assert c.begin_quorum_epoch_resend_ms == 1000


def test_config_from_properties() -> None:
    c = QuorumConfig.from_properties({
        "controller.quorum.voters": "1@a:9093, 2@b:9093,3@[::1]:9093",
        "controller.quorum.fetch.timeout.ms": "4000",
    })
    assert c.voters == {1, 2, 3}
    assert c.fetch_timeout_ms == 4000


@pytest.mark.parametrize("props", [
    {"controller.quorum.voters": ""},
    {"controller.quorum.voters": "x@a:1"},
    {"controller.quorum.voters": "1@a:1,1@b:2"},
    {"controller.quorum.voters": "1@a:1", "controller.quorum.election.timeout.ms": "soon"},
    {"controller.quorum.voters": "1@a:1", "controller.quorum.election.timeout.ms": "-1"},
])
def test_bad_config_names_the_key(props: dict[str, str]) -> None:
    with pytest.raises(ConfigError, match=r"controller\.quorum"):
        QuorumConfig.from_properties(props)


# -- memory log ---------------------------------------------------------------------------

def three_epoch_log() -> MemoryLog:
    log = MemoryLog()
    log.append(data_batches(0, 1, 2) + data_batches(2, 3, 2, per_batch=2))
    return log  # epoch 1: [0, 2), epoch 3: [2, 6)


def test_end_offset_for_epoch_follows_kafka() -> None:
    log = three_epoch_log()
    assert log.end_offset_for_epoch(1) == OffsetAndEpoch(2, 1)
    assert log.end_offset_for_epoch(2) == OffsetAndEpoch(2, 1)  # largest epoch <= 2
    assert log.end_offset_for_epoch(3) == OffsetAndEpoch(6, 3)
    assert log.end_offset_for_epoch(9) == OffsetAndEpoch(6, 3)
    assert log.end_offset_for_epoch(0) == OffsetAndEpoch(0, 0)


def test_fetch_position_validation() -> None:
    log = three_epoch_log()
    assert is_valid_fetch_position(log, 0, 0) is None
    assert is_valid_fetch_position(log, 4, 3) is None
    assert is_valid_fetch_position(log, 3, 2) == OffsetAndEpoch(2, 1)
    assert is_valid_fetch_position(log, 7, 3) == OffsetAndEpoch(6, 3)


def test_truncation_offset_rules() -> None:
    log = three_epoch_log()
    assert truncation_offset(log, OffsetAndEpoch(4, 3)) == 4
    assert truncation_offset(log, OffsetAndEpoch(9, 2)) == 2
    assert truncation_offset(log, OffsetAndEpoch(1, 0)) == 1


def test_append_must_continue_the_log() -> None:
    log = three_epoch_log()
    with pytest.raises(StorageError):
        log.append(data_batches(7, 3, 1))
    with pytest.raises(StorageError):
        log.append(data_batches(6, 2, 1))


def test_read_returns_whole_batches_within_max_bytes() -> None:
    log = three_epoch_log()
    assert [b.base_offset for b in iter_batches(log.read(3, 1 << 20))] == [2, 4]
    assert [b.base_offset for b in iter_batches(log.read(3, 1))] == [2]  # at least one
    assert log.read(6, 100) == b""


def test_crash_loses_only_unflushed_batches() -> None:
    log = three_epoch_log()
    log.flush(3)  # mid-batch: only whole batches become durable
    assert log.flushed_offset == 2
    log.lose_unflushed()
    assert log.log_end_offset == 2
    assert log.last_fetched_epoch == 1


@given(st.lists(st.tuples(st.integers(1, 3), st.integers(1, 3)), min_size=1, max_size=12),
       st.integers(0, 40))
def test_truncate_keeps_a_consistent_epoch_index(batches: list[tuple[int, int]],
                                                 cut: int) -> None:
    log = MemoryLog()
    epoch = 0
    for bump, size in batches:
        epoch += bump - 1
        log.append(data_batches(log.log_end_offset, max(epoch, 1), 1, per_batch=size))
    log.truncate_to(cut)
    assert log.log_end_offset <= cut or cut >= log.log_end_offset
    fresh = MemoryLog()
    fresh.append(b"".join(b.data for b in log.batches))
    for probe in range(0, 8):
        assert log.end_offset_for_epoch(probe) == fresh.end_offset_for_epoch(probe)
    assert log.last_fetched_epoch == fresh.last_fetched_epoch


# -- election maths -----------------------------------------------------------------------

def test_epoch_election_tally() -> None:
    election = EpochElection(VoterSet.static({0, 1, 2, 3, 4}), granted={0})
    outcomes = []
    for voter, granted in [(1, True), (2, False), (3, False), (3, True), (4, False),
                           (9, True)]:  # a voter's first answer counts; 9 is no voter
        election.record(voter, granted)
        outcomes.append((election.is_granted, election.is_rejected))
    assert outcomes == [(False, False)] * 4 + [(False, True)] * 2
    assert election.granted == {0, 1}


def test_log_up_to_date_compares_epoch_first() -> None:
    assert is_log_up_to_date(OffsetAndEpoch(1, 5), OffsetAndEpoch(100, 4))
    assert not is_log_up_to_date(OffsetAndEpoch(99, 4), OffsetAndEpoch(100, 4))
    assert is_log_up_to_date(OffsetAndEpoch(100, 4), OffsetAndEpoch(100, 4))


@given(st.integers(0, 2**32))
def test_timeouts_and_backoffs_stay_in_bounds(seed: int) -> None:
    rng = random.Random(seed)
    assert 1000 <= random_election_timeout(rng, 1000) < 2000
    for retries in range(1, 30):
        backoff = election_backoff_ms(rng, retries, 100, 1000)
        assert 0 <= backoff <= 1000 and backoff % 100 == 0


def test_end_quorum_backoff_prefers_the_first_successor() -> None:
    assert end_quorum_backoff_ms(0, 3, 1000) == 0
    assert end_quorum_backoff_ms(1, 3, 1000) == 250
    assert end_quorum_backoff_ms(2, 3, 1000) == 500
    assert end_quorum_backoff_ms(None, 3, 1000) == 1000


# -- accumulator --------------------------------------------------------------------------

def test_accumulator_lingers_then_drains_one_batch() -> None:
    acc = BatchAccumulator(epoch=4, next_offset=10, linger_ms=25, max_batch_bytes=1 << 20)
    assert acc.append([b"a", b"b"], now_ms=0) == 11
    assert acc.append([b"c"], now_ms=10) == 12
    assert acc.drain(24) == b""
    assert acc.drain_deadline_ms() == 25
    (batch,) = iter_batches(acc.drain(25))
    assert (batch.base_offset, batch.epoch) == (10, 4)
    assert [r.value for r in batch.records()] == [b"a", b"b", b"c"]
    assert not acc.pending


def test_accumulator_closes_full_batches_and_keeps_appends_whole() -> None:
    acc = BatchAccumulator(epoch=1, next_offset=0, linger_ms=1000, max_batch_bytes=250)
    acc.append([b"x" * 50], 0)
    acc.append([b"y" * 50, b"z" * 50], 0)
    assert acc.drain_deadline_ms() == 0
    batches = list(iter_batches(acc.drain(0)))
    assert [(b.base_offset, b.last_offset) for b in batches] == [(0, 0)]
    assert acc.pending
    with pytest.raises(RecordTooLargeError):
        acc.append([b"w" * 500], 0)


# -- leader progress ----------------------------------------------------------------------

def progress(voters: set[int], start: int = 0) -> LeaderProgress:
    return LeaderProgress(ReplicaKey(0), 1, VoterSet.static(voters), epoch_start_offset=start,
                          now_ms=0, config=config(voters))


@pytest.mark.parametrize(("voters", "offsets", "expected"), [
    ({0, 1, 2}, {0: 5, 1: 3, 2: 1}, 3),
    ({0, 1, 2, 3}, {0: 5, 1: 4, 2: 3, 3: 1}, 3),
    ({0, 1, 2, 3, 4}, {0: 9, 1: 2}, None),
    ({0, 1, 2, 3, 4}, {0: 9, 1: 7, 2: 8, 3: 1, 4: 1}, 7),
])
def test_high_watermark_is_the_majority_offset(voters: set[int], offsets: dict[int, int],
                                               expected: int | None) -> None:
    p = progress(voters)
    for replica, offset in offsets.items():
        p.update_replica(ReplicaKey(replica), offset, 0, 9)
    assert p.high_watermark == expected


def test_high_watermark_waits_for_epoch_start_and_never_goes_back() -> None:
    p = progress({0, 1, 2}, start=5)
    steps = [(0, 5), (1, 5), (1, 7), (0, 8), (1, 6)]  # (1, 6): a follower that truncated
    moved = [p.update_replica(ReplicaKey(replica), offset, 0, 8) for replica, offset in steps]
    assert moved == [False, False, False, True, False]
    assert p.high_watermark == 7


@given(st.dictionaries(st.integers(0, 4), st.integers(0, 50), min_size=1))
def test_high_watermark_is_reached_by_a_majority(offsets: dict[int, int]) -> None:
    p = progress({0, 1, 2, 3, 4})
    for replica, offset in offsets.items():
        p.update_replica(ReplicaKey(replica), offset, 0, 50)
    if p.high_watermark is not None:
        reached = [r for r, o in offsets.items() if o >= p.high_watermark]
        assert len(reached) >= 3


def test_preferred_successors_most_caught_up_first() -> None:
    p = progress({0, 1, 2, 3})
    p.update_replica(ReplicaKey(1), 3, 0, 9)
    p.update_replica(ReplicaKey(3), 8, 0, 9)
    assert [k.id for k in p.preferred_successors()] == [3, 1, 2]


def test_single_voter_check_quorum_never_expires() -> None:
    assert not progress({0}).check_quorum_expired(10**9)
    assert progress({0, 1, 2}).check_quorum_expired(10**9)


def test_a_voter_added_to_a_long_sole_leader_gets_a_whole_check_quorum_window() -> None:
    """A standalone controller that led alone for minutes, then added a voter, resigned at
    once (its deadline had passed long ago) and the quorum of two could not elect anyone
    while the new voter did not know it was one (Kafka's joiner, issue 26)."""
    p = progress({0})
    assert not p.check_quorum_expired(10**6)
    p.set_voters(VoterSet.static({0, 1}))
    timeout = config({0, 1}).check_quorum_timeout_ms
    assert not p.check_quorum_expired(10**6 + timeout - 1)
    assert p.check_quorum_expired(10**6 + timeout)
