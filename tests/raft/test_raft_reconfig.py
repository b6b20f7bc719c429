"""AddRaftVoter / RemoveRaftVoter / UpdateRaftVoter on one core: Kafka's error codes, one
change at a time, effect on append, answer on commit, a removed leader resigns."""

from __future__ import annotations

import uuid

from kio.schema.errors import ErrorCode
from raft_harness import Harness

from pykraft.raft import rpc
from pykraft.raft.log import OffsetAndEpoch
from pykraft.raft.memory_log import MemoryLog
from pykraft.raft.snapshots import BOOTSTRAP_SNAPSHOT_ID, snapshot_content
from pykraft.raft.states import Leader, Resigned
from pykraft.raft.voter_set import SUPPORTED_KRAFT_VERSIONS, ReplicaKey, VoterNode, VoterSet
from pykraft.records.control import KRaftVersionRecord, VoterEndpoint

LISTENERS = [("CONTROLLER", "localhost", 9093)]


def dir_id(node: int) -> uuid.UUID:
    return uuid.UUID(int=100 + node)


def bootstrapped_log(*voter_ids: int) -> MemoryLog:
    """``storage format --initial-controllers``: the 0-0 checkpoint with the voters."""
    log = MemoryLog()
    initial = VoterSet(VoterNode(ReplicaKey(v, dir_id(v)),
                                 (VoterEndpoint("CONTROLLER", "localhost", 9093),),
                                 SUPPORTED_KRAFT_VERSIONS) for v in voter_ids)
    sink = log.create_snapshot(BOOTSTRAP_SNAPSHOT_ID)
    for data in snapshot_content(BOOTSTRAP_SNAPSHOT_ID, timestamp_ms=0, batches=(),
                                 header_records=(KRaftVersionRecord(0, 1), initial.to_record())):
        sink.write(data)
    sink.freeze()
    return log


def dynamic_leader() -> Harness:
    """Node 0, the only initial voter of a dynamic quorum, leads with a HWM."""
    h = Harness(0, set(), log=bootstrapped_log(0), directory_id=dir_id(0),
                bootstrap_servers=(1,))
    h.flush()
    assert isinstance(h.state(), Leader) and h.hwm() is not None
    return h


def ask(h: Harness, request: rpc.RaftRequest) -> rpc.RaftResponse | None:
    h.request(-7, request, correlation=len(h.responses) + 500)
    answers = [r.response for r in h.take_responses() if r.destination == -7]
    return answers[-1] if answers else None


def error_of(response: rpc.RaftResponse | None) -> ErrorCode:
    assert response is not None
    return rpc.response_header(response).error


def catch_up(h: Harness, node: int) -> None:
    """A fetch from ``node`` at the leader's end (its answer is dropped, others kept)."""
    h.request(node, rpc.fetch_request(
        None, node, epoch=h.client.epoch,
        position=OffsetAndEpoch(h.log.log_end_offset, h.log.last_fetched_epoch),
        high_watermark=None, max_wait_ms=0, max_bytes=1 << 20, directory_id=dir_id(node)))
    h.responses = [r for r in h.responses if not isinstance(r.response, rpc.FetchResponse)]


def add(node: int, directory: uuid.UUID | None = None,
        listeners: list[tuple[str, str, int]] | None = None,
        ack_when_committed: bool = True) -> rpc.AddRaftVoterRequest:
    return rpc.add_voter_request(None, node, dir_id(node) if directory is None else directory,
                                 LISTENERS if listeners is None else listeners,
                                 ack_when_committed=ack_when_committed)


def answer_probe(h: Harness, node: int, supported: tuple[int, int] = (0, 1)) -> None:
    """The replica being added answers the leader's ApiVersions probe."""
    (probe,) = h.take_requests(rpc.ApiVersionsRequest)
    assert probe.destination == node
    h.respond(probe, rpc.kraft_api_versions_response(supported, 0))


def add_voter(h: Harness, node: int, supported: tuple[int, int] = (0, 1),
              ack_when_committed: bool = True) -> rpc.RaftResponse | None:
    """AddRaftVoter through the probe; None while the answer waits for the commit."""
    answer = ask(h, add(node, ack_when_committed=ack_when_committed))
    if answer is not None:
        return answer
    answer_probe(h, node, supported)
    answers = [r.response for r in h.take_responses() if r.destination == -7]
    return answers[-1] if answers else None


