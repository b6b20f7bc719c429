"""Broker lifecycle end to end: 1 controller and 3 brokers, a topic with RF=3 and
min.insync.replicas=2.

- SIGTERM to the partition leader while confluent-kafka produces with acks=all: the broker
  asks for a controlled shutdown, the controller moves the leadership to another ISR member
  before the broker goes, and every send is acknowledged, once, in order. No pause between
  acknowledgements reaches the broker session timeout: the leadership did not wait for the
  controller to notice a dead leader.
- Every ISR member killed: the partition is offline (leader -1) on the restarted out-of-ISR
  replica; once the topic allows unclean elections, the controller's periodic check makes
  that replica leader (KIP-704: RECOVERING), and its AlterPartition marks it RECOVERED.
- A follower killed with SIGKILL leaves the ISR (fenced), and rejoins it once restarted.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from broker_harness import (
    PROPERTIES,
    broker_call,
    fenced_brokers,
    running_cluster,
    wait_for,
)

from pykraft.messages.kafka.create_topics_request import (
    CreatableReplicaAssignment,
    CreatableTopic,
    CreatableTopicConfig,
    CreateTopicsRequest,
)
from pykraft.messages.kafka.incremental_alter_configs_request import (
    AlterableConfig,
    AlterConfigsResource,
    IncrementalAlterConfigsRequest,
)
from pykraft.messages.kafka.metadata_request import MetadataRequest, MetadataRequestTopic
from pykraft.protocol.errors import ErrorCode
from pykraft.records.batch import iter_batches
from pykraft.records.metadata import PartitionChangeRecord, decode_metadata_record
from pykraft.replica.leader import RECOVERED, RECOVERING
from pykraft.storage.bootstrap import METADATA_LOG_DIR_NAME
from pykraft.storage.log_verify import verify_segments
from pykraft.storage.segment import LOG_SUFFIX
from pykraft.tools.local_cluster import LocalCluster

TOPIC = "lifecycle"
SESSION_MS = int(PROPERTIES["broker.session.timeout.ms"])
UNCLEAN_CHECK_MS = 1000


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[LocalCluster]:
    with running_cluster(tmp_path, {
            **PROPERTIES, "unclean.leader.election.interval.ms": str(UNCLEAN_CHECK_MS)},
            brokers=3) as made:
        yield made


def create_topic(cluster: LocalCluster, replicas: list[int]) -> None:
    created = broker_call(cluster, cluster.brokers[0], CreateTopicsRequest(topics=(CreatableTopic(
        name=TOPIC, num_partitions=-1, replication_factor=-1,
        assignments=(CreatableReplicaAssignment(partition_index=0, broker_ids=tuple(
            b for b in replicas)),),
        configs=(CreatableTopicConfig(name="min.insync.replicas", value="2"),)),)))
    assert created.topics[0].error_code == ErrorCode.NONE


def leader_and_isr(cluster: LocalCluster, via: int) -> tuple[int, set[int]] | None:
    """Partition 0's leader (-1: offline) and ISR as broker ``via`` answers Metadata."""
    try:
        answer = broker_call(cluster, via, MetadataRequest(
            topics=(MetadataRequestTopic(name=TOPIC),),
            allow_auto_topic_creation=False, include_topic_authorized_operations=False))
    except (OSError, TimeoutError):
        return None
    parts = answer.topics[0].partitions
    if answer.topics[0].error_code != ErrorCode.NONE or not parts:
        return None
    return int(parts[0].leader_id), {int(b) for b in parts[0].isr_nodes}


