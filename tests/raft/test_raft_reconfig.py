"""AddRaftVoter / RemoveRaftVoter / UpdateRaftVoter on one core: Kafka's error codes, one
change at a time, effect on append, answer on commit, a removed leader resigns."""

from __future__ import annotations

import uuid

from raft_harness import Harness
from reconfig_helpers import (
    LISTENERS,
    add,
    add_voter,
    answer_probe,
    ask,
    bootstrapped_log,
    catch_up,
    dir_id,
    dynamic_leader,
    error_of,
)

from pykraft.protocol.errors import ErrorCode
from pykraft.raft import rpc
from pykraft.raft.log import OffsetAndEpoch
from pykraft.raft.states import Leader, Resigned
from pykraft.records.control import VoterEndpoint


def test_new_leader_writes_the_bootstrap_voters_into_the_log() -> None:
    h = dynamic_leader()
    assert h.client.kraft_version == 1
    # LeaderChange, KRaftVersion, Voters: one start-of-epoch batch at offsets 0-2
    assert h.client.control_state.last_voter_set_offset == 2


def test_add_voter_error_cases() -> None:
    h = dynamic_leader()
    assert error_of(ask(h, add(0))) == ErrorCode.DUPLICATE_VOTER
    assert error_of(ask(h, add(1, directory=uuid.UUID(int=0)))) == ErrorCode.INVALID_REQUEST
    assert error_of(ask(h, add(1, listeners=[("OTHER", "h", 1)]))) == ErrorCode.INVALID_REQUEST
    assert error_of(add_voter(h, 1)) == ErrorCode.REQUEST_TIMED_OUT  # never fetched
    catch_up(h, 1)
    assert error_of(add_voter(h, 1, supported=(0, 0))) == ErrorCode.INVALID_REQUEST
    assert h.client.voters.ids == {0}


def test_add_voter_takes_effect_on_append_and_answers_on_commit() -> None:
    h = dynamic_leader()
    catch_up(h, 1)
    assert ask(h, add(1)) is None  # probing the new replica
    assert h.client.voters.ids == {0}
    answer_probe(h, 1)
    assert h.client.voters.ids == {0, 1}  # appended, waiting for the commit
    record_offset = h.client.control_state.last_voter_set_offset
    assert record_offset is not None
    # one change at a time
    assert error_of(ask(h, add(2))) == ErrorCode.REQUEST_TIMED_OUT
    assert error_of(ask(h, rpc.remove_voter_request(None, 0, dir_id(0)))) == (
        ErrorCode.REQUEST_TIMED_OUT)
    h.flush()
    assert h.hwm() is not None and h.hwm() <= record_offset  # the new voter must have it too
    catch_up(h, 1)
    (answer,) = [r.response for r in h.take_responses() if r.destination == -7]
    assert error_of(answer) == ErrorCode.NONE
    assert h.hwm() is not None and h.hwm() > record_offset


def test_remove_voter_errors_and_a_removed_leader_resigns() -> None:
    h = dynamic_leader()
    catch_up(h, 1)
    add_voter(h, 1)
    h.flush()
    catch_up(h, 1)
    h.take_responses()
    assert error_of(ask(h, rpc.remove_voter_request(None, 5, dir_id(5)))) == (
        ErrorCode.VOTER_NOT_FOUND)
    assert error_of(ask(h, rpc.remove_voter_request(None, 1, dir_id(9)))) == (
        ErrorCode.VOTER_NOT_FOUND)  # same id, another directory
    assert ask(h, rpc.remove_voter_request(None, 0, dir_id(0))) is None
    assert isinstance(h.state(), Leader)  # keeps serving until the removal commits
    catch_up(h, 1)
    assert isinstance(h.state(), Resigned)
    (answer,) = [r.response for r in h.take_responses() if r.destination == -7]
    assert error_of(answer) == ErrorCode.NONE


