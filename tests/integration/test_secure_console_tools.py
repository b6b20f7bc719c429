"""The console tools and ``features`` over ``cluster up --secure``'s SASL_SSL listeners with
the printed ``client.properties``: console-producer writes, console-consumer reads the same
records back, a wrong password given as a ``--producer-property`` (it wins over the file) is
refused at once with nothing written, and ``features describe`` answers through a broker and
through the controller. One cluster of 1 controller and 2 brokers for the module."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Iterator

import pytest
from process_harness import wait_for

from pykraft.errors import PyKraftError
from pykraft.tools.admin_client import AdminClient, admin_settings
from pykraft.tools.local_cluster import LocalCluster

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]
LINES = ["k1:first", "k2:second", "k3:third"]
SCRAM_JAAS = ('org.apache.kafka.common.security.scram.ScramLoginModule required '
              'username="admin" password="wrong";')


def cli(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pykraft", *args], input=stdin,
                          capture_output=True, text=True, timeout=120, check=False)


def _brokers_seen(cluster: LocalCluster) -> int | None:
    """How many brokers Metadata lists over SASL_SSL (None: no answer yet)."""
    settings = admin_settings(cluster.bootstrap_servers,
                              cluster.security_files.client_properties)

    async def run() -> int:
        async with AdminClient(settings) as admin:
            return len((await admin.metadata([])).brokers)
    try:
        return asyncio.run(asyncio.wait_for(run(), 10))
    except (PyKraftError, OSError, TimeoutError):  # not up yet: wait_for polls
        return None


@pytest.fixture(scope="module")
def secure(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    """``cluster up --secure`` with 1 controller and 2 brokers, both serving."""
    directory = tmp_path_factory.mktemp("secure") / "cluster"
    started = cli("cluster", "up", "--secure", "--detach", "--controllers", "1", "--brokers",
                  "2", "--dir", str(directory), "--override", "pykraft.shutdown.timeout.ms=3000")
    try:
        assert started.returncode == 0, started.stderr
        cluster = LocalCluster.load(directory)
        wait_for("both brokers serving over SASL_SSL",
                 lambda: True if _brokers_seen(cluster) == 2 else None, 60.0)
        yield cluster
    finally:
        if (directory / "cluster.json").exists():
            cluster = LocalCluster.load(directory)
            for node_id in cluster.nodes:
                cluster.kill(node_id)


def _client(cluster: LocalCluster) -> str:
    return str(cluster.security_files.client_properties)


def _produce(cluster: LocalCluster, topic: str, *extra: str
             ) -> subprocess.CompletedProcess[str]:
    return cli("console-producer", "--bootstrap-server", cluster.bootstrap_servers, "--topic",
               topic, "--producer.config", _client(cluster), "--property", "parse.key=true",
               "--property", "key.separator=:", "--sync", *extra,
               stdin="".join(f"{line}\n" for line in LINES))


def _consume(cluster: LocalCluster, topic: str) -> subprocess.CompletedProcess[str]:
    return cli("console-consumer", "--bootstrap-server", cluster.bootstrap_servers,
               "--topic", topic, "--from-beginning", "--max-messages", str(len(LINES)),
               "--timeout-ms", "30000", "--property", "print.key=true",
               "--property", "key.separator=:", "--consumer.config",
               _client(cluster))


def test_console_producer_and_consumer_round_trip_over_sasl_ssl(secure: LocalCluster) -> None:
    client = _client(secure)
    created = cli("topics", "--bootstrap-server", secure.bootstrap_servers,
                  "--command-config", client, "--create", "--topic", "console",
                  "--partitions", "1", "--replication-factor", "2")
    assert created.returncode == 0, created.stderr
    produced = _produce(secure, "console")
    assert produced.returncode == 0, produced.stderr
    consumed = _consume(secure, "console")
    assert consumed.returncode == 0, consumed.stderr
    assert consumed.stdout.splitlines() == LINES
    assert f"Processed a total of {len(LINES)} messages" in consumed.stderr


def test_a_wrong_password_property_wins_over_the_file_and_is_refused(secure: LocalCluster) -> None:
    client = _client(secure)
    created = cli("topics", "--bootstrap-server", secure.bootstrap_servers,
                  "--command-config", client, "--create", "--topic", "refused",
                  "--partitions", "1", "--replication-factor", "1")
    assert created.returncode == 0, created.stderr
    refused = _produce(secure, "refused", "--producer-property",
                       f"sasl.jaas.config={SCRAM_JAAS}")
    assert refused.returncode == 1
    assert "Authentication failed" in refused.stderr
    consumed = cli("get-offsets", "--bootstrap-server", secure.bootstrap_servers,
                   "--command-config", client, "--topic", "refused")
    assert consumed.returncode == 0, consumed.stderr
    assert consumed.stdout.split() == ["refused:0:0"]


@pytest.mark.parametrize("bootstrap", ["--bootstrap-server", "--bootstrap-controller"])
def test_features_describe_with_the_command_config(secure: LocalCluster, bootstrap: str) -> None:
    cluster = secure
    address = (cluster.bootstrap_servers if bootstrap == "--bootstrap-server"
               else cluster.bootstrap_controllers)
    described = cli("features", bootstrap, address, "--command-config",
                    _client(secure), "describe", "--timeout", "30")
    assert described.returncode == 0, described.stderr
    lines = described.stdout.splitlines()
    assert any(line.startswith("Feature: metadata.version\tSupportedMinVersion: ")
               for line in lines), lines
    assert all("\tEpoch: " in line for line in lines)
