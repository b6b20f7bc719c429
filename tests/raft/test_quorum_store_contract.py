"""One contract for both election-state stores: the simulator's memory store and the
``quorum-state`` file. As Kafka's FileQuorumStateStore, the vote's directory id is kept
from kraft.version 1 on (file data version 1) and has no place below it (version 0)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest
from raft_harness import Harness, vote_partition
from reconfig_helpers import bootstrapped_log, dir_id

from pykraft.errors import StorageError
from pykraft.protocol.errors import ErrorCode
from pykraft.raft import rpc
from pykraft.raft.limits import INT32_MAX
from pykraft.raft.log import OffsetAndEpoch
from pykraft.raft.memory_log import MemoryLog
from pykraft.raft.quorum_state import ElectionState, MemoryQuorumStateStore, QuorumStateStore
from pykraft.runtime.disk_quorum_state import FileQuorumStateStore

StoreFactory = Callable[[], QuorumStateStore]
FIRST, SECOND = uuid.UUID(int=11), uuid.UUID(int=12)


@pytest.fixture(params=["memory", "file"])
def reopen(request: pytest.FixtureRequest, tmp_path: Path) -> StoreFactory:
    """Opens the store afresh over the same storage each call (a restart)."""
    if request.param == "memory":
        shared = MemoryQuorumStateStore()
        return lambda: shared
    return lambda: FileQuorumStateStore(tmp_path, frozenset({0, 1, 2}))


def test_nothing_written_reads_none(reopen: StoreFactory) -> None:
    assert reopen().read() is None


@pytest.mark.parametrize("kraft_version", [0, 1])
@pytest.mark.parametrize("state", [
    ElectionState(0), ElectionState(7, leader_id=2), ElectionState(4, None, 1),
    ElectionState(INT32_MAX, leader_id=INT32_MAX),
])
def test_states_without_a_directory_round_trip(reopen: StoreFactory, state: ElectionState,
                                               kraft_version: int) -> None:
    reopen().write(state, kraft_version)
    assert reopen().read() == state


def test_the_voted_directory_id_round_trips_from_kraft_version_1(reopen: StoreFactory) -> None:
    reopen().write(ElectionState(5, None, 3, FIRST), 1)
    assert reopen().read() == ElectionState(5, None, 3, FIRST)


def test_kraft_version_0_has_no_place_for_the_directory_id(reopen: StoreFactory) -> None:
    reopen().write(ElectionState(5, None, 3, FIRST), 0)
    assert reopen().read() == ElectionState(5, None, 3)


@pytest.mark.parametrize("bad", [
    ElectionState(INT32_MAX + 1), ElectionState(-1), ElectionState(3, leader_id=INT32_MAX + 1),
    ElectionState(3, voted_id=-2),
])
def test_a_state_that_could_not_be_read_back_is_refused_unwritten(
    reopen: StoreFactory, bad: ElectionState,
) -> None:
    reopen().write(ElectionState(3, leader_id=1), 1)
    with pytest.raises(StorageError):
        reopen().write(bad, 1)
    assert reopen().read() == ElectionState(3, leader_id=1)


def _dynamic_voter(store: QuorumStateStore, log: MemoryLog) -> Harness:
    """Node 0 of the KIP-853 quorum {0, 1, 2} (kraft.version 1), over ``store``."""
    return Harness(0, set(), log=log, store=store, directory_id=dir_id(0),
                   bootstrap_servers=(1, 2))


def _vote(h: Harness, candidate: int, directory: uuid.UUID) -> bool:
    h.request(candidate, rpc.vote_request(
        None, 0, epoch=3, local_id=candidate, last=OffsetAndEpoch(0, 0), pre_vote=False,
        local_directory_id=directory))
    (out,) = h.take_responses()
    assert isinstance(out.response, rpc.VoteResponse)
    part = vote_partition(out.response)
    assert part.error_code == ErrorCode.NONE
    return bool(part.vote_granted)


def test_a_restarted_voter_refuses_a_second_vote_in_the_epoch(reopen: StoreFactory) -> None:
    """Replica 1 with another directory id (a replaced disk) is not the replica voted for,
    before or after a restart."""
    log = bootstrapped_log(0, 1, 2)
    h = _dynamic_voter(reopen(), log)
    assert _vote(h, 1, FIRST)
    assert not _vote(h, 1, SECOND)
    restarted = _dynamic_voter(reopen(), log)
    assert restarted.client.epoch == 3
    assert not _vote(restarted, 1, SECOND)
    assert _vote(restarted, 1, FIRST)


@pytest.mark.parametrize(("kraft_version", "keys"), [
    (0, ["clusterId", "leaderId", "leaderEpoch", "votedId", "appliedOffset", "currentVoters",
         "data_version"]),
    (1, ["leaderId", "leaderEpoch", "votedId", "votedDirectoryId", "data_version"]),
])
def test_the_file_version_follows_kraft_version(tmp_path: Path, kraft_version: int,
                                                keys: list[str]) -> None:
    store = FileQuorumStateStore(tmp_path, frozenset({0, 1, 2}))
    store.write(ElectionState(5, None, 3, FIRST), kraft_version)
    document = json.loads(store.path.read_bytes())
    assert list(document) == keys and document["data_version"] == kraft_version
