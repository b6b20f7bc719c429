"""librdkafka (confluent-kafka) as ``bench/vs_kafka.py``'s second load generator, and the
topic plumbing both generators need: create a topic and wait until every partition has a
leader and a full ISR, count its records, delete it.

confluent-kafka is thread-based: each client runs in the calling thread (or in threads of
its own here), every wait bounded by a deadline.
"""

from __future__ import annotations

import functools
import math
import random
import string
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import confluent_kafka
from confluent_kafka.admin import AdminClient, NewTopic

from peers.base import BenchError

READY_TIMEOUT_S = 90.0
POLL_S = 0.2
CONSUME_BATCH = 10_000
_WATERMARK_TIMEOUT_S = 10.0


def admin(bootstrap: str) -> AdminClient:
    return AdminClient({"bootstrap.servers": bootstrap})


def wait_brokers(bootstrap: str, count: int) -> None:
    """Until the cluster's metadata lists ``count`` brokers (all registered and unfenced)."""
    deadline = time.monotonic() + READY_TIMEOUT_S
    client = admin(bootstrap)
    while True:
        try:
            if len(client.list_topics(timeout=5).brokers) >= count:
                return
        except confluent_kafka.KafkaException:
            pass
        if time.monotonic() > deadline:
            raise BenchError(f"{bootstrap}: fewer than {count} brokers after "
                             f"{READY_TIMEOUT_S:.0f} s")
        time.sleep(POLL_S)  # another process's state: polling is the only way to see it


def create_topic(bootstrap: str, topic: str, partitions: int, replicas: int,
                 assignment: list[list[int]] | None = None) -> None:
    """Create ``topic`` (min.insync.replicas=2 when replicated; on the brokers of
    ``assignment``, one list per partition, if given) and wait until each partition has a
    leader and all its replicas in sync, so no measurement starts with metadata retries."""
    config = {"min.insync.replicas": "2"} if replicas > 1 else {}
    new = (NewTopic(topic, partitions, replicas, config=config) if assignment is None else
           NewTopic(topic, partitions, replica_assignment=assignment, config=config))
    client = admin(bootstrap)
    deadline = time.monotonic() + READY_TIMEOUT_S
    while True:
        try:
            client.create_topics([new])[topic].result(10)
            break
        except confluent_kafka.KafkaException as exc:
            if exc.args[0].code() == confluent_kafka.KafkaError.TOPIC_ALREADY_EXISTS:
                break
        if time.monotonic() > deadline:
            raise BenchError(f"{topic}: not created after {READY_TIMEOUT_S:.0f} s")
        time.sleep(POLL_S)
    wait_in_sync(bootstrap, topic, partitions, replicas)


def wait_in_sync(bootstrap: str, topic: str, partitions: int, replicas: int,
                 timeout_s: float = READY_TIMEOUT_S) -> None:
    """Until every partition of ``topic`` has a leader and ``replicas`` replicas in sync."""
    client = admin(bootstrap)
    deadline = time.monotonic() + timeout_s
    while not _in_sync(client, topic, partitions, replicas):
        if time.monotonic() > deadline:
            raise BenchError(f"{topic}: its {partitions} partitions not all led with "
                             f"{replicas} replicas in sync after {timeout_s:.0f} s")
        time.sleep(POLL_S)  # another process's state: polling is the only way to see it


def leader_of(bootstrap: str, topic: str, partition: int = 0) -> int:
    """The broker leading ``partition`` of ``topic`` now, as the metadata says."""
    found = admin(bootstrap).list_topics(topic, timeout=10).topics[topic]
    leader: int = found.partitions[partition].leader
    if leader < 0:
        raise BenchError(f"{topic}-{partition} has no leader")
    return leader


