"""A replica's own membership: UpdateRaftVoter from followers and from the leader itself,
auto-join of an observer, and the kraft.version 0 -> 1 upgrade of a static quorum."""

from __future__ import annotations

from raft_harness import Harness
from reconfig_helpers import (
    LISTENERS,
    add_voter,
    ask,
    bootstrapped_log,
    catch_up,
    dir_id,
    error_of,
)

from pykraft.protocol.errors import ErrorCode
from pykraft.raft import rpc
from pykraft.raft.api import OutboundRequest
from pykraft.raft.reconfig import Refusal
from pykraft.raft.states import Follower, Leader
from pykraft.raft.voter_set import SUPPORTED_KRAFT_VERSIONS, ReplicaKey
from pykraft.records.control import VoterEndpoint

MOVED = (VoterEndpoint("CONTROLLER", "moved-host", 19093),)


def following(h: Harness, leader: int, epoch: int) -> OutboundRequest:
    """Make ``h`` follow ``leader`` (BeginQuorumEpoch for a voter, the answer to its
    bootstrap Fetch for an observer) and answer Fetches until it sends something else to the
    leader, or fetches again after a successful one; returns that request."""
    if not h.requests:
        h.request(leader, rpc.begin_quorum_request(None, h.client.node_id, leader, epoch))
        h.take_responses()
    for _ in range(3):
        sent: OutboundRequest
        (sent,) = h.take_requests()
        state = h.state()
        if not isinstance(sent.request, rpc.FetchRequest) or (
                isinstance(state, Follower) and state.has_fetched_from_leader):
            assert sent.destination == leader
            return sent
        h.respond(sent, rpc.fetch_response(ErrorCode.NONE, leader, epoch,
                                           high_watermark=h.log.log_end_offset))
    raise AssertionError("no request after three fetches")


def test_a_voter_with_a_stale_entry_sends_update_raft_voter_once() -> None:
    h = Harness(1, set(), log=bootstrapped_log(0, 1), directory_id=dir_id(1),
                bootstrap_servers=(0,), local_listeners=MOVED)
    out = following(h, 0, 1)
    request = out.request
    assert isinstance(request, rpc.UpdateRaftVoterRequest)
    assert (request.voter_id, request.voter_directory_id) == (1, dir_id(1))
    assert [(item.host, item.port) for item in request.listeners] == [("moved-host", 19093)]
    assert int(request.current_leader_epoch) == 1
    h.respond(out, rpc.reconfig_response(request, ErrorCode.NONE, leader_id=0, epoch=1))
    (after,) = h.take_requests()
    assert isinstance(after.request, rpc.FetchRequest)  # done for this epoch


def test_an_update_raft_voter_answer_restarts_the_fetch_timer() -> None:
    """As Kafka's handleUpdateVoterResponse: the leader's answer is news from the leader,
    as a Fetch answer is, so the voter does not start an election over a leader that just
    answered it."""
    h = Harness(1, set(), log=bootstrapped_log(0, 1), directory_id=dir_id(1),
                bootstrap_servers=(0,), local_listeners=MOVED)
    out = following(h, 0, 1)
    assert isinstance(out.request, rpc.UpdateRaftVoterRequest)
    almost = h.config.fetch_timeout_ms - 1
    h.advance(almost)
    h.respond(out, rpc.reconfig_response(out.request, ErrorCode.NONE, leader_id=0, epoch=1))
    h.advance(almost)
    assert isinstance(h.state(), Follower)


def test_a_voter_with_an_up_to_date_entry_just_fetches() -> None:
    same = (VoterEndpoint("CONTROLLER", "localhost", 9093),)
    h = Harness(1, set(), log=bootstrapped_log(0, 1), directory_id=dir_id(1),
                bootstrap_servers=(0,), local_listeners=same)
    assert isinstance(following(h, 0, 1).request, rpc.FetchRequest)


def test_the_leader_rewrites_its_own_stale_entry_after_its_epoch_commits() -> None:
    h = Harness(0, set(), log=bootstrapped_log(0), directory_id=dir_id(0),
                bootstrap_servers=(1,), local_listeners=MOVED)
    h.flush()
    assert isinstance(h.state(), Leader)
    h.advance(1)
    h.flush()
    node = h.client.voters.node(0)
    assert node is not None and node.endpoints == MOVED
    assert h.client.control_state.last_voter_set_offset is not None
    assert h.client.control_state.last_voter_set_offset > 2  # a second VotersRecord


def test_an_observer_with_auto_join_asks_to_be_added_without_waiting_for_the_commit() -> None:
    h = Harness(3, set(), log=bootstrapped_log(0, 1, 2), directory_id=dir_id(3),
                bootstrap_servers=(0,), local_listeners=MOVED, auto_join=True)
    request = following(h, 0, 1).request
    assert isinstance(request, rpc.AddRaftVoterRequest)
    assert (request.voter_id, request.voter_directory_id) == (3, dir_id(3))
    assert request.ack_when_committed is False


