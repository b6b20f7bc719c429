"""A throttled reassignment on real processes: 1 controller and 4 brokers, a topic on
[1, 2, 3] holding about 2.5 MB, moved to [2, 3, 4] by ``pykraft reassign-partitions
--execute --throttle 400000`` under light acks=all production, then back to [1, 2, 3] by
Kafka's own kafka-reassign-partitions.sh (skipped off CI when Kafka is not fetched).

Each time the new replica's log grows at the throttle (within 20 %, measured between a
fifth and four fifths of the data, past the first fetch's burst), the reassignment
completes, and ``--verify`` says so and clears the throttles it set (the brokers' rates and
the topic's throttled replicas are gone from their configs). ``replica.fetch.max.bytes`` is
64 KiB and the data is in batches of at most 32 KiB (a fetch returns a first batch whole,
KIP-74), so that one fetch is small beside a second's worth.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from broker_harness import PROPERTIES, broker_call, running_cluster, wait_for
from java_kafka import tool_outcome
from oracle_kafka import fetched, in_ci
from test_broker_lifecycle import (  # type: ignore[import-not-found]
    TOPIC,
    Sends,
    consumed,
    create_topic,
    leader_and_isr,
)
from test_reassignment import ongoing  # type: ignore[import-not-found]

from pykraft.messages.kafka.describe_configs_request import (
    DescribeConfigsRequest,
    DescribeConfigsResource,
)
from pykraft.tools.local_cluster import LocalCluster

REASSIGN = "org.apache.kafka.tools.reassign.ReassignPartitionsCommand"
THROTTLE = 400_000
BULK = 250  # records of 10 KB
Tool = Callable[..., tuple[int, str]]


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[LocalCluster]:
    with running_cluster(tmp_path, {**PROPERTIES, "auto.leader.rebalance.enable": "false",
                                    "replica.fetch.max.bytes": "65536"},
                         brokers=4) as made:
        yield made


def pykraft_tool(cluster: LocalCluster, *args: str) -> tuple[int, str]:
    outcome: tuple[int, str] = tool_outcome(cluster, None, "reassign-partitions", *args)
    return outcome


def kafka_tool(cluster: LocalCluster, *args: str) -> tuple[int, str]:
    outcome: tuple[int, str] = tool_outcome(cluster, REASSIGN, *args)
    return outcome


def log_bytes(cluster: LocalCluster, broker_id: int) -> int:
    return sum(path.stat().st_size
               for path in cluster.nodes[broker_id].data.glob(f"{TOPIC}-0/*.log"))


def throttles_set(cluster: LocalCluster) -> dict[str, str | None]:
    """Every throttle key set on the brokers or the topic, with its value."""
    resources = [DescribeConfigsResource(resource_type=4, resource_name=str(b))
                 for b in cluster.brokers]
    found: dict[str, str | None] = {}
    for broker_id, resource in zip(cluster.brokers, resources, strict=True):
        answer = broker_call(cluster, broker_id, DescribeConfigsRequest(resources=(
            resource, DescribeConfigsResource(resource_type=2, resource_name=TOPIC))))
        for result in answer.results:
            found.update((f"{result.resource_name}:{c.name}", c.value) for c in result.configs
                         if "throttled" in c.name and c.value)
    return found


def move(cluster: LocalCluster, tool: Tool, sends: Sends, files: Path,
         replicas: list[int], receiver: int) -> float:
    """Reassign partition 0 to ``replicas`` with the throttle, sending meanwhile; the rate
    at which ``receiver``'s new replica grew (bytes/s)."""
    plan = files / f"to-{'-'.join(map(str, replicas))}.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": TOPIC, "partition": 0, "replicas": replicas}]}))
    total = max(log_bytes(cluster, b) for b in cluster.brokers)
    code, out = tool(cluster, "--execute", "--reassignment-json-file", str(plan),
                     "--throttle", str(THROTTLE))
    assert code == 0, out
    assert f"The inter-broker throttle limit was set to {THROTTLE} B/s\n" in out
    assert out.endswith(f"Successfully started partition reassignment for {TOPIC}-0\n")
    samples: list[tuple[float, int]] = []

    def copied() -> bool | None:
        sends.send()
        samples.append((time.monotonic(), log_bytes(cluster, receiver)))
        return (not ongoing(cluster, replicas[0])) or None

    wait_for("the throttled reassignment done", copied)
    sends.flush()
    start = next(s for s in samples if s[1] >= total / 5)
    end = next(s for s in samples if s[1] >= total * 4 / 5)
    code, out = tool(cluster, "--verify", "--reassignment-json-file", str(plan))
    assert code == 0, out
    assert out.splitlines()[:2] == ["Status of partition reassignment:",
                                    f"Reassignment of partition {TOPIC}-0 is completed."]
    assert f"Clearing topic-level throttles on topic {TOPIC}" in out
    assert throttles_set(cluster) == {}
    return (end[1] - start[1]) / (end[0] - start[0])


def test_a_throttled_move_holds_the_throttle(cluster: LocalCluster, tmp_path: Path) -> None:
    first, second, third, fourth = cluster.brokers
    create_topic(cluster, [first, second, third])
    wait_for("all three in the ISR", lambda: (
        leader_and_isr(cluster, second) == (first, {first, second, third})) or None)
    bulk = Sends(cluster, "all", label=b"b" * 10_000, batch_bytes=32_768)
    for _ in range(BULK):
        bulk.send()
    bulk.flush()
    sends = Sends(cluster, "all", label=b"l" * 1_000)

    rate = move(cluster, pykraft_tool, sends, tmp_path, [second, third, fourth], fourth)
    print(f"pykraft's tool: {rate:.0f} B/s under a {THROTTLE} B/s throttle "
          f"(ratio {rate / THROTTLE:.3f})")
    assert 0.8 * THROTTLE <= rate <= 1.2 * THROTTLE

    if isinstance(fetched(), str) and not in_ci():
        pytest.skip(f"Kafka's tool: {fetched()} [skips off CI; with CI=true it fails]")
    wait_for("the old replica's log removed", lambda: log_bytes(cluster, first) == 0 or None)
    rate = move(cluster, kafka_tool, sends, tmp_path, [first, second, third], first)
    print(f"Kafka's tool: {rate:.0f} B/s under a {THROTTLE} B/s throttle "
          f"(ratio {rate / THROTTLE:.3f})")
    assert 0.8 * THROTTLE <= rate <= 1.2 * THROTTLE
    assert bulk.failed == [] and sends.failed == []
    assert consumed(cluster, len(bulk.sent)) == bulk.sent
