"""The roles without a leader to follow or lead (etcd's ``stepCandidate`` and friends):
unattached (observers look for the leader from here), prospective (KIP-996 pre-vote),
candidate, and resigned; and the election RPCs every role answers: Vote,
BeginQuorumEpoch and EndQuorumEpoch.

Functions over the core, not methods, so each role reads on its own; the core routes to
them by state (:mod:`pykraft.raft.core`).
"""

from __future__ import annotations

import dataclasses
import uuid
from typing import TYPE_CHECKING

from pykraft.ids import ZERO_UUID
from pykraft.protocol.errors import ErrorCode
from pykraft.raft import rpc
from pykraft.raft.election import election_backoff_ms, end_quorum_backoff_ms, is_log_up_to_date
from pykraft.raft.follower_role import fetch_request
from pykraft.raft.limits import MAX_EPOCH, can_adopt_epoch
from pykraft.raft.log import OffsetAndEpoch
from pykraft.raft.states import Candidate, Follower, Prospective, Resigned, Unattached
from pykraft.raft.voter_set import ReplicaKey

if TYPE_CHECKING:
    from pykraft.raft.replica import Replica

Leaderless = Unattached | Prospective | Candidate | Resigned


def poll(core: Replica, state: Leaderless) -> None:
    now = core.now
    if isinstance(state, Unattached):
        if not core.is_voter:
            _fetch_from_any_voter(core)
        elif now >= state.election_deadline_ms:
            core.become_prospective()
    elif isinstance(state, Prospective | Candidate):
        _poll_nominee(core, state)
    elif now >= state.election_deadline_ms:  # resigned, and nobody took over in time
        if core.is_voter:
            core.become_prospective()
        else:
            bumped = state.epoch + 1
            core.become_unattached(bumped if can_adopt_epoch(bumped) else state.epoch)
    else:
        request = rpc.end_quorum_request(core.cluster_id, core.node_id, state.epoch,
                                         state.preferred_successors)
        for voter in sorted(state.unacked_voters):
            core.send(voter, request)


def deadlines(core: Replica, state: Leaderless) -> list[int]:
    if isinstance(state, Unattached):
        return [state.election_deadline_ms] if core.is_voter else []
    if isinstance(state, Candidate):
        return [state.backoff_until_ms or state.election_deadline_ms]
    return [state.election_deadline_ms]


def _poll_nominee(core: Replica, state: Prospective | Candidate) -> None:
    if isinstance(state, Candidate) and state.backoff_until_ms is not None:
        if core.now >= state.backoff_until_ms:
            core.become_prospective()
        return
    if core.now >= state.election_deadline_ms:
        if isinstance(state, Prospective):
            _lose_pre_vote(core, state)
        else:
            core.become_prospective()
        return
    last = OffsetAndEpoch(core.log.log_end_offset, core.log.last_fetched_epoch)
    pre_vote = isinstance(state, Prospective)
    for voter in state.election.unrecorded():
        core.send(voter, rpc.vote_request(
            core.cluster_id, voter, epoch=state.epoch, local_id=core.node_id, last=last,
            pre_vote=pre_vote, local_directory_id=core.directory_id,
            voter_directory_id=core.directory_of(voter)))


def _fetch_from_any_voter(core: Replica) -> None:
    """An observer without a leader asks a random bootstrap server (else voter), which
    will name the leader."""
    if core.requests.in_flight:
        return
    targets = [t for t in (core.config.bootstrap_servers or tuple(core.voters))
               if t != core.node_id]
    candidates = [t for t in targets if core.requests.is_ready(t, core.now)]
    if candidates and len(candidates) == len(targets):  # one attempt per retry backoff
        core.send(core.rng.choice(candidates), fetch_request(core, core.epoch, None))


