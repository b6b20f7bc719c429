"""Eligible leader replicas (KIP-966) on real processes, the same sequence on pykraft and on
Apache Kafka 4.4: 1 controller and 3 brokers formatted at 4.1-IV0 (where both turn
``eligible.leader.replicas.version`` 1 on by default), a topic with RF=3 and
min.insync.replicas=2 whose replicas are brokers A, B and C (A leads), acks=all idempotent
production while the ISR allows it.

1. C killed (SIGKILL): fenced, out of the ISR; the ISR (A, B) is still at the min ISR, so
   the ELR stays empty.
2. B stopped (SIGTERM, a controlled shutdown): the ISR drops below the min ISR and B, which
   held every committed record, is in the ELR. acks=all is refused (NOT_ENOUGH_REPLICAS).
3. A, the last ISR member, killed: leaderless, A and B in the ELR, A the last known leader.
4. A started again: back from an unclean shutdown (no clean-shutdown marker) it may have
   lost records, so it leaves the ELR and is not elected; nor is C, never eligible.
5. B started again: elected from the ELR (not an unclean election: no RECOVERING in the
   controller's log), A and C catch up into the ISR, and every acknowledged record reads
   back in order.

A second run shows the other side: after step 2, a min.insync.replicas change empties the
ELR, so once A dies no replica is eligible and the partition stays offline with B and C
running.

At each step DescribeTopicPartitions gives the leader, its epoch (bumped by the two
leadership changes only), ISR, ELR and last known ELR, and
``pykraft topics --describe`` and Kafka's ``TopicCommand --describe`` print the same
partition line, on pykraft's cluster and on Kafka's. The Kafka run skips off CI when
Kafka cannot be fetched.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from broker_harness import PROPERTIES, produce_one, wait_for
from java_kafka import tool_outcome
from oracle_cluster import (
    KAFKA,
    PYKRAFT,
    READY_TIMEOUT_S,
    ClusterSpec,
    OracleCluster,
    call,
    unfenced_brokers,
)
from oracle_kafka import cluster_of, fetched, in_ci
from test_broker_lifecycle import (  # type: ignore[import-not-found]
    TOPIC,
    Sends,
    consumed,
    recovery_states,
)

from pykraft.messages.kafka.describe_topic_partitions_request import (
    DescribeTopicPartitionsRequest,
    TopicRequest,
)
from pykraft.protocol.errors import ErrorCode

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]
TOPIC_COMMAND = "org.apache.kafka.tools.TopicCommand"
RELEASE_VERSION = "4.1-IV0"
DESCRIBE_TOPIC_PARTITIONS = 75
#: acknowledged sends per phase while the ISR allows acks=all
BATCH = 20


@dataclass(frozen=True)
class Partition:
    """Partition 0 as DescribeTopicPartitions answers it (leader -1: none)."""

    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    elr: tuple[int, ...]
    last_known_elr: tuple[int, ...]


@pytest.fixture(params=[PYKRAFT, KAFKA])
def cluster(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[OracleCluster]:
    kind = request.param
    spec = ClusterSpec(controllers=(kind,), brokers=(kind,) * 3, properties=PROPERTIES,
                       release_version=RELEASE_VERSION)
    with cluster_of(kind, tmp_path, spec) as made:
        yield made


def described_topic(cluster: OracleCluster, via: int) -> Any:
    """The topic as broker ``via`` answers DescribeTopicPartitions (None while it cannot)."""
    try:
        answer = call(cluster.nodes[via].address, DESCRIBE_TOPIC_PARTITIONS, 0,
                      DescribeTopicPartitionsRequest(topics=(TopicRequest(name=TOPIC),)))
    except (OSError, AssertionError):  # not listening yet, or closed mid-answer
        return None
    (topic,) = answer.topics
    return topic if topic.error_code == ErrorCode.NONE and topic.partitions else None


def partition(cluster: OracleCluster, via: int) -> Partition | None:
    """Partition 0 of the topic as broker ``via`` describes it (None while it cannot)."""
    topic = described_topic(cluster, via)
    if topic is None:
        return None
    found = topic.partitions[0]
    return Partition(found.leader_id, found.leader_epoch, tuple(sorted(found.isr_nodes)),
                     tuple(sorted(found.eligible_leader_replicas or ())),
                     tuple(sorted(found.last_known_elr or ())))


def reach(cluster: OracleCluster, via: int, expected: Partition, what: str) -> None:
    """Until broker ``via`` describes the partition as ``expected`` (the bound of a JVM's
    start: some steps wait for a restarted Kafka broker)."""
    wait_for(f"{what}: {expected}", lambda: partition(cluster, via) == expected or None,
             timeout_s=READY_TIMEOUT_S)


def line(state: Partition, replicas: tuple[int, ...]) -> str:
    """TopicCommand's partition line for partition 0, written out for the assertion."""
    def ids(brokers: tuple[int, ...]) -> str:
        return ",".join(map(str, brokers))
    leader = state.leader if state.leader >= 0 else "none"
    return (f"\tTopic: {TOPIC}\tPartition: 0\tLeader: {leader}\tReplicas: {ids(replicas)}"
            f"\tIsr: {ids(state.isr)}\tElr: {ids(state.elr)}"
            f"\tLastKnownElr: {ids(state.last_known_elr)}")


