"""The Kafka broker and controller metrics of real processes (1 controller + 3 brokers, a
topic at RF=3), scraped before and after a bounded produce/consume run and around a
follower's death: each one moves as Kafka's does (issue 31, item 10)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer
from process_harness import Samples, scrape, wait_for

from pykraft.tools.local_cluster import LocalCluster, free_ports

sys.path.insert(0, str(Path(__file__).parent.parent / "acceptance"))
from broker_harness import PROPERTIES, create_topic, partition_state, wait_for_brokers

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]

TOPIC = "metered"
RECORDS = 300
VALUE = b"v" * 100
#: The leader drops a dead follower from the ISR after 2 s (its AlterPartition: an ISR
#: shrink), long before the controller fences it (10 s, and not at once on its refused
#: connection), which would shrink the ISR itself instead, uncounted, as in Kafka.
#: The group coordinator's partition unreplicated: the replica manager's gauges count the
#: test topic's partition alone.
METERED = {**PROPERTIES, "replica.lag.time.max.ms": "2000",
           "broker.session.timeout.ms": "10000",
           "pykraft.broker.fence.on.refused.connection.enable": "false",
           "offsets.topic.replication.factor": "1",
           "offsets.topic.num.partitions": "1"}
BTM = "kafka_server_brokertopicmetrics_"
RM = "kafka_server_replicamanager_"
REQ = "kafka_network_requestmetrics_"
KC = "kafka_controller_kafkacontroller_"


def value(samples: Samples, name: str, **labels: str) -> float:
    found: float = samples.get((name, tuple(sorted(labels.items()))), 0.0)
    return found


class Metered:
    """The cluster and each node's metrics port."""

    def __init__(self, cluster: LocalCluster, ports: dict[int, int]) -> None:
        self.cluster = cluster
        self.ports = ports

    def start(self, node_id: int) -> None:
        self.cluster.start(node_id, "--override", f"metrics.port={self.ports[node_id]}",
                           "--override", "metrics.host=127.0.0.1")

    def scrape(self, node_id: int) -> Samples:
        found: Samples = wait_for(f"node {node_id}'s metrics",
                                  lambda: scrape(self.ports[node_id]))
        return found

    def until(self, node_id: int, what: str, holds: dict[str, float]) -> Samples:
        """Scrape ``node_id`` until the unlabelled series in ``holds`` have those values."""
        def probe() -> Samples | None:
            samples = scrape(self.ports[node_id])
            if samples is None or any(value(samples, name) != wanted
                                      for name, wanted in holds.items()):
                return None
            return samples
        found: Samples = wait_for(f"{what} on node {node_id}", probe)
        return found


@contextmanager
def running_metered(base: Path, properties: dict[str, str], brokers: int) -> Iterator[Metered]:
    """One controller and ``brokers`` brokers, each with its metrics port; killed by PID
    when the block ends."""
    cluster = LocalCluster.create(base, 1, properties, brokers=brokers)
    running = Metered(cluster, dict(zip(cluster.nodes, free_ports(len(cluster.nodes)),
                                        strict=True)))
    try:
        for node_id in cluster.nodes:
            running.start(node_id)
        wait_for_brokers(cluster, brokers)
        yield running
    finally:
        for node_id in cluster.nodes:
            cluster.kill(node_id)


@pytest.fixture
def metered(tmp_path: Path) -> Iterator[Metered]:
    with running_metered(tmp_path / "c", METERED, 3) as running:
        yield running


def produce_and_consume(bootstrap: str) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5})
    for number in range(RECORDS):
        producer.produce(TOPIC, VALUE, b"k%d" % number)
    assert producer.flush(60) == 0
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "metered",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe([TOPIC])
    read = 0
    def consumed() -> bool | None:
        nonlocal read
        message = consumer.poll(0.5)
        if message is not None and message.error() is None:
            read += 1
        return True if read == RECORDS else None
    try:
        wait_for(f"{RECORDS} records consumed", consumed, 60)
    finally:
        consumer.close()


