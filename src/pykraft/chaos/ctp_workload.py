"""Exactly-once consume-transform-produce in a chaos run: a member of a consumer group reads
the run's topic (``read_committed``) and copies each record to the same partition of an
output topic inside a transaction that also commits its consumed offsets
(``send_offsets_to_transaction``), so each input record below the group's committed offset
is in the output exactly once, in order, whatever the faults.

An aborted transaction (an abortable error) rewinds the consumer to the group's committed
offsets and goes on; a lost client (a fatal error, an end without a verdict, a call hung
past its timeout: :data:`HUNG_S`) is replaced by a new consumer and producer with the same
``transactional.id``, which fences the old one and aborts its open transaction. After the
faults the worker runs until its committed offsets reach the input's committed end
(bounded), then the output is read back ``read_committed`` and the group's offsets fetched
stable
(:class:`~pykraft.chaos.history.CtpResult`), for :mod:`pykraft.chaos.txn_checks`.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from pykraft.chaos.history import CtpResult
from pykraft.chaos.recorder import Recorder
from pykraft.chaos.txn_workload import END_TIMEOUT_S, INIT_TIMEOUT_S, read_transactions
from pykraft.chaos.workload import CLIENT_LOGGING, Target

GROUP = "chaos-ctp"
BATCH = 100
POLL_S = 0.2
OFFSETS_TIMEOUT_S = 10.0


def ctp_topic(topic: str) -> str:
    """The output topic beside the run's topic."""
    return f"{topic}-ctp"


#: How long one client call may block before its generation counts as hung: librdkafka's
#: ``send_offsets_to_transaction`` can block past its timeout when the group coordinator's
#: broker left the metadata (librdkafka issues 5456 and 5511, open in 2.16), which a broker
#: kill does. The hung client is left behind: the next generation fences its producer, and
#: its consumer, no longer polling, leaves the group after ``max.poll.interval.ms``.
HUNG_S = END_TIMEOUT_S + 15.0
#: The consumer's group timings: a hung generation's consumer is out within seconds.
CONSUMER_TIMINGS = {"session.timeout.ms": 6000, "max.poll.interval.ms": 10000}


class Transforming(threading.Thread):
    """Runs the copier's client generations one after another, replacing a hung one."""

    def __init__(self, source: Target, sink: Target, stop: threading.Event) -> None:
        super().__init__(name="chaos-ctp", daemon=True)
        self._source = source
        self._sink = sink
        self._stop_event = stop
        self.generations = 0
        self.hung = 0

    def run(self) -> None:
        while not self._stop_event.is_set():
            self.generations += 1
            generation = _Generation(self._source, self._sink, self._stop_event,
                                     self.generations)
            generation.start()
            while generation.is_alive():
                generation.join(POLL_S)
                if generation.hung():
                    self.hung += 1
                    break


class _Generation(threading.Thread):
    """One consumer and one transactional producer, copying until the run stops or the
    client is lost."""

    def __init__(self, source: Target, sink: Target, stop: threading.Event,
                 number: int) -> None:
        super().__init__(name=f"chaos-ctp-{number}", daemon=True)
        self._source = source
        self._sink = sink
        self._stop_event = stop
        self._call_since: float | None = None

    def hung(self) -> bool:
        since = self._call_since
        return since is not None and time.monotonic() - since > HUNG_S

    def _calling(self, active: bool) -> None:
        self._call_since = time.monotonic() if active else None

    def run(self) -> None:
        from confluent_kafka import Consumer, KafkaException, Producer

        consumer = Consumer({"bootstrap.servers": self._source.bootstrap, "group.id": GROUP,
                             "isolation.level": "read_committed",
                             "enable.auto.commit": False, "auto.offset.reset": "earliest",
                             **CONSUMER_TIMINGS, **CLIENT_LOGGING})
        producer = Producer({"bootstrap.servers": self._sink.bootstrap,
                             "transactional.id": GROUP, **CLIENT_LOGGING})
        try:
            self._calling(True)
            producer.init_transactions(INIT_TIMEOUT_S)
            self._calling(False)
            consumer.subscribe([self._source.topic])
            while not self._stop_event.is_set():
                records = [m for m in consumer.consume(BATCH, POLL_S) if m.error() is None]
                if records and not self._copy(consumer, producer, records):
                    return
        except KafkaException:
            return  # a new generation takes over (and fences this one)
        finally:
            self._calling(True)  # leaving the group can block as the calls can
            consumer.close()
            self._calling(False)

    def _copy(self, consumer: Any, producer: Any, records: list[Any]) -> bool:
        """One transaction: the records copied and the consumer's position committed with
        them; False when the client is lost."""
        from confluent_kafka import KafkaException

        try:
            producer.begin_transaction()
            for record in records:
                producer.produce(self._sink.topic, value=record.value(),
                                 partition=record.partition())
            self._calling(True)
            producer.send_offsets_to_transaction(
                consumer.position(consumer.assignment()), consumer.consumer_group_metadata(),
                END_TIMEOUT_S)
            producer.commit_transaction(END_TIMEOUT_S)
            return True
        except KafkaException as exc:
            error = exc.args[0]
            if error.fatal() or not error.txn_requires_abort():
                return False
            try:
                producer.abort_transaction(END_TIMEOUT_S)
                _rewind(consumer)
            except KafkaException:
                return False
            return True
        finally:
            self._calling(False)


def _rewind(consumer: Any) -> None:
    """Back to the group's committed offsets (an aborted transaction's reads again)."""
    for committed in consumer.committed(consumer.assignment(), OFFSETS_TIMEOUT_S):
        if committed.offset >= 0:
            consumer.seek(committed)


def committed_offsets(source: Target, timeout_s: float) -> list[int]:
    """The group's committed offsets, fetched stable (``read_committed``: a pending
    transactional commit is waited for); -1 for a partition without one."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": source.bootstrap, "group.id": GROUP,
                         "isolation.level": "read_committed", **CLIENT_LOGGING})
    try:
        found = consumer.committed([TopicPartition(source.topic, p)
                                    for p in range(source.partitions)], timeout_s)
    finally:
        consumer.close()
    by_partition = {tp.partition: tp.offset for tp in found}
    return [max(-1, by_partition.get(p, -1)) for p in range(source.partitions)]


def finish(worker: Transforming, source: Target, sink: Target, ends: dict[int, int],
           recorder: Recorder, stop: threading.Event, timeout_s: float) -> None:
    """Let the worker commit up to each input partition's committed end (``ends``), bounded;
    stop it; record the output and the group's offsets as they are then."""
    from confluent_kafka import KafkaException

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            offsets = committed_offsets(source, OFFSETS_TIMEOUT_S)
        except KafkaException:  # no coordinator yet: ask again
            offsets = []
        if offsets and all(offsets[p] >= end for p, end in ends.items()):
            break
        time.sleep(POLL_S)  # the worker commits on its own time
    stop.set()
    worker.join()  # bounded: a hung generation is left behind after HUNG_S
    output = read_transactions(sink, max(1.0, deadline - time.monotonic()) + END_TIMEOUT_S)
    recorder.write(CtpResult(recorder.now(), committed_offsets(source, OFFSETS_TIMEOUT_S),
                             [log.values for log in output], worker.generations, worker.hung))