def _in_sync(client: AdminClient, topic: str, partitions: int, replicas: int) -> bool:
    try:
        found = client.list_topics(topic, timeout=5).topics[topic]
    except (confluent_kafka.KafkaException, KeyError):
        return False
    return (found.error is None and len(found.partitions) == partitions
            and all(p.leader >= 0 and len(p.replicas) == replicas
                    and sorted(p.isrs) == sorted(p.replicas)
                    for p in found.partitions.values()))


def delete_topic(bootstrap: str, topic: str) -> None:
    """Delete ``topic`` (its disk space comes back when the broker removes its files)."""
    client = admin(bootstrap)  # held: a collected client never completes its futures
    client.delete_topics([topic], operation_timeout=30)[topic].result(60)


def record_count(bootstrap: str, topic: str, partitions: int) -> int:
    """The records in ``topic``: the sum of its partitions' high watermarks."""
    consumer = confluent_kafka.Consumer({"bootstrap.servers": bootstrap, "group.id": "count"})
    try:
        return sum(consumer.get_watermark_offsets(
            confluent_kafka.TopicPartition(topic, p), timeout=_WATERMARK_TIMEOUT_S)[1]
            for p in range(partitions))
    finally:
        consumer.close()


def payload(size: int) -> bytes:
    """One random value of upper-case letters, reused for every record, as
    ProducerPerformance makes its payload (so lz4 meets the same data from both generators)."""
    return "".join(random.choices(string.ascii_uppercase, k=size)).encode()


#: librdkafka's queue of unsent records, as the Java producer's ``buffer.memory`` (32 MiB),
#: not its own default of 1 GiB: what is still queued when the sending stops is drained
#: before the rate is taken, and 20 producers' 1 GiB each would drain for minutes
QUEUE_KBYTES = 32 * 1024


def drain_timeout_s(seconds: float) -> float:
    """Bound on a producer's flush after ``seconds`` of sending."""
    return max(120.0, seconds * 6)


@dataclass(frozen=True, slots=True)
class Produced:
    records: int
    seconds: float


def produce_for(bootstrap: str, topic: str, size: int, seconds: float, *, acks: str,
                compression: str) -> Produced:
    """Produce back to back for ``seconds``, then flush: every record acknowledged, or a
    BenchError; the rate is over the time until the last acknowledgement."""
    producer = confluent_kafka.Producer({"bootstrap.servers": bootstrap, "acks": acks,
                                         "compression.type": compression,
                                         "queue.buffering.max.kbytes": QUEUE_KBYTES})
    value = payload(size)
    failed: list[confluent_kafka.KafkaError] = []

    def delivered(err: confluent_kafka.KafkaError | None, _msg: object) -> None:
        if err is not None:
            failed.append(err)

    sent = 0
    started = time.monotonic()
    while time.monotonic() - started < seconds:
        try:
            producer.produce(topic, value, on_delivery=delivered)
            sent += 1
        except BufferError:
            producer.poll(0.005)
        producer.poll(0)
    unacknowledged = producer.flush(drain_timeout_s(seconds))
    if unacknowledged or failed:
        raise BenchError(f"librdkafka producer: {len(failed)} failed, {unacknowledged} "
                         f"unacknowledged (first error: {failed[:1]})")
    return Produced(sent, time.monotonic() - started)


@dataclass
class Consumed:
    records: int = 0
    bytes: int = 0
    seconds: float = 0.0
    #: when the group's last assignment came (from the start), and the bytes read by then
    assigned_s: float = 0.0
    bytes_when_assigned: int = 0

    @property
    def after_assignment_mb_s(self) -> float:
        """MB/s from the group's last assignment to the last record (the join left out,
        as ConsumerPerformance's ``fetch.MB.sec``)."""
        return ((self.bytes - self.bytes_when_assigned) / 1e6
                / max(self.seconds - self.assigned_s, 1e-9))


