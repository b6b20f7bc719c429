"""The console tools and ``features`` connect as their properties say: ``--producer.config`` /
``--consumer.config`` files with ``--producer-property`` / ``--consumer-property`` winning
(Kafka's precedence), ``features --command-config`` for a broker or the controllers, and a
bad security key is refused with its reason before any connection. No cluster here: the
connection is replaced by one that records its settings (the real round trip is
tests/integration/test_secure_console_tools.py)."""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from pykraft.cli.main import app
from pykraft.tools import broker_clients, features_tool
from pykraft.tools.admin_client import AdminError, AdminSettings, ClientSecurity
from pykraft.tools.secure_cluster import SecureCluster

PLAIN_JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
              'username="bob" password="secret";')


@pytest.fixture(scope="module")
def client_properties(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``cluster up --secure``'s client.properties: SASL_SSL, SCRAM-SHA-512 as admin."""
    files = SecureCluster(tmp_path_factory.mktemp("secure"))
    files.create(datetime.datetime.now(datetime.UTC))
    files.write_client_files("127.0.0.1:9092")
    return files.client_properties


@pytest.fixture
def recorded(monkeypatch: pytest.MonkeyPatch) -> list[AdminSettings]:
    """The settings each console tool opens its brokers with (then it stops)."""
    seen: list[AdminSettings] = []

    class Recording:
        def __init__(self, settings: AdminSettings) -> None:
            seen.append(settings)

        async def __aenter__(self) -> Any:
            raise AdminError("recorded")

        async def __aexit__(self, *exc: object) -> None:
            return None

    monkeypatch.setattr(broker_clients, "BrokerClients", Recording)
    return seen


TOOLS = {
    "console-producer": ("--producer.config", "--producer-property"),
    "console-consumer": ("--consumer.config", "--consumer-property"),
}


def _run(tool: str, *args: str) -> Any:
    return CliRunner().invoke(app, [tool, "--bootstrap-server", "127.0.0.1:9092",
                                    "--topic", "t", *args], input="")


@pytest.mark.parametrize("tool", TOOLS)
def test_the_config_file_secures_the_connection(tool: str, client_properties: Path,
                                                recorded: list[AdminSettings]) -> None:
    result = _run(tool, TOOLS[tool][0], str(client_properties))
    assert "recorded" in result.stderr, result.output
    (settings,) = recorded
    assert settings.tls is not None
    assert settings.sasl is not None
    assert (settings.sasl.mechanism, settings.sasl.username) == ("SCRAM-SHA-512", "admin")
    assert settings.client_id == tool
    assert settings.bootstrap == (("127.0.0.1", 9092),)


@pytest.mark.parametrize("tool", TOOLS)
def test_a_property_wins_over_the_file(tool: str, client_properties: Path,
                                       recorded: list[AdminSettings]) -> None:
    config, prop = TOOLS[tool]
    _run(tool, config, str(client_properties),
         prop, "sasl.mechanism=PLAIN", prop, f"sasl.jaas.config={PLAIN_JAAS}",
         prop, "client.id=mine")
    (settings,) = recorded
    assert settings.tls is not None  # still SASL_SSL from the file
    assert settings.sasl is not None
    assert (settings.sasl.mechanism, settings.sasl.username) == ("PLAIN", "bob")
    assert settings.client_id == "mine"


@pytest.mark.parametrize("tool", TOOLS)
def test_properties_alone_secure_the_connection(tool: str,
                                                recorded: list[AdminSettings]) -> None:
    prop = TOOLS[tool][1]
    _run(tool, prop, "security.protocol=SASL_PLAINTEXT", prop, "sasl.mechanism=PLAIN",
         prop, f"sasl.jaas.config={PLAIN_JAAS}")
    (settings,) = recorded
    assert settings.tls is None
    assert settings.sasl is not None and settings.sasl.username == "bob"


@pytest.mark.parametrize("tool", TOOLS)
def test_no_security_keys_is_plaintext(tool: str, recorded: list[AdminSettings]) -> None:
    _run(tool)
    (settings,) = recorded
    assert (settings.tls, settings.sasl) == (None, None)


@pytest.mark.parametrize("tool", TOOLS)
@pytest.mark.parametrize(("props", "message"), [
    (["security.protocol=SASL_BOGUS"], "security.protocol=SASL_BOGUS is not supported"),
    (["security.protocol=SASL_SSL"], "sasl.jaas.config is not set"),
    (["security.protocol=SSL", "ssl.truststore.location=/nonexistent/ca.pem",
      "ssl.truststore.type=PEM"], "ssl.truststore.location"),
])
def test_a_bad_security_key_is_refused_before_connecting(
        tool: str, props: list[str], message: str, recorded: list[AdminSettings]) -> None:
    prop = TOOLS[tool][1]
    result = _run(tool, *(arg for p in props for arg in (prop, p)))
    assert result.exit_code == 1
    assert message in result.stderr
    assert recorded == []


# -- features ---------------------------------------------------------------------------------

@pytest.fixture
def features_calls(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Any, ClientSecurity]]:
    calls: list[tuple[Any, ClientSecurity]] = []

    async def describe(bootstrap: Any, *, timeout_s: float,
                       security: ClientSecurity) -> features_tool.FeaturesDescription:
        calls.append((bootstrap, security))
        return features_tool.FeaturesDescription(
            [features_tool.FeatureLevels("kraft.version", 0, 1, 1, 3)])

    async def upgrade(bootstrap: Any, name: str, level: int, *, dry_run: bool,
                      timeout_s: float, security: ClientSecurity) -> None:
        calls.append((bootstrap, security))

    monkeypatch.setattr(features_tool, "describe_features", describe)
    monkeypatch.setattr(features_tool, "upgrade_feature", upgrade)
    return calls


