"""The transactional side of a chaos run: producers writing transactions to their own topic,
``read_committed`` consumers reading it, and a last ``read_committed`` read after the faults.

Each producer (confluent-kafka, one ``transactional.id`` per producer for the whole run, so
a new client fences the one before) writes transactions of :data:`RECORDS_PER_TXN` unique
values ``<producer>.<generation>-<txn>.<n>`` spread over the partitions, then commits about
two in three and aborts the others (a seeded draw), recording each transaction as it ended
(:class:`~pykraft.chaos.history.TxnEnd`): ``commit`` or ``abort`` when the client said so;
an end that failed with an abortable error is aborted (``abort``), and one that failed
fatally or timed out without a verdict is ``unknown``, its producer replaced by a new
generation. The checker (:mod:`pykraft.chaos.txn_checks`) judges what the consumers and the
last read saw against those outcomes.
"""

from __future__ import annotations

import random
import threading
import time
from typing import Any

from pykraft.chaos.history import TxnEnd, TxnLog, TxnRead
from pykraft.chaos.recorder import Recorder
from pykraft.chaos.replica_logs import text
from pykraft.chaos.workload import CLIENT_LOGGING, Producing, Reader, Target

RECORDS_PER_TXN = 4
COMMIT_SHARE = 2 / 3
#: How long a transaction's end may take before its outcome is unknown (a fault can hold
#: the coordinator or a partition for a while; librdkafka retries within it).
END_TIMEOUT_S = 30.0
INIT_TIMEOUT_S = 30.0
#: Short, so a transaction its client abandoned is aborted within the run (the cluster
#: checks every second: the run's ``transaction.abort.timed.out...interval.ms``).
TRANSACTION_TIMEOUT_MS = 10_000


def txn_topic(topic: str) -> str:
    """The transactions' own topic beside the run's topic."""
    return f"{topic}-txn"


class TxnProducing(Producing):
    """A transactional producer's generations (the run loop is :class:`Producing`'s)."""

    kind = "txn-producer"

    def __init__(self, name: str, target: Target, recorder: Recorder, rate_per_s: float,
                 seed: int, stop: threading.Event) -> None:
        super().__init__(name, target, recorder, rate_per_s, stop)
        self._random = random.Random(f"{seed}-{name}")

    def _generation(self, name: str) -> None:
        """Transactions until the run stops or this client is lost (then a new one,
        which fences it, takes over)."""
        from confluent_kafka import KafkaException, Producer

        producer = Producer({"bootstrap.servers": self._target.bootstrap,
                             "transactional.id": f"chaos-{self._base}",
                             "transaction.timeout.ms": TRANSACTION_TIMEOUT_MS,
                             **CLIENT_LOGGING})
        try:
            producer.init_transactions(INIT_TIMEOUT_S)
        except KafkaException:
            time.sleep(self._interval)  # no coordinator yet (a fault): a new client asks
            return
        number = 0
        while not self._stop_event.is_set():
            if not self._transaction(producer, f"{name}-{number}"):
                return
            number += 1
            time.sleep(self._interval)  # the workload's pace

    def _transaction(self, producer: Any, name: str) -> bool:
        """One transaction, recorded as it ended; False when the client is lost."""
        from confluent_kafka import KafkaException

        values = [[self._random.randrange(self._target.partitions), f"{name}.{n}"]
                  for n in range(RECORDS_PER_TXN)]
        commit = self._random.random() < COMMIT_SHARE
        try:
            producer.begin_transaction()
            for partition, value in values:
                producer.produce(self._target.topic, value=str(value).encode(),
                                 partition=partition)
            outcome = self._end(producer, commit)
        except KafkaException as exc:
            outcome = self._failed(producer, exc)
        self._recorder.write(TxnEnd(self._recorder.now(), name, outcome, values))
        return outcome != "unknown"

    def _end(self, producer: Any, commit: bool) -> str:
        from confluent_kafka import KafkaException

        while True:
            try:
                if commit:
                    producer.commit_transaction(END_TIMEOUT_S)
                    return "commit"
                producer.abort_transaction(END_TIMEOUT_S)
                return "abort"
            except KafkaException as exc:
                error = exc.args[0]
                if not error.retriable() or error.fatal() or error.txn_requires_abort():
                    raise
                # retriable: librdkafka's rule is to call the same end again

    def _failed(self, producer: Any, exc: Any) -> str:
        """The outcome of a transaction whose writing or end raised ``exc``."""
        from confluent_kafka import KafkaException

        error = exc.args[0]
        if error.txn_requires_abort() and not error.fatal():
            try:
                producer.abort_transaction(END_TIMEOUT_S)
                return "abort"
            except KafkaException:
                return "unknown"
        return "unknown"