#: librdkafka waits ``fetch.queue.backoff.ms`` (1 s) before fetching a partition again once
#: its local queue is over ``queued.min.messages``, so a consumer reading a backlog faster
#: than its application drains it paces itself by that timer, not by the broker: 500 MB
#: read in 6.2 s from Kafka and 8.6 s from pykraft with it, 1.8 and 1.6 s without
#: (2026-11-30, same Fetch count and bytes per Fetch).
NO_QUEUE_BACKOFF = {"fetch.queue.backoff.ms": 0}


def consume_all(bootstrap: str, topic: str, expected: int, *, members: int, group: str,
                timeout_s: float) -> Consumed:
    """``members`` consumers of ``group`` (subscribe, from the earliest offset), one thread
    each, read until together they have ``expected`` records; time from their start (the
    group's join included, as ConsumerPerformance's MB.sec) to the last record, and when
    the group's last assignment came."""
    total = Consumed()
    lock = threading.Lock()
    errors: list[str] = []
    started = time.monotonic()
    deadline = started + timeout_s

    def assigned(_consumer: object, _partitions: object) -> None:
        with lock:
            total.assigned_s = time.monotonic() - started
            total.bytes_when_assigned = total.bytes

    def member() -> None:
        consumer = confluent_kafka.Consumer({
            "bootstrap.servers": bootstrap, "group.id": group,
            "auto.offset.reset": "earliest", "enable.auto.commit": False,
            **NO_QUEUE_BACKOFF})
        try:
            consumer.subscribe([topic], on_assign=assigned)
            while total.records < expected and not errors and time.monotonic() < deadline:
                records = size = 0
                for message in consumer.consume(CONSUME_BATCH, POLL_S):
                    if message.error() is not None:
                        errors.append(str(message.error()))
                        return
                    records += 1
                    size += len(message.value() or b"")
                with lock:
                    total.records += records
                    total.bytes += size
                    if total.records >= expected and not total.seconds:
                        total.seconds = time.monotonic() - started
        finally:
            consumer.close()

    threads = [threading.Thread(target=member, name=f"consumer-{i}") for i in range(members)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()) + 30)
    if errors or total.records < expected:
        raise BenchError(f"librdkafka {group}: {total.records} of {expected} records "
                         f"in {timeout_s:.0f} s (errors: {errors[:1]})")
    return total


class LatencyProbe:
    """A consumer from the end of a one-partition topic, in its own thread, timing each
    record from its producer's CreateTime (ms, the wall clock of this same machine) to its
    arrival: produce->consume latency for any producer, ProducerPerformance included."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        self.latencies_ms: list[float] = []
        self._consumer = confluent_kafka.Consumer({
            "bootstrap.servers": bootstrap, "group.id": "latency-probe",
            "enable.auto.commit": False})
        end = self._consumer.get_watermark_offsets(
            confluent_kafka.TopicPartition(topic, 0), timeout=_WATERMARK_TIMEOUT_S)[1]
        self._consumer.assign([confluent_kafka.TopicPartition(topic, 0, end)])
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._receive, name="latency-probe")
        self._thread.start()

    def _receive(self) -> None:
        while not self._stop.is_set():
            for message in self._consumer.consume(CONSUME_BATCH, 0.05):
                if message.error() is None:
                    self.latencies_ms.append(time.time() * 1000 - message.timestamp()[1])

    def wait_for(self, count: int, timeout_s: float) -> None:
        """Until ``count`` records arrived (bounded by ``timeout_s``), then stop."""
        deadline = time.monotonic() + timeout_s
        try:
            while len(self.latencies_ms) < count:
                if time.monotonic() > deadline:
                    raise BenchError(f"latency probe: {len(self.latencies_ms)} of {count} "
                                     f"records after {timeout_s:.0f} s")
                time.sleep(POLL_S)  # the consumer thread appends: polling its count
        finally:
            self.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(30)
        self._consumer.close()


def percentile(values: list[float], q: float) -> float:
    """The ``q`` quantile of ``values`` (nearest rank; NaN when empty)."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