def described(cluster: OracleCluster, expected: Partition, replicas: tuple[int, ...]) -> None:
    """``pykraft topics --describe`` prints the partition line ``expected`` makes (after
    the topic line, which holds the topic id), and lists the partition among those under
    the min ISR (each state described is) and, leaderless, among the unavailable ones;
    Kafka's TopicCommand prints the same for each."""
    want = line(expected, replicas)
    ours = tool_outcome(cluster, None, "topics", "--describe", "--topic", TOPIC)
    assert (ours[0], ours[1].splitlines()[1:]) == (0, [want])
    outcomes: dict[tuple[str, ...], tuple[int, str]] = {(): ours}
    for report, listed in (("--under-min-isr-partitions", True),
                           ("--unavailable-partitions", expected.leader < 0)):
        outcomes[(report,)] = tool_outcome(cluster, None, "topics", "--describe", "--topic",
                                           TOPIC, report)
        assert outcomes[(report,)] == (0, f"{want}\n" if listed else "")
    if not isinstance(fetched(), str) or in_ci():
        for options, outcome in outcomes.items():
            assert tool_outcome(cluster, TOPIC_COMMAND, "--describe", "--topic", TOPIC,
                                *options) == outcome


def unfenced(cluster: OracleCluster, via: int, count: int) -> None:
    """Until broker ``via`` sees ``count`` unfenced brokers."""
    wait_for(f"{count} unfenced brokers", lambda: unfenced_brokers(
        cluster.nodes[via].address) == count or None, timeout_s=READY_TIMEOUT_S)


def send(sends: Sends, count: int) -> None:
    for _ in range(count):
        sends.send()
    sends.flush()


def drop_below_min_isr(cluster: OracleCluster) -> tuple[Sends, Partition]:
    """Steps 1 and 2: the topic made and written, C killed, then B stopped cleanly into the
    ELR. The producer and the partition's state."""
    a, b, c = replicas = tuple(n.node_id for n in cluster.brokers)
    assert tool_outcome(cluster, None, "topics", "--create", "--topic", TOPIC,
                        "--replica-assignment", ":".join(map(str, replicas)),
                        "--config", "min.insync.replicas=2")[0] == 0
    reach(cluster, a, Partition(a, 0, replicas, (), ()), "all three in the ISR")
    sends = Sends(cluster, "all")
    send(sends, BATCH)

    cluster.kill(cluster.nodes[c])
    reach(cluster, a, Partition(a, 0, (a, b), (), ()), "C fenced; the ISR at the min ISR")
    send(sends, BATCH)

    assert cluster.stop(cluster.nodes[b]) in (0, 143)  # Kafka's JVM: 143 after SIGTERM
    below = Partition(a, 0, (a,), (b,), ())
    reach(cluster, a, below, "B stopped cleanly: below the min ISR, B in the ELR")
    return sends, below


def test_a_cleanly_stopped_replica_leads_from_the_elr(cluster: OracleCluster) -> None:
    a, b, c = replicas = tuple(n.node_id for n in cluster.brokers)
    sends, below = drop_below_min_isr(cluster)
    described(cluster, below, replicas)
    topic_id = described_topic(cluster, a).topic_id
    assert produce_one(cluster, a, topic_id, b"k", b"refused",
                       acks=-1) == ErrorCode.NOT_ENOUGH_REPLICAS

    cluster.kill(cluster.nodes[a])
    cluster.start(cluster.nodes[c])
    leaderless = Partition(-1, 1, (), (a, b), (a,))
    reach(cluster, c, leaderless, "A fenced: no ISR, A and B in the ELR")
    unfenced(cluster, c, 1)  # C runs, yet it is not eligible
    described(cluster, leaderless, replicas)

    cluster.start(cluster.nodes[a])
    unclean = Partition(-1, 1, (), (b,), (a,))
    reach(cluster, c, unclean, "A back from an unclean shutdown: out of the ELR")
    unfenced(cluster, c, 2)  # A and C run, and neither leads
    described(cluster, unclean, replicas)

    cluster.start(cluster.nodes[b])
    reach(cluster, b, Partition(b, 2, replicas, (), ()), "B elected from the ELR, all in sync")
    send(sends, BATCH)
    assert sends.failed == []
    assert consumed(cluster, len(sends.sent)) == sends.sent
    assert recovery_states(cluster.controllers[0].data) == []


def min_isr(cluster: OracleCluster, value: int) -> None:
    assert tool_outcome(cluster, None, "configs", "--alter", "--entity-type", "topics",
                        "--entity-name", TOPIC, "--add-config",
                        f"min.insync.replicas={value}") == (
        0, f"Completed updating config for topic {TOPIC}.\n")


def test_a_min_isr_change_empties_the_elr(cluster: OracleCluster) -> None:
    """KIP-966: the ELR holds replicas that had every record committed under the min ISR in
    force; a new value empties it (and the last known ELR). After the last ISR member dies,
    the cleanly stopped replica is then not eligible: the partition stays offline."""
    a, b, c = replicas = tuple(n.node_id for n in cluster.brokers)
    drop_below_min_isr(cluster)
    min_isr(cluster, 3)
    reach(cluster, a, Partition(a, 0, (a,), (), ()), "the ELR emptied")
    cluster.kill(cluster.nodes[a])
    cluster.start(cluster.nodes[c])
    reach(cluster, c, Partition(-1, 1, (), (a,), (a,)), "A fenced into the ELR alone")
    min_isr(cluster, 1)
    offline = Partition(-1, 1, (), (), ())
    reach(cluster, c, offline, "the ELR and the last known ELR emptied")
    cluster.start(cluster.nodes[b])
    unfenced(cluster, c, 2)  # B and C run, and neither leads
    assert partition(cluster, c) == offline
    described(cluster, offline, replicas)
