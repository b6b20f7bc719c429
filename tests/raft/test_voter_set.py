"""Voter-set maths (KIP-853): keys, single changes, overlapping majorities, history."""

from __future__ import annotations

import itertools
import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pykraft.errors import FatalRaftError
from pykraft.raft.control_state import ControlRecordState
from pykraft.raft.voter_set import OffsetHistory, ReplicaKey, VoterNode, VoterSet, VoterSetHistory
from pykraft.records.batch import encode_batch, iter_batches
from pykraft.records.control import KRaftVersionRecord, encode_control


def dir_id(n: int) -> uuid.UUID:
    return uuid.UUID(int=n + 1)


def voters(*ids: int) -> VoterSet:
    return VoterSet(VoterNode(ReplicaKey(i, dir_id(i))) for i in ids)


def majorities(vs: VoterSet) -> list[set[int]]:
    ids = sorted(vs.ids)
    return [set(c) for r in range(vs.majority, len(ids) + 1)
            for c in itertools.combinations(ids, r)]


id_sets = st.sets(st.integers(0, 8), min_size=1, max_size=5)


@given(id_sets, st.integers(0, 9), st.booleans())
def test_one_change_keeps_every_pair_of_majorities_overlapping(
    ids: set[int], other: int, add: bool
) -> None:
    old = voters(*ids)
    changed = (old.with_added(VoterNode(ReplicaKey(other, dir_id(other)))) if add
               else old.with_removed(ReplicaKey(other, dir_id(other))))
    if changed is None or not changed.ids:
        return
    assert old.has_overlapping_majority(changed)
    for a in majorities(old):
        for b in majorities(changed):
            assert a & b, (old, changed, a, b)


@given(id_sets, st.sets(st.integers(10, 14), min_size=2, max_size=3))
def test_two_changes_at_once_are_refused_by_the_history(ids: set[int], new: set[int]) -> None:
    history = VoterSetHistory()
    history.add_at(-1, voters(*ids))
    with pytest.raises(FatalRaftError, match="more than one voter"):
        history.add_at(5, voters(*(ids | new)))


def test_keys_match_on_id_and_known_directory() -> None:
    vs = voters(1, 2, 3)
    assert vs.is_voter(ReplicaKey(1, dir_id(1)))
    assert not vs.is_voter(ReplicaKey(1, dir_id(9)))  # same id, another disk
    assert VoterSet.static([1]).is_voter(ReplicaKey(1, dir_id(9)))  # kraft.version 0
    assert vs.with_added(VoterNode(ReplicaKey(1, dir_id(9)))) is None  # duplicate id
    assert vs.with_removed(ReplicaKey(1, dir_id(9))) is None  # wrong directory
    assert vs.with_removed(ReplicaKey(1, dir_id(1))) == voters(2, 3)


def test_voters_record_round_trip() -> None:
    vs = voters(4, 7)
    assert VoterSet.from_record(vs.to_record()) == vs


def test_history_truncation_keeps_what_the_log_keeps() -> None:
    history: OffsetHistory[str] = OffsetHistory()
    for offset, value in [(-1, "boot"), (3, "a"), (8, "b"), (12, "c")]:
        history.add_at(offset, value)
    history.truncate_new_entries(8)
    assert history.last_entry() == (3, "a")
    assert history.value_at_or_before(100) == "a"
    history.truncate_old_entries(5)  # log start 5: keep the latest entry below it
    assert history.entries_after(-10) == [(3, "a")]
    with pytest.raises(FatalRaftError):
        history.add_at(3, "again")


def test_control_state_follows_appends_and_truncation() -> None:
    state = ControlRecordState(VoterSet.static([]))
    boot = encode_batch(0, [encode_control(KRaftVersionRecord(0, 1)),
                            encode_control(voters(1, 2).to_record())],
                        partition_leader_epoch=0, timestamp=0, control=True)
    state.load_snapshot(0, iter_batches(boot))
    assert state.kraft_version == 1 and state.last_voter_set == voters(1, 2)
    assert state.voters.last_entry() == (-1, voters(1, 2))  # the bootstrap checkpoint
    change = encode_batch(7, [encode_control(voters(1, 2, 3).to_record())],
                          partition_leader_epoch=1, timestamp=0, control=True)
    state.observe(iter_batches(change))
    assert state.last_voter_set == voters(1, 2, 3) and state.last_voter_set_offset == 7
    assert state.voter_set_at(6) == voters(1, 2)
    state.truncate_new_entries(7)  # the uncommitted change is reverted
    assert state.last_voter_set == voters(1, 2)