class TxnConsuming(Reader):
    """A ``read_committed`` reader of every partition of the transactions' topic."""

    kind = "txn-consumer"

    def run(self) -> None:
        consumer = _reader(self._target)
        try:
            while not self._stop_event.is_set():
                message = consumer.poll(0.2)
                if message is None or message.error() is not None:
                    continue
                partition, offset = message.partition(), message.offset()
                assert partition is not None and offset is not None
                self._recorder.write(TxnRead(self._recorder.now(), self._name, partition,
                                             offset, text(message.value())))
        finally:
            consumer.close()


def _reader(target: Target, isolation: str = "read_committed") -> Any:
    """A consumer of ``isolation`` assigned every partition from its start."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": target.bootstrap, "group.id": "chaos-txn-reader",
                         "enable.auto.commit": False, "isolation.level": isolation,
                         "enable.partition.eof": True, **CLIENT_LOGGING})
    consumer.assign([TopicPartition(target.topic, p, 0) for p in range(target.partitions)])
    return consumer


def _stable(target: Target, deadline: float) -> None:
    """Wait (bounded) until every partition's last stable offset is its high watermark:
    each transaction's markers written, an abandoned one aborted by its coordinator (at
    its timeout) or by the next client of its id."""
    from confluent_kafka import KafkaException, TopicPartition

    committed, everything = _reader(target), _reader(target, "read_uncommitted")
    try:
        while True:
            try:
                if all(committed.get_watermark_offsets(tp, 5)[1]
                       == everything.get_watermark_offsets(tp, 5)[1]
                       for tp in (TopicPartition(target.topic, p)
                                  for p in range(target.partitions))):
                    return
            except KafkaException:
                pass  # a leader not known yet: ask again
            if time.monotonic() > deadline:
                raise TimeoutError("transactions still open: the last stable offset stays "
                                   "below the high watermark")
            time.sleep(0.2)  # other processes: polling is the only way to see them change
    finally:
        committed.close()
        everything.close()


def read_transactions(target: Target, timeout_s: float) -> list[TxnLog]:
    """Every partition read ``read_committed`` to its end once every transaction has ended
    (its last stable offset is then its high watermark); raises TimeoutError past the
    bound."""
    from confluent_kafka import KafkaError

    deadline = time.monotonic() + timeout_s
    _stable(target, deadline)
    consumer = _reader(target)
    values: dict[int, list[str | None]] = {p: [] for p in range(target.partitions)}
    at_end: set[int] = set()
    try:
        while len(at_end) < target.partitions:
            if time.monotonic() > deadline:
                raise TimeoutError(f"read {sum(map(len, values.values()))} transactional "
                                   f"records, {len(at_end)} of {target.partitions} partitions "
                                   "to their end")
            message = consumer.poll(0.2)
            if message is None:
                continue
            partition = message.partition()
            assert partition is not None
            error = message.error()
            if error is not None:
                if error.code() == KafkaError._PARTITION_EOF:
                    at_end.add(partition)
                continue
            at_end.discard(partition)
            values[partition].append(text(message.value()))
    finally:
        consumer.close()
    return [TxnLog(p, values[p]) for p in sorted(values)]
