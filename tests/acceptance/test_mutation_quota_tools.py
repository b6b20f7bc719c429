"""The controller mutation quota (KIP-599) on real processes, with Kafka's own tools: the same
sequence on a pykraft cluster and on an Apache Kafka 4.4 cluster (1 controller and 1 broker
each, started side by side), Kafka's answer from both.

``kafka-configs.sh`` gives the PLAINTEXT user (``ANONYMOUS``) a ``controller_mutation_rate``
of 1 partition a second (a burst of 11 with Kafka's 11 one-second windows);
``kafka-topics.sh`` then creates a topic of 50 partitions (the burst is not exceeded yet, so
it goes through, 39 tokens below zero: 39 s, longer than the next JVMs take to start on a
loaded machine), and every further create, delete or partition increase is refused with
THROTTLING_QUOTA_EXCEEDED (TopicCommand does not retry on a quota violation): the same exit
codes and lines from both clusters. ``pykraft configs`` and ``pykraft topics`` then do the
same as a client of the user with a quota of its own, and print the same lines on both.
Skips off CI when Kafka cannot be fetched.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from broker_harness import wait_for
from java_kafka import skip_module_off_ci, tool_outcome
from oracle_cluster import KAFKA, PYKRAFT, ClusterSpec, Kind, OracleCluster, call, running
from oracle_kafka import required

from pykraft.messages.kafka.describe_client_quotas_request import (
    ComponentData,
    DescribeClientQuotasRequest,
)
from pykraft.protocol.apis import ApiKey

skip_module_off_ci()
pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]
CONFIGS = "org.apache.kafka.tools.ConfigCommand"
TOPICS = "org.apache.kafka.tools.TopicCommand"
USER = "ANONYMOUS"  # the PLAINTEXT listener's principal
REFUSED = (1, "Error while executing topic command : The throttling quota has been "
              "exceeded.\n")
#: (what kafka-topics.sh is asked, the exit code and stdout Kafka 4.4 answers); the increase
#: goes last: Kafka's TopicCommand --alter, refused, lingers until the throttle time has passed
#: (with 89 s of throttle it outlived the 120 s tool timeout, its line printed), and by then
#: the tokens are back
STEPS: list[tuple[tuple[str, ...], tuple[int, str]]] = [
    (("--create", "--topic", "wide", "--partitions", "50", "--replication-factor", "1"),
     (0, "Created topic wide.\n")),
    (("--create", "--topic", "narrow", "--partitions", "1", "--replication-factor", "1"),
     REFUSED),
    (("--delete", "--topic", "wide"), REFUSED),
    (("--alter", "--topic", "wide", "--partitions", "51"), REFUSED),
]


@pytest.fixture
def clusters(tmp_path: Path) -> Iterator[dict[Kind, OracleCluster]]:
    specs = [ClusterSpec(controllers=(kind,), brokers=(kind,)) for kind in (KAFKA, PYKRAFT)]
    with running(tmp_path, required(), *specs) as made:
        yield dict(zip((KAFKA, PYKRAFT), made, strict=True))


def quota_seen(cluster: OracleCluster, client_id: str | None) -> None:
    """Until the broker's image holds the quota of (``USER``, ``client_id``) (the
    controller, which applies it, committed it before)."""
    components = [ComponentData(entity_type="user", match_type=0, match=USER)]
    if client_id is not None:
        components.append(ComponentData(entity_type="client-id", match_type=0,
                                        match=client_id))
    ask = DescribeClientQuotasRequest(components=tuple(components), strict=True)
    wait_for("the broker's image holds the quota", lambda: bool(call(
        cluster.bootstrap_servers, ApiKey.DESCRIBE_CLIENT_QUOTAS, 1, ask).entries) or None)


def throttle(cluster: OracleCluster, tool: str | None, *entity: str) -> tuple[int, str]:
    """``controller_mutation_rate=1`` for ``entity`` by Kafka's ConfigCommand or (``tool``
    None) ``pykraft configs``: what it printed."""
    command = () if tool is not None else ("configs",)
    outcome: tuple[int, str] = tool_outcome(cluster, tool, *command, "--alter", *entity,
                                            "--add-config", "controller_mutation_rate=1")
    return outcome


def renamed(args: tuple[str, ...], suffix: str) -> tuple[str, ...]:
    return tuple(f"{arg}{suffix}" if arg in ("wide", "narrow") else arg for arg in args)


def test_kafka_topics_as_a_throttled_user_gets_kafka_s_answers_from_pykraft(
        clusters: dict[Kind, OracleCluster], tmp_path: Path) -> None:
    """Kafka's tools on both clusters, then pykraft's (``configs`` setting the quota of the
    user with a client id of its own, whose bucket is its own; ``topics`` as that client):
    each prints what Kafka's TopicCommand printed."""
    settings = tmp_path / "client.properties"
    settings.write_text("client.id=pykraft-topics\n")
    user = ("--entity-type", "users", "--entity-name", USER)
    client = ("--entity-type", "clients", "--entity-name", "pykraft-topics")
    outcomes: dict[Kind, list[tuple[int, str]]] = {}
    ours: dict[Kind, list[tuple[int, str]]] = {}
    updated = (0, f"Completed updating config for user {USER}.\n")  # the first entity's
    for kind, cluster in clusters.items():
        assert throttle(cluster, CONFIGS, *user) == updated
        quota_seen(cluster, None)
        outcomes[kind] = [tool_outcome(cluster, TOPICS, *args) for args, _ in STEPS]
        assert throttle(cluster, None, *user, *client) == updated
        quota_seen(cluster, "pykraft-topics")
        ours[kind] = [tool_outcome(cluster, None, "topics", "--command-config", str(settings),
                                   *renamed(args, "-ours")) for args, _ in STEPS]
    expected = [answer for _, answer in STEPS]
    assert outcomes[KAFKA] == expected
    assert outcomes[PYKRAFT] == outcomes[KAFKA]
    assert ours[KAFKA] == ours[PYKRAFT] == [
        (code, text.replace("wide", "wide-ours")) for code, text in expected]