#: A client that notices a broker back (or a new leader) within 0.1 s: the figures that use
#: it are the servers' time to serve again, not librdkafka's reconnect backoff (up to 10 s).
PROMPT_CLIENT = {"reconnect.backoff.ms": 20, "reconnect.backoff.max.ms": 100,
                 "retry.backoff.ms": 20, "retry.backoff.max.ms": 100,
                 "topic.metadata.refresh.fast.interval.ms": 50}
FAILOVER_WARMUP_S = 1.0
SEND_INTERVAL_S = 0.001


def unavailable_s(bootstrap: str, topic: str, fault: Callable[[], None],
                  timeout_s: float) -> float:
    """Seconds from ``fault()`` (a kill) to the first acknowledgement of a record sent after
    it began, by an idempotent acks=all producer sending to partition 0 about every ms
    (acknowledged before the fault for :data:`FAILOVER_WARMUP_S`)."""
    producer = confluent_kafka.Producer({"bootstrap.servers": bootstrap, "acks": "all",
                                         "enable.idempotence": True, "linger.ms": 0,
                                         **PROMPT_CLIENT})
    fault_at = [math.inf]
    acked: list[float] = []

    def delivered(sent_at: float, err: confluent_kafka.KafkaError | None,
                  _msg: object) -> None:
        if err is None and sent_at >= fault_at[0] and not acked:
            acked.append(time.monotonic())

    def send() -> None:
        producer.produce(topic, b"x" * 100, partition=0,
                         on_delivery=functools.partial(delivered, time.monotonic()))
        producer.poll(SEND_INTERVAL_S)

    warmup_end = time.monotonic() + FAILOVER_WARMUP_S
    while time.monotonic() < warmup_end:
        send()
    if producer.flush(30):
        raise BenchError(f"{topic}: records unacknowledged before the fault")
    fault_at[0] = time.monotonic()
    fault()
    while not acked:
        if time.monotonic() - fault_at[0] > timeout_s:
            raise BenchError(f"{topic}: no record acknowledged {timeout_s:.0f} s after the fault")
        send()
    producer.flush(timeout_s)
    return acked[0] - fault_at[0]


def acknowledged_at(bootstrap: str, topic: str, partition: int, timeout_s: float) -> float:
    """The monotonic time one acks=1 record to ``partition`` was acknowledged (retrying
    promptly while its leader is away)."""
    producer = confluent_kafka.Producer({"bootstrap.servers": bootstrap, "acks": "1",
                                         "message.timeout.ms": int(timeout_s * 1000),
                                         **PROMPT_CLIENT})
    acked: list[float] = []
    failed: list[confluent_kafka.KafkaError] = []

    def delivered(err: confluent_kafka.KafkaError | None, _msg: object) -> None:
        if err is not None:
            failed.append(err)
        else:
            acked.append(time.monotonic())

    producer.produce(topic, b"serving?", partition=partition, on_delivery=delivered)
    producer.flush(timeout_s + 5)
    if not acked:
        raise BenchError(f"{topic}-{partition}: not served within {timeout_s:.0f} s "
                         f"({failed[:1]})")
    return acked[0]


def produce_together(bootstrap: str, topic: str, size: int, seconds: float, *, acks: str,
                     producers: int) -> Produced:
    """``producers`` librdkafka producers (one thread each) producing for ``seconds``: all
    their records, over the longest one's time."""
    done: list[Produced] = []
    errors: list[BenchError] = []

    def one() -> None:
        try:
            done.append(produce_for(bootstrap, topic, size, seconds, acks=acks,
                                    compression="none"))
        except BenchError as exc:
            errors.append(exc)

    threads = [threading.Thread(target=one, name=f"producer-{i}") for i in range(producers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(seconds + drain_timeout_s(seconds) + 30)
    if errors or len(done) < producers:
        raise BenchError(f"{len(done)} of {producers} producers finished ({errors[:1]})")
    return Produced(sum(p.records for p in done), max(p.seconds for p in done))
