"""Peer input at the edges of its wire types: refused, never fatal, never persisted unreadable.

The defect these pin down: one Vote with ReplicaEpoch 2147483647 made the voters take that
epoch, campaign in 2147483648, write it to quorum-state and stop on the int32 encoding; the
file then refused to load.
"""

from __future__ import annotations

import pytest
from raft_harness import Harness, vote_partition

from pykraft.errors import StorageError
from pykraft.protocol.errors import ErrorCode
from pykraft.raft import rpc
from pykraft.raft.limits import INT32_MAX, MAX_EPOCH
from pykraft.raft.log import OffsetAndEpoch
from pykraft.raft.quorum_state import ElectionState, MemoryQuorumStateStore
from pykraft.raft.states import Candidate, Follower, Leader, Unattached
from pykraft.raft.voter_set import ReplicaKey

EMPTY = OffsetAndEpoch(0, 0)


def sent_epochs(h: Harness) -> set[int]:
    return {int(p.replica_epoch) for _dst, p in h.take_votes()}


def test_a_vote_in_the_largest_int32_epoch_is_an_invalid_request() -> None:
    h = Harness(0, {0, 1, 2}, stored=ElectionState(2, leader_id=1))
    answer = vote_partition(h.vote(2, INT32_MAX, last=EMPTY))
    assert answer.error_code == ErrorCode.INVALID_REQUEST and not answer.vote_granted
    assert h.client.epoch == 2 and isinstance(h.state(), Follower)
    assert h.store.read() == ElectionState(2, leader_id=1)


def test_a_voter_at_the_largest_epoch_it_may_hold_stays_put() -> None:
    """It votes in MAX_EPOCH, but never campaigns past it: it waits, alive, in its epoch."""
    h = Harness(0, {0, 1, 2})
    answer = vote_partition(h.vote(1, MAX_EPOCH, last=EMPTY))
    assert answer.error_code == ErrorCode.NONE and answer.vote_granted
    h.run_elections()
    assert h.client.epoch == MAX_EPOCH and isinstance(h.state(), Unattached)
    assert sent_epochs(h) <= {MAX_EPOCH}
    assert h.store.read() == ElectionState(MAX_EPOCH, None, 1)


@pytest.mark.parametrize("epoch", [MAX_EPOCH, INT32_MAX])
def test_a_candidate_restarted_at_the_top_epoch_does_not_bump(epoch: int) -> None:
    h = Harness(0, {0, 1, 2}, stored=ElectionState(epoch, voted_id=0))
    assert isinstance(h.state(), Candidate)
    h.run_elections()
    assert h.client.epoch == epoch
    assert h.store.read() == ElectionState(epoch, None, 0)


def test_a_single_voter_at_the_top_epoch_waits_without_spinning() -> None:
    h = Harness(0, {0}, stored=ElectionState(MAX_EPOCH))
    h.run_elections()
    assert h.client.epoch == MAX_EPOCH and not isinstance(h.state(), Leader)
    assert h.last_ready.next_tick_ms > h.now


def test_begin_quorum_epoch_in_the_largest_int32_epoch_is_refused() -> None:
    h = Harness(0, {0, 1, 2})
    h.request(1, rpc.begin_quorum_request(None, 0, 1, INT32_MAX))
    (out,) = h.take_responses()
    assert rpc.response_header(out.response).error == ErrorCode.INVALID_REQUEST
    assert h.client.epoch == 0


def test_a_second_leader_for_a_known_epoch_is_refused_not_fatal() -> None:
    """Kafka stops on this (hasConsistentLeader); a peer's message must not stop a node."""
    h = Harness(0, {0, 1, 2}, stored=ElectionState(3, leader_id=1))
    h.request(2, rpc.begin_quorum_request(None, 0, 2, 3))
    h.request(2, rpc.end_quorum_request(None, 2, 3, (ReplicaKey(0),)))
    errors = [rpc.response_header(r.response).error for r in h.take_responses()]
    assert errors == [ErrorCode.INVALID_REQUEST, ErrorCode.INVALID_REQUEST]
    assert h.store.read() == ElectionState(3, leader_id=1)


@pytest.mark.parametrize(("leader", "epoch", "error"), [
    (-1, 3, ErrorCode.INVALID_REQUEST),  # Kafka's validateVoterOnlyRequest
    (1, INT32_MAX, ErrorCode.INVALID_REQUEST),
    (1, 2, ErrorCode.FENCED_LEADER_EPOCH),
])
def test_end_quorum_epoch_validation(leader: int, epoch: int, error: ErrorCode) -> None:
    h = Harness(0, {0, 1, 2}, stored=ElectionState(3, leader_id=1))
    h.request(1, rpc.end_quorum_request(None, leader, epoch, (ReplicaKey(0),)))
    (out,) = h.take_responses()
    assert rpc.response_header(out.response).error == error
    assert h.store.read() == ElectionState(3, leader_id=1)


def test_a_response_naming_the_largest_int32_epoch_is_ignored() -> None:
    h = Harness(0, {0, 1, 2}, stored=ElectionState(2, leader_id=1))
    (fetch,) = h.take_requests(rpc.FetchRequest)
    h.respond(fetch, rpc.fetch_response(ErrorCode.FENCED_LEADER_EPOCH, 2, INT32_MAX))
    assert h.client.epoch == 2 and h.store.read() == ElectionState(2, leader_id=1)
    h.run_elections()
    assert h.client.epoch < MAX_EPOCH


class FailingStore(MemoryQuorumStateStore):
    """A disk that stops accepting writes."""

    def write(self, state: ElectionState, kraft_version: int = 0) -> None:
        raise StorageError("disk full")


def test_a_state_that_fails_to_persist_is_not_entered() -> None:
    h = Harness(0, {0, 1, 2}, store=FailingStore(ElectionState(2, leader_id=1)))
    with pytest.raises(StorageError):
        h.vote(2, 5)
    assert h.client.epoch == 2 and isinstance(h.state(), Follower)


def test_the_memory_store_refuses_what_quorum_state_cannot_hold() -> None:
    store = MemoryQuorumStateStore(ElectionState(3))
    with pytest.raises(StorageError):
        store.write(ElectionState(INT32_MAX + 1))
    assert store.read() == ElectionState(3)
