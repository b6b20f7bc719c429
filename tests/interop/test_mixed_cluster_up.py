"""``pykraft cluster up --kafka-brokers/--kafka-controllers`` (issue 26, item 6): a user's
local mixed cluster, as the README shows it, started, used, stopped and restarted by the CLI.

One pykraft and one Apache Kafka node in each role: the quorum has a voter of each kind, and
a topic replicated on both brokers is produced through one kind and read through the other.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from kafka_brokers_harness import wait_until
from oracle_cluster import KafkaInstall, unfenced_brokers

from pykraft.tools.local_cluster import LocalCluster

pytestmark = pytest.mark.timeout(300)
DEADLINE_S = 120.0
MESSAGES = [f"m{i}" for i in range(20)]
SHAPE = ("--controllers", "1", "--kafka-controllers", "1", "--brokers", "1",
         "--kafka-brokers", "1")


def pykraft(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pykraft", *args], input=stdin,
                          capture_output=True, text=True, timeout=180, check=False)


@pytest.fixture
def directory(cluster_directory: Path) -> Path:
    return cluster_directory


def wait_unfenced(address: str, brokers: int) -> None:
    wait_until(f"{address} seeing {brokers} unfenced brokers",
               lambda: unfenced_brokers(address) == brokers, DEADLINE_S)


def read_back(broker: str) -> list[str]:
    """The topic's messages, read through ``broker`` by pykraft's console consumer."""
    consumed = pykraft("console-consumer", "--bootstrap-server", broker, "--topic", "mixed",
                       "--from-beginning", "--max-messages", str(len(MESSAGES)))
    assert consumed.returncode == 0, consumed.stderr
    return sorted(consumed.stdout.split())


def test_cluster_up_runs_kafka_nodes_beside_pykraft(kafka: KafkaInstall,
                                                    directory: Path) -> None:
    home = str(kafka.classpath[0].parent)
    up = pykraft("cluster", "up", "--detach", *SHAPE, "--kafka-home", home,
                 "--dir", str(directory))
    assert up.returncode == 0, up.stderr
    assert up.stdout.startswith("Started 1 controllers and 1 brokers (Apache Kafka: "
                                "1 controllers and 1 brokers) of cluster ")
    cluster = LocalCluster.load(directory)
    assert cluster.kafka_nodes == {2, 1001}
    assert sorted(cluster.running()) == [1, 2, 1000, 1001]
    ours, theirs = (cluster.nodes[n].address for n in (1000, 1001))
    for broker in (ours, theirs):
        wait_unfenced(broker, 2)

    created = pykraft("topics", "--bootstrap-server", ours, "--create", "--topic", "mixed",
                      "--partitions", "2", "--replication-factor", "2")
    assert created.returncode == 0, created.stderr
    produced = pykraft("console-producer", "--bootstrap-server", theirs, "--topic", "mixed",
                       "--producer-property", "acks=all", stdin="\n".join(MESSAGES) + "\n")
    assert produced.returncode == 0, produced.stderr
    assert read_back(ours) == sorted(MESSAGES)

    down = pykraft("cluster", "down", "--dir", str(directory))
    assert down.returncode == 0, down.stderr
    assert LocalCluster.load(directory).running() == []

    refused = pykraft("cluster", "up", "--detach", "--controllers", "1", "--brokers", "1",
                      "--dir", str(directory))
    assert refused.returncode == 1
    assert "and 1 Kafka controllers and 1 Kafka brokers" in refused.stderr

    again = pykraft("cluster", "up", "--detach", *SHAPE, "--kafka-home", home,
                    "--dir", str(directory))
    assert again.returncode == 0, again.stderr
    assert again.stdout.startswith("Restarted 1 controllers and 1 brokers (Apache Kafka: ")
    wait_unfenced(theirs, 2)
    assert read_back(theirs) == sorted(MESSAGES)

    deleted = pykraft("cluster", "delete", "--dir", str(directory))
    assert deleted.returncode == 0, deleted.stderr
    assert not directory.exists()
