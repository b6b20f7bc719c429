"""Issue 14's client matrix at RF=3 through a leader kill: 1 controller and 3 brokers; for
each client (confluent-kafka, kafka-python, aiokafka, kcat, Apache Kafka's Java client) a
1-partition topic with RF=3 and min.insync.replicas=2. The client produces COUNT messages
with acks=all, idempotent (each client's version supports it), at most WINDOW
unacknowledged; after KILL_AFTER acknowledgements the partition leader is SIGKILLed while
records it holds, and its successor copied, are unacknowledged (see :class:`Failover`).
Every send is acknowledged, the partition holds each message exactly once at the offset
the client was told, in send order, and the new leader kept the in-flight records and
wrote the rest in its own leader epoch: production went on after the leadership moved.
The same client reads everything back from the new leader. Once the killed broker is back
(it held records of its own, which it must truncate) and in the ISR, the three replicas'
segment bytes are identical.
"""

from __future__ import annotations

import asyncio
import functools
import json
import re
import signal
import subprocess
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from broker_harness import (
    Message,
    PartitionState,
    create_topic,
    partition_state,
    produce_one,
    replica_log_bytes,
    running_cluster,
    wait_for,
    wait_for_brokers,
)
from java_clients import decode, encode, run_probe

from pykraft.tools.local_cluster import LocalCluster

COUNT = 3000
WINDOW = 100
KILL_AFTER = 500
DEADLINE_S = 40.0
CATCH_UP_S = 30.0
MIN_ISR = {"min.insync.replicas": "2"}

#: (partition, offset) -> the message there
Read = dict[tuple[int, int], Message]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with running_cluster(tmp_path_factory.mktemp("failover") / "cluster", brokers=3) as made:
        yield made


