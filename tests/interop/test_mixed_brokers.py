"""Brokers of both kinds in one cluster (issue 26 item 3), on Kafka's controller quorum.

Brokers 1000 and 1002 are Kafka's, 1001 and 1003 pykraft's. Topic ``moves`` has two
partitions, RF=3, min.insync.replicas 2: partition 0 prefers pykraft 1001 (followers Kafka
1000, pykraft 1003), partition 1 prefers Kafka 1000 (followers pykraft 1001, Kafka 1002),
so killing, stopping or electing 1000 or 1001 moves a leader between kinds, and followers of
each kind fetch from leaders of the other. An idempotent acks=all producer runs through every
move; the topic is then read whole. Topic ``unclean`` (replicas pykraft 1003, Kafka 1002,
unclean.leader.election.enable) gets a diverged log on purpose, twice: a leader takes acks=1
writes its follower never gets, stops, the other replica is elected uncleanly and written to,
and the old leader, restarted, must truncate to the new leader's log (pykraft to Kafka's, then
Kafka to pykraft's). At the end every replica's segments are compared byte for byte.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from brokers_harness import (
    ELECT_PREFERRED,
    ELECT_UNCLEAN,
    ELECTION_NOT_NEEDED,
    PacedProducer,
    consume_all,
    elect,
    error_lines,
    isr_is,
    leader_is,
    produce,
    segments,
    wait_for,
)
from confluent_kafka.admin import AdminClient, NewTopic
from oracle_cluster import (
    KAFKA,
    MIXED_RELEASE_VERSION,
    PYKRAFT,
    ClusterSpec,
    KafkaInstall,
    Node,
    OracleCluster,
    running,
    unfenced_brokers,
)

K0, P1, K2, P3 = 1000, 1001, 1002, 1003
MOVES = "moves"
MOVES_REPLICAS = {0: [P1, K0, P3], 1: [K0, P1, K2]}
UNCLEAN = "unclean"
UNCLEAN_REPLICAS = [P3, K2]
#: the producer's bound: far more than the moves last at its pace
PRODUCE_LIMIT = 40_000
SPEC = ClusterSpec(
    controllers=(KAFKA,) * 3, brokers=(KAFKA, PYKRAFT, KAFKA, PYKRAFT),
    release_version=MIXED_RELEASE_VERSION,
    properties={
        # a killed broker is fenced (and leaves the ISR) in 4 s, not Kafka's 9
        "broker.session.timeout.ms": "4000", "broker.heartbeat.interval.ms": "500",
        # the only leader moves are the test's
        "auto.leader.rebalance.enable": "false",
    })


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory,
            kafka: KafkaInstall) -> Iterator[OracleCluster]:
    with running(tmp_path_factory.mktemp("mixed-brokers"), kafka, SPEC) as (started,):
        yield started


@pytest.fixture(scope="module")
def admin(cluster: OracleCluster) -> AdminClient:
    return AdminClient({"bootstrap.servers": cluster.bootstrap_servers})


def node(cluster: OracleCluster, node_id: int) -> Node:
    return cluster.nodes[node_id]


def restart_and_rejoin(cluster: OracleCluster, admin: AdminClient, node_id: int,
                       topic: str, replicas: dict[int, list[int]]) -> None:
    """Start a stopped broker again and wait until it is back in every ISR it belongs to."""
    cluster.start(node(cluster, node_id))
    for partition, members in replicas.items():
        wait_for(f"{topic}-{partition} ISR {members}",
                 lambda p=partition, m=members: isr_is(admin, topic, p, m))


def electing_broker(cluster: OracleCluster, *busy: int) -> str:
    """A running Kafka broker other than ``busy`` to send ElectLeaders to."""
    return next(str(n.address) for n in cluster.brokers
                if n.kind == KAFKA and n.node_id not in busy and cluster.is_running(n))


def move(admin: AdminClient, topic: str, partition: int, to: int) -> None:
    wait_for(f"{topic}-{partition} led by {to}",
             lambda: leader_is(admin, topic, partition, to))


def test_moves_across_kinds_with_an_idempotent_producer(
        cluster: OracleCluster, admin: AdminClient) -> None:
    created = admin.create_topics([NewTopic(
        MOVES, num_partitions=len(MOVES_REPLICAS),
        replica_assignment=[MOVES_REPLICAS[0], MOVES_REPLICAS[1]],
        config={"min.insync.replicas": "2"})])
    created[MOVES].result(timeout=60)
    for partition, members in MOVES_REPLICAS.items():
        wait_for(f"{MOVES}-{partition} ISR full",
                 lambda p=partition, m=members: isr_is(admin, MOVES, p, m))
    producer = PacedProducer(cluster.bootstrap_servers, MOVES, PRODUCE_LIMIT)
    producer.start()
    wait_for("first acknowledgements", lambda: len(producer.acknowledged) > 50)
    for stop, mover, partition in ((cluster.kill, P1, 0), (cluster.kill, K0, 1),
                                   (cluster.stop, P1, 0), (cluster.stop, K0, 1)):
        other = MOVES_REPLICAS[partition][1]
        acknowledged = len(producer.acknowledged)
        stop(node(cluster, mover))
        move(admin, MOVES, partition, other)  # SIGKILL or SIGTERM: to the other kind
        restart_and_rejoin(cluster, admin, mover, MOVES, MOVES_REPLICAS)
        elected = elect(node(cluster, K2).address, ELECT_PREFERRED, MOVES, [partition])
        assert elected == {partition: 0}
        move(admin, MOVES, partition, mover)  # the preferred leader: back to its kind
        wait_for("acknowledgements after the move",
                 lambda n=acknowledged: len(producer.acknowledged) > n + 50)
    producer.stop()
    assert producer.errors == []
    counts = consume_all(cluster.bootstrap_servers, MOVES, MOVES_REPLICAS)
    assert {v: n for v, n in counts.items() if n != 1} == {}
    assert set(producer.acknowledged) <= set(counts)


def diverge(cluster: OracleCluster, admin: AdminClient, old: int, new: int,
            round_name: str) -> None:
    """``old`` leads ``unclean``-0; it takes acks=1 writes ``new`` never gets, stops; ``new``
    is elected uncleanly and written to; ``old`` restarts and must truncate to it."""
    wait_for(f"{UNCLEAN}-0 led by {old}", lambda: leader_is(admin, UNCLEAN, 0, old))
    cluster.stop(node(cluster, new))
    wait_for(f"{UNCLEAN}-0 ISR [{old}]", lambda: isr_is(admin, UNCLEAN, 0, [old]))
    produce(cluster.bootstrap_servers, UNCLEAN, 0,
            [f"{round_name}-lost-{i}" for i in range(20)], acks="1")
    cluster.stop(node(cluster, old))
    cluster.start(node(cluster, new))
    asked = electing_broker(cluster, old, new)
    wait_for(f"{new} unfenced", lambda: unfenced_brokers(asked) == len(cluster.brokers) - 1)
    elected = elect(asked, ELECT_UNCLEAN, UNCLEAN, [0])
    assert elected[0] in (0, ELECTION_NOT_NEEDED)
    wait_for(f"{UNCLEAN}-0 led by {new}", lambda: leader_is(admin, UNCLEAN, 0, new))
    produce(cluster.bootstrap_servers, UNCLEAN, 0,
            [f"{round_name}-kept-{i}" for i in range(5)], acks="1")
    restart_and_rejoin(cluster, admin, old, UNCLEAN, {0: UNCLEAN_REPLICAS})


def test_divergence_truncated_across_kinds(cluster: OracleCluster, admin: AdminClient) -> None:
    created = admin.create_topics([NewTopic(
        UNCLEAN, num_partitions=1, replica_assignment=[UNCLEAN_REPLICAS],
        config={"unclean.leader.election.enable": "true", "min.insync.replicas": "1"})])
    created[UNCLEAN].result(timeout=60)
    wait_for(f"{UNCLEAN}-0 ISR full", lambda: isr_is(admin, UNCLEAN, 0, UNCLEAN_REPLICAS))
    produce(cluster.bootstrap_servers, UNCLEAN, 0, [f"both-{i}" for i in range(10)],
            acks="all")
    diverge(cluster, admin, old=P3, new=K2, round_name="pykraft-old")
    diverge(cluster, admin, old=K2, new=P3, round_name="kafka-old")
    counts = consume_all(cluster.bootstrap_servers, UNCLEAN, [0])
    assert not [v for v in counts if "-lost-" in v]
    assert sorted(counts) == sorted(
        [f"both-{i}" for i in range(10)] + [f"{r}-kept-{i}" for r in ("pykraft-old", "kafka-old")
                                            for i in range(5)])


def test_replicas_byte_identical(cluster: OracleCluster, admin: AdminClient) -> None:
    for topic, replicas in ((MOVES, MOVES_REPLICAS), (UNCLEAN, {0: UNCLEAN_REPLICAS})):
        for partition, members in replicas.items():
            wait_for(f"{topic}-{partition} ISR full",
                     lambda t=topic, p=partition, m=members: isr_is(admin, t, p, m))
            wait_for(f"{topic}-{partition} replicas' segments identical",
                     lambda t=topic, p=partition, m=members: len({
                         tuple(segments(node(cluster, r).data, t, p).items())
                         for r in m}) == 1)


def test_kafka_brokers_logged_no_error(cluster: OracleCluster) -> None:
    errors = {n.node_id: error_lines(n.log) for n in cluster.nodes.values() if n.kind == KAFKA}
    assert {node_id: lines for node_id, lines in errors.items() if lines} == {}