def recovery_states(log_dir: Path) -> list[int]:
    """The leader recovery states the metadata log of the controller whose ``log.dirs`` is
    ``log_dir`` set on partition 0, in order (read-only, up to a write under way; pykraft's and
    Kafka's logs alike)."""
    directory = log_dir / METADATA_LOG_DIR_NAME
    segments = sorted(directory.glob("*" + LOG_SUFFIX))
    tail = verify_segments(segments)
    states = []
    for segment in segments:
        data = segment.read_bytes()
        if tail is not None and tail.path == segment:
            data = data[:tail.position]
        for batch in iter_batches(data):
            if batch.is_control:
                continue
            for record in batch.records():
                change = decode_metadata_record(record.value or b"").message
                if isinstance(change, PartitionChangeRecord) and change.partition_id == 0 \
                        and change.leader_recovery_state >= 0:
                    states.append(change.leader_recovery_state)
    return states


class Sends:
    """A confluent-kafka producer and what its delivery reports said."""

    def __init__(self, cluster: LocalCluster, acks: str, label: bytes = b"m",
                 batch_bytes: int = 1_000_000) -> None:
        from confluent_kafka import Producer

        self.producer = Producer({
            "bootstrap.servers": cluster.bootstrap_servers, "acks": acks,
            "enable.idempotence": acks == "all", "linger.ms": 5, "retry.backoff.ms": 100,
            "message.timeout.ms": 30_000, "log_level": 3, "batch.size": batch_bytes})
        self.label = label
        self.sent: list[bytes] = []
        self.acked: list[tuple[float, bytes]] = []
        self.failed: list[str] = []

    def _report(self, err: Any, msg: Any) -> None:
        if err is not None:
            self.failed.append(str(err))
        else:
            self.acked.append((time.monotonic(), bytes(msg.value())))

    def send(self) -> None:
        value = self.label + b"%06d" % len(self.sent)
        self.sent.append(value)
        self.producer.produce(TOPIC, value=value, partition=0, on_delivery=self._report)
        self.producer.poll(0.01)

    def flush(self) -> None:
        assert self.producer.flush(30) == 0, "sends left undelivered"


