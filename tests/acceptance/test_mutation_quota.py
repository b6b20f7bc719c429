"""The controller mutation quota (KIP-599) on real processes, with Kafka's own tools: the same
sequence on a pykraft cluster and on an Apache Kafka 4.4 cluster (1 controller and 1 broker
each, started side by side), Kafka's answer from both.

``kafka-configs.sh`` gives the PLAINTEXT user (``ANONYMOUS``) a ``controller_mutation_rate``
of 1 partition a second (a burst of 11 with Kafka's 11 one-second windows);
``kafka-topics.sh`` then creates a topic of 50 partitions (the burst is not exceeded yet, so
it goes through, 39 tokens below zero: 39 s, longer than the next JVMs take to start on a
loaded machine), and every further create, delete or partition increase is refused with
THROTTLING_QUOTA_EXCEEDED (TopicCommand does not retry on a quota violation): the same exit
codes and lines from both clusters. Skips off CI when Kafka cannot
be fetched.
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
#: goes last: Kafka's TopicCommand --alter, refused, exits only once the throttle time has
#: passed, when the tokens are back at zero
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


def throttle_the_user(cluster: OracleCluster) -> None:
    """``kafka-configs.sh --alter --entity-type users``, then wait until the broker's image
    holds the quota (the controller, which applies it, committed it before)."""
    assert tool_outcome(cluster, CONFIGS, "--alter", "--entity-type", "users",
                        "--entity-name", USER, "--add-config",
                        "controller_mutation_rate=1") == (
        0, f"Completed updating config for user {USER}.\n")
    ask = DescribeClientQuotasRequest(components=(
        ComponentData(entity_type="user", match_type=0, match=USER),), strict=True)
    wait_for("the broker's image holds the quota", lambda: bool(call(
        cluster.bootstrap_servers, ApiKey.DESCRIBE_CLIENT_QUOTAS, 1, ask).entries) or None)


def test_kafka_topics_as_a_throttled_user_gets_kafka_s_answers_from_pykraft(
        clusters: dict[Kind, OracleCluster]) -> None:
    outcomes: dict[Kind, list[tuple[int, str]]] = {}
    for kind, cluster in clusters.items():
        throttle_the_user(cluster)
        outcomes[kind] = [tool_outcome(cluster, TOPICS, *args) for args, _ in STEPS]
    assert outcomes[KAFKA] == [answer for _, answer in STEPS]
    assert outcomes[PYKRAFT] == outcomes[KAFKA]
