"""Issue 26 item 2: delegation-token records written by Kafka's controller, replayed by a
pykraft broker.

Kafka creates a token only for a client authenticated by SASL (not a token itself) on a
broker, and pykraft's brokers do not serve CreateDelegationToken: the cluster is one Kafka
controller, one Kafka broker with a SASL_PLAINTEXT (SCRAM-SHA-256) listener, which forwards
the token requests to the controller, and one pykraft broker. Every node has Kafka's
``delegation.token.secret.key``. Kafka's ``kafka-delegation-tokens`` creates, renews and
expires a token as ``alice`` (a SCRAM user added when the controller is formatted); Kafka's
dump-log finds DelegationTokenRecord and RemoveDelegationTokenRecord in the controller's
log and pykraft's dump-log decodes both from the pykraft broker's copy of it. The
pykraft broker replays them (it sees a topic created after each) without a warning,
and pykraft's metadata shell over its metadata log holds the token, then drops it.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from kafka_brokers_harness import logged_errors
from kafka_controllers_harness import (
    METADATA_TOPIC,
    pykraft_problems,
    record_types,
    run_tools,
    topics_view,
    wait_until,
)
from kafka_tool_runs import TOPICS
from kafka_tools import ClusterTools, ToolRun, with_tool_batch
from oracle_cluster import (
    BROKER_LISTENER,
    CONTROLLER_LISTENER,
    KAFKA,
    MIXED_RELEASE_VERSION,
    PYKRAFT,
    ClusterSpec,
    KafkaInstall,
    Kind,
    Node,
    OracleCluster,
    running,
)

from pykraft.tools.local_cluster import BROKER, CONTROLLER, HOST, free_ports

TOKENS = "org.apache.kafka.tools.DelegationTokenCommand"
SASL_LISTENER = "SASL_PLAINTEXT"
MECHANISM = "SCRAM-SHA-256"
USER, PASSWORD = "alice", "alice-secret"
ALICE = f"User:{USER}"
CREATED, EXPIRED = "after-created-token", "after-expired-token"
SPEC = ClusterSpec(
    controllers=(KAFKA,), brokers=(KAFKA, PYKRAFT), release_version=MIXED_RELEASE_VERSION,
    properties={"delegation.token.secret.key": "interop-token-secret"})
TOOL_TIMEOUT_S = 120.0
TOKEN_RECORDS = {"DELEGATION_TOKEN_RECORD", "REMOVE_DELEGATION_TOKEN_RECORD"}
#: kafka-delegation-tokens' table row: token id, HMAC (standard base64), owner, ...
_TOKEN_ROW = re.compile(rf"^(\S+)\s+([A-Za-z0-9+/]+=*)\s+{ALICE}\s", re.MULTILINE)


class SaslCluster(OracleCluster):  # type: ignore[misc]  # Any to mypy: see pyproject
    """An :class:`OracleCluster` whose Kafka brokers also listen for SASL_PLAINTEXT with
    SCRAM, and whose Kafka controllers are formatted with ``alice``'s SCRAM credential."""

    def __init__(self, spec: ClusterSpec, base: Path, kafka: KafkaInstall | None) -> None:
        super().__init__(spec, base, kafka)
        sasl_brokers = [n for n in self.brokers if n.kind == KAFKA]
        self.sasl_ports = dict(zip((n.node_id for n in sasl_brokers),
                                   free_ports(len(sasl_brokers)), strict=True))

    def sasl_address(self, node: Node) -> str:
        return f"{HOST}:{self.sasl_ports[node.node_id]}"

    def node_properties(self, node: Node) -> dict[str, str]:
        properties: dict[str, str] = super().node_properties(node)
        if node.node_id in self.sasl_ports:
            properties["listeners"] += f",{SASL_LISTENER}://{self.sasl_address(node)}"
            # a SASL listener makes Kafka require every listener's protocol explicitly
            properties["listener.security.protocol.map"] = ",".join(
                f"{name}:{protocol}" for name, protocol in (
                    (CONTROLLER_LISTENER, "PLAINTEXT"), (BROKER_LISTENER, "PLAINTEXT"),
                    (SASL_LISTENER, SASL_LISTENER)))
            properties["sasl.enabled.mechanisms"] = MECHANISM
            properties[f"listener.name.{SASL_LISTENER.lower()}.{MECHANISM.lower()}"
                       ".sasl.jaas.config"] = (
                "org.apache.kafka.common.security.scram.ScramLoginModule required;")
        return properties

    def _format_command(self, node: Node) -> list[str]:
        command: list[str] = super()._format_command(node)
        if node.kind == KAFKA and CONTROLLER in node.roles:
            command += ["--add-scram", f"{MECHANISM}=[name={USER},password={PASSWORD}]"]
        return command


@pytest.fixture(scope="module")
def java(kafka: KafkaInstall, tmp_path_factory: pytest.TempPathFactory) -> KafkaInstall:
    return with_tool_batch(kafka, tmp_path_factory.mktemp("classes"))


@pytest.fixture(scope="module")
def cluster(java: KafkaInstall, tmp_path_factory: pytest.TempPathFactory,
            ) -> Iterator[SaslCluster]:
    with running(tmp_path_factory.mktemp("tokens"), java, SPEC,
                 cluster_type=SaslCluster) as (started,):
        assert isinstance(started, SaslCluster)
        yield started