def consumed(cluster: LocalCluster, count: int) -> list[bytes]:
    """The partition's first ``count`` values, read from its current leader."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers,
                         "group.id": "lifecycle-check", "enable.auto.commit": False,
                         "log_level": 3})
    try:
        consumer.assign([TopicPartition(TOPIC, 0, 0)])
        values: list[bytes] = []
        deadline = time.monotonic() + 30
        while len(values) < count and time.monotonic() < deadline:
            for msg in consumer.consume(count - len(values), timeout=1.0):
                value = msg.value()
                if msg.error() is None and value is not None:
                    values.append(bytes(value))
        return values
    finally:
        consumer.close()


def test_controlled_shutdown_of_the_leader_during_acks_all_production(
        cluster: LocalCluster) -> None:
    create_topic(cluster, cluster.brokers)
    leader, isr = wait_for("the topic's leader",
                           lambda: leader_and_isr(cluster, cluster.brokers[0]))
    assert isr == set(cluster.brokers)
    sends = Sends(cluster, "all")
    while len(sends.acked) < 50:
        sends.send()
    exit_codes: list[int | None] = []
    stopper = threading.Thread(target=lambda: exit_codes.append(cluster.stop(leader)))
    stopper.start()
    while stopper.is_alive():
        sends.send()
    stopper.join()
    after = len(sends.acked)
    while len(sends.acked) < after + 50:
        sends.send()
    sends.flush()

    assert exit_codes == [0]
    assert "controlled_shutdown_granted" in cluster.nodes[leader].log.read_text()
    assert sends.failed == []
    assert [value for _, value in sends.acked] == sends.sent
    gaps = [b - a for (a, _), (b, _) in zip(sends.acked, sends.acked[1:], strict=False)]
    assert max(gaps) < SESSION_MS / 1000
    survivor = next(b for b in cluster.brokers if b != leader)
    new_leader, new_isr = wait_for("the new leader", lambda: leader_and_isr(cluster, survivor))
    assert new_leader in isr - {leader} and leader not in new_isr
    assert consumed(cluster, len(sends.sent)) == sends.sent


def set_unclean(cluster: LocalCluster, via: int) -> None:
    answer = broker_call(cluster, via, IncrementalAlterConfigsRequest(resources=(
        AlterConfigsResource(resource_type=2, resource_name=TOPIC, configs=(
            AlterableConfig(name="unclean.leader.election.enable", config_operation=0,
                            value="true"),)),), validate_only=False))
    assert answer.responses[0].error_code == ErrorCode.NONE


def unfenced(cluster: LocalCluster, broker_id: int, via: int) -> bool | None:
    seen = fenced_brokers(cluster, via)
    return (seen is not None and seen.get(broker_id) is False) or None


def test_unclean_election_after_every_isr_member_is_gone(cluster: LocalCluster) -> None:
    first, second, third = cluster.brokers
    everyone = {first, second, third}
    create_topic(cluster, [first, second, third])
    wait_for("all three in the ISR", lambda: (
        leader_and_isr(cluster, first) == (first, everyone)) or None)
    kept = Sends(cluster, "all", b"kept")
    for _ in range(10):
        kept.send()
    kept.flush()
    for gone, isr in ((third, {first, second}), (second, {first})):
        cluster.signal(gone, signal.SIGKILL)
        cluster.wait(gone, 10)
        wait_for(f"broker {gone} fenced and out of the ISR", lambda isr=isr: (
            leader_and_isr(cluster, first) == (first, isr)) or None)
    lost = Sends(cluster, "1", b"lost")  # only the first broker will ever hold these
    for _ in range(5):
        lost.send()
    lost.flush()
    cluster.signal(first, signal.SIGKILL)
    cluster.wait(first, 10)
    cluster.start(third)
    wait_for("the restarted replica unfenced", lambda: unfenced(cluster, third, third))
    # offline once the controller fences the killed leader (its session may outlast the
    # restart): no ISR member is left, and unclean election is off
    wait_for("the partition offline", lambda: (
        leader_and_isr(cluster, third) == (-1, {first})) or None)

    set_unclean(cluster, third)
    controller_data = cluster.nodes[cluster.controllers[0]].data
    wait_for("the out-of-ISR replica elected", lambda: (
        leader_and_isr(cluster, third) == (third, {third})) or None)
    assert recovery_states(controller_data) == [RECOVERING]
    cluster.start(first)
    cluster.start(second)
    # the RECOVERING leader's first ISR expansion also marks the partition RECOVERED
    wait_for("both replicas back in the ISR", lambda: (
        leader_and_isr(cluster, third) == (third, everyone)) or None)
    assert recovery_states(controller_data) == [RECOVERING, RECOVERED]
    after = Sends(cluster, "all", b"after")
    for _ in range(5):
        after.send()
    after.flush()
    # the first broker's own records were truncated away: the unclean election's data loss
    assert consumed(cluster, 15) == kept.sent + after.sent


def test_a_killed_follower_rejoins_the_isr_after_restart(cluster: LocalCluster) -> None:
    create_topic(cluster, cluster.brokers)
    leader, _ = wait_for("the topic's leader",
                         lambda: leader_and_isr(cluster, cluster.brokers[0]))
    follower = next(b for b in cluster.brokers if b != leader)
    everyone = set(cluster.brokers)
    sends = Sends(cluster, "all")
    for _ in range(20):
        sends.send()
    sends.flush()
    cluster.signal(follower, signal.SIGKILL)
    cluster.wait(follower, 10)
    wait_for("the killed follower out of the ISR", lambda: (
        leader_and_isr(cluster, leader) == (leader, everyone - {follower})) or None)
    for _ in range(20):  # acks=all with the two left: min.insync.replicas=2 holds
        sends.send()
    sends.flush()
    cluster.start(follower)
    wait_for("the follower back in the ISR", lambda: (
        leader_and_isr(cluster, leader) == (leader, everyone)) or None)
    for _ in range(20):
        sends.send()
    sends.flush()
    assert sends.failed == []
    assert consumed(cluster, len(sends.sent)) == sends.sent