def test_new_leader_writes_the_bootstrap_voters_into_the_log() -> None:
    h = dynamic_leader()
    assert h.client.kraft_version == 1
    # LeaderChange, KRaftVersion, Voters: one start-of-epoch batch at offsets 0-2
    assert h.client.control_state.last_voter_set_offset == 2


def test_add_voter_error_cases() -> None:
    h = dynamic_leader()
    assert error_of(ask(h, add(0))) == ErrorCode.duplicate_voter
    assert error_of(ask(h, add(1, directory=uuid.UUID(int=0)))) == ErrorCode.invalid_request
    assert error_of(ask(h, add(1, listeners=[("OTHER", "h", 1)]))) == ErrorCode.invalid_request
    assert error_of(add_voter(h, 1)) == ErrorCode.request_timed_out  # never fetched
    catch_up(h, 1)
    assert error_of(add_voter(h, 1, supported=(0, 0))) == ErrorCode.invalid_request
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
    assert error_of(ask(h, add(2))) == ErrorCode.request_timed_out
    assert error_of(ask(h, rpc.remove_voter_request(None, 0, dir_id(0)))) == (
        ErrorCode.request_timed_out)
    h.flush()
    assert h.hwm() is not None and h.hwm() <= record_offset  # the new voter must have it too
    catch_up(h, 1)
    (answer,) = [r.response for r in h.take_responses() if r.destination == -7]
    assert error_of(answer) == ErrorCode.none
    assert h.hwm() is not None and h.hwm() > record_offset


def test_remove_voter_errors_and_a_removed_leader_resigns() -> None:
    h = dynamic_leader()
    catch_up(h, 1)
    add_voter(h, 1)
    h.flush()
    catch_up(h, 1)
    h.take_responses()
    assert error_of(ask(h, rpc.remove_voter_request(None, 5, dir_id(5)))) == (
        ErrorCode.voter_not_found)
    assert error_of(ask(h, rpc.remove_voter_request(None, 1, dir_id(9)))) == (
        ErrorCode.voter_not_found)  # same id, another directory
    assert ask(h, rpc.remove_voter_request(None, 0, dir_id(0))) is None
    assert isinstance(h.state(), Leader)  # keeps serving until the removal commits
    catch_up(h, 1)
    assert isinstance(h.state(), Resigned)
    (answer,) = [r.response for r in h.take_responses() if r.destination == -7]
    assert error_of(answer) == ErrorCode.none


def test_update_voter_checks_epoch_range_and_listener() -> None:
    h = dynamic_leader()
    epoch = h.client.epoch

    def update(e: int, supported: tuple[int, int] = (0, 1),
               listeners: list[tuple[str, str, int]] = LISTENERS) -> ErrorCode:
        return error_of(ask(h, rpc.update_voter_request(None, e, 0, dir_id(0), listeners,
                                                        supported)))

    assert update(epoch - 1) == ErrorCode.fenced_leader_epoch
    assert update(epoch + 1) == ErrorCode.unknown_leader_epoch
    assert update(epoch, supported=(0, 0)) == ErrorCode.invalid_request
    assert update(epoch, listeners=[("OTHER", "h", 1)]) == ErrorCode.invalid_request
    assert error_of(ask(h, rpc.update_voter_request(None, epoch, 0, dir_id(5), LISTENERS,
                                                    (0, 1)))) == ErrorCode.voter_not_found
    assert ask(h, rpc.update_voter_request(None, epoch, 0, dir_id(0),
                                           [("CONTROLLER", "new-host", 1234)], (0, 1))) is None
    node = h.client.voters.node(0)
    assert node is not None and node.endpoints[0].host == "new-host"


def test_static_quorum_and_followers_refuse_changes() -> None:
    static = Harness(0, {0})
    static.flush()
    assert error_of(ask(static, add(1))) == ErrorCode.unsupported_version
    follower = Harness(1, {0, 1, 2})
    assert error_of(ask(follower, add(3))) == ErrorCode.not_leader_or_follower


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
    assert out.response.topics[0].partitions[0].error_code == ErrorCode.invalid_voter_key


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
    assert error_of(answer) == ErrorCode.none
    record_offset = h.client.control_state.last_voter_set_offset
    assert record_offset is not None and (h.hwm() or 0) <= record_offset  # not committed
    # the next change still waits for this one to commit
    assert error_of(ask(h, add(2))) == ErrorCode.request_timed_out


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
    assert [error_of(a) for a in answers] == [ErrorCode.request_timed_out]
    assert h.client.voters.ids == {0}
