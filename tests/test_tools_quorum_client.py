"""``add-controller`` / ``remove-controller`` against scripted controllers on 127.0.0.1:
leader discovery through the bootstrap list, bounded retries of transient refusals, a lost
answer whose change did happen, and Kafka's error names on refusal."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from fake_controller import FakeController, Handler, fake_controllers
from pykraft.cli.main import app
from pykraft.config.server import Endpoint
from pykraft.ids import random_uuid, uuid_to_str
from pykraft.messages.kafka import describe_cluster_response as dc_resp
from pykraft.protocol.apis import ApiKey
from pykraft.protocol.errors import ErrorCode
from pykraft.raft import rpc
from pykraft.storage.meta_properties import MetaProperties, write_meta_properties
from pykraft.tools.quorum_tool import (
    ControllerIdentity,
    QuorumToolError,
    VoterChangeError,
    add_controller,
    remove_controller,
)

pytestmark = pytest.mark.timeout(60)
CLUSTER_ID = "MkU3OEVBNTcwNTJENDM2Qg"
NEW = ControllerIdentity(4, random_uuid(), (Endpoint("CONTROLLER", "127.0.0.1", 9999),))


def describe_cluster(leader: FakeController | None,
                     voters: list[FakeController]) -> dc_resp.DescribeClusterResponse:
    return dc_resp.DescribeClusterResponse(
        error_code=ErrorCode.NONE, endpoint_type=2, cluster_id=CLUSTER_ID,
        controller_id=-1 if leader is None else leader.node_id,
        brokers=tuple(dc_resp.DescribeClusterBroker(v.node_id, "127.0.0.1", v.port)
                      for v in voters))


def answer(request: Any, error: ErrorCode, message: str | None = None) -> Any:
    return rpc.reconfig_response(request, error, message)


def voters_response(voters: list[tuple[int, uuid.UUID]]) -> rpc.DescribeQuorumResponse:
    rows = [rpc.ReplicaRow(n, 10, 1, 1, directory) for n, directory in voters]
    return rpc.describe_quorum_response(voters[0][0], 3, 10, rows, [])


@pytest.fixture
def controllers() -> Iterator[Make]:
    with fake_controllers() as make:
        yield make


Make = Callable[[int, Handler], FakeController]


def test_add_is_sent_to_the_leader_that_a_follower_names(controllers: Make) -> None:
    cluster: list[FakeController] = []

    def leader_handler(api_key: int, body: Any) -> Any:
        if api_key == ApiKey.DESCRIBE_CLUSTER:
            return describe_cluster(cluster[0], cluster)
        return answer(body, ErrorCode.NONE)

    leader = controllers(1, leader_handler)
    follower = controllers(2, lambda key, body: describe_cluster(leader, cluster))
    cluster += [leader, follower]
    asyncio.run(add_controller([follower.address], NEW, timeout_s=10))

    [request] = leader.requests(ApiKey.ADD_RAFT_VOTER)
    assert (request.cluster_id, request.voter_id, request.voter_directory_id) == (
        CLUSTER_ID, 4, NEW.directory_id)
    assert [(lst.name, lst.host, lst.port) for lst in request.listeners] == [
        ("CONTROLLER", "127.0.0.1", 9999)]
    assert request.ack_when_committed
    assert 0 < request.timeout_ms <= 30_000
    assert follower.requests(ApiKey.ADD_RAFT_VOTER) == []


def test_an_unreachable_bootstrap_controller_is_skipped(controllers: Make) -> None:
    cluster: list[FakeController] = []
    leader = controllers(1, lambda key, body: (
        describe_cluster(cluster[0], cluster) if key == ApiKey.DESCRIBE_CLUSTER
        else answer(body, ErrorCode.NONE)))
    cluster.append(leader)
    dead = controllers(2, lambda key, body: None)
    dead.stop()
    asyncio.run(remove_controller([dead.address, leader.address], 3, NEW.directory_id,
                                  timeout_s=10))
    [request] = leader.requests(ApiKey.REMOVE_RAFT_VOTER)
    assert (request.voter_id, request.voter_directory_id) == (3, NEW.directory_id)


def test_transient_refusals_are_retried_until_the_change_commits(controllers: Make) -> None:
    """No leader yet, then NOT_LEADER_OR_FOLLOWER, then REQUEST_TIMED_OUT (a change still
    uncommitted), then success: three AddRaftVoter attempts in all."""
    cluster: list[FakeController] = []
    answers = iter([ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.REQUEST_TIMED_OUT,
                    ErrorCode.NONE])
    described = iter([None, *[cluster] * 10])

    def handler(api_key: int, body: Any) -> Any:
        if api_key == ApiKey.DESCRIBE_CLUSTER:
            known = next(described)
            return describe_cluster(None if known is None else cluster[0], cluster)
        return answer(body, next(answers))

    cluster.append(controllers(1, handler))
    asyncio.run(add_controller([cluster[0].address], NEW, timeout_s=20))
    assert len(cluster[0].requests(ApiKey.ADD_RAFT_VOTER)) == 3


@pytest.mark.parametrize(("error", "name"), [
    (ErrorCode.DUPLICATE_VOTER, "DUPLICATE_VOTER"),
    (ErrorCode.INVALID_REQUEST, "INVALID_REQUEST"),
    (ErrorCode.UNSUPPORTED_VERSION, "UNSUPPORTED_VERSION"),
    (ErrorCode.INCONSISTENT_CLUSTER_ID, "INCONSISTENT_CLUSTER_ID"),
])
def test_a_refusal_fails_at_once_with_kafka_s_error_name(
    controllers: Make, error: ErrorCode, name: str,
) -> None:
    cluster: list[FakeController] = []
    cluster.append(controllers(1, lambda key, body: (
        describe_cluster(cluster[0], cluster) if key == ApiKey.DESCRIBE_CLUSTER
        else answer(body, error, "told by the leader"))))
    with pytest.raises(VoterChangeError, match=f"^{name}: told by the leader$") as caught:
        asyncio.run(add_controller([cluster[0].address], NEW, timeout_s=20))
    assert caught.value.error == error
    assert len(cluster[0].requests(ApiKey.ADD_RAFT_VOTER)) == 1


def test_a_lost_answer_whose_add_happened_counts_as_done(controllers: Make) -> None:
    """The first AddRaftVoter's answer never arrives (connection closed); the retry meets
    DUPLICATE_VOTER, and DescribeQuorum shows (4, its directory id) as a voter."""
    cluster: list[FakeController] = []
    answers = iter([None, ErrorCode.DUPLICATE_VOTER])

    def handler(api_key: int, body: Any) -> Any:
        if api_key == ApiKey.DESCRIBE_CLUSTER:
            return describe_cluster(cluster[0], cluster)
        if api_key == ApiKey.DESCRIBE_QUORUM:
            return voters_response([(1, random_uuid()), (4, NEW.directory_id)])
        code = next(answers)
        return None if code is None else answer(body, code)

    cluster.append(controllers(1, handler))
    asyncio.run(add_controller([cluster[0].address], NEW, timeout_s=20))
    assert len(cluster[0].requests(ApiKey.ADD_RAFT_VOTER)) == 2


def test_a_duplicate_of_another_directory_after_a_lost_answer_still_fails(
    controllers: Make,
) -> None:
    cluster: list[FakeController] = []
    answers = iter([None, ErrorCode.DUPLICATE_VOTER])

    def handler(api_key: int, body: Any) -> Any:
        if api_key == ApiKey.DESCRIBE_CLUSTER:
            return describe_cluster(cluster[0], cluster)
        if api_key == ApiKey.DESCRIBE_QUORUM:
            return voters_response([(1, random_uuid()), (4, random_uuid())])
        code = next(answers)
        return None if code is None else answer(body, code)

    cluster.append(controllers(1, handler))
    with pytest.raises(VoterChangeError, match=r"^DUPLICATE_VOTER: The voter is already"):
        asyncio.run(add_controller([cluster[0].address], NEW, timeout_s=20))


def test_a_quorum_without_leader_fails_at_the_deadline(controllers: Make) -> None:
    lonely = controllers(1, lambda key, body: describe_cluster(None, []))
    with pytest.raises(QuorumToolError, match=r"could not remove the controller within 1 s: "
                                              r".*no active controller known yet"):
        asyncio.run(remove_controller([lonely.address], 3, NEW.directory_id, timeout_s=1))
    assert lonely.requests(ApiKey.REMOVE_RAFT_VOTER) == []


# -- the CLI end to end against a scripted leader -------------------------------------------

def _controller_config(tmp_path: Path, directory_id: uuid.UUID) -> Path:
    data = tmp_path / "data"
    data.mkdir()
    write_meta_properties(data / "meta.properties",
                          MetaProperties(1, 4, CLUSTER_ID, directory_id))
    config = tmp_path / "controller-4.properties"
    config.write_text("process.roles=controller\nnode.id=4\n"
                      "listeners=CONTROLLER://127.0.0.1:9999\n"
                      f"controller.listener.names=CONTROLLER\nlog.dirs={data}\n")
    return config


def test_cli_add_controller_prints_kafka_s_line(controllers: Make, tmp_path: Path) -> None:
    cluster: list[FakeController] = []
    cluster.append(controllers(1, lambda key, body: (
        describe_cluster(cluster[0], cluster) if key == ApiKey.DESCRIBE_CLUSTER
        else answer(body, ErrorCode.NONE))))
    config = _controller_config(tmp_path, NEW.directory_id)
    result = CliRunner().invoke(app, [
        "metadata-quorum", "--bootstrap-controller", f"127.0.0.1:{cluster[0].port}",
        "--command-config", str(config), "add-controller"])
    assert result.exit_code == 0, result.stderr
    assert result.stdout == (f"Added controller 4 with directory id "
                             f"{uuid_to_str(NEW.directory_id)} and endpoints: "
                             "CONTROLLER://127.0.0.1:9999\n")


def test_cli_remove_controller_failure_exits_1_with_the_error_name(controllers: Make) -> None:
    cluster: list[FakeController] = []
    cluster.append(controllers(1, lambda key, body: (
        describe_cluster(cluster[0], cluster) if key == ApiKey.DESCRIBE_CLUSTER
        else answer(body, ErrorCode.VOTER_NOT_FOUND))))
    result = CliRunner().invoke(app, [
        "metadata-quorum", "--bootstrap-controller", f"127.0.0.1:{cluster[0].port}",
        "remove-controller", "--controller-id", "3",
        "--controller-directory-id", uuid_to_str(NEW.directory_id)])
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr == ("Error: VOTER_NOT_FOUND: The voter is not part of the set of "
                             "voters.\n")
