"""The KRaft RPCs at every version they are spoken: one generated class each, with what an
older version cannot carry handled as Kafka does (per-version fields, refusals)."""

from __future__ import annotations

import uuid

import pytest
from raft_harness import Harness
from reconfig_helpers import dir_id

from pykraft.errors import UnsupportedVersionError
from pykraft.protocol.apis import ApiKey
from pykraft.protocol.codec import decode_request, decode_response, encode_request, encode_response
from pykraft.protocol.errors import ErrorCode
from pykraft.protocol.header import RequestHeader
from pykraft.raft import rpc
from pykraft.raft.log import OffsetAndEpoch
from pykraft.raft.quorum_state import ElectionState
from pykraft.raft.states import Prospective
from pykraft.raft.voter_set import ReplicaKey, VoterSet
from pykraft.records.control import VoterEndpoint


def _over_the_wire(request: rpc.RaftRequest, api_key: ApiKey, version: int) -> rpc.RaftRequest:
    """``request`` as a peer speaking ``version`` receives it."""
    body = decode_request(
        encode_request(RequestHeader(api_key, version, 1, None), request)).body
    assert isinstance(body, rpc.RaftRequest)
    return body


def test_end_quorum_epoch_v0_names_the_successors_by_id() -> None:
    """v0 has PreferredSuccessors (ids), v1 PreferredCandidates (ids and directories): a
    leader writes both, each version keeps its own, and a v0 reader ranks by the ids."""
    sent = rpc.end_quorum_request(None, 1, 2, (ReplicaKey(0, dir_id(0)), ReplicaKey(2)))
    v0 = _over_the_wire(sent, ApiKey.END_QUORUM_EPOCH, 0)
    assert isinstance(v0, rpc.EndQuorumEpochRequest)
    (part,) = v0.topics[0].partitions
    assert (part.preferred_successors, part.preferred_candidates) == ((0, 2), ())
    assert rpc.preferred_successors(part) == [ReplicaKey(0), ReplicaKey(2)]
    v1 = _over_the_wire(sent, ApiKey.END_QUORUM_EPOCH, 1)
    assert isinstance(v1, rpc.EndQuorumEpochRequest)
    assert v1.topics[0].partitions[0].preferred_successors == ()
    assert rpc.preferred_successors(v1.topics[0].partitions[0]) == [ReplicaKey(0, dir_id(0)),
                                                                   ReplicaKey(2)]

    h = Harness(stored=ElectionState(2, leader_id=1))
    (fetch,) = h.take_requests(rpc.FetchRequest)
    h.respond(fetch, rpc.fetch_response(ErrorCode.NONE, 1, 2, high_watermark=0))
    h.request(1, v0)
    h.advance(0)
    assert isinstance(h.state(), Prospective)  # first successor: no backoff


def _described() -> rpc.DescribeQuorumResponse:
    row = rpc.ReplicaRow(1, 10, 5, 4, uuid.UUID(int=7))
    voters = VoterSet.static([1], {1: (VoterEndpoint("CONTROLLER", "h", 9093),)})
    return rpc.describe_quorum_response(1, 3, 9, [row], [row], voters)


@pytest.mark.parametrize("version", [0, 1, 2])
def test_describe_quorum_answers_what_each_version_carries(version: int) -> None:
    """Directory ids and Nodes are v2's (Kafka fills them from v2 only): an older answer
    leaves them out instead of failing to encode."""
    answer = rpc.describe_quorum_at(_described(), version)
    decoded = decode_response(55, version, encode_response(1, 55, version, answer)).body
    assert isinstance(decoded, rpc.DescribeQuorumResponse)
    (voter,) = decoded.topics[0].partitions[0].current_voters
    assert voter.replica_directory_id == (uuid.UUID(int=7) if version >= 2 else uuid.UUID(int=0))
    assert len(decoded.nodes) == (1 if version >= 2 else 0)
    assert voter.last_fetch_timestamp == (5 if version >= 1 else -1)


def test_what_an_older_version_cannot_carry_is_refused_not_dropped() -> None:
    """A pre-vote below Vote v2, or AckWhenCommitted=false below AddRaftVoter v1, would
    change meaning if dropped: the writer refuses, as Kafka's request builders do, and the
    transport answers UNSUPPORTED_VERSION (Kafka's ``RaftUtil.errorResponse``)."""
    pre_vote = rpc.vote_request(None, 2, epoch=3, local_id=1, last=OffsetAndEpoch(0, 0),
                                pre_vote=True)
    with pytest.raises(UnsupportedVersionError):
        encode_request(RequestHeader(ApiKey.VOTE, 1, 1, None), pre_vote)
    add = rpc.add_voter_request(None, 4, dir_id(4), [("CONTROLLER", "h", 1)],
                                ack_when_committed=False)
    with pytest.raises(UnsupportedVersionError):
        encode_request(RequestHeader(ApiKey.ADD_RAFT_VOTER, 0, 1, None), add)
    answer = rpc.error_response(pre_vote, ErrorCode.UNSUPPORTED_VERSION)
    assert isinstance(answer, rpc.VoteResponse)
    assert rpc.response_header(answer) == rpc.ResponseHeader(
        ErrorCode.UNSUPPORTED_VERSION, None, None)
