"""A refused connection means the peer process is gone: the node tells the core so
(``unreachable=True``), which lets a follower start a pre-vote at once; a peer that is
merely slow (a timeout) stays an ordinary failure."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from pykraft.config.server import ServerConfig
from pykraft.errors import NetworkError, PeerUnreachableError
from pykraft.raft import rpc
from pykraft.raft.api import OutboundRequest
from pykraft.raft.log import OffsetAndEpoch
from pykraft.runtime.node import SERVED_RANGES, RaftNode
from pykraft.runtime.peers import PeerConnection
from pykraft.runtime.settings import load_settings
from pykraft.tools.local_cluster import LocalCluster


def _peer(port: int, timeout_ms: int = 300) -> PeerConnection:
    return PeerConnection(2, "127.0.0.1", port, client_id="t", ours=SERVED_RANGES,
                          request_timeout_ms=timeout_ms)


def _vote() -> rpc.VoteRequest:
    return rpc.vote_request("cluster", 2, epoch=1, local_id=1, last=OffsetAndEpoch(0, 0),
                            pre_vote=True)


def test_refused_connection_and_its_backoff_are_unreachable(closed_port: int) -> None:
    async def scenario() -> None:
        peer = _peer(closed_port)
        with pytest.raises(PeerUnreachableError):
            await peer.send(_vote())
        # the retry inside the reconnect backoff is refused without dialling: still unreachable
        with pytest.raises(PeerUnreachableError):
            await peer.send(_vote())

    asyncio.run(scenario())


def test_timeout_is_a_plain_network_error(silent_server: int) -> None:
    async def scenario() -> None:
        peer = _peer(silent_server)
        with pytest.raises(NetworkError) as caught:
            await peer.send(_vote())
        assert not isinstance(caught.value, PeerUnreachableError)

    asyncio.run(scenario())


def _node(base: Path, port_of_2: int) -> RaftNode:
    """Node 1 of a formatted 2-voter static cluster whose voter 2 is at ``port_of_2``."""
    cluster = LocalCluster.create(base, 2, {"controller.quorum.request.timeout.ms": "300"})
    config = ServerConfig.load(cluster.nodes[1].config, {
        "controller.quorum.voters":
            f"1@{cluster.nodes[1].address},2@127.0.0.1:{port_of_2}"})
    return RaftNode(load_settings(config))


@pytest.mark.parametrize("refused", [True, False])
def test_node_reports_refused_connections_as_unreachable(
        tmp_path: Path, closed_port: int, silent_server: int, refused: bool) -> None:
    async def scenario() -> list[tuple[int, int, bool]]:
        node = _node(tmp_path, closed_port if refused else silent_server)
        failures: list[tuple[int, int, bool]] = []

        def record(now_ms: int, destination: int, correlation_id: int, *,
                   unreachable: bool = False) -> None:
            failures.append((destination, correlation_id, unreachable))

        node.core.handle_send_failure = record  # type: ignore[method-assign]
        try:
            await node._exchange(OutboundRequest(2, 7, _vote()))
        finally:
            node.disk_log.close()
            for peer in node.peers.values():
                peer.close()
        return failures

    assert asyncio.run(scenario()) == [(2, 7, refused)]
