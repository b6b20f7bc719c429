"""KIP-853 details of the core: replica keys in EndQuorumEpoch and BeginQuorumEpoch, the
LeaderChange version, and votes asked by replicas outside the voter set."""

from __future__ import annotations

from raft_harness import Harness, vote_partition
from reconfig_helpers import bootstrapped_log, dir_id

from pykraft.protocol.errors import ErrorCode
from pykraft.raft import rpc
from pykraft.raft.log import OffsetAndEpoch
from pykraft.raft.quorum_state import ElectionState
from pykraft.raft.states import Candidate, Follower, Prospective, Resigned
from pykraft.raft.voter_set import ReplicaKey
from pykraft.records.batch import iter_batches
from pykraft.records.control import ControlType, LeaderChangeMessage, decode_control


def dynamic(node: int, stored: ElectionState | None = None) -> Harness:
    """Replica ``node`` of the KIP-853 quorum {0, 1, 2} (kraft.version 1)."""
    return Harness(node, set(), log=bootstrapped_log(0, 1, 2), directory_id=dir_id(node),
                   bootstrap_servers=tuple(v for v in (0, 1, 2) if v != node), stored=stored)


def test_leader_change_is_written_at_version_0_even_at_kraft_version_1() -> None:
    """Kafka writes LeaderChangeMessage at LEADER_CHANGE_CURRENT_VERSION, 0, whatever the
    kraft.version: its readers parse the value at version 0, so a version 1 value (with
    directory ids in the voter entries) would not read back in Kafka."""
    h = dynamic(0)
    h.make_leader()
    assert h.client.kraft_version == 1
    records = [decode_control(r.key, r.value) for b in iter_batches(h.log.read(0, 1 << 20))
               for r in b.records()]
    (change,) = [r for r in records if r.type == ControlType.LEADER_CHANGE]
    assert isinstance(change.message, LeaderChangeMessage)
    assert change.version == 0 and change.message.version == 0
    assert change.message.leader_id == 0


def test_end_quorum_epoch_names_successors_with_their_directory_ids() -> None:
    h = dynamic(0)
    h.make_leader()
    for out in h.take_requests(rpc.BeginQuorumEpochRequest):
        h.respond(out, rpc.begin_quorum_response(ErrorCode.NONE, 0, h.client.epoch))
    h.client.begin_shutdown(h.now)
    h.drain()
    assert isinstance(h.state(), Resigned)
    (request, *_) = [r.request for r in h.take_requests(rpc.EndQuorumEpochRequest)]
    assert isinstance(request, rpc.EndQuorumEpochRequest)
    candidates = request.topics[0].partitions[0].preferred_candidates
    assert [(c.candidate_id, c.candidate_directory_id) for c in candidates] == [
        (1, dir_id(1)), (2, dir_id(2))]


def test_a_successor_entry_with_another_directory_is_not_this_replica() -> None:
    """The first entry names replica 1 with another disk: replica 1 is second in line, so
    it waits its backoff instead of campaigning at once (Kafka's endEpochElectionBackoff)."""
    h = dynamic(1, ElectionState(2, leader_id=0))
    h.request(0, rpc.end_quorum_request(None, 0, 2, (ReplicaKey(1, dir_id(9)),
                                                     ReplicaKey(1, dir_id(1)))))
    h.advance(0)
    assert isinstance(h.state(), Follower)
    h.request(0, rpc.end_quorum_request(None, 0, 2, (ReplicaKey(1, dir_id(1)),)))
    h.advance(0)
    assert isinstance(h.state(), Prospective)


def test_begin_quorum_epoch_for_another_voter_key_is_an_invalid_voter_key() -> None:
    """As Kafka: the epoch and leader are learned first, then the key is checked."""
    h = dynamic(1)
    h.request(0, rpc.begin_quorum_request(None, 1, 0, 3, voter_directory_id=dir_id(9)))
    h.request(0, rpc.begin_quorum_request(None, 2, 0, 3, voter_directory_id=dir_id(2)))
    errors = [rpc.response_header(r.response).error for r in h.take_responses()]
    assert errors == [ErrorCode.INVALID_VOTER_KEY, ErrorCode.INVALID_VOTER_KEY]
    assert h.store.read() == ElectionState(3, leader_id=0)
    h.request(0, rpc.begin_quorum_request(None, 1, 0, 3, voter_directory_id=dir_id(1)))
    (answer,) = h.take_responses()
    assert rpc.response_header(answer.response).error == ErrorCode.NONE


def test_a_replica_outside_the_voter_set_is_granted_a_vote_as_kafka_does() -> None:
    """Voters may grant candidates outside their own voter set (it may be stale); one vote
    per epoch still holds."""
    h = dynamic(0)
    last = OffsetAndEpoch(h.log.log_end_offset, h.log.last_fetched_epoch)
    h.request(7, rpc.vote_request(None, 0, epoch=1, local_id=7, last=last, pre_vote=False,
                                  local_directory_id=dir_id(7), voter_directory_id=dir_id(0)))
    (out,) = h.take_responses()
    assert isinstance(out.response, rpc.VoteResponse)
    assert vote_partition(out.response).vote_granted
    assert h.store.read() == ElectionState(1, None, 7, dir_id(7))
    assert not vote_partition(h.vote(1, 1, last=last)).vote_granted


def test_a_candidate_does_not_count_a_vote_from_outside_its_voter_set() -> None:
    h = Harness(0, {0, 1, 2}, stored=ElectionState(3, voted_id=0))
    assert isinstance(h.state(), Candidate)
    h.client.handle_response(h.now, 7, 0, rpc.vote_response(ErrorCode.NONE, None, 3, True))
    (out, *_) = h.take_requests(rpc.VoteRequest)
    h.respond(out, rpc.vote_response(ErrorCode.NONE, None, 3, False))
    state = h.state()
    assert isinstance(state, Candidate)
    assert state.election.granted == {0} and 7 not in state.election.rejected
