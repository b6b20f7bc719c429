"""``queued.max.requests`` on a real broker: at 2, a broker serves producers and a consumer
group of three members joining at once. A JoinGroup waits for the other members inside the
group coordinator, out of the request queue as in Kafka (were it held there, two waiting
members would fill the queue and the third's JoinGroup would never be read)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest
from broker_harness import PROPERTIES, create_topic, one_broker_cluster

from pykraft.tools.local_cluster import LocalCluster

MEMBERS = 3
MESSAGES = 3000
DEADLINE_S = 90.0


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with one_broker_cluster(tmp_path_factory.mktemp("queue") / "cluster",
                            {**PROPERTIES, "queued.max.requests": "2"}) as made:
        yield made


def test_a_group_of_three_is_served_through_a_queue_of_two(cluster: LocalCluster) -> None:
    import confluent_kafka

    bootstrap = cluster.bootstrap_servers
    create_topic(bootstrap, "queued", MEMBERS)
    producer = confluent_kafka.Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    for _ in range(MESSAGES):
        producer.produce("queued", b"v" * 100)
        producer.poll(0)
    assert producer.flush(60) == 0
    consumed = [0] * MEMBERS
    deadline = time.monotonic() + DEADLINE_S

    def member(index: int) -> None:
        consumer = confluent_kafka.Consumer({
            "bootstrap.servers": bootstrap, "group.id": "queued-group",
            "auto.offset.reset": "earliest"})
        consumer.subscribe(["queued"])
        try:
            while sum(consumed) < MESSAGES and time.monotonic() < deadline:
                message = consumer.poll(0.5)
                if message is not None and not message.error():
                    consumed[index] += 1
        finally:
            consumer.close()

    members = [threading.Thread(target=member, args=(index,)) for index in range(MEMBERS)]
    for thread in members:
        thread.start()
    for thread in members:
        thread.join()
    print(f"consumed by member: {consumed}")
    assert sum(consumed) == MESSAGES
    assert all(consumed)  # every member was given a partition
