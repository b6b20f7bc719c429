"""``pykraft configs`` against real processes on 127.0.0.1: one controller and one broker
with a PLAINTEXT listener and a SASL_PLAINTEXT one (SCRAM-SHA-256/512), formatted with an
``--add-scram`` admin credential. Topic and broker configs altered, described and deleted
(also through ``--bootstrap-controller``); SCRAM credentials added, described and deleted,
then used to log in, which proves the tool salted the password as the broker checks it; the
tool itself over the SASL listener with ``--command-config``."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from pykraft.config.server import ServerConfig
from pykraft.tools.local_cluster import HOST, LocalCluster, free_ports
from pykraft.tools.storage_tool import FormatRequest, QuorumMode, format_storage

sys.path.insert(0, str(Path(__file__).parent / "integration"))
from process_harness import wait_for

pytestmark = pytest.mark.timeout(180)
CONTROLLER_ID, BROKER_ID = 1, 1000
SCRAM_JAAS = "org.apache.kafka.common.security.scram.ScramLoginModule required " \
             'username="{user}" password="{password}";'


@dataclass(frozen=True)
class Cluster:
    cluster: LocalCluster
    sasl_address: str
    base: Path

    @property
    def controller_address(self) -> str:
        return self.cluster.nodes[CONTROLLER_ID].address

    def command_config(self, user: str, password: str, mechanism: str) -> Path:
        path = self.base / f"{user}-{mechanism}-{password}.properties"
        path.write_text("security.protocol=SASL_PLAINTEXT\n"
                        f"sasl.mechanism={mechanism}\n"
                        f"sasl.jaas.config={SCRAM_JAAS.format(user=user, password=password)}\n"
                        "default.api.timeout.ms=10000\n")
        return path


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    base = tmp_path_factory.mktemp("configs")
    cluster = LocalCluster.create(base / "c", 1, {"pykraft.shutdown.timeout.ms": "3000"},
                                  brokers=1, format_nodes=False)
    broker = cluster.nodes[BROKER_ID]
    sasl_port = free_ports(1)[0]
    with broker.config.open("a") as config:  # later keys win: a second, SASL listener
        config.write(f"listeners=PLAINTEXT://{broker.address},SASL://{HOST}:{sasl_port}\n"
                     "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,"
                     "SASL:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT\n"
                     "listener.name.sasl.sasl.enabled.mechanisms=SCRAM-SHA-256,SCRAM-SHA-512\n"
                     "inter.broker.listener.name=PLAINTEXT\n")
    for node in cluster.nodes.values():
        format_storage(FormatRequest(
            config=ServerConfig.load(node.config), cluster_id=cluster.cluster_id,
            mode=QuorumMode.STATIC, scram=("SCRAM-SHA-512=[name=admin,password=admin-secret]",)))
    cluster.start_all()
    try:
        cluster.wait_listening(cluster.brokers)
        made = Cluster(cluster, f"{HOST}:{sasl_port}", base)
        wait_for("the broker answers", lambda: True if configs(
            made, "--describe", "--broker", str(BROKER_ID)).exit_code == 0 else None)
        yield made
    finally:
        cluster.stop_all()


def configs(made: Cluster, *args: str, bootstrap: str | None = None) -> Result:
    """The tool with ``--bootstrap-server``: the PLAINTEXT listener unless ``bootstrap``
    names another address ("": none, the arguments give theirs)."""
    from pykraft.cli.main import app

    server = made.cluster.bootstrap_servers if bootstrap is None else bootstrap
    return CliRunner().invoke(app, ["configs", *(["--bootstrap-server", server] if server
                                                 else []), *args])


def ok(made: Cluster, *args: str) -> str:
    result = configs(made, *args)
    assert result.exit_code == 0, (result.stdout, result.stderr)
    return result.stdout


def until(made: Cluster, args: tuple[str, ...], wanted: Callable[[str], bool]) -> str:
    """The output of ``args`` once it satisfies ``wanted`` (the broker's image catches up
    with the controller's)."""
    found: str = wait_for(f"configs {' '.join(args)}", lambda: (
        out if wanted(out := ok(made, *args)) else None))
    return found


def test_topic_configs(made: Cluster) -> None:
    from pykraft.cli.main import app

    created = CliRunner().invoke(app, ["topics", "--bootstrap-server",
                                       made.cluster.bootstrap_servers, "--create", "--topic",
                                       "orders", "--partitions", "1"])
    assert created.exit_code == 0, created.stdout
    assert ok(made, "--alter", "--topic", "orders", "--add-config",
              "retention.ms=1000,cleanup.policy=[compact,delete]") == (
        "Completed updating config for topic orders.\n")
    described = until(made, ("--describe", "--entity-type", "topics", "--entity-name",
                             "orders"), lambda out: "retention.ms" in out)
    assert described == (
        "Dynamic configs for topic orders are:\n"
        "  cleanup.policy=compact,delete sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:"
        "cleanup.policy=compact,delete, DEFAULT_CONFIG:log.cleanup.policy=delete}\n"
        "  retention.ms=1000 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:retention.ms=1000}\n")
    every = ok(made, "--describe", "--topic", "orders", "--all")
    assert every.startswith("All configs for topic orders are:\n")
    assert "  segment.bytes=1073741824 sensitive=false synonyms={DEFAULT_CONFIG:" in every

    ok(made, "--alter", "--topic", "orders", "--delete-config", "retention.ms")
    until(made, ("--describe", "--topic", "orders"), lambda out: "retention.ms" not in out)
    again = configs(made, "--alter", "--topic", "orders", "--delete-config", "retention.ms")
    assert (again.exit_code, again.stderr) == (1, "Invalid config(s): retention.ms\n")
    refused = configs(made, "--alter", "--topic", "orders", "--add-config", "retention.ms=x")
    assert refused.exit_code == 1 and "retention.ms" in refused.stderr
    assert ok(made, "--describe", "--topic", "nope") == (
        "The topic 'nope' doesn't exist and doesn't have dynamic config.\n")
    [entry] = json.loads(ok(made, "--describe", "--topic", "orders", "--json"))
    assert entry["entityName"] == "orders" and [c["name"] for c in entry["configs"]] == [
        "cleanup.policy"]


def test_broker_configs(made: Cluster) -> None:
    broker = str(BROKER_ID)
    assert ok(made, "--alter", "--broker", broker, "--add-config", "log.retention.bytes=2") == (
        f"Completed updating config for broker {broker}.\n")
    assert ok(made, "--alter", "--broker-defaults", "--add-config", "log.retention.bytes=3") == (
        "Completed updating default config for brokers in the cluster.\n")
    described = until(made, ("--describe", "--entity-type", "brokers"),
                      lambda out: "bytes=2 sensitive" in out and "bytes=3 sensitive" in out)
    assert described == (
        f"Dynamic configs for broker {broker} are:\n"
        "  log.retention.bytes=2 sensitive=false synonyms={DYNAMIC_BROKER_CONFIG:"
        "log.retention.bytes=2, DYNAMIC_DEFAULT_BROKER_CONFIG:log.retention.bytes=3, "
        "DEFAULT_CONFIG:log.retention.bytes=-1}\n"
        "Default configs for brokers in the cluster are:\n"
        "  log.retention.bytes=3 sensitive=false synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:"
        "log.retention.bytes=3}\n")
    # read once at start by pykraft (it has no handler pool): refused, as Kafka refuses a
    # read-only key
    refused = configs(made, "--alter", "--broker", broker, "--add-config", "num.io.threads=2")
    assert (refused.exit_code, refused.stderr) == (
        1, "Cannot update these configs dynamically: [num.io.threads]\n")
    assert ok(made, "--describe", "--broker", "7") == (
        "The broker '7' doesn't exist and doesn't have dynamic config.\n")
    ok(made, "--alter", "--broker", broker, "--delete-config", "log.retention.bytes")
    until(made, ("--describe", "--broker", broker), lambda out: "log.retention" not in out)

    # --bootstrap-controller: the controller describes and alters its own configs
    controller = ("--bootstrap-controller", made.controller_address)
    altered = configs(made, *controller, "--alter", "--broker", str(CONTROLLER_ID),
                      "--add-config", "log.retention.bytes=4", bootstrap="")
    assert altered.stdout == f"Completed updating config for broker {CONTROLLER_ID}.\n"
    mine = wait_for("the controller's own config", lambda: (out if "=4" in (out := configs(
        made, *controller, "--describe", "--broker", str(CONTROLLER_ID),
        bootstrap="").stdout) else None))
    assert mine.startswith(f"Dynamic configs for broker {CONTROLLER_ID} are:\n"
                           "  log.retention.bytes=4 sensitive=false")
    users = configs(made, *controller, "--describe", "--entity-type", "users", bootstrap="")
    assert (users.exit_code, users.stderr) == (
        1, "The controllers do not serve DescribeClientQuotas: use --bootstrap-server\n")


def test_scram_credentials_added_described_used_and_deleted(made: Cluster) -> None:
    assert ok(made, "--alter", "--entity-type", "users", "--entity-name", "alice",
              "--add-config", "SCRAM-SHA-512=[password=alice-secret]") == (
        "Completed updating config for user alice.\n")
    ok(made, "--alter", "--user", "alice", "--add-config",
       "SCRAM-SHA-256=[iterations=8192,password=alice-256]")
    # Kafka's controller takes one alteration per user and request (ScramControlManager)
    both = configs(made, "--alter", "--user", "bob", "--add-config",
                   "SCRAM-SHA-512=[password=b],SCRAM-SHA-256=[password=b]")
    assert (both.exit_code, both.stderr) == (
        1, "A user credential cannot be altered twice in the same request\n")
    described = until(made, ("--describe", "--entity-type", "users", "--entity-name", "alice"),
                      lambda out: "SCRAM-SHA-256" in out)
    assert described == ("SCRAM credential configs for user-principal 'alice' are "
                         "SCRAM-SHA-256=iterations=8192, SCRAM-SHA-512=iterations=4096\n")
    assert "SCRAM credential configs for user-principal 'admin' are SCRAM-SHA-512=" \
           "iterations=4096\n" in ok(made, "--describe", "--entity-type", "users")

    # alice logs in with each password: the salted passwords are what the broker checks
    for mechanism, password in (("SCRAM-SHA-512", "alice-secret"),
                                ("SCRAM-SHA-256", "alice-256")):
        config = made.command_config("alice", password, mechanism)
        result = configs(made, "--command-config", str(config), "--describe", "--user",
                         "alice", bootstrap=made.sasl_address)
        assert result.exit_code == 0, result.stderr
    wrong = configs(made, "--command-config", str(made.command_config(
        "alice", "alice-256", "SCRAM-SHA-512")), "--describe", "--user", "alice",
        bootstrap=made.sasl_address)
    assert wrong.exit_code == 1 and "invalid credentials" in wrong.stderr

    ok(made, "--alter", "--user", "alice", "--delete-config", "SCRAM-SHA-512")
    until(made, ("--describe", "--user", "alice"), lambda out: "SCRAM-SHA-512" not in out)
    gone = configs(made, "--alter", "--user", "alice", "--delete-config", "SCRAM-SHA-512")
    assert (gone.exit_code, gone.stderr) == (
        1, "Attempt to delete a user credential that does not exist\n")
    assert ok(made, "--describe", "--user", "nobody") == (
        "Error retrieving SCRAM credential configs for user-principal 'nobody': "
        "ResourceNotFoundException: Attempt to describe a user credential that does not "
        "exist: nobody\n")


def test_the_tool_over_sasl_with_the_formatted_admin_credential(made: Cluster) -> None:
    config = made.command_config("admin", "admin-secret", "SCRAM-SHA-512")
    sasl = ("--bootstrap-server", made.sasl_address, "--command-config", str(config))
    altered = configs(made, *sasl, "--alter", "--broker-defaults", "--add-config",
                      "log.retention.ms=3600000", bootstrap="")
    assert altered.exit_code == 0, altered.stderr
    described = wait_for("the default over SASL", lambda: (out if "log.retention" in (
        out := configs(made, *sasl, "--describe", "--broker-defaults", bootstrap="").stdout)
        else None))
    assert "  log.retention.ms=3600000 sensitive=false" in described