def test_update_voter_checks_epoch_range_and_listener() -> None:
    h = dynamic_leader()
    epoch = h.client.epoch

    def update(e: int, supported: tuple[int, int] = (0, 1),
               listeners: list[tuple[str, str, int]] = LISTENERS) -> ErrorCode:
        error: ErrorCode = error_of(ask(h, rpc.update_voter_request(
            None, e, 0, dir_id(0), listeners, supported)))
        return error

    assert update(epoch - 1) == ErrorCode.FENCED_LEADER_EPOCH
    assert update(epoch + 1) == ErrorCode.UNKNOWN_LEADER_EPOCH
    assert update(epoch, supported=(0, 0)) == ErrorCode.INVALID_REQUEST
    assert update(epoch, listeners=[("OTHER", "h", 1)]) == ErrorCode.INVALID_REQUEST
    assert error_of(ask(h, rpc.update_voter_request(None, epoch, 0, dir_id(5), LISTENERS,
                                                    (0, 1)))) == ErrorCode.VOTER_NOT_FOUND
    # answered on append: the voter asking is also one whose fetches commit it
    assert error_of(ask(h, rpc.update_voter_request(
        None, epoch, 0, dir_id(0), [("CONTROLLER", "new-host", 1234)], (0, 1)))) == (
        ErrorCode.NONE)
    answer = ask(h, rpc.update_voter_request(None, epoch, 0, dir_id(0), LISTENERS, (0, 1)))
    assert isinstance(answer, rpc.UpdateRaftVoterResponse)
    # refused (the first update is not committed), naming the leader at its new endpoint
    assert answer.error_code == ErrorCode.REQUEST_TIMED_OUT
    assert (answer.current_leader.host, answer.current_leader.port) == ("new-host", 1234)
    node = h.client.voters.node(0)
    assert node is not None and node.endpoints[0].host == "new-host"


def test_static_quorum_and_followers_refuse_changes() -> None:
    static = Harness(0, {0})
    static.flush()
    assert error_of(ask(static, add(1))) == ErrorCode.UNSUPPORTED_VERSION
    follower = Harness(1, {0, 1, 2})
    assert error_of(ask(follower, add(3))) == ErrorCode.NOT_LEADER_OR_FOLLOWER


def test_describe_quorum_nodes_come_from_the_voter_set() -> None:
    h = dynamic_leader()
    described = h.client.describe_quorum()
    assert [n.node_id for n in described.nodes] == [0]
    assert described.nodes[0].listeners[0].name == "CONTROLLER"
    voters = described.topics[0].partitions[0].current_voters
    assert voters[0].replica_directory_id == dir_id(0)


def test_vote_for_another_directory_of_me_is_an_invalid_voter_key() -> None:
    h = Harness(1, set(), log=bootstrapped_log(0, 1, 2), directory_id=dir_id(1),
                bootstrap_servers=(0,))
    h.request(2, rpc.vote_request(None, 1, epoch=1, local_id=2, last=OffsetAndEpoch(0, 0),
                                  pre_vote=False, voter_directory_id=dir_id(7)))
    (out,) = h.take_responses()
    assert isinstance(out.response, rpc.VoteResponse)
    assert out.response.topics[0].partitions[0].error_code == ErrorCode.INVALID_VOTER_KEY


def test_endpoint_of_names_voters_and_a_replica_being_added() -> None:
    h = dynamic_leader()
    assert h.client.endpoint_of(0) == VoterEndpoint("CONTROLLER", "localhost", 9093)
    assert h.client.endpoint_of(5) is None
    catch_up(h, 5)
    assert ask(h, add(5, listeners=[("CONTROLLER", "node-5", 9095)])) is None  # probing
    assert h.client.endpoint_of(5) == VoterEndpoint("CONTROLLER", "node-5", 9095)
    answer_probe(h, 5)
    assert h.client.endpoint_of(5) == VoterEndpoint("CONTROLLER", "node-5", 9095)


def test_add_voter_without_ack_when_committed_answers_after_the_append() -> None:
    h = dynamic_leader()
    catch_up(h, 1)
    answer = add_voter(h, 1, ack_when_committed=False)
    assert error_of(answer) == ErrorCode.NONE
    record_offset = h.client.control_state.last_voter_set_offset
    assert record_offset is not None and (h.hwm() or 0) <= record_offset  # not committed
    # the next change still waits for this one to commit
    assert error_of(ask(h, add(2))) == ErrorCode.REQUEST_TIMED_OUT


def test_the_probe_is_sent_again_after_a_failure_until_the_timeout() -> None:
    h = dynamic_leader()
    catch_up(h, 1)
    assert ask(h, rpc.add_voter_request(None, 1, dir_id(1), LISTENERS, timeout_ms=1000)) is None
    (probe,) = h.take_requests(rpc.ApiVersionsRequest)
    h.client.handle_send_failure(h.now, probe.destination, probe.correlation_id)
    h.advance(h.config.retry_backoff_ms)
    (again,) = h.take_requests(rpc.ApiVersionsRequest)
    assert again.destination == 1
    h.advance(1000)
    answers = [r.response for r in h.take_responses() if r.destination == -7]
    assert [error_of(a) for a in answers] == [ErrorCode.REQUEST_TIMED_OUT]
    assert h.client.voters.ids == {0}
