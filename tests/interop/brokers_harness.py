"""Brokers of both kinds in one cluster (issue 26 item 3): what the test reads and drives.

The cluster is driven with confluent-kafka's admin client (Metadata for leaders and ISRs,
ElectLeaders for preferred and unclean elections), its producer (an idempotent acks=all
producer in a thread for the whole run of moves) and its consumer (the whole topic read back),
and read from the disks of its brokers (each replica's segments, compared byte for byte).
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from confluent_kafka import Consumer as KafkaConsumer
from confluent_kafka import (
    KafkaError,
    KafkaException,
    Message,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient
from oracle_cluster import call

from pykraft.ids import TopicPartition as PartitionName
from pykraft.messages.kafka.create_topics_request import (
    CreatableReplicaAssignment,
    CreatableTopic,
    CreatableTopicConfig,
    CreateTopicsRequest,
)
from pykraft.messages.kafka.elect_leaders_request import ElectLeadersRequest
from pykraft.messages.kafka.elect_leaders_request import TopicPartitions as ElectTopic
from pykraft.messages.kafka.elect_leaders_response import ElectLeadersResponse
from pykraft.protocol.apis import ApiKey
from pykraft.storage.partition_log import partition_dir_name

STATE_TIMEOUT_S = 90.0
#: the producer's pace: one message per poll of this many seconds (a bounded count spread
#: over the moves, not as many as the machine can write)
PRODUCE_PACE_S = 0.01
ELECT_LEADERS_KEY = 43
ELECT_PREFERRED = 0


@dataclass(frozen=True, slots=True)
class PartitionState:
    leader: int
    isr: frozenset[int]


def partitions(admin: AdminClient, topic: str) -> dict[int, PartitionState]:
    """Each partition's leader and ISR as a broker's metadata says (empty while unknown)."""
    try:
        metadata = admin.list_topics(topic, timeout=5)
    except KafkaException:
        return {}
    described = metadata.topics.get(topic)
    if described is None or described.error is not None:
        return {}
    return {p.id: PartitionState(p.leader, frozenset(p.isrs))
            for p in described.partitions.values()}


def leader_is(admin: AdminClient, topic: str, partition: int, leader: int) -> bool:
    state = partitions(admin, topic).get(partition)
    return state is not None and state.leader == leader


def isr_is(admin: AdminClient, topic: str, partition: int, isr: Iterable[int]) -> bool:
    state = partitions(admin, topic).get(partition)
    return state is not None and state.isr == frozenset(isr)


def elect(address: str, election: int, topic: str, partition_ids: Iterable[int],
          ) -> dict[int, int]:
    """ElectLeaders v2 (``election`` 0 preferred, 1 unclean) sent to the broker at
    ``address``: each partition's error code. Sent
    to a Kafka broker, which forwards it to Kafka's controller: pykraft's brokers do not
    serve ElectLeaders (issue 31)."""
    answer = call(address, ELECT_LEADERS_KEY, 2, ElectLeadersRequest(
        election_type=election, topic_partitions=(ElectTopic(
            topic=topic, partitions=tuple(partition_ids)),)), timeout_s=70)
    assert isinstance(answer, ElectLeadersResponse) and answer.error_code == 0, answer
    return {p.partition_id: int(p.error_code)
            for r in answer.replica_election_results for p in r.partition_result}


@dataclass
class PacedProducer:
    """An idempotent acks=all producer writing ``str(i)`` for i = 0, 1, ... at a pace,
    in a thread, until stopped or ``limit`` messages: what was acknowledged, and the
    delivery errors."""

    bootstrap: str
    topic: str
    limit: int
    acknowledged: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="paced-producer", daemon=True)
        self._thread.start()

    def _delivered(self, error: KafkaError | None, message: Message) -> None:
        if error is not None:
            self.errors.append(str(error))
            return
        value = message.value()
        assert isinstance(value, bytes)
        self.acknowledged.append(value.decode())

    def _run(self) -> None:
        producer = Producer({"bootstrap.servers": self.bootstrap, "enable.idempotence": True,
                             "acks": "all", "linger.ms": 5, "message.timeout.ms": 120_000})
        for i in range(self.limit):
            if self._stop.is_set():
                break
            producer.produce(self.topic, str(i).encode(), on_delivery=self._delivered)
            producer.poll(PRODUCE_PACE_S)
        remaining = producer.flush(120)
        if remaining:
            self.errors.append(f"{remaining} messages not delivered at the end")

    def stop(self) -> None:
        """Stop producing and wait for every outstanding delivery report."""
        self._stop.set()
        assert self._thread is not None
        self._thread.join(timeout=180)
        assert not self._thread.is_alive(), "the producer did not finish flushing"


def create_topic(address: str, topic: str, assignment: Mapping[int, Sequence[int]],
                 configs: Mapping[str, str]) -> None:
    """CreateTopics v7 with a replica assignment, sent to the broker at ``address``."""
    answer = call(address, ApiKey.CREATE_TOPICS, 7, CreateTopicsRequest(topics=(CreatableTopic(
        name=topic, num_partitions=-1, replication_factor=-1,
        assignments=tuple(CreatableReplicaAssignment(
            partition_index=p, broker_ids=tuple(b for b in brokers))
            for p, brokers in assignment.items()),
        configs=tuple(CreatableTopicConfig(name=k, value=v) for k, v in configs.items())),)))
    assert [(t.error_code, t.error_message) for t in answer.topics] == [(0, None)], answer


def produce(bootstrap: str, topic: str, partition: int, values: Iterable[str],
            acks: str) -> None:
    """Write ``values`` to one partition with ``acks``; every one acknowledged."""
    producer = Producer({"bootstrap.servers": bootstrap, "acks": acks,
                         "enable.idempotence": False, "message.timeout.ms": 60_000})
    errors: list[str] = []
    for value in values:
        producer.produce(topic, value.encode(), partition=partition,
                         on_delivery=lambda e, _m: errors.append(str(e)) if e else None)
    assert producer.flush(60) == 0
    assert errors == []


def consume_all(bootstrap: str, topic: str, partition_ids: Iterable[int]) -> Counter[str]:
    """Every value of those partitions from their start to their high watermark, counted."""
    consumer = KafkaConsumer({"bootstrap.servers": bootstrap, "group.id": "brokers-check",
                              "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    counts: Counter[str] = Counter()
    try:
        for p in partition_ids:
            tp = TopicPartition(topic, p, 0)
            low, high = consumer.get_watermark_offsets(tp, timeout=30)
            consumer.assign([TopicPartition(topic, p, low)])
            position = low
            deadline = time.monotonic() + STATE_TIMEOUT_S
            while position < high:
                assert time.monotonic() < deadline, f"{topic}-{p} read to {position} of {high}"
                message = consumer.poll(1.0)
                if message is None:
                    continue
                assert message.error() is None, message.error()
                value = message.value()
                assert isinstance(value, bytes)
                counts[value.decode()] += 1
                offset = message.offset()
                assert offset is not None
                position = offset + 1
    finally:
        consumer.close()
    return counts


def segments(log_dir: Path, topic: str, partition: int) -> dict[str, bytes]:
    """The partition's ``.log`` files in ``log_dir``, by name, with their bytes."""
    directory = log_dir / partition_dir_name(PartitionName(topic, partition))
    return {path.name: path.read_bytes() for path in sorted(directory.glob("*.log"))}