def test_metrics_move_with_a_produce_consume_run_and_a_dead_follower(
        metered: Metered) -> None:
    cluster = metered.cluster
    brokers = sorted(cluster.brokers)
    controller = next(n for n in cluster.nodes if n not in brokers)
    create_topic(cluster.bootstrap_servers, TOPIC, 1, 3, {"min.insync.replicas": "2"})
    state = wait_for("the topic's leader", lambda: (
        found if (found := partition_state(cluster, brokers[0], TOPIC)) is not None
        and found.leader >= 0 and len(found.isr) == 3 else None))
    leader = state.leader
    before = metered.until(leader, "the topic led", {RM + "leadercount": 1})
    assert value(before, BTM + "messagesin_total", topic=TOPIC) == 0

    produce_and_consume(cluster.bootstrap_servers)

    after = metered.until(leader, "the ISR whole", {RM + "underreplicatedpartitions": 0})
    def delta(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)
    # BrokerTopicMetrics: every record counted once, by topic and in all topics
    assert delta(BTM + "messagesin_total", topic=TOPIC) == RECORDS
    assert delta(BTM + "messagesin_total") == RECORDS
    assert delta(BTM + "bytesin_total", topic=TOPIC) > RECORDS * len(VALUE)
    assert delta(BTM + "bytesin_total") == delta(BTM + "bytesin_total", topic=TOPIC)
    assert delta(BTM + "totalproducerequests_total", topic=TOPIC) >= 1
    assert delta(BTM + "failedproducerequests_total", topic=TOPIC) == 0
    assert delta(BTM + "bytesout_total", topic=TOPIC) >= RECORDS * len(VALUE)
    assert delta(BTM + "totalfetchrequests_total", topic=TOPIC) >= 1
    assert delta(BTM + "failedfetchrequests_total", topic=TOPIC) == 0
    assert delta(BTM + "bytesrejected_total") == 0
    # RequestMetrics: counts by version and error; each time histogram once a request
    produced = sum(v for (name, labels), v in after.items()
                   if name == REQ + "requests_total" and ("request", "Produce") in labels)
    assert produced >= 1
    assert value(after, REQ + "errors_total", request="Produce", error="NONE") >= produced
    for time_name in ("requestqueuetimems", "localtimems", "remotetimems",
                      "responsequeuetimems", "responsesendtimems", "totaltimems"):
        assert value(after, REQ + time_name + "_count", request="Produce") == produced
    assert delta(REQ + "remotetimems_sum", request="Produce") > 0  # acks=all waits
    assert value(after, REQ + "totaltimems_count", request="FetchFollower") > 0
    assert value(after, REQ + "totaltimems_count", request="FetchConsumer") > 0
    assert 0 <= value(after, "kafka_network_socketserver_networkprocessoravgidlepercent") <= 1
    assert (("kafka_network_requestchannel_requestqueuesize", ()) in after)
    # ReplicaManager: all in sync (min.insync.replicas 2 < ISR 3; the offsets partition at
    # RF=1 is at its min.insync.replicas of 1 where it is led)
    for gauge in ("underreplicatedpartitions", "underminisrpartitioncount",
                  "offlinereplicacount"):
        assert value(after, RM + gauge) == 0, gauge
    at_min = value(after, RM + "atminisrpartitioncount")
    assert value(after, RM + "partitioncount") >= 1
    # the controller's image
    metered.until(controller, "the cluster in the controller's metrics", {
        KC + "activecontrollercount": 1, KC + "activebrokercount": 3,
        KC + "fencedbrokercount": 0, KC + "offlinepartitionscount": 0})
    counts = metered.scrape(controller)
    assert value(counts, KC + "globaltopiccount") >= 1
    assert value(counts, KC + "globalpartitioncount") >= 1

    # a follower dies and records come: the leader shrinks the ISR (to
    # min.insync.replicas; as Kafka's, only a follower behind the log end is out of sync),
    # then the controller fences the follower; back, it is expanded into the ISR again
    follower = next(b for b in state.replicas if b != leader)
    cluster.kill(follower)
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "1"})
    producer.produce(TOPIC, VALUE)
    assert producer.flush(30) == 0
    shrunk = metered.until(leader, "the ISR shrunk", {
        RM + "underreplicatedpartitions": 1, RM + "atminisrpartitioncount": at_min + 1,
        RM + "isrshrinks_total": value(after, RM + "isrshrinks_total") + 1})
    assert value(shrunk, RM + "underminisrpartitioncount") == 0
    metered.until(controller, "the follower fenced", {
        KC + "activebrokercount": 2, KC + "fencedbrokercount": 1})
    metered.start(follower)
    metered.until(leader, "the ISR expanded", {
        RM + "underreplicatedpartitions": 0, RM + "atminisrpartitioncount": at_min,
        RM + "isrexpands_total": value(shrunk, RM + "isrexpands_total") + 1})
