"""Two controllers formatted with different cluster ids say so in their logs.

They never elect a leader (each refuses the other's requests with INCONSISTENT_CLUSTER_ID);
before, nothing was logged at any level and the operator saw only a quorum without leader.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from process_harness import wait_for
from typer.testing import CliRunner

from pykraft.cli.main import app
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


def test_cluster_up_says_a_broker_was_formatted_for_another_cluster(tmp_path: Path) -> None:
    """The broker is refused the metadata it waits for, so it never listens: ``cluster up``
    reports the node's ERROR line (and stops what it started) instead of waiting out its
    listen timeout to say only that the node does not listen."""
    directory = tmp_path / "cluster"
    cluster = LocalCluster.create(directory, 1, {}, 1)
    broker = cluster.nodes[cluster.brokers[0]]
    shutil.rmtree(broker.data)
    other_id = uuid_to_str(random_uuid())
    format_storage(FormatRequest(config=ServerConfig.load(broker.config), cluster_id=other_id,
                                 mode=QuorumMode.STATIC))
    try:
        result = CliRunner().invoke(app, ["cluster", "up", "--controllers", "1", "--brokers",
                                          "1", "--dir", str(directory), "--detach"])
        assert result.exit_code == 1, result.output
        assert f"node {broker.node_id} cannot start: " in result.output
        assert "event=inconsistent_cluster_id_response" in result.output
        assert f"the peer refused this node's cluster.id {other_id}" in result.output
        assert LocalCluster.load(directory).running() == []
    finally:
        LocalCluster.load(directory).stop_all()
