"""pykraft's data path (``LocalCluster``: 1 controller + 1 broker, or 3 brokers when
replicated) driven by confluent-kafka: topics of one partition; the producer uses librdkafka's
default linger (5 ms, Kafka's default since 4.0); consumers use ``assign`` (no group).
confluent-kafka is thread-based, so each phase runs in a worker thread.

Single replica: acks=1. Replicated: every topic has replication factor 3 on the 3 brokers
(the first broker leads them all, so the profiled process is the leader) and
min.insync.replicas=2, measured twice on the same cluster: acks=all, then acks=1. A consumer
reads up to the high watermark, so the acks=1 consume, started right after the produce, also
waits for the followers to catch up.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import confluent_kafka
from confluent_kafka.admin import AdminClient, NewTopic

from peers.base import BenchError
from peers.streams import (
    PHASE_TIMEOUT_S,
    StreamSystem,
    latency_ms,
    paced,
    payload,
    stamped,
    wait_count,
)
from pykraft import __version__
from pykraft.tools.local_cluster import LocalCluster

#: Fast fencing and shutdown, as the acceptance harness (the figures do not depend on them).
PROPERTIES = {"broker.heartbeat.interval.ms": "500", "broker.session.timeout.ms": "3000",
              "pykraft.shutdown.timeout.ms": "3000"}
READY_TIMEOUT_S = 60.0
#: min.insync.replicas of a replicated topic (Kafka's usual production setting for RF=3).
MIN_INSYNC_REPLICAS = 2


class PykraftStream(StreamSystem):
    name = "pykraft"
    version = __version__

    def __init__(self, replicas: int = 1,
                 properties: Mapping[str, str] = PROPERTIES) -> None:
        self._cluster: LocalCluster | None = None
        self._properties = dict(properties)
        self.replicas = replicas
        self.modes = ("acks=all", "acks=1") if replicas > 1 else ("acks=1",)
        self.select(self.modes[0])

    def select(self, mode: str) -> None:
        self._acks = mode.removeprefix("acks=")
        if self.replicas == 1:
            self.durability = ("acks=1: the leader's log append (page cache, no fsync: "
                               "Kafka's default)")
            return
        waits = ("the high watermark passes it: every ISR replica has it (ISR >= "
                 f"min.insync.replicas={MIN_INSYNC_REPLICAS})" if self._acks == "all"
                 else "the leader's log append")
        self.durability = (f"RF={self.replicas}, acks={self._acks}: ack once {waits}; page "
                           "cache, no fsync (Kafka's default)")

    @property
    def cluster(self) -> LocalCluster:
        if self._cluster is None:
            raise BenchError("pykraft is not started")
        return self._cluster

    @property
    def bootstrap(self) -> str:
        return self.cluster.bootstrap_servers

    async def start(self, base: Path) -> None:
        self._cluster = LocalCluster.create(base, 1, self._properties, brokers=self.replicas)
        self._cluster.start_all()
        self._cluster.wait_listening(list(self._cluster.nodes))
        await asyncio.to_thread(self.create_topic, "ready")

    async def stop(self) -> None:
        if self._cluster is not None:
            self._cluster.stop_all()

    def server_pid(self) -> int | None:
        return None if self._cluster is None else self._cluster.pids[self._cluster.brokers[0]]

    def create_topic(self, topic: str) -> None:
        """Create ``topic`` (retrying until the brokers are unfenced and answer), then wait
        until it has a leader and every replica in sync, so no phase starts by waiting for
        the clients' metadata retries."""
        self._create(topic)
        deadline = time.monotonic() + READY_TIMEOUT_S
        while not self._in_sync(topic):
            if time.monotonic() > deadline:
                raise BenchError(f"pykraft: {topic} has no leader with its replicas in sync "
                                 f"after {READY_TIMEOUT_S:.0f} s")
            time.sleep(0.1)

    def _in_sync(self, topic: str) -> bool:
        admin = AdminClient({"bootstrap.servers": self.bootstrap})
        partitions = admin.list_topics(topic, timeout=10).topics[topic].partitions
        partition = partitions.get(0)
        return (partition is not None and partition.leader >= 0
                and len(partition.replicas) == self.replicas
                and sorted(partition.isrs) == sorted(partition.replicas))

    def _create(self, topic: str) -> None:
        admin = AdminClient({"bootstrap.servers": self.bootstrap})
        brokers = self._cluster.brokers if self._cluster is not None else []
        new = (NewTopic(topic, 1, 1) if self.replicas == 1 else
               NewTopic(topic, 1, replica_assignment=[brokers],
                        config={"min.insync.replicas": str(MIN_INSYNC_REPLICAS)}))
        deadline = time.monotonic() + READY_TIMEOUT_S
        while True:
            future = admin.create_topics([new])[topic]
            try:
                future.result(10)
                return
            except confluent_kafka.KafkaException as exc:
                if exc.args[0].code() == confluent_kafka.KafkaError.TOPIC_ALREADY_EXISTS:
                    return
                if time.monotonic() > deadline:
                    raise BenchError(f"pykraft: cannot create {topic}: {exc}") from exc
            time.sleep(0.2)

    def _producer(self) -> confluent_kafka.Producer:
        return confluent_kafka.Producer({"bootstrap.servers": self.bootstrap, "acks": self._acks})

    def _consumer(self) -> confluent_kafka.Consumer:
        return confluent_kafka.Consumer({
            "bootstrap.servers": self.bootstrap, "group.id": "unused-with-assign",
            "enable.auto.commit": False})

    async def produce(self, stream: str, count: int, size: int) -> float:
        await asyncio.to_thread(self.create_topic, stream)
        elapsed = await asyncio.to_thread(self._produce, stream, count, payload(size))
        # A replicated figure counts only if every replica stayed in the ISR (with one out,
        # acks=all would have waited for fewer copies than the row claims).
        if not await asyncio.to_thread(self._in_sync, stream):
            raise BenchError(f"pykraft: {stream} lost a replica from its ISR while produced")
        return elapsed

    def _produce(self, topic: str, count: int, value: bytes) -> float:
        producer = self._producer()
        failed: list[Any] = []

        def delivered(err: Any, _msg: Any) -> None:
            if err is not None:
                failed.append(err)

        started = time.monotonic()
        for _ in range(count):
            while True:
                try:
                    producer.produce(topic, value, on_delivery=delivered)
                    break
                except BufferError:
                    producer.poll(0.01)
            producer.poll(0)
        if producer.flush(PHASE_TIMEOUT_S) or failed:
            raise BenchError(f"pykraft: {len(failed)} failed deliveries, {len(producer)} "
                             f"unacknowledged (first error: {failed[:1]})")
        return time.monotonic() - started

    async def consume(self, stream: str, count: int) -> float:
        return await asyncio.to_thread(self._consume, stream, count)

    def _consume(self, topic: str, count: int) -> float:
        consumer = self._consumer()
        try:
            started = time.monotonic()
            consumer.assign([confluent_kafka.TopicPartition(topic, 0, 0)])
            got = 0
            while got < count:
                if time.monotonic() - started > PHASE_TIMEOUT_S:
                    raise BenchError(f"pykraft: consumed {got} of {count}")
                for message in consumer.consume(min(10_000, count - got), 0.5):
                    if message.error() is not None:
                        raise BenchError(f"pykraft: fetch error {message.error()}")
                    got += 1
            return time.monotonic() - started
        finally:
            consumer.close()

    async def latencies(self, stream: str, rate: int, seconds: float, size: int) -> list[float]:
        await asyncio.to_thread(self.create_topic, stream)
        measured: list[float] = []
        stop = threading.Event()
        consumer = self._consumer()
        consumer.assign([confluent_kafka.TopicPartition(stream, 0, 0)])

        def receive() -> None:
            while not stop.is_set():
                message = consumer.poll(0.1)  # each message as it comes (consume() batches)
                if message is not None and message.error() is None:
                    measured.append(latency_ms(message.value() or b""))

        receiver = asyncio.create_task(asyncio.to_thread(receive))
        producer = self._producer()
        try:
            def send() -> None:
                producer.produce(stream, stamped(size))
                producer.poll(0)
            sent = await paced(rate, seconds, send)
            await asyncio.to_thread(producer.flush, PHASE_TIMEOUT_S)
            await wait_count("pykraft latency", lambda: len(measured), sent)
        finally:
            stop.set()
            await receiver
            consumer.close()
        return measured
