"""Fetch from followers (KIP-392) on real processes: 1 controller and 3 brokers in racks
a, b and c with ``replica.selector.class`` RackAwareReplicaSelector, a topic with RF=3.
A consumer naming a follower's rack as its ``client.rack`` is told by the leader to read
that follower, and reads every record there exactly once: Kafka's Java consumer (its
``preferred-read-replica`` metric names the follower, and the records' bytes came over
its connection to that follower) and librdkafka (its debug log tells the partition moved
to the follower, and that follower's fetcher queued every record)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from broker_harness import PROPERTIES, broker_call, leader_and_isr, wait_for, wait_for_brokers
from java_clients import encode, run_probe

from pykraft.messages.kafka.create_topics_request import CreatableTopic, CreateTopicsRequest
from pykraft.protocol.errors import ErrorCode
from pykraft.replica.read_replica import RACK_AWARE_REPLICA_SELECTOR, REPLICA_SELECTOR_CLASS
from pykraft.tools.local_cluster import LocalCluster

RACKS = ("a", "b", "c")
COUNT = 300
VALUE_BYTES = 1000  # the records' bytes dwarf the metadata answers' on every connection


@pytest.fixture
def racked(tmp_path: Path) -> Iterator[LocalCluster]:
    """The brokers in racks a, b and c (in broker id order), with the rack-aware selector."""
    made = LocalCluster.create(
        tmp_path / "cluster", 1,
        {**PROPERTIES, REPLICA_SELECTOR_CLASS: RACK_AWARE_REPLICA_SELECTOR}, brokers=3)
    for broker_id, rack in zip(made.brokers, RACKS, strict=True):
        config = made.nodes[broker_id].config
        config.write_text(config.read_text() + f"broker.rack={rack}\n")
    made.start_all()
    try:
        wait_for_brokers(made, 3)
        yield made
    finally:
        for node_id in made.nodes:
            made.kill(node_id)


def _replicated_topic(cluster: LocalCluster, topic: str, client_probe: list[str]
                      ) -> tuple[int, int, str]:
    """The topic (RF=3) with COUNT records in all three replicas; its leader, the follower
    a consumer is to read (the highest id that is not the leader) and that follower's
    rack."""
    brokers = cluster.brokers
    created = broker_call(cluster, brokers[0], CreateTopicsRequest(topics=(CreatableTopic(
        name=topic, num_partitions=1, replication_factor=3, assignments=()),)))
    assert created.topics[0].error_code == ErrorCode.NONE
    wait_for("three in-sync replicas", lambda: (
        (seen := leader_and_isr(cluster, brokers[0], topic)) is not None
        and seen[1] == set(brokers)) or None)
    messages = "".join(encode((b"k%d" % n, bytes([n % 256]) * VALUE_BYTES, ())) + "\n"
                       for n in range(COUNT))
    acked = run_probe(client_probe, "produce", cluster.bootstrap_servers, topic, "none",
                      stdin=messages)
    assert [int(words[1]) for words in acked] == list(range(COUNT))
    leader_isr = leader_and_isr(cluster, brokers[0], topic)
    assert leader_isr is not None and leader_isr[1] == set(brokers)
    leader = leader_isr[0]
    follower = max(b for b in brokers if b != leader)
    return leader, follower, RACKS[brokers.index(follower)]


def test_the_java_consumer_reads_the_follower_in_its_rack(racked: LocalCluster,
                                                          client_probe: list[str]) -> None:
    leader, follower, rack = _replicated_topic(racked, "java-rack", client_probe)
    read = run_probe(client_probe, "rack", racked.bootstrap_servers, "java-rack", rack,
                     str(COUNT))
    offsets = [int(words[1]) for words in read if words[0] == "record"]
    assert offsets == list(range(COUNT))  # every record, exactly once
    [replica] = [int(words[1]) for words in read if words[0] == "replica"]
    assert replica == follower
    received = {words[1]: float(words[2]) for words in read if words[0] == "node"}
    payload = COUNT * VALUE_BYTES
    assert received[f"node-{follower}"] > payload
    assert received.get(f"node-{leader}", 0.0) < payload / 10


def test_librdkafka_fetches_from_the_follower_in_its_rack(racked: LocalCluster,
                                                          client_probe: list[str]) -> None:
    import confluent_kafka

    leader, follower, rack = _replicated_topic(racked, "rdkafka-rack", client_probe)
    logs: list[str] = []

    class Capture:
        """librdkafka's log lines, as the logging.Logger it is given sees them."""

        def log(self, _level: int, fmt: str, *args: Any) -> None:
            logs.append(fmt % args if args else fmt)

    consumer = confluent_kafka.Consumer({
        "bootstrap.servers": racked.bootstrap_servers, "group.id": "rdkafka-rack",
        "enable.auto.commit": False, "auto.offset.reset": "earliest", "client.rack": rack,
        "debug": "fetch", "fetch.wait.max.ms": 100}, logger=Capture())
    try:
        consumer.assign([confluent_kafka.TopicPartition("rdkafka-rack", 0, 0)])
        offsets: list[int] = []

        def all_read() -> bool | None:
            for message in consumer.consume(COUNT, timeout=0.5):
                offset = message.offset()
                assert message.error() is None and offset is not None, message.error()
                offsets.append(offset)
            return len(offsets) >= COUNT or None

        wait_for("librdkafka's consumer read every record", all_read)
        assert offsets == list(range(COUNT))
    finally:
        consumer.close()
    told = f"to {follower} (leader is {leader}): preferred replica updated"
    assert any(told in line for line in logs), "\n".join(logs[-40:])
    # every batch of records librdkafka queued came from its fetcher of the follower
    enqueued = [line for line in logs if "Enqueue" in line and "rdkafka-rack [0]" in line]
    assert enqueued and all(f"/{follower}]" in line for line in enqueued), enqueued
