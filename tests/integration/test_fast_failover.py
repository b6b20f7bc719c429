"""pykraft's fast failover on real processes (1 controller, 3 brokers on 127.0.0.1): a
SIGKILLed partition leader is fenced on its refused listeners and an idempotent acks=all
producer is acknowledged again long before the broker's session could have expired; a
SIGSTOPped leader, probed while paused (its heartbeats overdue), is not fenced."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import confluent_kafka
import pytest
from confluent_kafka.admin import AdminClient, NewTopic
from process_harness import wait_for

from pykraft.tools.local_cluster import LocalCluster

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

BENCH = Path(__file__).parents[2] / "bench" / "failover_leader.py"
SESSION_TIMEOUT_MS = 30_000


def test_a_killed_leader_is_replaced_long_before_its_session_could_expire(
        tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(BENCH), "--kills", "1", "--dir", str(tmp_path),
         "--session-timeout-ms", str(SESSION_TIMEOUT_MS), "--json"],
        capture_output=True, text=True, timeout=240, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    kill = json.loads(done.stdout.splitlines()[-1])["kills"][0]
    assert kill["fenced_after_ms"] is not None  # the controller logged a fence on refusals
    # acknowledged again within half the session: its expiry cannot have fenced the broker
    assert kill["unavailable_ms"] < SESSION_TIMEOUT_MS / 2


def _lines(log: Path, event: str, broker: int) -> int:
    return sum(f"event={event} broker={broker} " in line
               for line in log.read_text(errors="replace").splitlines())


def _leader(bootstrap: str, topic: str) -> int | None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    try:
        partition = admin.list_topics(topic, timeout=5).topics[topic].partitions.get(0)
    except confluent_kafka.KafkaException:
        return None
    return None if partition is None or partition.leader < 0 else partition.leader


def _create(bootstrap: str, topic: str, replicas: list[int]) -> bool | None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    new = NewTopic(topic, 1, replica_assignment=[replicas])
    try:
        admin.create_topics([new])[topic].result(10)
    except confluent_kafka.KafkaException as exc:
        if exc.args[0].code() != confluent_kafka.KafkaError.TOPIC_ALREADY_EXISTS:
            return None  # brokers not unfenced yet: try again
    return True


def test_a_paused_leader_probed_while_paused_is_not_fenced(tmp_path: Path) -> None:
    cluster = LocalCluster.create(tmp_path / "cluster", 1, {
        "broker.session.timeout.ms": "20000", "pykraft.shutdown.timeout.ms": "3000"},
        brokers=3)
    try:
        cluster.start_all()
        cluster.wait_listening(list(cluster.nodes))
        victim, *others = cluster.brokers
        bootstrap = cluster.bootstrap_servers
        wait_for("the topic", lambda: _create(bootstrap, "t", [victim, *others]))
        wait_for("its leader", lambda: _leader(bootstrap, "t") == victim or None)
        log = cluster.nodes[cluster.controllers[0]].log
        probed = _lines(log, "broker_listeners_not_refused", victim)
        cluster.signal(victim, signal.SIGSTOP)
        try:  # its heartbeats stop: two intervals (4 s) later the controller probes it
            wait_for("a probe of the paused broker", lambda: _lines(
                log, "broker_listeners_not_refused", victim) > probed or None, timeout_s=15)
        finally:
            cluster.signal(victim, signal.SIGCONT)
        assert _lines(log, "broker_listeners_refused", victim) == 0
        assert _leader(bootstrap, "t") == victim  # never fenced: leadership never moved
    finally:
        for node_id in cluster.nodes:
            cluster.kill(node_id)
