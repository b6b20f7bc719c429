"""Faults with real processes: a killed broker is fenced after its session and loses its
leaderships, and comes back unfenced; killing the active controller while a topic is
being created leaves either no topic or the whole topic, and the client's retry succeeds."""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from pathlib import Path

from broker_harness import fenced_brokers, partition_leaders, wait_for

from pykraft.tools.local_cluster import LocalCluster

sys.path.insert(0, str(Path(__file__).parent.parent / "integration"))
from process_harness import leader_info

TIMEOUT_S = 30


def _create(cluster: LocalCluster, name: str, partitions: int) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    admin.create_topics([NewTopic(name, num_partitions=partitions, replication_factor=3)],
                        operation_timeout=TIMEOUT_S)[name].result(TIMEOUT_S)


def test_killed_broker_is_fenced_loses_leadership_and_returns_unfenced(
    make_cluster: Callable[[], LocalCluster],
) -> None:
    cluster = make_cluster()
    _create(cluster, "fault", 6)
    victim, witness = cluster.brokers[0], cluster.brokers[1]
    wait_for("every partition led", lambda: (
        leaders if len(leaders := partition_leaders(cluster, witness, "fault")) == 6
        and -1 not in leaders else None))

    cluster.kill(victim)
    wait_for(f"broker {victim} fenced", lambda: (
        True if (seen := fenced_brokers(cluster, witness)) and seen.get(victim) else None))
    leaders = wait_for(f"no partition led by {victim}", lambda: (
        found if victim not in (found := partition_leaders(cluster, witness, "fault"))
        else None))
    assert set(leaders) <= set(cluster.brokers) - {victim}

    cluster.start(victim)
    wait_for(f"broker {victim} unfenced", lambda: (
        True if (seen := fenced_brokers(cluster, witness)) and seen.get(victim) is False
        else None))


def test_controller_killed_during_topic_creation_retry_succeeds_without_half_topic(
    make_cluster: Callable[[], LocalCluster],
) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    cluster = make_cluster()
    active = leader_info(cluster).leader_id
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    outcome: list[BaseException | None] = []

    def create() -> None:
        future = admin.create_topics([NewTopic("racy", num_partitions=6, replication_factor=3)],
                                     operation_timeout=TIMEOUT_S)["racy"]
        try:
            future.result(TIMEOUT_S)
            outcome.append(None)
        except Exception as exc:  # the client's verdict, inspected below
            outcome.append(exc)

    creator = threading.Thread(target=create)
    creator.start()
    cluster.kill(active)
    creator.join(TIMEOUT_S + 5)
    assert outcome, "create_topics never completed"

    def consistent() -> list[int] | None:
        leaders = [partition_leaders(cluster, b, "racy") for b in cluster.brokers]
        # Every broker shows the same thing, and it is never a partial topic.
        assert all(len(seen) in (0, 6) for seen in leaders), leaders
        return leaders[0] if all(len(seen) == 6 for seen in leaders) else None

    if outcome[0] is not None:  # the first attempt failed: the client retries
        def retry() -> bool | None:
            future = admin.create_topics(
                [NewTopic("racy", num_partitions=6, replication_factor=3)],
                operation_timeout=TIMEOUT_S)["racy"]
            try:
                future.result(TIMEOUT_S)
            except Exception as exc:
                return True if "TOPIC_ALREADY_EXISTS" in str(exc) else None
            return True
        wait_for("the retried creation to succeed", retry)
    assert len(wait_for("racy on every broker", consistent)) == 6