class Reports:
    """What the producer said of each send, as its callbacks (any thread) report it."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self.placed: dict[int, tuple[int, int]] = {}  # send index -> (partition, offset)
        self.failed: list[str] = []

    def ack(self, index: int, partition: int, offset: int) -> None:
        with self._changed:
            self.placed[index] = (partition, offset)
            self._changed.notify_all()

    def fail(self, index: int, error: object) -> None:
        with self._changed:
            self.failed.append(f"message {index}: {error}")
            self._changed.notify_all()

    def done(self) -> int:
        return len(self.placed) + len(self.failed)

    def wait(self, timeout_s: float) -> None:
        """Until one more send completes, at most ``timeout_s``."""
        with self._changed:
            seen = self.done()
            self._changed.wait_for(lambda: self.done() > seen, timeout_s)


@dataclass
class Failover:
    """A fresh replicated topic and the kill of its leader mid-stream.

    At the KILL_AFTER-th acknowledgement the replica that will not lead next, the laggard,
    is frozen (SIGSTOP): the high watermark cannot pass its log end, so nothing more is
    acknowledged, while the leader goes on appending what the client sends and the
    successor (the next in-sync replica in assignment order, which the controller elects)
    copies it. Once the successor holds records the laggard lacks, it is frozen too, ALONE
    records are written to the leader with acks=1 by another producer, the leader is
    SIGKILLed and both thawed. The successor's extra records were sent, replicated and
    never acknowledged: the client retries them and the new leader must find them
    duplicates. The first ALONE record may still reach the successor (a fetch of its,
    parked at the leader, is answered into its socket while it is frozen); the others
    cannot: the old leader holds records no one else has and must truncate them once
    restarted before it copies the new leader's.
    """

    cluster: LocalCluster
    topic: str
    topic_id: uuid.UUID
    leader: int
    successor: int
    laggard: int
    sent: list[Message]
    reports: Reports = field(default_factory=Reports)
    froze: bool = False
    acked_at_kill: int | None = None  # acknowledgements the client had; None: not killed yet
    in_flight_at_kill: int = 0  # records on the successor the leader could not acknowledge
    successor_at_kill: int = 0  # the successor's log end offset then
    leader_at_kill: int = 0  # the killed leader's log end offset

    def paced(self) -> Iterator[tuple[int, Message] | None]:
        """The sends in order, each ``(index, message)``, None while WINDOW are unanswered
        (the caller lets its client progress); the kill advances between them."""
        deadline = time.monotonic() + DEADLINE_S
        for index, message in enumerate(self.sent):
            while index - self.reports.done() >= WINDOW:
                if time.monotonic() > deadline:
                    pytest.fail(f"{self.reports.done()} of {index} sends answered in time")
                self.advance_kill()
                yield None
            yield index, message
            self.advance_kill()

    def advance_kill(self) -> None:
        if self.acked_at_kill is not None:
            return
        if not self.froze:
            if self.reports.done() >= KILL_AFTER:
                self.cluster.signal(self.laggard, signal.SIGSTOP)
                self.froze = True
            return
        if self.log_end(self.successor) <= self.log_end(self.laggard):
            return
        try:
            self.cluster.signal(self.successor, signal.SIGSTOP)
            self.acked_at_kill = self.reports.done()
            self.successor_at_kill = self.log_end(self.successor)
            self.in_flight_at_kill = self.successor_at_kill - self.log_end(self.laggard)
            # a thread: broker_call runs an event loop, and aiokafka's test calls from its own
            with ThreadPoolExecutor(1) as thread:
                errors = thread.map(lambda m: produce_one(
                    self.cluster, self.leader, self.topic_id, m[0], m[1], acks=1), ALONE)
                assert set(errors) == {0}
            self.cluster.kill(self.leader)
            self.leader_at_kill = self.log_end(self.leader)
        finally:
            for broker in (self.successor, self.laggard):
                self.cluster.signal(broker, signal.SIGCONT)

    def log_end(self, broker: int) -> int:
        return log_end(replica_log_bytes(self.cluster, broker, self.topic))

    def stored(self) -> int:
        """How many records the new leader holds (once production is over)."""
        return self.log_end(self.successor)

    def check_produced(self) -> None:
        """Killed mid-stream, every send acknowledged, once, in send order."""
        assert self.acked_at_kill is not None and KILL_AFTER <= self.acked_at_kill < COUNT
        assert self.in_flight_at_kill > 0
        assert self.reports.failed == []
        placed = [self.reports.placed[i] for i in range(COUNT)]
        assert {partition for partition, _ in placed} == {0}
        assert [o for _, o in placed] == sorted({o for _, o in placed})

    def check_read(self, read: Read) -> None:
        """Each message once, at its acknowledged offset, and nothing else but ALONE
        records; the successor leads, kept what it held at the kill (the retried records
        are not there twice) and wrote the rest in its own, higher leader epoch; the old
        leader held records the successor never had."""
        expected = {self.reports.placed[i]: m for i, m in enumerate(self.sent)}
        assert {at: read.get(at) for at in expected} == expected
        others = [m for at, m in read.items() if at not in expected]
        assert len(set(others)) == len(others) and set(others) <= set(ALONE)
        assert sorted(read) == [(0, o) for o in range(self.stored())]
        state = partition_state(self.cluster, self.successor, self.topic)
        assert state is not None and state.leader == self.successor
        epochs = [(batch.leader_epoch, batch.next_offset - batch.base_offset) for batch in
                  batches(replica_log_bytes(self.cluster, self.successor, self.topic))]
        written_before = sum(n for epoch, n in epochs if epoch == epochs[0][0])
        assert self.successor_at_kill <= written_before < self.leader_at_kill

    def restore(self) -> None:
        """Restart the killed broker; it rejoins the ISR and copies the leader's bytes."""
        self.cluster.start(self.leader)
        wait_for_brokers(self.cluster, 3)
        everyone = set(self.cluster.brokers)
        wait_for("the restarted broker back in the ISR", lambda: (
            (seen := partition_state(self.cluster, self.leader, self.topic)) is not None
            and seen.isr == everyone) or None, CATCH_UP_S)
        stored = self.stored()
        wait_for("3 identical replicas", lambda: identical(self.cluster, self.topic, stored),
                 CATCH_UP_S)


#: written to the leader alone (acks=1, no producer id) just before it is killed
ALONE: list[Message] = [(b"alone", b"the old leader's own %d" % i, ()) for i in range(3)]


