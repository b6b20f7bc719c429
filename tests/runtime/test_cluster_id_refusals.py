"""INCONSISTENT_CLUSTER_ID leaves a line on both ends, once per peer per interval."""

from __future__ import annotations

import logging

import pytest

from pykraft.protocol.errors import ErrorCode
from pykraft.raft import rpc
from pykraft.raft.log import OffsetAndEpoch
from pykraft.runtime.cluster_id_refusals import ClusterIdRefusals, remote_node

OURS, THEIRS = "MkU3OEVBNTcwNTJENDM2Qg", "q1w2e3r4t5y6u7i8o9p0"
START = OffsetAndEpoch(0, 0)


def _vote(sender: int) -> rpc.VoteRequest:
    return rpc.vote_request(THEIRS, 1, epoch=3, local_id=sender, last=START, pre_vote=False)


REFUSED = rpc.vote_response(ErrorCode.NONE, None, 0, False,
                            top_error=ErrorCode.INCONSISTENT_CLUSTER_ID)
GRANTED = rpc.vote_response(ErrorCode.NONE, None, 3, True)


class Clock:
    def __init__(self) -> None:
        self.now_ms = 1_000

    def __call__(self) -> int:
        return self.now_ms


def _lines(caplog: pytest.LogCaptureFixture) -> list[tuple[str, str, dict[str, object]]]:
    return [(r.levelname, r.getMessage(), getattr(r, "fields", {})) for r in caplog.records]


def test_the_receiver_names_the_peer_and_both_ids_once_per_interval(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = Clock()
    refusals = ClusterIdRefusals(OURS, clock, interval_ms=60_000)
    with caplog.at_level(logging.INFO, logger="pykraft.node"):
        refusals.received(_vote(2), GRANTED)  # an answer that refused nothing
        for _ in range(5):
            refusals.received(_vote(2), REFUSED)
            clock.now_ms += 1_000
        refusals.received(_vote(3), REFUSED)  # another peer has its own window
        clock.now_ms += 60_000
        refusals.received(_vote(2), REFUSED)
    fields = {"api": "VOTE", "peer_cluster_id": THEIRS, "cluster_id": OURS}
    assert _lines(caplog) == [
        ("WARNING", "inconsistent_cluster_id", {**fields, "peer": "2", "refusals": 1}),
        ("WARNING", "inconsistent_cluster_id", {**fields, "peer": "3", "refusals": 1}),
        ("WARNING", "inconsistent_cluster_id", {**fields, "peer": "2", "refusals": 5}),
    ]


def test_the_sender_logs_the_refusal_it_got(caplog: pytest.LogCaptureFixture) -> None:
    clock = Clock()
    refusals = ClusterIdRefusals(OURS, clock)
    request = rpc.vote_request(OURS, 2, epoch=3, local_id=1, last=START, pre_vote=False)
    with caplog.at_level(logging.INFO, logger="pykraft.node"):
        refusals.answered("2", request, GRANTED)
        refusals.answered("2", request, REFUSED)
        refusals.answered("2", request, REFUSED)
        refusals.answered("127.0.0.1:9093", request, REFUSED)
    reason = (f"the peer refused this node's cluster.id {OURS} (meta.properties): this "
              "node, or the peer, was formatted with another cluster id; the node cannot "
              "join the cluster until its directories are formatted with the cluster's id")
    assert _lines(caplog) == [
        ("ERROR", "inconsistent_cluster_id_response",
         {"api": "VOTE", "peer": "2", "cluster_id": OURS, "refusals": 1, "reason": reason}),
        ("ERROR", "inconsistent_cluster_id_response",
         {"api": "VOTE", "peer": "127.0.0.1:9093", "cluster_id": OURS, "refusals": 1,
          "reason": reason}),
    ]


def test_the_sender_is_read_from_every_kraft_request() -> None:
    assert remote_node(_vote(7)) == 7
    assert remote_node(rpc.begin_quorum_request(THEIRS, 1, 8, 3)) == 8
    assert remote_node(rpc.end_quorum_request(THEIRS, 9, 3, ())) == 9
    assert remote_node(rpc.fetch_request(THEIRS, 4, epoch=3, position=START,
                                         high_watermark=None, max_wait_ms=500,
                                         max_bytes=1024)) == 4
    assert remote_node(rpc.fetch_snapshot_request(THEIRS, 5, epoch=3, snapshot_id=START,
                                                  position=0, max_bytes=1024)) == 5
    assert remote_node(rpc.describe_quorum_request()) is None
