"""Replication end to end: 1 controller and 3 brokers, a topic with RF=3 and
min.insync.replicas=2. acks=all produces succeed; a follower broker frozen with SIGSTOP
lags once a record is written, and past ``replica.lag.time.max.ms`` the leader takes it out
of the ISR through AlterPartition (its session outlasts the test, so the controller does not
fence it first), which completes the waiting acks=all produce with two in-sync replicas;
after SIGCONT the follower catches up and rejoins the ISR."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
from broker_harness import (
    PROPERTIES,
    broker_call,
    leader_and_isr,
    produce_all,
    running_cluster,
    wait_for,
)

from pykraft.errors import PyKraftError
from pykraft.messages.kafka.create_topics_request import (
    CreatableTopic,
    CreatableTopicConfig,
    CreateTopicsRequest,
)
from pykraft.protocol.errors import ErrorCode
from pykraft.tools.local_cluster import LocalCluster

TOPIC = "replicated"
LAG_MS = 3000
#: The follower's heartbeats stop with it: a session far longer than the test keeps the
#: controller from fencing it, so only the leader's lag check can take it out of the ISR.
SESSION_MS = 120_000


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[LocalCluster]:
    with running_cluster(tmp_path, {
            **PROPERTIES, "broker.session.timeout.ms": str(SESSION_MS),
            "replica.lag.time.max.ms": str(LAG_MS)}, brokers=3) as made:
        yield made


def test_a_frozen_follower_leaves_the_isr_and_rejoins_it(cluster: LocalCluster) -> None:
    brokers = cluster.brokers
    created = broker_call(cluster, brokers[0], CreateTopicsRequest(topics=(CreatableTopic(
        name=TOPIC, num_partitions=1, replication_factor=3,
        assignments=(), configs=(CreatableTopicConfig(name="min.insync.replicas",
                                                      value="2"),)),)))
    assert created.topics[0].error_code == ErrorCode.NONE
    leader, isr, topic_id = wait_for("the topic's leader",
                                     lambda: leader_and_isr(cluster, brokers[0], TOPIC))
    assert isr == set(brokers)
    assert produce_all(cluster, leader, topic_id, b"all three") == ErrorCode.NONE

    follower = next(b for b in brokers if b != leader)
    cluster.signal(follower, signal.SIGSTOP)
    try:
        # A follower at the log end stays in sync (Kafka's rule): the write makes it lag,
        # and the acks=all wait ends once the leader's lag check took it out of the ISR.
        assert produce_all(cluster, leader, topic_id, b"two of three") == ErrorCode.NONE
        wait_for("the frozen follower out of the ISR in the leader's metadata", lambda: (
            leader_and_isr(cluster, leader, TOPIC) == (leader, set(brokers) - {follower}, topic_id))
            or None)
    finally:
        cluster.signal(follower, signal.SIGCONT)
    wait_for("the follower back in the ISR", lambda: (
        (seen := leader_and_isr(cluster, leader, TOPIC)) is not None
        and seen[1] == set(brokers)) or None)
    assert produce_all(cluster, leader, topic_id, b"all three again") == ErrorCode.NONE


def test_a_follower_that_led_an_epoch_without_appending_rejoins_the_isr(
        tmp_path: Path) -> None:
    """Issue 24, defect 1: 10 records; A (the leader) killed, B leads epoch 1 at offset 10
    and appends nothing; B frozen past its session, so C leads epoch 2 at 10; B resumed and
    A restarted. B must drop its empty epoch 1 and rejoin the ISR (it was told to truncate
    to 10 for it on every fetch and stayed out until the next leader change)."""
    with running_cluster(tmp_path, {**PROPERTIES, "replica.lag.time.max.ms": str(LAG_MS)},
                         brokers=3) as cluster:
        brokers = cluster.brokers
        created = broker_call(cluster, brokers[0], CreateTopicsRequest(topics=(CreatableTopic(
            name=TOPIC, num_partitions=1, replication_factor=3,
            assignments=(), configs=()),)))
        assert created.topics[0].error_code == ErrorCode.NONE
        a_id, _isr, topic_id = wait_for("the topic's leader",
                                       lambda: leader_and_isr(cluster, brokers[0], TOPIC))
        wait_for("three in-sync replicas", lambda: (
            (seen := leader_and_isr(cluster, a_id, TOPIC)) is not None and seen[1] == set(brokers))
            or None)
        for n in range(10):
            assert produce_all(cluster, a_id, topic_id, b"v%d" % n) == ErrorCode.NONE
        others = [b for b in brokers if b != a_id]

        cluster.kill(a_id)
        b_id = wait_for("a new leader after A's kill", lambda: (
            (seen := _leader_seen_by(cluster, others)) is not None and seen != a_id
            and seen) or None)
        c_id = next(b for b in others if b != b_id)
        cluster.signal(b_id, signal.SIGSTOP)
        try:
            wait_for("C leading once B is fenced", lambda: (
                leader_and_isr(cluster, c_id, TOPIC) or (None,))[0] == c_id or None)
        finally:
            cluster.signal(b_id, signal.SIGCONT)
        cluster.start(a_id)
        wait_for("B and A back in the ISR led by C", lambda: (
            (seen := leader_and_isr(cluster, c_id, TOPIC)) is not None
            and seen[:2] == (c_id, set(brokers))) or None)
        assert produce_all(cluster, c_id, topic_id, b"after") == ErrorCode.NONE


def _leader_seen_by(cluster: LocalCluster, via: list[int]) -> int | None:
    """Partition 0's leader as the first broker of ``via`` that answers sees it."""
    for broker_id in via:
        try:
            seen = leader_and_isr(cluster, broker_id, TOPIC)
        except (PyKraftError, OSError, TimeoutError):
            continue
        if seen is not None:
            return int(seen[0])
    return None