@pytest.fixture(scope="module")
def tools(cluster: SaslCluster, tmp_path_factory: pytest.TempPathFactory) -> ClusterTools:
    return ClusterTools(cluster, tmp_path_factory.mktemp("tools"))


def broker_of(cluster: SaslCluster, kind: Kind) -> Node:
    """The cluster's one broker of that kind."""
    (broker,) = (n for n in cluster.brokers if n.kind == kind)
    return broker


def token_run(cluster: SaslCluster, tools: ClusterTools, operation: str,
              *args: str) -> ToolRun:
    """``kafka-delegation-tokens`` as ``alice`` through the Kafka broker's SASL listener."""
    client = tools.files / "alice.properties"
    client.write_text(
        f"security.protocol={SASL_LISTENER}\nsasl.mechanism={MECHANISM}\n"
        "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required "
        f'username="{USER}" password="{PASSWORD}";\n')
    return ToolRun("kafka-delegation-tokens", operation, TOKENS, (
        "--bootstrap-server", cluster.sasl_address(broker_of(cluster, KAFKA)),
        "--command-config", str(client), *args))


def create_topic(name: str) -> ToolRun:
    return ToolRun("kafka-topics", f"create {name}", TOPICS, (
        "--bootstrap-server", "{bootstrap}", "--create", "--topic", name))


def replayed(cluster: SaslCluster, topic: str) -> None:
    """Until every broker sees ``topic``: it has replayed the records written before it."""
    for broker in cluster.brokers:
        wait_until(f"broker {broker.node_id} sees {topic}",
                   lambda b=broker: topic in topics_view(b))


def pykraft_tool(*args: str) -> str:
    """One pykraft command's standard output; it must exit 0."""
    done = subprocess.run([sys.executable, "-m", "pykraft", *args], capture_output=True,
                          text=True, timeout=TOOL_TIMEOUT_S, check=False,
                          stdin=subprocess.DEVNULL)
    assert done.returncode == 0, f"pykraft {args}: {done.stderr}"
    return done.stdout


def pykraft_tokens(cluster: SaslCluster) -> list[str]:
    """The token ids in the pykraft broker's metadata log, as pykraft's metadata shell
    replays it (``/image/delegationToken``, Kafka's shell's path)."""
    listed = pykraft_tool("metadata-shell", "--directory",
                          str(broker_of(cluster, PYKRAFT).data), "--",
                          "ls", "/image/delegationToken")
    return listed.split()


def test_kafka_creates_renews_and_expires_a_token_and_pykraft_replays_it(
        java: KafkaInstall, cluster: SaslCluster, tools: ClusterTools) -> None:
    created = run_tools(java, tools, [
        token_run(cluster, tools, "create", "--create", "--max-life-time-period", "-1",
                  "--renewer-principal", ALICE),
        create_topic(CREATED)])["kafka-delegation-tokens.create"]
    # the HMAC as printed (the first batch's first run): the normalised output may mask a
    # stretch of it as a <uuid>
    row = _TOKEN_ROW.search((tools.files / "batch-0" / "outputs" / "0.out").read_text())
    assert row is not None, created.stdout
    hmac = row.group(2)
    replayed(cluster, CREATED)  # the Kafka broker holds the token: describe can see it
    assert pykraft_tokens(cluster) == [row.group(1)]
    outcomes = run_tools(java, tools, [
        token_run(cluster, tools, "renew", "--renew", "--hmac", hmac,
                  "--renew-time-period", "-1"),
        # Kafka's broker answers a describe without owners with no token at all
        token_run(cluster, tools, "describe", "--describe", "--owner-principal", ALICE),
        token_run(cluster, tools, "expire", "--expire", "--hmac", hmac,
                  "--expiry-time-period", "-1"),
        create_topic(EXPIRED),
    ])
    assert "Total number of tokens : 1" in outcomes["kafka-delegation-tokens.describe"].stdout
    replayed(cluster, EXPIRED)
    assert pykraft_tokens(cluster) == []
    # the Kafka broker has replayed the RemoveDelegationTokenRecord too: the token is gone
    expired = run_tools(java, tools, [token_run(
        cluster, tools, "describe expired", "--describe", "--owner-principal", ALICE)])
    assert "Total number of tokens : 0" in expired[
        "kafka-delegation-tokens.describe expired"].stdout


def test_both_token_records_are_in_the_log_and_pykraft_decodes_them(
        java: KafkaInstall, cluster: SaslCluster, tools: ClusterTools) -> None:
    segments = sorted((cluster.controllers[0].data / f"{METADATA_TOPIC}-0").glob("*.log"))
    assert record_types(java, tools, segments) >= TOKEN_RECORDS
    copies = sorted((broker_of(cluster, PYKRAFT).data / f"{METADATA_TOPIC}-0").glob("*.log"))
    decoded = pykraft_tool("dump-log", "--cluster-metadata-decoder",
                           "--files", ",".join(map(str, copies)))
    assert set(re.findall(r'"type":"([A-Z_]+)"', decoded)) >= TOKEN_RECORDS


def test_no_node_logged_an_error(cluster: SaslCluster) -> None:
    for node in cluster.nodes.values():
        if node.kind == KAFKA:
            assert logged_errors(node) == [], f"{node.log}"
        else:
            assert BROKER in node.roles
            assert pykraft_problems(node) == [], f"{node.log}"