def maybe_win_election(core: Replica) -> None:
    """A probe (a pre-vote started before the fetch timeout, see
    :func:`~pykraft.raft.follower_role.handle_send_failure`) ends at its first refusal: a
    voter still hears from the leader, so this replica goes back to the very Follower it
    left (same fetch deadline, still refusing pre-votes if it had fetched) and waits out
    its fetch timeout as Kafka's followers do. Were it to come back as a fresh Follower,
    it would grant the pre-vote of the first Kafka voter whose timeout expires, and a
    pykraft controller could never win an election against Kafka's after a crash."""
    state = core.state
    if isinstance(state, Prospective):
        if state.election.is_granted:
            core.become_candidate()
        elif state.resume is not None and state.election.rejected:
            core.set_state(dataclasses.replace(state.resume, probed=True, download=None))
        elif state.election.is_rejected:
            _lose_pre_vote(core, state)
    elif isinstance(state, Candidate):
        if state.election.is_granted:
            core.become_leader()
        elif state.election.is_rejected and state.backoff_until_ms is None:
            state.backoff_until_ms = core.now + election_backoff_ms(
                core.rng, state.retries, core.config.election_backoff_base_ms,
                core.config.election_backoff_max_ms,
            )


def _lose_pre_vote(core: Replica, state: Prospective) -> None:
    if state.leader_id is not None:
        core.become_follower(state.epoch, state.leader_id)
    else:
        core.become_unattached(state.epoch)


def handle_response(core: Replica, state: Leaderless, source: int,
                    request: rpc.RaftRequest, response: rpc.RaftResponse,
                    header: rpc.ResponseHeader) -> None:
    if (header.error == ErrorCode.UNSUPPORTED_VERSION and isinstance(state, Prospective)
            and isinstance(response, rpc.VoteResponse)):
        core.become_candidate()  # the peer predates pre-vote (KIP-996): campaign for real
    elif header.error != ErrorCode.NONE:
        core.backoff(source)
    elif isinstance(response, rpc.VoteResponse) and isinstance(request, rpc.VoteRequest):
        _handle_vote_response(core, state, source, request, response)
    elif isinstance(response, rpc.EndQuorumEpochResponse) and isinstance(state, Resigned):
        state.unacked_voters.discard(source)
        if core.shutting_down and not state.unacked_voters:
            core.resign_acknowledged = True


def _handle_vote_response(core: Replica, state: Leaderless, source: int,
                          request: rpc.VoteRequest, response: rpc.VoteResponse) -> None:
    sent = request.topics[0].partitions[0]
    if not isinstance(state, Prospective | Candidate) or sent.replica_epoch != state.epoch:
        return
    if sent.pre_vote != isinstance(state, Prospective):
        return
    answer = rpc.vote_response_partition(response)
    if isinstance(answer, ErrorCode):
        return  # not the metadata partition alone: no vote to count
    state.election.record(source, answer.vote_granted)
    maybe_win_election(core)


# -- the election RPCs, answered in every role -----------------------------------------

def handle_vote_request(core: Replica, request: rpc.VoteRequest) -> rpc.VoteResponse:
    if core.cluster_mismatch(request.cluster_id):
        return rpc.vote_response(ErrorCode.NONE, None, core.epoch, False,
                                 ErrorCode.INCONSISTENT_CLUSTER_ID)
    part = rpc.vote_partition(request)
    if isinstance(part, ErrorCode):
        return rpc.vote_response(ErrorCode.NONE, None, core.epoch, False, part)
    epoch, candidate = int(part.replica_epoch), int(part.replica_id)
    last_epoch, last_offset = int(part.last_offset_epoch), int(part.last_offset)
    too_new = last_epoch > epoch if part.pre_vote else last_epoch >= epoch
    if last_offset < 0 or last_epoch < 0 or too_new or epoch > MAX_EPOCH:
        return _vote_error(core, ErrorCode.INVALID_REQUEST)
    if epoch < core.epoch:
        return _vote_error(core, ErrorCode.FENCED_LEADER_EPOCH)
    if candidate < 0:
        return _vote_error(core, ErrorCode.INVALID_REQUEST)
    if epoch > core.epoch:
        core.become_unattached(epoch)
    if not _is_addressed_to_me(core, request.voter_id, part.voter_directory_id):
        return _vote_error(core, ErrorCode.INVALID_VOTER_KEY)
    local = OffsetAndEpoch(core.log.log_end_offset, core.log.last_fetched_epoch)
    up_to_date = is_log_up_to_date(OffsetAndEpoch(last_offset, last_epoch), local)
    candidate_key = ReplicaKey.of(candidate, part.replica_directory_id)
    granted = core.can_grant_vote(candidate_key, up_to_date, part.pre_vote)
    if granted and not part.pre_vote:
        state = core.state
        if isinstance(state, Unattached):
            core.set_state(Unattached(state.epoch, candidate_key,
                                      core.quorum.election_deadline(core.now)))
        elif isinstance(state, Prospective):
            core.quorum.persist(dataclasses.replace(state, voted=candidate_key),
                                core.kraft_version)
            state.voted = candidate_key
    return rpc.vote_response(ErrorCode.NONE, core.state.leader_id, core.epoch, granted)


