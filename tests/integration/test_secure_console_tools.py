"""The console tools and ``features`` over ``cluster up --secure``'s SASL_SSL listeners with
the printed ``client.properties``: console-producer writes, console-consumer reads the same
records back, a wrong password given as a ``--producer-property`` (it wins over the file) is
refused at once with nothing written, and ``features describe`` answers through a broker and
through the controller. The cluster is test_secure_cluster.py's (1 controller, 2 brokers)."""

from __future__ import annotations

import subprocess
import sys

import pytest
from test_secure_cluster import Secure, cli
from test_secure_cluster import secure as secure  # the module's own cluster  # noqa: PLC0414

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]
LINES = ["k1:first", "k2:second", "k3:third"]
SCRAM_JAAS = ('org.apache.kafka.common.security.scram.ScramLoginModule required '
              'username="admin" password="wrong";')


def _produce(secure: Secure, topic: str, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pykraft", "console-producer", "--bootstrap-server",
         secure.cluster.bootstrap_servers, "--topic", topic, "--producer.config",
         str(secure.files.client_properties), "--property", "parse.key=true",
         "--property", "key.separator=:", "--sync", *extra],
        input="".join(f"{line}\n" for line in LINES), capture_output=True, text=True,
        timeout=120, check=False)


def _consume(secure: Secure, topic: str) -> subprocess.CompletedProcess[str]:
    return cli("console-consumer", "--bootstrap-server", secure.cluster.bootstrap_servers,
               "--topic", topic, "--from-beginning", "--max-messages", str(len(LINES)),
               "--timeout-ms", "30000", "--property", "print.key=true",
               "--property", "key.separator=:", "--consumer.config",
               str(secure.files.client_properties))


def test_console_producer_and_consumer_round_trip_over_sasl_ssl(secure: Secure) -> None:
    client = str(secure.files.client_properties)
    created = cli("topics", "--bootstrap-server", secure.cluster.bootstrap_servers,
                  "--command-config", client, "--create", "--topic", "console",
                  "--partitions", "1", "--replication-factor", "2")
    assert created.returncode == 0, created.stderr
    produced = _produce(secure, "console")
    assert produced.returncode == 0, produced.stderr
    consumed = _consume(secure, "console")
    assert consumed.returncode == 0, consumed.stderr
    assert consumed.stdout.splitlines() == LINES
    assert f"Processed a total of {len(LINES)} messages" in consumed.stderr


def test_a_wrong_password_property_wins_over_the_file_and_is_refused(secure: Secure) -> None:
    client = str(secure.files.client_properties)
    created = cli("topics", "--bootstrap-server", secure.cluster.bootstrap_servers,
                  "--command-config", client, "--create", "--topic", "refused",
                  "--partitions", "1", "--replication-factor", "1")
    assert created.returncode == 0, created.stderr
    refused = _produce(secure, "refused", "--producer-property",
                       f"sasl.jaas.config={SCRAM_JAAS}")
    assert refused.returncode == 1
    assert "Authentication failed" in refused.stderr
    consumed = cli("get-offsets", "--bootstrap-server", secure.cluster.bootstrap_servers,
                   "--command-config", client, "--topic", "refused")
    assert consumed.returncode == 0, consumed.stderr
    assert consumed.stdout.split() == ["refused:0:0"]


@pytest.mark.parametrize("bootstrap", ["--bootstrap-server", "--bootstrap-controller"])
def test_features_describe_with_the_command_config(secure: Secure, bootstrap: str) -> None:
    cluster = secure.cluster
    address = (cluster.bootstrap_servers if bootstrap == "--bootstrap-server"
               else cluster.bootstrap_controllers)
    described = cli("features", bootstrap, address, "--command-config",
                    str(secure.files.client_properties), "describe", "--timeout", "30")
    assert described.returncode == 0, described.stderr
    lines = described.stdout.splitlines()
    assert any(line.startswith("Feature: metadata.version\tSupportedMinVersion: ")
               for line in lines), lines
    assert all("\tEpoch: " in line for line in lines)
