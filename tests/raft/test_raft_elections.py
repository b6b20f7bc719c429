"""States, transitions and the Vote / BeginQuorumEpoch / EndQuorumEpoch handlers."""

from __future__ import annotations

import dataclasses
import uuid
from typing import Any

import pytest
from raft_harness import Harness, data_batches, vote_partition
from reconfig_helpers import bootstrapped_log, dir_id

from pykraft.protocol.errors import ErrorCode
from pykraft.raft import rpc
from pykraft.raft.api import OutboundRequest
from pykraft.raft.log import OffsetAndEpoch
from pykraft.raft.memory_log import MemoryLog
from pykraft.raft.quorum_state import ElectionState
from pykraft.raft.states import Candidate, Follower, Leader, Prospective, Resigned, Unattached
from pykraft.raft.voter_set import ReplicaKey

ElectionRequest = rpc.VoteRequest | rpc.BeginQuorumEpochRequest | rpc.EndQuorumEpochRequest


def test_fresh_voter_starts_unattached_in_epoch_zero() -> None:
    h = Harness()
    assert isinstance(h.state(), Unattached)
    assert h.client.epoch == 0
    assert h.store.read() == ElectionState(0)


def test_restart_as_former_leader_is_resigned_and_sends_end_quorum_epoch() -> None:
    h = Harness(stored=ElectionState(4, leader_id=0, voted_id=0))
    assert isinstance(h.state(), Resigned)
    assert h.client.epoch == 4
    sent = h.take_requests(rpc.EndQuorumEpochRequest)
    assert sorted(r.destination for r in sent) == [1, 2]


def test_restart_after_voting_for_self_is_candidate_in_same_epoch() -> None:
    h = Harness(stored=ElectionState(3, voted_id=0))
    assert isinstance(h.state(), Candidate)
    assert h.client.epoch == 3
    votes = h.take_votes()
    assert {dst for dst, _ in votes} == {1, 2}
    assert all(not p.pre_vote for _, p in votes)


def test_restart_with_known_leader_is_follower() -> None:
    h = Harness(stored=ElectionState(2, leader_id=1))
    assert isinstance(h.state(), Follower)
    assert h.take_requests(rpc.FetchRequest)[0].destination == 1


def test_log_epoch_newer_than_quorum_state_wins() -> None:
    log = MemoryLog()
    log.append(data_batches(0, 7, 2))
    h = Harness(log=log, stored=ElectionState(5, leader_id=1))
    assert isinstance(h.state(), Unattached)
    assert h.client.epoch == 7


def test_election_timeout_starts_pre_vote_at_current_epoch() -> None:
    h = Harness()
    h.advance(999)
    assert isinstance(h.state(), Unattached)
    h.advance(1001)  # timeouts are randomised in [1000, 2000)
    assert isinstance(h.state(), Prospective)
    assert h.client.epoch == 0
    votes = h.take_votes()
    assert {dst for dst, _ in votes} == {1, 2}
    assert all(p.pre_vote and p.replica_epoch == 0 for _, p in votes)
    assert h.store.read() == ElectionState(0)  # a pre-vote changes nothing durable


def test_pre_vote_majority_makes_candidate_which_persists_its_vote() -> None:
    h = Harness()
    h.advance_to_next_tick()
    h.grant_all_votes()
    assert isinstance(h.state(), Candidate)
    assert h.client.epoch == 1
    assert h.store.read() == ElectionState(1, voted_id=0)
    assert all(not p.pre_vote for _, p in h.take_votes())


def test_rejected_pre_vote_returns_to_unattached_without_epoch_bump() -> None:
    h = Harness()
    h.advance_to_next_tick()
    h.grant_all_votes(granted=False)
    assert isinstance(h.state(), Unattached)
    assert h.client.epoch == 0


def test_candidate_with_majority_becomes_leader_and_writes_leader_change() -> None:
    h = Harness()
    h.make_leader()
    assert isinstance(h.state(), Leader)
    assert h.store.read() == ElectionState(1, leader_id=0, voted_id=0)
    (batch,) = h.log.batches
    assert batch.is_control and batch.epoch == 1
    assert {r.destination for r in h.take_requests(rpc.BeginQuorumEpochRequest)} == {1, 2}


def test_rejected_candidate_backs_off_then_tries_pre_vote_again() -> None:
    h = Harness()
    h.advance_to_next_tick()
    h.grant_all_votes()
    h.grant_all_votes(granted=False)
    state = h.state()
    if isinstance(state, Candidate):  # the random backoff may also have been 0
        assert state.backoff_until_ms is not None
        h.advance(h.config.election_backoff_max_ms)
    assert isinstance(h.state(), Prospective)
    assert h.client.epoch == 1