def _vote_error(core: Replica, error: ErrorCode) -> rpc.VoteResponse:
    return rpc.vote_response(error, core.state.leader_id, core.epoch, False)


def _is_me(core: Replica, key: ReplicaKey) -> bool:
    """``key`` names this replica: its id, and its directory id when the key has one."""
    return key.id == core.node_id and key.directory_id in (None, core.directory_id)


def _is_addressed_to_me(core: Replica, voter_id: int,
                        directory_id: uuid.UUID | None) -> bool:
    """The request's voter key (id, and directory id when both sides know one) is ours."""
    if voter_id >= 0 and voter_id != core.node_id:
        return False
    return directory_id in (None, ZERO_UUID) or core.directory_id is None or (
        directory_id == core.directory_id)


def _voter_only_error(core: Replica, leader_id: int, epoch: int) -> ErrorCode | None:
    """Kafka's ``validateVoterOnlyRequest`` for BeginQuorumEpoch and EndQuorumEpoch
    (fenced epoch, negative leader id), plus the refusal of a leader or epoch this replica
    cannot believe (:meth:`~pykraft.raft.quorum_state.QuorumState.is_believable`)."""
    if epoch < core.epoch:
        return ErrorCode.FENCED_LEADER_EPOCH
    if leader_id < 0 or not core.quorum.is_believable(leader_id, epoch):
        return ErrorCode.INVALID_REQUEST
    return None


def handle_begin_quorum_request(core: Replica, request: rpc.BeginQuorumEpochRequest
                                ) -> rpc.BeginQuorumEpochResponse:
    if core.cluster_mismatch(request.cluster_id):
        return rpc.begin_quorum_response(ErrorCode.NONE, None, core.epoch,
                                         ErrorCode.INCONSISTENT_CLUSTER_ID)
    part = rpc.begin_quorum_partition(request)
    if isinstance(part, ErrorCode):
        return rpc.begin_quorum_response(ErrorCode.NONE, None, core.epoch, part)
    leader, epoch = int(part.leader_id), int(part.leader_epoch)
    error = _voter_only_error(core, leader, epoch)
    if error is not None:
        return rpc.begin_quorum_response(error, core.state.leader_id, core.epoch)
    # as Kafka: the leader is news even to a replica that is not the voter addressed (e.g.
    # the same id with a new disk), which answers INVALID_VOTER_KEY after learning
    core.maybe_transition(leader, epoch)
    if not _is_addressed_to_me(core, request.voter_id, part.voter_directory_id):
        return rpc.begin_quorum_response(ErrorCode.INVALID_VOTER_KEY, core.state.leader_id,
                                         core.epoch)
    return rpc.begin_quorum_response(ErrorCode.NONE, core.state.leader_id, core.epoch)


def handle_end_quorum_request(core: Replica, request: rpc.EndQuorumEpochRequest
                              ) -> rpc.EndQuorumEpochResponse:
    if core.cluster_mismatch(request.cluster_id):
        return rpc.end_quorum_response(ErrorCode.NONE, None, core.epoch,
                                       ErrorCode.INCONSISTENT_CLUSTER_ID)
    part = rpc.end_quorum_partition(request)
    if isinstance(part, ErrorCode):
        return rpc.end_quorum_response(ErrorCode.NONE, None, core.epoch, part)
    leader, epoch = int(part.leader_id), int(part.leader_epoch)
    error = _voter_only_error(core, leader, epoch)
    if error is not None:
        return rpc.end_quorum_response(error, core.state.leader_id, core.epoch)
    core.maybe_transition(leader, epoch)
    state = core.state
    if isinstance(state, Follower) and state.leader_id == leader:
        successors = rpc.preferred_successors(part)
        position = next((i for i, key in enumerate(successors) if _is_me(core, key)), None)
        state.fetch_deadline_ms = core.now + end_quorum_backoff_ms(
            position, len(successors), core.config.election_backoff_max_ms
        )
        state.has_fetched_from_leader = False  # the leader left: pre-votes are fair again
    return rpc.end_quorum_response(ErrorCode.NONE, core.state.leader_id, core.epoch)