def batches(data: bytes) -> Iterator[Any]:
    """The record batches of segment bytes, read by kafka-python (an independent reader);
    a batch still being written at the end is left out."""
    from kafka.record.memory_records import MemoryRecords

    records = MemoryRecords(data)
    while (batch := records.next_batch()) is not None:
        yield batch


def log_end(data: bytes) -> int:
    """The offset after the last complete batch (offsets are dense from 0)."""
    return max((batch.next_offset for batch in batches(data)), default=0)


def identical(cluster: LocalCluster, topic: str, records: int) -> bool | None:
    """True once every broker's copy holds the same bytes, ``records`` records."""
    copies = {replica_log_bytes(cluster, b, topic) for b in cluster.brokers}
    return (len(copies) == 1 and log_end(copies.pop()) == records) or None


@pytest.fixture
def failover(cluster: LocalCluster, request: pytest.FixtureRequest) -> Failover:
    """A topic on a whole cluster (a broker a failed test left dead is started again)."""
    for broker in cluster.brokers:
        if not cluster.is_running(broker):
            cluster.start(broker)
    wait_for_brokers(cluster, 3)
    name = request.node.name.removeprefix("test_").replace("_", "-")
    topic = f"failover-{name}"
    create_topic(cluster.bootstrap_servers, topic, 1, 3, MIN_ISR)
    everyone = set(cluster.brokers)

    def in_sync() -> PartitionState | None:
        seen = partition_state(cluster, cluster.brokers[0], topic)
        return seen if seen is not None and seen.isr == everyone else None
    state: PartitionState = wait_for("the topic's leader, every broker in sync", in_sync)
    successor, laggard = (r for r in state.replicas if r != state.leader)
    return Failover(cluster, topic, state.topic_id, state.leader, successor, laggard,
                    messages(name, headers=name != "kcat"))


def messages(tag: str, *, headers: bool = True) -> list[Message]:
    """Keyed text numbered in send order (kcat reads lines: no tab, no newline)."""
    return [(f"{tag}-key-{i}".encode(), f"{tag}-value-{i:05d}-".encode() + b"x" * (i % 40),
             (("seq", str(i).encode()),) if headers else ()) for i in range(COUNT)]


def read_until(count: int, poll: Callable[[], list[tuple[tuple[int, int], Message]]]) -> Read:
    """Poll a consumer until ``count`` records or the deadline."""
    read: Read = {}
    deadline = time.monotonic() + DEADLINE_S
    while len(read) < count and time.monotonic() < deadline:
        read.update(poll())
    return read


# -- confluent-kafka 2.16.1 (librdkafka 2.16.0): enable.idempotence ------------------------------


def test_confluent_kafka(failover: Failover) -> None:
    import confluent_kafka

    servers = failover.cluster.bootstrap_servers
    reports = failover.reports

    def report(index: int) -> Callable[[Any, Any], None]:
        return lambda error, m: (reports.fail(index, error) if error is not None
                                 else reports.ack(index, m.partition(), m.offset()))

    producer = confluent_kafka.Producer({
        "bootstrap.servers": servers, "acks": "all", "enable.idempotence": True,
        "linger.ms": 5, "message.timeout.ms": int(DEADLINE_S * 1000), "log_level": 3})
    for step in failover.paced():
        if step is None:
            producer.poll(0.2)
        else:
            index, (key, value, headers) = step
            producer.produce(failover.topic, key=key, value=value, headers=list(headers),
                             partition=0, on_delivery=report(index))
            producer.poll(0)
    assert producer.flush(DEADLINE_S) == 0
    failover.check_produced()

    consumer = confluent_kafka.Consumer({
        "bootstrap.servers": servers, "group.id": "unused-with-assign",
        "enable.auto.commit": False, "fetch.wait.max.ms": 100, "log_level": 3})

    def poll() -> list[tuple[tuple[int, int], Message]]:
        got = []
        m: Any
        for m in consumer.consume(1000, 0.2):
            assert m.error() is None, m.error()
            got.append(((m.partition(), m.offset()), (
                m.key(), m.value(), tuple((k, bytes(v)) for k, v in m.headers() or ()))))
        return got

    try:
        consumer.assign([confluent_kafka.TopicPartition(failover.topic, 0,
                                                        confluent_kafka.OFFSET_BEGINNING)])
        failover.check_read(read_until(failover.stored(), poll))
    finally:
        consumer.close()
    failover.restore()