def test_single_voter_leads_immediately() -> None:
    h = Harness(voters={0})
    assert isinstance(h.state(), Leader)
    assert h.hwm() is None  # LeaderChange not yet durable
    h.flush()
    assert h.hwm() == 1
    assert [b.is_control for b in h.listener.commits] == [True]
    assert h.listener.leaders[-1].leader_id == 0


def test_leader_change_notified_only_after_leader_change_batch_commits() -> None:
    h = Harness()
    h.make_leader()
    assert all(le.leader_id != 0 for le in h.listener.leaders)
    h.fetch(1, 1, 1, 1)
    assert h.hwm() == 1
    assert h.listener.leaders[-1].leader_id == 0


# -- Vote requests ------------------------------------------------------------------------

def test_unattached_grants_one_real_vote_per_epoch_and_persists_it_first() -> None:
    h = Harness()
    response = h.vote(1, 1)
    assert vote_partition(response).vote_granted
    assert h.store.read() == ElectionState(1, voted_id=1)
    assert not vote_partition(h.vote(2, 1)).vote_granted
    assert vote_partition(h.vote(1, 1)).vote_granted  # the same candidate again is fine


def test_pre_vote_is_granted_without_persisting() -> None:
    h = Harness()
    response = h.vote(1, 0, pre_vote=True)
    assert vote_partition(response).vote_granted
    assert h.store.read() == ElectionState(0)


def test_vote_from_higher_epoch_bumps_epoch_before_deciding() -> None:
    h = Harness(stored=ElectionState(3, voted_id=2))
    h.vote(1, 5)
    assert h.client.epoch == 5
    assert h.store.read() == ElectionState(5, voted_id=1)


def test_stale_vote_is_fenced() -> None:
    h = Harness(stored=ElectionState(3))
    part = vote_partition(h.vote(1, 2))
    assert part.error_code == ErrorCode.FENCED_LEADER_EPOCH
    assert part.leader_epoch == 3 and not part.vote_granted


def test_vote_for_candidate_with_shorter_log_is_refused() -> None:
    log = MemoryLog()
    log.append(data_batches(0, 2, 3))
    h = Harness(log=log, stored=ElectionState(2))
    assert not vote_partition(h.vote(1, 3, last=OffsetAndEpoch(2, 2))).vote_granted
    assert not vote_partition(h.vote(1, 3, last=OffsetAndEpoch(9, 1))).vote_granted
    assert vote_partition(h.vote(1, 3, last=OffsetAndEpoch(3, 2))).vote_granted


def test_malformed_vote_requests_get_specific_errors() -> None:
    h = Harness()
    bad_epoch = vote_partition(h.vote(1, 1, last=OffsetAndEpoch(0, 1)))
    assert bad_epoch.error_code == ErrorCode.INVALID_REQUEST
    wrong_voter = vote_partition(h.vote(1, 1, voter_id=7))
    assert wrong_voter.error_code == ErrorCode.INVALID_VOTER_KEY


def _renamed(request: Any, name: str, copies: int) -> ElectionRequest:
    """``request`` for topic ``name``, its one partition given ``copies`` times."""
    (topic,) = request.topics
    renamed: ElectionRequest = dataclasses.replace(request, topics=(dataclasses.replace(
        topic, topic_name=name, partitions=topic.partitions * copies),))
    return renamed


@pytest.mark.parametrize(("name", "copies"), [
    ("other", 1), ("__cluster_metadata", 2),
], ids=["other_topic", "two_partitions"])
@pytest.mark.parametrize("kind", ["vote", "begin", "end"])
def test_election_rpcs_for_another_topic_partition_are_invalid_requests(
        kind: str, name: str, copies: int) -> None:
    """Kafka (KafkaRaftClient, RaftUtil.hasValidTopicPartition): until multi-raft, a Vote,
    BeginQuorumEpoch or EndQuorumEpoch not for ``__cluster_metadata-0`` alone is a
    top-level INVALID_REQUEST with no topics."""
    h = Harness(stored=ElectionState(1, leader_id=2))
    requests: dict[str, ElectionRequest] = {
        "vote": rpc.vote_request(None, 0, epoch=2, local_id=1, last=OffsetAndEpoch(0, 0),
                                 pre_vote=False),
        "begin": rpc.begin_quorum_request(None, 0, 1, 2),
        "end": rpc.end_quorum_request(None, 1, 2, ()),
    }
    request = requests[kind]
    h.request(1, _renamed(request, name, copies))
    (out,) = h.take_responses()
    response = out.response
    assert isinstance(response, rpc.VoteResponse | rpc.BeginQuorumEpochResponse
                      | rpc.EndQuorumEpochResponse)
    assert (response.error_code, response.topics) == (ErrorCode.INVALID_REQUEST, ())
    assert h.client.epoch == 1  # nothing was acted on