@pytest.mark.parametrize("bootstrap", ["--bootstrap-server", "--bootstrap-controller"])
def test_features_connects_with_the_command_config(
        bootstrap: str, client_properties: Path,
        features_calls: list[tuple[Any, ClientSecurity]]) -> None:
    for command in (["describe"], ["upgrade", "--feature", "kraft.version=1"]):
        result = CliRunner().invoke(app, ["features", bootstrap, "127.0.0.1:9093",
                                          "--command-config", str(client_properties),
                                          *command])
        assert result.exit_code == 0, result.output
    assert len(features_calls) == 2
    for address, security in features_calls:
        assert address == (("127.0.0.1", 9093),)
        assert security.tls is not None
        assert security.sasl is not None and security.sasl.username == "admin"


def test_features_without_a_command_config_is_plaintext(
        features_calls: list[tuple[Any, ClientSecurity]]) -> None:
    result = CliRunner().invoke(app, ["features", "--bootstrap-server", "127.0.0.1:9093",
                                      "describe"])
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("Feature: kraft.version\tSupportedMinVersion: 0")
    assert features_calls == [((("127.0.0.1", 9093),), ClientSecurity())]


@pytest.mark.parametrize(("args", "message"), [
    (["--bootstrap-server", "a:1", "--bootstrap-controller", "b:2"],
     "exactly one of --bootstrap-controller and --bootstrap-server is required"),
    (["--bootstrap-server", "a:1", "--command-config", "/nonexistent.properties"],
     "Properties file /nonexistent.properties does not exist."),
])
def test_features_refuses_bad_global_options(
        args: list[str], message: str,
        features_calls: list[tuple[Any, ClientSecurity]]) -> None:
    result = CliRunner().invoke(app, ["features", *args, "describe"])
    assert (result.exit_code, result.stderr) == (1, f"Error: {message}\n")
    assert features_calls == []


def test_features_refuses_a_bad_security_key(
        tmp_path: Path, features_calls: list[tuple[Any, ClientSecurity]]) -> None:
    config = tmp_path / "bad.properties"
    config.write_text("security.protocol=SASL_SSL\n")
    result = CliRunner().invoke(app, ["features", "--bootstrap-controller", "a:1",
                                      "--command-config", str(config), "describe"])
    assert result.exit_code == 1
    assert "sasl.jaas.config is not set" in result.stderr
    assert features_calls == []


@pytest.mark.parametrize(("path", "options"), [
    (["console-producer"], ["--producer.config", "--producer-property"]),
    (["console-consumer"], ["--consumer.config", "--consumer-property"]),
    (["features"], ["--bootstrap-server", "--bootstrap-controller", "--command-config"]),
])
def test_help_names_the_security_options(path: list[str], options: list[str]) -> None:
    result = CliRunner().invoke(app, [*path, "--help"])
    assert result.exit_code == 0
    for option in options:
        assert option in result.stdout
    assert "sasl" in result.stdout