# -- kafka-python 3.0.12: idempotent by default ---------------------------------------------------


def test_kafka_python(failover: Failover) -> None:
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition

    servers = failover.cluster.bootstrap_servers
    reports = failover.reports
    producer = KafkaProducer(bootstrap_servers=servers, acks="all", linger_ms=5)
    try:
        assert producer._transaction_manager is not None  # idempotent by default
        for step in failover.paced():
            if step is None:
                reports.wait(0.2)
            else:
                index, (key, value, headers) = step
                future = producer.send(failover.topic, key=key, value=value,
                                       headers=list(headers), partition=0)
                future.add_callback(lambda m, i=index: reports.ack(i, m.partition, m.offset))
                future.add_errback(lambda e, i=index: reports.fail(i, e))
        producer.flush(DEADLINE_S)
    finally:
        producer.close(timeout=5)
    failover.check_produced()

    consumer = KafkaConsumer(bootstrap_servers=servers, group_id=None,
                             enable_auto_commit=False, fetch_max_wait_ms=100)
    try:
        consumer.assign([TopicPartition(failover.topic, 0)])
        consumer.seek_to_beginning()
        failover.check_read(read_until(failover.stored(), lambda: [
            ((r.partition, r.offset), (r.key, r.value, tuple((k, bytes(v)) for k, v in r.headers)))
            for records in consumer.poll(timeout_ms=200).values() for r in records]))
    finally:
        consumer.close()
    failover.restore()


# -- aiokafka 0.14.0: enable_idempotence ----------------------------------------------------------


async def aiokafka_round_trip(failover: Failover) -> Read:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

    servers = failover.cluster.bootstrap_servers
    reports = failover.reports

    def settle(index: int, future: asyncio.Future[Any]) -> None:
        if future.exception() is not None:
            reports.fail(index, future.exception())
        else:
            reports.ack(index, future.result().partition, future.result().offset)

    producer = AIOKafkaProducer(bootstrap_servers=servers, enable_idempotence=True,
                                linger_ms=5)
    await producer.start()
    try:
        futures: list[asyncio.Future[Any]] = []
        for step in failover.paced():
            if step is None:
                await asyncio.wait([futures[reports.done()]], timeout=0.2)
            else:
                index, (key, value, headers) = step
                futures.append(await producer.send(failover.topic, key=key, value=value,
                                                   headers=list(headers), partition=0))
                futures[-1].add_done_callback(functools.partial(settle, index))
        await asyncio.wait_for(producer.flush(), DEADLINE_S)
    finally:
        await producer.stop()
    failover.check_produced()

    consumer = AIOKafkaConsumer(bootstrap_servers=servers, group_id=None,
                                enable_auto_commit=False, fetch_max_wait_ms=100)
    await consumer.start()
    read: Read = {}
    try:
        consumer.assign([TopicPartition(failover.topic, 0)])
        await consumer.seek_to_beginning()
        deadline = time.monotonic() + DEADLINE_S
        while len(read) < failover.stored() and time.monotonic() < deadline:
            for records in (await consumer.getmany(timeout_ms=200)).values():
                read.update(((r.partition, r.offset), (
                    r.key, r.value, tuple((k, bytes(v)) for k, v in r.headers))) for r in records)
    finally:
        await consumer.stop()
    return read


def test_aiokafka(failover: Failover) -> None:
    failover.check_read(asyncio.run(aiokafka_round_trip(failover)))
    failover.restore()


# -- kcat 1.7.1 (librdkafka 2.0.2): -X enable.idempotence=true ------------------------------------

#: kcat's delivery report at verbosity 3 (-v -v), one a message in delivery order
DELIVERED = re.compile(
    rb"Message delivered to partition (\d+) \(offset (-?\d+)\) on broker (-?\d+)")


def write_all(stream: Any, data: bytes) -> None:
    """All of ``data``, then end of input (a thread: the pipe holds less)."""
    stream.write(data)
    stream.close()