def test_follower_refuses_pre_votes_once_it_fetched_from_its_leader() -> None:
    h = Harness(stored=ElectionState(2, leader_id=1))
    assert vote_partition(h.vote(2, 2, pre_vote=True)).vote_granted
    (fetch,) = h.take_requests(rpc.FetchRequest)
    h.respond(fetch, rpc.fetch_response(ErrorCode.NONE, 1, 2, high_watermark=0))
    assert not vote_partition(h.vote(2, 2, pre_vote=True)).vote_granted
    assert not vote_partition(h.vote(2, 2)).vote_granted  # never a real vote with a leader


def test_leader_never_grants() -> None:
    h = Harness()
    h.make_leader()
    assert not vote_partition(h.vote(1, 1, pre_vote=True, last=OffsetAndEpoch(5, 1))).vote_granted


# -- BeginQuorumEpoch / EndQuorumEpoch ----------------------------------------------------

def test_begin_quorum_epoch_makes_follower() -> None:
    h = Harness()
    h.request(2, rpc.begin_quorum_request(None, 0, 2, 4))
    (out,) = h.take_responses()
    assert isinstance(out.response, rpc.BeginQuorumEpochResponse)
    assert out.response.topics[0].partitions[0].error_code == ErrorCode.NONE
    assert isinstance(h.state(), Follower) and h.state().leader_id == 2
    assert h.store.read() == ElectionState(4, leader_id=2)


def test_stale_begin_quorum_epoch_is_fenced() -> None:
    h = Harness(stored=ElectionState(5))
    h.request(2, rpc.begin_quorum_request(None, 0, 2, 4))
    (out,) = h.take_responses()
    assert isinstance(out.response, rpc.BeginQuorumEpochResponse)
    assert out.response.topics[0].partitions[0].error_code == ErrorCode.FENCED_LEADER_EPOCH
    assert h.client.epoch == 5


def test_end_quorum_epoch_lets_first_preferred_successor_run_at_once() -> None:
    h = Harness(stored=ElectionState(2, leader_id=1))
    (fetch,) = h.take_requests(rpc.FetchRequest)
    h.respond(fetch, rpc.fetch_response(ErrorCode.NONE, 1, 2, high_watermark=0))
    h.request(1, rpc.end_quorum_request(None, 1, 2, (ReplicaKey(0), ReplicaKey(2))))
    h.advance(0)
    assert isinstance(h.state(), Prospective)
    assert h.client.epoch == 2


def test_end_quorum_epoch_not_preferred_waits_the_maximum_backoff() -> None:
    h = Harness(stored=ElectionState(2, leader_id=1))
    h.request(1, rpc.end_quorum_request(None, 1, 2, (ReplicaKey(2),)))
    h.advance(h.config.election_backoff_max_ms - 1)
    assert isinstance(h.state(), Follower)
    h.advance(1)
    assert isinstance(h.state(), Prospective)


def test_graceful_shutdown_names_successors_by_fetch_offset() -> None:
    h = Harness(voters={0, 1, 2})
    h.make_leader()
    h.client.append(h.now, [b"a"])
    h.advance(h.config.append_linger_ms)
    h.flush()
    h.fetch(2, 1, 2, 1)
    h.fetch(1, 1, 1, 1)
    for out in h.take_requests(rpc.BeginQuorumEpochRequest):
        h.respond(out, rpc.begin_quorum_response(ErrorCode.NONE, 0, 1))
    h.client.begin_shutdown(h.now)
    h.drain()
    assert isinstance(h.state(), Resigned)
    assert not h.client.shutdown_complete
    eqes = h.take_requests(rpc.EndQuorumEpochRequest)
    assert {e.destination for e in eqes} == {1, 2}
    first = eqes[0].request
    assert isinstance(first, rpc.EndQuorumEpochRequest)
    successors = [c.candidate_id for c in first.topics[0].partitions[0].preferred_candidates]
    assert successors == [2, 1]
    for out in eqes:
        h.respond(out, rpc.end_quorum_response(ErrorCode.NONE, 0, 1))
    assert h.client.shutdown_complete


def test_peer_without_pre_vote_support_makes_prospective_campaign_for_real() -> None:
    h = Harness()
    h.advance_to_next_tick()
    out = h.take_requests(rpc.VoteRequest)[0]
    h.respond(out, rpc.vote_response(ErrorCode.NONE, None, 0, False,
                                     top_error=ErrorCode.UNSUPPORTED_VERSION))
    assert isinstance(h.state(), Candidate)
    assert h.client.epoch == 1


