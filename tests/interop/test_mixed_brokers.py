"""Brokers of both kinds in one cluster (issue 26 item 3), on Kafka's controllers, then
on pykraft's.

Brokers 1000 and 1002 are Kafka's, 1001 and 1003 pykraft's. Topic ``moves`` has two
partitions, RF=3, min.insync.replicas 2: partition 0 prefers pykraft 1001 (followers Kafka
1000, pykraft 1003), partition 1 prefers Kafka 1000 (followers pykraft 1001, Kafka 1002),
so killing, stopping or electing 1000 or 1001 moves a leader between kinds, and followers of
each kind fetch from leaders of the other. An idempotent acks=all producer runs through every
move; the topic is then read whole. Preferred elections (ElectLeaders) are Kafka's
controllers' only: pykraft's do not implement it (issue 31). Topic ``unclean`` (replicas
pykraft 1003, Kafka 1002, unclean.leader.election.enable) gets a diverged log on purpose,
twice: a leader takes acks=1 writes its follower never gets, stops, the other replica is
elected uncleanly and written to, and the old leader, restarted, must truncate to the new
leader's log (pykraft to Kafka's, then Kafka to pykraft's). At the end every replica's
segments are compared byte for byte.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from brokers_harness import (
    ELECT_PREFERRED,
    PacedProducer,
    consume_all,
    create_topic,
    elect,
    isr_is,
    leader_is,
    produce,
    segments,
)
from confluent_kafka.admin import AdminClient
from kafka_brokers_harness import logged_errors, wait_until
from oracle_cluster import KAFKA, PYKRAFT, ClusterSpec, KafkaInstall, OracleCluster, running

from pykraft.tools.kafka_runtime import MIXED_RELEASE_VERSION

K0, P1, K2, P3 = 1000, 1001, 1002, 1003
MOVES = "moves"
MOVES_REPLICAS = {0: [P1, K0, P3], 1: [K0, P1, K2]}
UNCLEAN = "unclean"
UNCLEAN_REPLICAS = [P3, K2]
#: the producer's bound: far more than the moves last at its pace
PRODUCE_LIMIT = 40_000
PROPERTIES = {
    # a killed broker is fenced (and leaves the ISR) in 4 s, not Kafka's 9
    "broker.session.timeout.ms": "4000", "broker.heartbeat.interval.ms": "500",
    # the only leader moves are the test's
    "auto.leader.rebalance.enable": "false",
}
#: ERRORs a cluster of Kafka brokers alone logs too: Kafka's group coordinator loading a
#: __consumer_offsets partition it was just made leader of, when a controlled shutdown takes
#: the leadership away mid-load (CoordinatorRuntime logs the aborted load at ERROR)
KAFKA_ONLY_ERRORS = ("because the partition is not online or is no longer the leader",)
KILL, STOP, ELECT = "SIGKILL", "SIGTERM", "preferred election"
#: (how, broker, each moved partition's leader after): the first leaders are 1001 for
#: partition 0 and 1000 for partition 1; each step moves a leader to the other kind
MOVES_BY_ANY_CONTROLLER = ((KILL, P1, {0: K0}), (KILL, K0, {0: P1, 1: P1}),
                           (STOP, P1, {0: K0, 1: K0}), (STOP, K0, {0: P1, 1: P1}))
#: then, on Kafka's controllers (pykraft's do not implement ElectLeaders: issue 31)
MOVES_BY_ELECTION = ((ELECT, None, {1: K0}), (STOP, P1, {0: K0}), (ELECT, None, {0: P1}))


@pytest.fixture(scope="module", params=[KAFKA, PYKRAFT], ids=lambda k: f"{k}-controllers")
def cluster(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory,
            kafka: KafkaInstall) -> Iterator[OracleCluster]:
    spec = ClusterSpec(controllers=(request.param,) * 3,
                       brokers=(KAFKA, PYKRAFT, KAFKA, PYKRAFT),
                       release_version=MIXED_RELEASE_VERSION, properties=PROPERTIES)
    with running(tmp_path_factory.mktemp("mixed-brokers"), kafka, spec) as (started,):
        yield started


@pytest.fixture(scope="module")
def admin(cluster: OracleCluster) -> AdminClient:
    return AdminClient({"bootstrap.servers": cluster.bootstrap_servers})


def on_kafka_controllers(cluster: OracleCluster) -> bool:
    return set(cluster.spec.controllers) == {KAFKA}


def create(cluster: OracleCluster, admin: AdminClient, topic: str,
           assignment: dict[int, list[int]], configs: dict[str, str]) -> None:
    """Created through a pykraft broker (whose forwarding reaches either kind of
    controller; a Kafka broker's Envelope to pykraft's controllers is another item's), then
    every replica in the ISR."""
    create_topic(cluster.nodes[P1].address, topic, assignment, configs)
    for partition, members in assignment.items():
        wait_until(f"{topic}-{partition} ISR {members}",
                 lambda p=partition, m=members: isr_is(admin, topic, p, m))


def restart_and_rejoin(cluster: OracleCluster, admin: AdminClient, node_id: int,
                       topic: str, replicas: dict[int, list[int]]) -> None:
    """Start a stopped broker again and wait until it is back in every ISR it belongs to."""
    cluster.start(cluster.nodes[node_id])
    for partition, members in replicas.items():
        wait_until(f"{topic}-{partition} ISR {members}",
                 lambda p=partition, m=members: isr_is(admin, topic, p, m))


def move(cluster: OracleCluster, admin: AdminClient, how: str, broker: int | None,
         leaders: dict[int, int]) -> None:
    """One step of the moves: ``broker`` killed or stopped (then restarted once the leaders
    moved), or a preferred election; ``leaders`` is where each moved partition goes."""
    if how == ELECT:
        elected = elect(cluster.nodes[K2].address, ELECT_PREFERRED, MOVES, leaders)
        assert elected == dict.fromkeys(leaders, 0)
    else:
        assert broker is not None
        (cluster.kill if how == KILL else cluster.stop)(cluster.nodes[broker])
    for partition, leader in leaders.items():
        wait_until(f"{MOVES}-{partition} led by {leader} after {how} {broker or ''}",
                 lambda p=partition, b=leader: leader_is(admin, MOVES, p, b))
    if broker is not None:
        restart_and_rejoin(cluster, admin, broker, MOVES, MOVES_REPLICAS)


def test_moves_across_kinds_with_an_idempotent_producer(
        cluster: OracleCluster, admin: AdminClient) -> None:
    create(cluster, admin, MOVES, MOVES_REPLICAS, {"min.insync.replicas": "2"})
    producer = PacedProducer(cluster.bootstrap_servers, MOVES, PRODUCE_LIMIT)
    producer.start()
    wait_until("first acknowledgements", lambda: len(producer.acknowledged) > 50)
    steps = MOVES_BY_ANY_CONTROLLER + (
        MOVES_BY_ELECTION if on_kafka_controllers(cluster) else ())
    for how, broker, leaders in steps:
        acknowledged = len(producer.acknowledged)
        move(cluster, admin, how, broker, leaders)
        wait_until(f"acknowledgements after {how} {broker or ''}",
                 lambda n=acknowledged: len(producer.acknowledged) > n + 50)
    producer.stop()
    assert producer.errors == []
    counts = consume_all(cluster.bootstrap_servers, MOVES, MOVES_REPLICAS)
    assert {v: n for v, n in counts.items() if n != 1} == {}
    assert set(producer.acknowledged) <= set(counts)


def diverge(cluster: OracleCluster, admin: AdminClient, old: int, new: int,
            round_name: str) -> None:
    """``old`` leads ``unclean``-0; it takes acks=1 writes ``new`` never gets, stops; ``new``
    starts, and the controller elects it uncleanly as it unfences (Kafka's and pykraft's
    alike); it is written to; ``old`` restarts and must truncate to it."""
    wait_until(f"{UNCLEAN}-0 led by {old}", lambda: leader_is(admin, UNCLEAN, 0, old))
    cluster.stop(cluster.nodes[new])
    wait_until(f"{UNCLEAN}-0 ISR [{old}]", lambda: isr_is(admin, UNCLEAN, 0, [old]))
    produce(cluster.bootstrap_servers, UNCLEAN, 0,
            [f"{round_name}-lost-{i}" for i in range(20)], acks="1")
    cluster.stop(cluster.nodes[old])
    cluster.start(cluster.nodes[new])
    wait_until(f"{UNCLEAN}-0 led by {new}", lambda: leader_is(admin, UNCLEAN, 0, new))
    produce(cluster.bootstrap_servers, UNCLEAN, 0,
            [f"{round_name}-kept-{i}" for i in range(5)], acks="1")
    restart_and_rejoin(cluster, admin, old, UNCLEAN, {0: UNCLEAN_REPLICAS})


def test_divergence_truncated_across_kinds(cluster: OracleCluster, admin: AdminClient) -> None:
    create(cluster, admin, UNCLEAN, {0: UNCLEAN_REPLICAS},
           {"unclean.leader.election.enable": "true", "min.insync.replicas": "1"})
    produce(cluster.bootstrap_servers, UNCLEAN, 0, [f"both-{i}" for i in range(10)],
            acks="all")
    diverge(cluster, admin, old=P3, new=K2, round_name="pykraft-old")
    diverge(cluster, admin, old=K2, new=P3, round_name="kafka-old")
    counts = consume_all(cluster.bootstrap_servers, UNCLEAN, [0])
    assert sorted(counts.elements()) == sorted(
        [f"both-{i}" for i in range(10)] + [f"{r}-kept-{i}" for r in ("pykraft-old", "kafka-old")
                                            for i in range(5)])


def test_replicas_byte_identical(cluster: OracleCluster, admin: AdminClient) -> None:
    for topic, replicas in ((MOVES, MOVES_REPLICAS), (UNCLEAN, {0: UNCLEAN_REPLICAS})):
        for partition, members in replicas.items():
            wait_until(f"{topic}-{partition} ISR full",
                     lambda t=topic, p=partition, m=members: isr_is(admin, t, p, m))
            wait_until(f"{topic}-{partition} replicas' segments identical",
                     lambda t=topic, p=partition, m=members: len({
                         tuple(segments(cluster.nodes[r].data, t, p).items())
                         for r in m}) == 1)


def test_kafka_nodes_logged_no_error(cluster: OracleCluster) -> None:
    errors = {n.node_id: logged_errors(n, KAFKA_ONLY_ERRORS) for n in cluster.nodes.values()
              if n.kind == KAFKA}
    assert {node_id: entries for node_id, entries in errors.items() if entries} == {}