def test_kcat(failover: Failover) -> None:
    """kcat prints no message with its delivery report, only partition, offset and broker;
    librdkafka's idempotent producer reports a partition's deliveries in send order, so the
    n-th report is the n-th line's (read back, each line is at the offset so matched).
    kcat reads stdin only as it produces, so the window is librdkafka's queue
    (queue.buffering.max.messages); the test advances the kill as reports come."""
    cluster, reports = failover.cluster, failover.reports
    kcat = subprocess.Popen(
        ["kcat", "-b", cluster.bootstrap_servers, "-P", "-t", failover.topic, "-p", "0",
         "-K", "\t", "-v", "-v", "-X", "enable.idempotence=true", "-X", "acks=all",
         "-X", "linger.ms=5", "-X", f"queue.buffering.max.messages={WINDOW}"],
        stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    assert kcat.stdin is not None and kcat.stderr is not None
    brokers: list[int] = []

    def read_reports(stderr: Any) -> None:
        for line in stderr:
            if found := DELIVERED.search(line):
                partition, offset, broker = map(int, found.groups())
                brokers.append(broker)
                reports.ack(reports.done(), partition, offset)

    reader = threading.Thread(target=read_reports, args=(kcat.stderr,), daemon=True)
    reader.start()
    try:
        lines = b"".join(key + b"\t" + value + b"\n" for key, value, _ in failover.sent)
        threading.Thread(target=write_all, args=(kcat.stdin, lines), daemon=True).start()
        deadline = time.monotonic() + DEADLINE_S
        while failover.acked_at_kill is None and time.monotonic() < deadline:
            reports.wait(0.2)
            failover.advance_kill()
        assert kcat.wait(DEADLINE_S) == 0
        reader.join(DEADLINE_S)
    finally:
        kcat.kill()
    failover.check_produced()
    assert set(brokers) == {failover.leader, failover.successor}  # the report names it

    read: Read = {}
    consumed = subprocess.run(["kcat", "-b", cluster.bootstrap_servers, "-C", "-t",
                               failover.topic, "-o", "beginning", "-e", "-J"],
                              capture_output=True, timeout=DEADLINE_S, check=True)
    for line in consumed.stdout.splitlines():
        record = json.loads(line)
        read[(record["partition"], record["offset"])] = (
            record["key"].encode(), record["payload"].encode(), ())  # kcat's: no headers
    failover.check_read(read)
    failover.restore()


# -- Apache Kafka's Java client 3.9.0: enable.idempotence=true ------------------------------------


def test_java_client(failover: Failover, client_probe: list[str], tmp_path: Path) -> None:
    """ClientProbe's stream operation sends each line as the test writes it and prints each
    acknowledgement as it comes, so the test paces and kills as with the Python clients."""
    servers, reports = failover.cluster.bootstrap_servers, failover.reports
    with (tmp_path / "probe.log").open("w") as log:
        probe = subprocess.Popen([*client_probe, "stream", servers, failover.topic, str(WINDOW)],
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log,
                                 text=True)
    assert probe.stdin is not None and probe.stdout is not None

    def read_reports(stdout: Any) -> None:
        for line in stdout:
            kind, index, *rest = line.rstrip("\n").split("\t")
            if kind == "ack":
                reports.ack(int(index), int(rest[0]), int(rest[1]))
            else:
                reports.fail(int(index), rest)

    reader = threading.Thread(target=read_reports, args=(probe.stdout,), daemon=True)
    reader.start()
    try:
        for step in failover.paced():
            if step is None:
                reports.wait(0.2)
            else:
                probe.stdin.write(encode(step[1]) + "\n")
                probe.stdin.flush()
        probe.stdin.close()
        assert probe.wait(DEADLINE_S) == 0
        reader.join(DEADLINE_S)
    finally:
        probe.kill()
    failover.check_produced()

    read: Read = {}
    for words in run_probe(client_probe, "consume", servers, failover.topic, "1",
                           str(failover.stored())):
        if words[0] not in ("begin", "end"):
            read[(int(words[0]), int(words[1]))] = decode(words[3:])
    failover.check_read(read)
    failover.restore()