def test_candidate_that_learns_the_leader_keeps_its_vote_on_disk() -> None:
    h = Harness()
    h.advance_to_next_tick()
    h.grant_all_votes()
    assert isinstance(h.state(), Candidate)
    h.request(2, rpc.begin_quorum_request(None, 0, 2, 1))
    assert isinstance(h.state(), Follower)
    assert h.store.read() == ElectionState(1, leader_id=2, voted_id=0)


def follower_fetching_from(leader: int) -> tuple[Harness, OutboundRequest]:
    """Node 0 follows ``leader`` in epoch 1 and has a Fetch to it in flight."""
    h = Harness(0, {0, 1, 2})
    h.request(leader, rpc.begin_quorum_request(None, 0, leader, 1))
    h.take_responses()
    (fetch,) = h.take_requests(rpc.FetchRequest)
    return h, fetch


def test_a_lost_fetch_alone_does_not_start_an_election() -> None:
    h, fetch = follower_fetching_from(1)
    h.client.handle_send_failure(h.now, fetch.destination, fetch.correlation_id)
    h.drain()
    assert isinstance(h.state(), Follower)


def test_an_unreachable_leader_starts_a_pre_vote_at_once() -> None:
    h, fetch = follower_fetching_from(1)
    h.client.handle_send_failure(h.now, fetch.destination, fetch.correlation_id,
                                 unreachable=True)
    h.drain()
    assert isinstance(h.state(), Prospective)
    votes = h.take_votes()
    assert votes and all(part.pre_vote for _dst, part in votes)


def test_a_refused_early_pre_vote_resumes_the_follower_until_its_fetch_timeout() -> None:
    """Kafka's voters start a pre-vote only at the fetch timeout and refuse pre-votes until
    theirs expires; a pykraft voter that probed early and came back as a fresh Follower
    would grant the first Kafka voter's pre-vote and never win against it. Refused once,
    it resumes the Follower it was (same deadline, no second probe) and, past half the
    fetch timeout, refuses pre-votes as Kafka's do; before that only another early
    prober can ask, and is granted (pykraft's fast failover)."""
    h, fetch = follower_fetching_from(1)
    h.respond(fetch, rpc.fetch_response(ErrorCode.NONE, 1, 1, high_watermark=0))
    before = h.state()
    assert isinstance(before, Follower) and before.has_fetched_from_leader
    deadline = before.fetch_deadline_ms
    (fetch,) = h.take_requests(rpc.FetchRequest)
    h.client.handle_send_failure(h.now, fetch.destination, fetch.correlation_id,
                                 unreachable=True)
    h.drain()
    assert isinstance(h.state(), Prospective)
    (to_2,) = [out for out in h.take_requests(rpc.VoteRequest) if out.destination == 2]
    h.respond(to_2, rpc.vote_response(ErrorCode.NONE, None, 1, False))
    resumed = h.state()
    assert isinstance(resumed, Follower) and resumed.fetch_deadline_ms == deadline
    assert vote_partition(h.vote(2, 1, pre_vote=True)).vote_granted  # an early prober
    h.advance(h.config.fetch_timeout_ms // 2)
    assert not vote_partition(h.vote(2, 1, pre_vote=True)).vote_granted  # at its timeout
    for fetch in h.take_requests(rpc.FetchRequest):
        h.client.handle_send_failure(h.now, fetch.destination, fetch.correlation_id,
                                     unreachable=True)
    h.drain()
    assert isinstance(h.state(), Follower)  # no second probe in this epoch
    h.advance(deadline - h.now)
    assert isinstance(h.state(), Prospective)


def vote_from(h: Harness, candidate: int, directory: uuid.UUID, epoch: int) -> bool:
    h.request(candidate, rpc.vote_request(
        None, 0, epoch=epoch, local_id=candidate, last=OffsetAndEpoch(0, 0), pre_vote=False,
        local_directory_id=directory))
    (out,) = h.take_responses()
    assert isinstance(out.response, rpc.VoteResponse)
    return bool(vote_partition(out.response).vote_granted)


def test_the_vote_is_for_a_replica_key_and_survives_a_restart() -> None:
    """At kraft.version 1 the stored vote keeps the directory id (quorum-state v1)."""
    first, second = uuid.UUID(int=11), uuid.UUID(int=12)
    h = Harness(0, set(), log=bootstrapped_log(0, 1, 2), directory_id=dir_id(0),
                bootstrap_servers=(1, 2))
    assert vote_from(h, 1, first, epoch=3)
    assert h.store.read() == ElectionState(3, None, 1, first)
    # a replica 1 with another directory (its disk was replaced) is not the one voted for
    assert not vote_from(h, 1, second, epoch=3)
    restarted = Harness(0, set(), log=h.log, stored=h.store.read(), directory_id=dir_id(0),
                        bootstrap_servers=(1, 2))
    assert not vote_from(restarted, 1, second, epoch=3)
    assert vote_from(restarted, 1, first, epoch=3)
