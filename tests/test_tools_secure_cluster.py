"""What ``cluster up --secure`` writes, checked without starting a process: every node's
configuration loads as a SASL_SSL node (Kafka's keys, none unknown), the bootstrap
checkpoint holds the admin's SCRAM credentials, key and password files are 0600, the client
files log in as admin over TLS, a restart must say --secure, and delete removes it all.
The processes themselves run in tests/integration/test_secure_cluster.py."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pykraft.cli.main import app
from pykraft.config.authorizer import STANDARD_AUTHORIZER
from pykraft.config.broker_configs import unknown_key_warnings
from pykraft.config.properties import load_properties
from pykraft.config.server import ServerConfig
from pykraft.records.metadata import UserScramCredentialRecord
from pykraft.runtime.settings import load_settings
from pykraft.security.session import SecurityProtocol
from pykraft.storage.bootstrap import read_bootstrap_checkpoint
from pykraft.tools.admin_client import client_security
from pykraft.tools.local_cluster import ClusterError, LocalCluster


@pytest.fixture
def cluster(tmp_path: Path) -> LocalCluster:
    return LocalCluster.create(tmp_path / "c", 1, {"pykraft.shutdown.timeout.ms": "3000"},
                               brokers=2, secure=True)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_every_node_loads_as_a_sasl_ssl_node(cluster: LocalCluster) -> None:
    for node_id, node in cluster.nodes.items():
        settings = load_settings(ServerConfig.load(node.config))
        assert settings.config_warnings == (), node_id
        assert settings.controller_tls is not None
        assert settings.controller_sasl is not None
        assert (settings.controller_sasl.mechanism, settings.controller_sasl.username) == (
            "PLAIN", "controller")
        props = load_properties(node.config)
        assert props["authorizer.class.name"] == STANDARD_AUTHORIZER
        assert props["super.users"] == "User:admin;User:controller"
        if node_id in cluster.controllers:
            (listener,) = settings.controller_listeners
            assert listener.protocol == SecurityProtocol.SASL_SSL
            assert listener.sasl is not None and listener.tls is not None
            assert listener.sasl.mechanisms == ("PLAIN", "SCRAM-SHA-512", "SCRAM-SHA-256")
        else:
            broker = settings.broker
            assert broker is not None and broker.inter_broker_listener == "SASL_SSL"
            (listener,) = broker.listeners
            assert (listener.name, listener.protocol) == ("SASL_SSL", SecurityProtocol.SASL_SSL)
            assert listener.sasl is not None
            assert listener.sasl.mechanisms == ("SCRAM-SHA-512", "SCRAM-SHA-256")
            assert broker.inter_broker_tls is not None and broker.inter_broker_sasl is not None
            assert (broker.inter_broker_sasl.mechanism,
                    broker.inter_broker_sasl.username) == ("SCRAM-SHA-512", "admin")


def test_the_authorizer_keys_are_known_keys() -> None:
    """Kafka's StandardAuthorizer reads them: no "isn't a known config" warning."""
    assert unknown_key_warnings(["super.users", "allow.everyone.if.no.acl.found"]) == []


def test_the_admin_credentials_are_bootstrapped(cluster: LocalCluster) -> None:
    for node in cluster.nodes.values():
        records = [r.message for r in read_bootstrap_checkpoint(node.data)]
        assert sorted((r.name, int(r.mechanism)) for r in records
                      if isinstance(r, UserScramCredentialRecord)) == [("admin", 1),
                                                                      ("admin", 2)]


def test_keys_and_passwords_are_private(cluster: LocalCluster) -> None:
    files = cluster.security_files
    private = [files.client_properties, files.librdkafka_properties,
               files.directory / "ca-key.pem", files.directory / "secrets.properties",
               *(n.keystore for n in cluster.nodes.values()),
               *(n.config for n in cluster.nodes.values())]
    assert {str(p): _mode(p) for p in private} == {str(p): 0o600 for p in private}
    password = files.librdkafka_settings()["sasl.password"]
    assert len(password) == 32
    assert password in files.client_properties.read_text()


def test_the_client_files_log_in_as_admin_over_tls(cluster: LocalCluster) -> None:
    security = cluster.security()
    assert security.tls is not None and security.sasl is not None
    assert (security.sasl.mechanism, security.sasl.username) == ("SCRAM-SHA-512", "admin")
    again = client_security(load_properties(cluster.security_files.client_properties))
    assert again.sasl == security.sasl
    rdkafka = cluster.security_files.librdkafka_settings()
    assert rdkafka["bootstrap.servers"] == cluster.bootstrap_servers
    assert rdkafka["ssl.ca.location"] == str(cluster.security_files.ca_file)


def test_a_restart_must_say_secure_and_delete_removes_everything(
        cluster: LocalCluster) -> None:
    props = {"pykraft.shutdown.timeout.ms": "3000"}
    with pytest.raises(ClusterError, match="holds a secure static cluster"):
        LocalCluster.reopen(cluster.base, 1, props, 2)
    reopened = LocalCluster.reopen(cluster.base, 1, props, 2, secure=True)
    assert reopened.secure
    reopened.delete()
    assert not cluster.base.exists()


def test_a_plain_cluster_connects_in_plaintext(tmp_path: Path) -> None:
    plain = LocalCluster.create(tmp_path / "p", 1, format_nodes=False)
    assert (plain.security().tls, plain.security().sasl) == (None, None)
    with pytest.raises(ClusterError, match="is not secure"):
        plain.security_files  # noqa: B018 - the property refuses


def test_quorum_cli_refuses_an_unknown_security_protocol(tmp_path: Path) -> None:
    config = tmp_path / "client.properties"
    config.write_text("security.protocol=KERBEROS\n")
    result = CliRunner().invoke(app, ["metadata-quorum", "--bootstrap-controller",
                                      "127.0.0.1:1", "--command-config", str(config),
                                      "describe", "--status"])
    assert result.exit_code == 1
    assert "security.protocol=KERBEROS is not supported" in result.output
