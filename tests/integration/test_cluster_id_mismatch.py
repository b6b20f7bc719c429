"""Two controllers formatted with different cluster ids say so in their logs.

They never elect a leader (each refuses the other's requests with INCONSISTENT_CLUSTER_ID);
before, nothing was logged at any level and the operator saw only a quorum without leader.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable

import pytest
from process_harness import wait_for

from pykraft.config.server import ServerConfig
from pykraft.ids import random_uuid, uuid_to_str
from pykraft.tools.local_cluster import LocalCluster
from pykraft.tools.storage_tool import FormatRequest, QuorumMode, format_storage

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]


def test_controllers_of_different_clusters_log_the_mismatch(
    make_cluster: Callable[..., LocalCluster],
) -> None:
    cluster = make_cluster(2)
    other_id = uuid_to_str(random_uuid())
    node = cluster.nodes[2]
    shutil.rmtree(node.data)  # node 2 formatted again, for another cluster
    format_storage(FormatRequest(config=ServerConfig.load(node.config), cluster_id=other_id,
                                 mode=QuorumMode.STATIC))
    cluster.start_all()

    def lines(node_id: int, text: str) -> list[str] | None:
        found = [line for line in cluster.nodes[node_id].log.read_text().splitlines()
                 if text in line]
        return found or None

    for receiver, sender, theirs, ours in ((1, 2, other_id, cluster.cluster_id),
                                           (2, 1, cluster.cluster_id, other_id)):
        [warning, *_] = wait_for(f"node {receiver}'s warning", lambda r=receiver: lines(
            r, "event=inconsistent_cluster_id "))
        assert "level=warning" in warning
        assert f"peer={sender} peer_cluster_id={theirs} cluster_id={ours}" in warning
        [answer, *_] = wait_for(f"node {sender}'s refused request", lambda s=sender: lines(
            s, "event=inconsistent_cluster_id_response "))
        assert "level=error" in answer
        assert f"peer={receiver} cluster_id={theirs}" in answer