def test_auto_join_removes_the_voter_of_a_lost_disk_first() -> None:
    new_disk = ReplicaKey(2, dir_id(42))
    h = Harness(2, set(), log=bootstrapped_log(0, 1, 2), directory_id=new_disk.directory_id,
                bootstrap_servers=(0,), local_listeners=MOVED, auto_join=True)
    assert not h.client.is_voter
    request = following(h, 0, 1).request
    assert isinstance(request, rpc.RemoveRaftVoterRequest)
    assert (request.voter_id, request.voter_directory_id) == (2, dir_id(2))


def test_without_auto_join_an_observer_only_fetches() -> None:
    h = Harness(3, set(), log=bootstrapped_log(0, 1, 2), directory_id=dir_id(3),
                bootstrap_servers=(0,), local_listeners=MOVED)
    assert isinstance(following(h, 0, 1).request, rpc.FetchRequest)


# -- kraft.version 0 -> 1 ---------------------------------------------------------------------

def static_leader() -> Harness:
    """Node 0 leads a static quorum {0, 1, 2} with a high watermark."""
    h = Harness(0, {0, 1, 2}, directory_id=dir_id(0),
                local_listeners=(VoterEndpoint("CONTROLLER", "localhost", 9093),))
    h.make_leader()
    for voter in (1, 2):
        catch_up(h, voter)
    assert h.hwm() is not None and h.client.kraft_version == 0
    return h


def tell(h: Harness, voter: int, supported: tuple[int, int] = (0, 1)) -> ErrorCode:
    """Voter ``voter`` sends the leader UpdateRaftVoter, as it does at kraft.version 0."""
    error: ErrorCode = error_of(ask(h, rpc.update_voter_request(
        None, h.client.epoch, voter, dir_id(voter), LISTENERS, supported)))
    return error


def test_a_static_follower_tells_the_leader_its_directory_id() -> None:
    h = Harness(1, {0, 1, 2}, directory_id=dir_id(1), local_listeners=MOVED)
    request = following(h, 0, 1).request
    assert isinstance(request, rpc.UpdateRaftVoterRequest)
    assert request.voter_directory_id == dir_id(1)
    assert isinstance(h.state(), Follower)


def test_upgrade_waits_for_every_voter_then_writes_the_first_voters_record() -> None:
    h = static_leader()
    refused = h.client.upgrade_kraft_version(h.now, 1)
    assert isinstance(refused, Refusal) and refused.error == ErrorCode.REQUEST_TIMED_OUT
    assert tell(h, 1) == ErrorCode.NONE
    assert tell(h, 2) == ErrorCode.NONE
    assert h.client.kraft_version == 0  # learning appends nothing
    assert tell(h, 7) == ErrorCode.VOTER_NOT_FOUND
    offset = h.client.upgrade_kraft_version(h.now, 1)
    assert isinstance(offset, int)
    assert h.client.kraft_version == 1
    assert h.client.voters.keys == {ReplicaKey(v, dir_id(v)) for v in (0, 1, 2)}
    h.flush()
    catch_up(h, 1)
    hwm = h.hwm()
    assert hwm is not None and hwm > offset
    assert h.client.upgrade_kraft_version(h.now, 1) is None  # already finalized
    # the quorum is dynamic now: voters can be added
    catch_up(h, 3)
    assert add_voter(h, 3) is None
    assert 3 in h.client.voters


def test_upgrade_is_refused_when_a_voter_supports_only_version_0() -> None:
    h = static_leader()
    tell(h, 1)
    tell(h, 2, supported=(0, 0))
    refused = h.client.upgrade_kraft_version(h.now, 1)
    assert isinstance(refused, Refusal)
    assert refused.error == ErrorCode.INVALID_UPDATE_VERSION
    assert h.client.kraft_version == 0


def test_downgrade_and_unknown_versions_are_refused() -> None:
    h = static_leader()
    tell(h, 1)
    tell(h, 2)
    refused = h.client.upgrade_kraft_version(h.now, SUPPORTED_KRAFT_VERSIONS.max_supported_version
                                             + 1)
    assert isinstance(refused, Refusal) and refused.error == ErrorCode.INVALID_UPDATE_VERSION


def test_validate_only_checks_the_upgrade_without_writing() -> None:
    h = static_leader()
    refused = h.client.upgrade_kraft_version(h.now, 1, validate_only=True)
    assert isinstance(refused, Refusal)
    tell(h, 1)
    tell(h, 2)
    end = h.log.log_end_offset
    assert h.client.upgrade_kraft_version(h.now, 1, validate_only=True) is None
    assert h.log.log_end_offset == end and h.client.kraft_version == 0
