"""A hostile Vote against a real 3-controller quorum: refused, nobody stops, all restart.

The defect: Vote v2 (replica 3, a real voter; ReplicaEpoch 2147483647; PreVote false; the
right cluster id) sent to controller 1 made controllers 2 and 3 write leaderEpoch 2147483648
to quorum-state, stop on ``Could not parse i32``, and refuse to start again.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest
from process_harness import leader_info, wait_for

from pykraft.protocol.apis import ApiKey
from pykraft.protocol.errors import ErrorCode
from pykraft.raft import rpc
from pykraft.raft.limits import INT32_MAX, MAX_EPOCH
from pykraft.raft.log import OffsetAndEpoch
from pykraft.runtime.kafka_client import ClientConnection
from pykraft.runtime.node import SERVED_RANGES
from pykraft.storage.quorum_state_file import QUORUM_STATE, read_quorum_state
from pykraft.tools.local_cluster import LocalCluster

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]


async def _vote_v2(port: int, request: rpc.VoteRequest) -> rpc.VoteResponse:
    connection = await ClientConnection.open("127.0.0.1", port, client_id="hostile",
                                             ours=SERVED_RANGES)
    try:
        assert connection.versions[ApiKey.VOTE] == 2
        answer = await connection.request(request)
    finally:
        connection.close()
    assert isinstance(answer, rpc.VoteResponse)
    return answer


def _stored_epoch(cluster: LocalCluster, node_id: int) -> int:
    path = cluster.nodes[node_id].data / "__cluster_metadata-0" / QUORUM_STATE
    return read_quorum_state(path).leader_epoch


def test_a_vote_in_the_largest_int32_epoch_stops_no_controller(
    make_cluster: Callable[..., LocalCluster],
) -> None:
    cluster = make_cluster()
    cluster.start_all()
    before = leader_info(cluster)

    vote = rpc.vote_request(cluster.cluster_id, 1, epoch=INT32_MAX, local_id=3,
                            last=OffsetAndEpoch(0, 0), pre_vote=False)
    answer = asyncio.run(_vote_v2(cluster.nodes[1].port, vote))
    part = answer.topics[0].partitions[0]
    assert part.error_code == ErrorCode.INVALID_REQUEST and not part.vote_granted

    after = leader_info(cluster, min_epoch=before.leader_epoch)
    assert after.leader_epoch <= MAX_EPOCH
    assert cluster.running() == sorted(cluster.nodes)
    for node_id in sorted(cluster.nodes):  # each restarts from what it persisted
        assert cluster.stop(node_id) == 0
        assert _stored_epoch(cluster, node_id) <= MAX_EPOCH
        cluster.start(node_id)
        cluster.wait_listening([node_id])
        leader_info(cluster)
    wait_for("every controller running", lambda: cluster.running() == sorted(cluster.nodes)
             or None)
    assert leader_info(cluster).leader_epoch <= MAX_EPOCH
