"""The Prometheus endpoint of real controllers: Kafka's raft metrics and KIP-853's voter,
observer and controller gauges, scraped over HTTP."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from process_harness import TEST_PROPERTIES, Samples, leader_info, scrape, wait_for

from pykraft.tools.local_cluster import LocalCluster, free_ports

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]

RAFT = "kafka_server_raft_metrics_"
CONTROLLER = "kafka_controller_kafkacontroller_"


@pytest.fixture
def started(tmp_path: Path) -> Iterator[Callable[..., tuple[LocalCluster, dict[int, int]]]]:
    """Start a cluster with a metrics port per node; returns it and the ports."""
    created: list[LocalCluster] = []

    def start(controllers: int, *, dynamic: bool) -> tuple[LocalCluster, dict[int, int]]:
        cluster = LocalCluster.create(tmp_path / f"c{len(created)}", controllers,
                                      TEST_PROPERTIES, dynamic=dynamic)
        created.append(cluster)
        ports = dict(zip(cluster.nodes, free_ports(len(cluster.nodes)), strict=True))
        for node_id, port in ports.items():
            cluster.start(node_id, "--override", f"metrics.port={port}",
                          "--override", "metrics.host=127.0.0.1")
        return cluster, ports

    yield start
    for cluster in created:
        for node_id in cluster.nodes:
            cluster.kill(node_id)


def wait_metrics(port: int, expected: dict[str, float],
                 positive: tuple[str, ...] = ()) -> Samples:
    """Scrape until the unlabelled gauges in ``expected`` have those values and those in
    ``positive`` are above 0 (a follower learns the high watermark from a fetch answer
    after it learns the leader)."""
    def probe() -> Samples | None:
        samples = scrape(port)
        if samples is None or any(samples.get((name, ())) != value
                                  for name, value in expected.items()) or any(
                samples.get((name, ()), 0) <= 0 for name in positive):
            return None
        return samples
    found: Samples = wait_for(f"metrics {expected} on port {port}", probe)
    return found


def test_static_quorum_exports_voters_and_raft_metrics(started: Callable[..., tuple[
        LocalCluster, dict[int, int]]]) -> None:
    cluster, ports = started(3, dynamic=False)
    info = leader_info(cluster)
    for node_id, port in ports.items():
        leader = node_id == info.leader_id
        samples = wait_metrics(port, {
            RAFT + "number_of_voters": 3, RAFT + "current_leader": info.leader_id,
            CONTROLLER + "isobserver": 0, CONTROLLER + "ignoredstaticvoters": 0,
        }, positive=(RAFT + "high_watermark",))
        assert samples[(RAFT + "current_epoch", ())] == info.leader_epoch
        state = "leader" if leader else "follower"
        assert samples[(RAFT + "current_state", (("state", state),))] == 1
        assert (RAFT + "log_end_offset", ()) in samples
        assert (RAFT + "commit_latency_avg", ()) in samples
        # KIP-853: the leader alone tracks observers and voter changes
        assert ((RAFT + "number_of_observers", ()) in samples) == leader
        assert ((RAFT + "uncommitted_voter_change", ()) in samples) == leader
        if leader:
            assert samples[(RAFT + "number_of_observers", ())] == 0
            assert samples[(RAFT + "uncommitted_voter_change", ())] == 0


def test_controller_outside_the_voter_set_is_an_observer(started: Callable[..., tuple[
        LocalCluster, dict[int, int]]]) -> None:
    # Dynamic: controller 1 is formatted --standalone (the only voter), controller 2 with
    # --no-initial-controllers, so it follows the leader as an observer.
    cluster, ports = started(2, dynamic=True)
    leader = leader_info(cluster)
    assert leader.leader_id == 1
    wait_metrics(ports[1], {RAFT + "number_of_voters": 1, RAFT + "number_of_observers": 1,
                            CONTROLLER + "isobserver": 0})
    wait_metrics(ports[2], {RAFT + "number_of_voters": 1, CONTROLLER + "isobserver": 1,
                            RAFT + "current_leader": 1})
