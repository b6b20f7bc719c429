"""Issue 26, item 1: a Kafka broker with two ``log.dirs`` on a pykraft controller.

Kafka's broker places each new replica in one of its directories and tells the controller
which by AssignReplicasToDirs (API 73; it does so only with more than one directory: with one,
the controller's default is already right). pykraft's controller records each replica's
directory in its image: the metadata shell over its log shows, for every partition of a
topic created through the Kafka broker, the ``directory.id`` of the log dir holding it, and
the Kafka broker logs no ERROR (before API 73 it logged one per refused assignment).
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import oracle_cluster as oracle
import pytest
from confluent_kafka.admin import AdminClient, NewTopic
from kafka_brokers_harness import TOOL_TIMEOUT_S, logged_errors, wait_until
from oracle_cluster import KafkaInstall, Node, OracleCluster
from oracle_kafka import skip_module_off_ci

skip_module_off_ci()
pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

TOPIC = "spread"
PARTITIONS = 6
ADMIN_TIMEOUT_S = 60.0
_DIRECTORIES = re.compile(r"directories=\[([^\]]*)\]")


def _log_dirs(node: Node) -> list[Path]:
    return [node.data / "a", node.data / "b"]


def _two_log_dirs(cluster: OracleCluster) -> None:
    """The Kafka broker's config, before it is formatted: two log dirs instead of one."""
    (broker,) = cluster.brokers
    lines = broker.config.read_text().splitlines()
    broker.config.write_text("".join(
        (f"log.dirs={','.join(str(d) for d in _log_dirs(broker))}" if line.startswith(
            "log.dirs=") else line) + "\n" for line in lines))


@pytest.fixture(scope="module")
def cluster(kafka: KafkaInstall, tmp_path_factory: pytest.TempPathFactory,
            ) -> Iterator[OracleCluster]:
    spec = oracle.ClusterSpec(controllers=(oracle.PYKRAFT,), brokers=(oracle.KAFKA,),
                              release_version=oracle.MIXED_RELEASE_VERSION)
    with oracle.running(tmp_path_factory.mktemp("log-dirs"), kafka, spec,
                 prepare=_two_log_dirs) as (found,):
        yield found


def _directory_id(log_dir: Path) -> str:
    """The ``directory.id`` Kafka's StorageTool wrote in the log dir's meta.properties."""
    for line in (log_dir / "meta.properties").read_text().splitlines():
        if line.startswith("directory.id="):
            return line.partition("=")[2]
    raise AssertionError(f"no directory.id in {log_dir}")


def _placed(broker: Node) -> dict[int, str]:
    """Partition -> the directory id of the log dir Kafka's broker put it in."""
    return {int(child.name.rpartition("-")[2]): _directory_id(log_dir)
            for log_dir in _log_dirs(broker) for child in log_dir.iterdir()
            if child.is_dir() and child.name.rpartition("-")[0] == TOPIC}


def _image_directories(controller: Node) -> dict[int, str]:
    """Partition -> its one replica's directory in the pykraft controller's image, as
    pykraft's metadata shell replays the controller's metadata log."""
    found: dict[int, str] = {}
    for partition in range(PARTITIONS):
        done = subprocess.run(
            [sys.executable, "-m", "pykraft", "metadata-shell", "--directory",
             str(controller.data), "--", "cat", f"/image/topics/byName/{TOPIC}/{partition}"],
            capture_output=True, text=True, timeout=TOOL_TIMEOUT_S, check=False,
            stdin=subprocess.DEVNULL)
        match = _DIRECTORIES.search(done.stdout)
        if match is not None:
            found[partition] = match.group(1)
    return found


def test_replicas_directories_reach_the_pykraft_controllers_image(
        cluster: OracleCluster) -> None:
    (broker,) = cluster.brokers
    (controller,) = cluster.controllers
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    for future in admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1)],
                                      request_timeout=ADMIN_TIMEOUT_S).values():
        future.result(timeout=ADMIN_TIMEOUT_S)
    wait_until("every partition placed in a log dir",
               lambda: len(_placed(broker)) == PARTITIONS)
    placed = _placed(broker)
    assert len(set(placed.values())) == 2  # Kafka spreads them over both directories
    wait_until("the controller's image holding where the broker placed each replica",
               lambda: _image_directories(controller) == placed)
    assert logged_errors(broker) == []
