"""Log lines for INCONSISTENT_CLUSTER_ID on both ends of a KRaft request.

Two controllers formatted with different cluster ids never elect a leader together. The raft
core answers their requests with INCONSISTENT_CLUSTER_ID, as Kafka does; without a log line
the operator only saw a quorum that never elects. The receiving node names the remote node
and both cluster ids (WARN); the sending node logs the answer it got (ERROR, as Kafka logs
"Unexpected error INCONSISTENT_CLUSTER_ID in VOTE response") with the reason in words: a
broker formatted for another cluster waits for ever for metadata it is refused, and
``cluster up`` reports that line (:data:`STARTUP_REFUSAL`) instead of a node that does not
listen. The requests repeat every
election or fetch timeout, so each peer and side logs at most once per interval, with the
number of refusals since its previous line.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pykraft.protocol.apis import ApiKey
from pykraft.protocol.codec import api_key_of
from pykraft.protocol.errors import ErrorCode
from pykraft.raft import rpc
from pykraft.runtime.logfmt import event

log = logging.getLogger("pykraft.node")

INTERVAL_MS = 60_000
#: What the line a node cannot start past begins its event with, for a tool that reads logs.
STARTUP_REFUSAL = "event=inconsistent_cluster_id_response "


def remote_node(request: Any) -> int | None:
    """The node id a KRaft request names as its sender (None for admin requests)."""
    if isinstance(request, rpc.FetchRequest):
        return rpc.fetch_replica_id(request)
    if isinstance(request, rpc.FetchSnapshotRequest):
        return int(request.replica_id)
    if isinstance(request, rpc.VoteRequest):
        vote = rpc.vote_partition(request)
        return None if isinstance(vote, ErrorCode) else int(vote.replica_id)
    if isinstance(request, rpc.BeginQuorumEpochRequest | rpc.EndQuorumEpochRequest):
        part = (rpc.begin_quorum_partition(request)
                if isinstance(request, rpc.BeginQuorumEpochRequest)
                else rpc.end_quorum_partition(request))
        return None if isinstance(part, ErrorCode) else int(part.leader_id)
    return None


@dataclass(slots=True)
class _Window:
    logged_at_ms: int
    refusals: int = 0


class ClusterIdRefusals:
    """Rate-limited lines for requests refused, or answered, with INCONSISTENT_CLUSTER_ID."""

    def __init__(self, cluster_id: str | None, clock: Callable[[], int],
                 interval_ms: int = INTERVAL_MS) -> None:
        self._cluster_id = cluster_id
        self._clock = clock
        self._interval_ms = interval_ms
        self._windows: dict[tuple[str, str], _Window] = {}

    def received(self, request: Any, response: Any) -> None:
        """An inbound request was answered; log it if it came from another cluster."""
        if not _refused(response):
            return
        sender = remote_node(request)
        peer = "-" if sender is None else str(sender)
        refusals = self._due("received", peer)
        if refusals:
            event(log, "inconsistent_cluster_id", level=logging.WARNING,
                  api=ApiKey(api_key_of(request)).name, peer=peer,
                  peer_cluster_id=request.cluster_id, cluster_id=self._cluster_id,
                  refusals=refusals)

    def answered(self, peer: str, request: Any, response: Any) -> None:
        """``peer`` (a node id, or a bootstrap server's address) answered our request; log
        it if the peer refused our cluster id."""
        if not _refused(response):
            return
        refusals = self._due("answered", peer)
        if refusals:
            event(log, "inconsistent_cluster_id_response", level=logging.ERROR,
                  api=ApiKey(api_key_of(request)).name, peer=peer,
                  cluster_id=self._cluster_id, refusals=refusals,
                  reason=f"the peer refused this node's cluster.id {self._cluster_id} "
                         "(meta.properties): this node, or the peer, was formatted with "
                         "another cluster id; the node cannot join the cluster until its "
                         "directories are formatted with the cluster's id")

    def _due(self, side: str, peer: str) -> int:
        """Refusals to report now (counting this one), or 0 within the interval."""
        now = self._clock()
        window = self._windows.get((side, peer))
        if window is None:
            self._windows[(side, peer)] = _Window(now)
            return 1
        window.refusals += 1
        if now - window.logged_at_ms < self._interval_ms:
            return 0
        refusals, window.refusals, window.logged_at_ms = window.refusals, 0, now
        return refusals


def _refused(response: Any) -> bool:
    return bool(rpc.response_header(response).error == ErrorCode.INCONSISTENT_CLUSTER_ID)

