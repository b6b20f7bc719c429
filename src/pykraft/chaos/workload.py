"""The clients of a chaos run, each on a thread, recording what they see.

Producers are confluent-kafka's idempotent producers (acks=all): each sends unique values
``<producer>.<generation>-<sequence>`` round-robin over the partitions at a steady rate and
records the send, then the delivery report (partition and offset, or the error). A fatal
error (the idempotent producer gives up, e.g. a sequence gap it cannot repair) ends that
producer; a new generation with a new producer id takes over. Consumers are kafka-python
consumers without a group (assign, from the beginning) recording every record with the high
watermark of its fetch. :func:`read_committed` reads each partition once more to its high
watermark after the faults: the committed log the checker judges against.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any

from pykraft.chaos.history import UNKNOWN_OFFSET, Ack, Committed, Read, Send
from pykraft.chaos.recorder import Recorder
from pykraft.chaos.replica_logs import text

#: librdkafka's log: errors only (its retries and reconnections are a chaos run's normal).
CLIENT_LOGGING = {"log_level": 3, "log.connection.close": False}
#: Producer settings: short request and delivery timeouts so a fault shows in the history
#: as errors and gaps within a run, not after it.
PRODUCER_CONFIG = {
    "enable.idempotence": True,
    "acks": "all",
    "linger.ms": 5,
    "request.timeout.ms": 5000,
    "message.timeout.ms": 20000,
    "retry.backoff.ms": 100,
    **CLIENT_LOGGING,
}
MAX_IN_FLIGHT = 2000
FLUSH_TIMEOUT_S = 30.0


@dataclass(frozen=True, slots=True)
class Target:
    bootstrap: str
    topic: str
    partitions: int


class Producing(threading.Thread):
    """An idempotent producer's generations, one after another until the run stops."""

    kind = "producer"

    def __init__(self, name: str, target: Target, recorder: Recorder, rate_per_s: float,
                 stop: threading.Event) -> None:
        super().__init__(name=f"chaos-{self.kind}-{name}", daemon=True)
        self._base = name
        self._target = target
        self._recorder = recorder
        self._interval = 1.0 / rate_per_s
        self._stop_event = stop

    def run(self) -> None:
        generation = 0
        while not self._stop_event.is_set():
            self._generation(f"{self._base}.{generation}")
            generation += 1

    def _generation(self, name: str) -> None:
        from confluent_kafka import KafkaError, KafkaException, Message, Producer

        fatal = threading.Event()

        def on_error(error: KafkaError) -> None:
            if error.fatal():
                fatal.set()

        def report(error: KafkaError | None, message: Message) -> None:
            value = text(message.value()) or ""
            now = self._recorder.now()
            partition = message.partition() or 0
            if error is not None:
                self._recorder.write(Ack(now, name, value, partition, error=error.name()))
                if error.fatal():
                    fatal.set()
            else:
                offset = message.offset()  # None: delivered, offset unknown (implicit ack)
                self._recorder.write(Ack(now, name, value, partition,
                                         UNKNOWN_OFFSET if offset is None else offset))

        producer = Producer({"bootstrap.servers": self._target.bootstrap,
                             "error_cb": on_error, **PRODUCER_CONFIG})
        sequence = 0
        while not self._stop_event.is_set() and not fatal.is_set():
            if len(producer) >= MAX_IN_FLIGHT:
                producer.poll(self._interval)
                continue
            value = f"{name}-{sequence:07d}"
            partition = sequence % self._target.partitions
            self._recorder.write(Send(self._recorder.now(), name, value, partition))
            try:
                producer.produce(self._target.topic, value=value.encode(),
                                 partition=partition, on_delivery=report)
            except KafkaException as exc:  # refused before sending (the producer is fatal)
                self._recorder.write(Ack(self._recorder.now(), name, value, partition,
                                         error=exc.args[0].name()))
                fatal.set()
            sequence += 1
            producer.poll(self._interval)
        producer.flush(FLUSH_TIMEOUT_S)


def _consumer(bootstrap: str) -> Any:
    from kafka import KafkaConsumer

    return KafkaConsumer(bootstrap_servers=bootstrap, group_id=None,
                         enable_auto_commit=False, fetch_max_wait_ms=100,
                         request_timeout_ms=10000)


class Reader(threading.Thread):
    """A thread reading ``target`` as ``name`` into ``recorder`` until ``stop`` is set."""

    kind = "consumer"

    def __init__(self, name: str, target: Target, recorder: Recorder,
                 stop: threading.Event) -> None:
        super().__init__(name=f"chaos-{self.kind}-{name}", daemon=True)
        self._name = name
        self._target = target
        self._recorder = recorder
        self._stop_event = stop


class Consuming(Reader):
    """An assigned kafka-python consumer of every partition, from the start."""

    def run(self) -> None:
        """Read on; a client error (kafka-python can trip over a broker missing from its
        metadata mid-fault) costs the consumer, and a new one resumes where it stopped."""
        from kafka.errors import KafkaError

        positions: dict[int, int] = {}
        while not self._stop_event.is_set():
            consumer = self._assigned(positions)
            try:
                self._read(consumer, positions)
            except KafkaError:
                continue
            finally:
                consumer.close()

    def _assigned(self, positions: dict[int, int]) -> Any:
        from kafka import TopicPartition

        consumer = _consumer(self._target.bootstrap)
        parts = [TopicPartition(self._target.topic, p) for p in range(self._target.partitions)]
        consumer.assign(parts)
        consumer.seek_to_beginning()
        for tp in parts:
            if tp.partition in positions:
                consumer.seek(tp, positions[tp.partition])
        return consumer

    def _read(self, consumer: Any, positions: dict[int, int]) -> None:
        while not self._stop_event.is_set():
            for tp, records in consumer.poll(timeout_ms=200).items():
                hw = consumer.highwater(tp)
                for r in records:
                    self._recorder.write(Read(self._recorder.now(), self._name,
                                              r.partition, r.offset, text(r.value),
                                              -1 if hw is None else hw))
                    positions[r.partition] = r.offset + 1


def read_committed(target: Target, timeout_s: float) -> list[Committed]:
    """Every partition from its start to its high watermark (end offsets as a consumer
    without transactions sees them); raises TimeoutError if it cannot within the bound."""
    from kafka import TopicPartition
    from kafka.errors import KafkaError

    deadline = time.monotonic() + timeout_s
    consumer = _consumer(target.bootstrap)
    parts = [TopicPartition(target.topic, p) for p in range(target.partitions)]
    try:
        consumer.assign(parts)
        while True:
            try:
                ends = consumer.end_offsets(parts)
                starts = consumer.beginning_offsets(parts)
                break
            except KafkaError as exc:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"no end offsets from the brokers ({exc!r})") from None
        consumer.seek_to_beginning()
        values: dict[int, dict[int, str | None]] = {p.partition: {} for p in parts}
        while any(len(values[p.partition]) < ends[p] - starts[p] for p in parts):
            if time.monotonic() > deadline:
                raise TimeoutError(f"read {sum(map(len, values.values()))} of "
                                   f"{sum(ends[p] - starts[p] for p in parts)} records")
            for tp, records in consumer.poll(timeout_ms=200).items():
                values[tp.partition].update((r.offset, text(r.value)) for r in records
                                            if r.offset < ends[tp])
    finally:
        consumer.close()
    return [Committed(p.partition, starts[p],
                      [values[p.partition].get(o) for o in range(starts[p], ends[p])])
            for p in parts]
