"""What a controller refuses: bad config at startup, foreign clusters and bad frames at run time."""

from __future__ import annotations

import asyncio
import socket
import struct
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from process_harness import leader_info

from pykraft.messages.kafka.metadata_request import MetadataRequest
from pykraft.protocol.codec import encode_request
from pykraft.protocol.errors import ErrorCode
from pykraft.protocol.frame import encode_frame
from pykraft.protocol.header import RequestHeader
from pykraft.raft import rpc
from pykraft.raft.log import OffsetAndEpoch
from pykraft.runtime.kafka_client import ClientConnection
from pykraft.runtime.node import SERVED_RANGES
from pykraft.tools.local_cluster import LocalCluster

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]


def _server(config: Path, *overrides: str) -> subprocess.CompletedProcess[str]:
    args = [a for o in overrides for a in ("--override", o)]
    return subprocess.run([sys.executable, "-m", "pykraft", "server", str(config), *args],
                          capture_output=True, text=True, timeout=60, check=False)


@pytest.fixture
def formatted(tmp_path: Path) -> LocalCluster:
    return LocalCluster.create(tmp_path / "c", 1)


@pytest.mark.parametrize(("override", "named"), [
    ("node.id=", "node.id"),
    ("node.id=7", "node.id"),  # not a voter
    ("controller.quorum.election.timeout.ms=soon", "controller.quorum.election.timeout.ms"),
    ("controller.listener.names=OTHER", "controller.listener.names"),
    ("process.roles=broker,controller", "process.roles"),
    ("controller.quorum.voters=", "controller.quorum.voters"),
    ("metadata.log.segment.bytes=0", "metadata.log.segment.bytes"),
])
def test_bad_config_is_refused_naming_the_key(formatted: LocalCluster, override: str,
                                              named: str) -> None:
    result = _server(formatted.nodes[1].config, override)
    assert result.returncode == 1
    assert named in result.stderr, result.stderr


def test_unformatted_directory_and_foreign_node_id_are_refused(
    formatted: LocalCluster, tmp_path: Path,
) -> None:
    config = formatted.nodes[1].config
    unformatted = _server(config, f"log.dirs={tmp_path / 'empty'}")
    assert unformatted.returncode == 1
    assert "meta.properties" in unformatted.stderr and "format" in unformatted.stderr
    other = LocalCluster.create(tmp_path / "other", 2)
    mismatch = _server(config, f"log.dirs={other.nodes[2].data}")
    assert mismatch.returncode == 1
    assert "node.id" in mismatch.stderr and "does not match" in mismatch.stderr


async def _request(host: str, port: int, body: object) -> object:
    connection = await ClientConnection.open(host, port, client_id="test", ours=SERVED_RANGES)
    try:
        return await connection.request(body)
    finally:
        connection.close()


def _raw_exchange(port: int, payload: bytes) -> bytes:
    """Send raw bytes; return everything the server sent before closing (b"" = closed)."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(payload)
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
            if len(b"".join(chunks)) >= 4 + struct.unpack(">i", b"".join(chunks)[:4])[0]:
                break
        return b"".join(chunks)


def test_running_node_refuses_foreign_requests_and_survives_bad_frames(
    make_cluster: Callable[..., LocalCluster],
) -> None:
    cluster = make_cluster()
    cluster.start_all()
    info = leader_info(cluster)
    follower = next(n for n in cluster.nodes if n != info.leader_id)
    host, port = "127.0.0.1", cluster.nodes[follower].port
    position = OffsetAndEpoch(0, 0)

    vote = rpc.vote_request("wrong-cluster", follower, epoch=info.leader_epoch + 5,
                            local_id=info.leader_id, last=position, pre_vote=False)
    answer = asyncio.run(_request(host, port, vote))
    assert isinstance(answer, rpc.VoteResponse)
    assert answer.error_code == ErrorCode.INCONSISTENT_CLUSTER_ID
    fetch = rpc.fetch_request("wrong-cluster", 9, epoch=info.leader_epoch, position=position,
                              high_watermark=None, max_wait_ms=0, max_bytes=1024)
    leader_port = cluster.nodes[info.leader_id].port
    fetched = asyncio.run(_request(host, leader_port, fetch))
    assert isinstance(fetched, rpc.FetchResponse)
    assert fetched.error_code == ErrorCode.INCONSISTENT_CLUSTER_ID
    stranger = rpc.begin_quorum_request(cluster.cluster_id, follower, 42, info.leader_epoch + 1)
    refused = asyncio.run(_request(host, port, stranger))
    assert isinstance(refused, rpc.BeginQuorumEpochResponse)
    assert refused.topics[0].partitions[0].error_code == ErrorCode.INCONSISTENT_VOTER_SET

    assert _raw_exchange(port, struct.pack(">i", 2**31 - 1) + b"x" * 64) == b""
    assert _raw_exchange(port, encode_frame(b"\x00\x12")) == b""
    metadata = encode_request(RequestHeader(3, 0, 7, "t"), _metadata_v0())
    assert _raw_exchange(port, encode_frame(metadata)) == b""
    unsupported = _raw_exchange(port, encode_frame(struct.pack(">hhih", 18, 99, 5, -1)))
    assert struct.unpack(">iih", unsupported[:10]) == (len(unsupported) - 4, 5, 35)

    still = asyncio.run(_request(host, port, rpc.describe_quorum_request()))
    assert isinstance(still, rpc.DescribeQuorumResponse)  # the node kept serving
    assert all(cluster.is_running(n) for n in cluster.nodes)


def _metadata_v0() -> MetadataRequest:
    return MetadataRequest(topics=())
