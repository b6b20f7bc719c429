"""The Kafka clients of ``format("pykraft")``: confluent-kafka (librdkafka), not pykraft's
own protocol code, so the source behaves as any Kafka client against any Kafka cluster
(SASL, SSL, leader changes, retries are librdkafka's, a well-kept and widely used client).

Consumers are assigned exact offsets (no group membership, no commits: Spark checkpoints
the offsets) and stop at ``enable.partition.eof``; producers are idempotent with
``acks=all`` and flushed per task, and any delivery error fails the task.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from confluent_kafka import (
    Consumer,
    IsolationLevel,
    KafkaError,
    KafkaException,
    Message,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient, OffsetSpec

from pykraft.errors import PyKraftError
from pykraft.ids import TopicPartition as Partition
from pykraft.spark.segment_plan import EARLIEST
from pykraft.spark.topic_options import ReadOptions

#: how long a metadata or offsets lookup may take on the driver
LOOKUP_TIMEOUT_S = 30.0
#: messages taken per poll; also the rows of one Arrow batch at most
POLL_BATCH = 2_000
#: one poll's wait: librdkafka waits this long whenever fewer than POLL_BATCH are fetched
POLL_WAIT_S = 0.1
#: a producer's queue is full: serve delivery reports this long, then try again
QUEUE_FULL_WAIT_S = 0.1
#: librdkafka's RD_KAFKA_PARTITION_UA: the producer's partitioner chooses
UNASSIGNED = -1

class DataLossError(PyKraftError):
    """Offsets Spark asked for are no longer (or not yet) in the log, with
    ``failOnDataLoss=true`` (the default, as Spark's)."""


class DeliveryError(PyKraftError):
    """A record the writer could not deliver; the Spark task fails rather than lose it."""


def data_loss(message: str) -> DataLossError:
    return DataLossError(
        f"{message}. Some data may have been lost because they are not available in Kafka any "
        "more; either the data was aged out by Kafka or the topic may have been deleted before "
        "all the data in the topic was processed. If you don't want your query to fail on "
        "such cases, set the source option 'failOnDataLoss' to 'false'.")


class OffsetLookup:
    """The driver's view of the topics: partitions of the subscription and their earliest
    and latest offsets (at the consumers' isolation level, as Spark's source)."""

    def __init__(self, options: ReadOptions) -> None:
        self.topics = options.topics
        self.admin = AdminClient(client_config(options.client))
        committed = options.client.get("isolation.level") == "read_committed"
        self.isolation = (IsolationLevel.READ_COMMITTED if committed
                          else IsolationLevel.READ_UNCOMMITTED)

    def partitions(self) -> list[Partition]:
        """The subscription's partitions now (``assign``: exactly those, which must exist;
        a topic pattern skips internal topics, as Kafka's consumers do)."""
        metadata = self.admin.list_topics(timeout=LOOKUP_TIMEOUT_S)
        existing = {Partition(name, p) for name, topic in metadata.topics.items()
                    if topic.error is None for p in topic.partitions}
        if self.topics.assign:
            missing = self.topics.missing(existing)
            if missing:
                raise PyKraftError(f"assigned partitions do not exist: {', '.join(missing)}")
            return sorted(self.topics.assign)
        return sorted(tp for tp in existing
                      if not tp.topic.startswith("__") and self.topics.keeps(*tp))

    def offsets(self, partitions: Iterable[Partition], which: int) -> dict[Partition, int]:
        """Each partition's log start (``which`` = EARLIEST) or end offset (LATEST)."""
        spec = (OffsetSpec.earliest() if which == EARLIEST  # type: ignore[no-untyped-call]
                else OffsetSpec.latest())  # type: ignore[no-untyped-call]
        wanted = {TopicPartition(t, p): spec for t, p in partitions}
        if not wanted:
            return {}
        futures = self.admin.list_offsets(wanted, isolation_level=self.isolation,
                                          request_timeout=LOOKUP_TIMEOUT_S)
        return {Partition(tp.topic, tp.partition): future.result().offset
                for tp, future in futures.items()}


Config = dict[str, str | int | float | bool]


def client_config(client: dict[str, str]) -> Config:
    """The ``kafka.*`` options as librdkafka's configuration (its own value types)."""
    return dict(client)


def consumer_config(options: ReadOptions) -> Config:
    """Spark's defaults where librdkafka's differ: ``read_uncommitted`` unless asked."""
    return {"isolation.level": "read_uncommitted", **options.client,
            "group.id": f"pykraft-spark-{uuid.uuid4()}", "enable.auto.commit": False,
            "enable.partition.eof": True, "auto.offset.reset": "error"}


def consume_range(options: ReadOptions, partition: Partition, start: int,
                  end: int) -> Iterator[list[Message]]:
    """The records of ``[start, end)`` in chunks, stopping at ``end`` even if the log holds
    more; offsets no longer (or not) in the log are data loss."""
    topic, number = partition
    consumer = Consumer(consumer_config(options))
    timeout_s = options.poll_timeout_ms / 1000
    try:
        low, high = consumer.get_watermark_offsets(TopicPartition(topic, number),
                                                   timeout=timeout_s, cached=False)
        if start < low:
            if options.fail_on_data_loss:
                raise data_loss(f"Cannot fetch offset {start} of {topic}-{number} (log start "
                                f"offset {low})")
            start = low
        if start >= end:
            return
        if high < end and options.fail_on_data_loss:
            raise data_loss(f"Cannot fetch offsets [{high}, {end}) of {topic}-{number}: the "
                            f"log ends at {high}")
        consumer.assign([TopicPartition(topic, number, start)])
        yield from _until(consumer, end, timeout_s, f"{topic}-{number}")
    finally:
        consumer.close()


def _until(consumer: Consumer, end: int, timeout_s: float,
           name: str) -> Iterator[list[Message]]:
    deadline = time.monotonic() + timeout_s
    while True:
        messages = consumer.consume(POLL_BATCH, timeout=min(POLL_WAIT_S, timeout_s))
        if not messages:
            if time.monotonic() > deadline:
                raise PyKraftError(f"no record of {name} in {timeout_s:g} s "
                                   f"(kafkaConsumer.pollTimeoutMs) before offset {end}")
            continue
        deadline = time.monotonic() + timeout_s
        chunk: list[Message] = []
        for message in messages:
            error = message.error()
            if error is not None:
                if error.code() == KafkaError._PARTITION_EOF:
                    yield chunk
                    return  # the log's end: offsets up to ``end`` are compacted or control
                raise KafkaException(error)
            if (message.offset() or 0) >= end:
                yield chunk
                return
            chunk.append(message)
        yield chunk
        if chunk and (chunk[-1].offset() or 0) == end - 1:
            return


@dataclass(slots=True)
class Delivery:
    """The first delivery error of a task's producer."""

    error: str | None = None

    def report(self, error: KafkaError | None, message: Message) -> None:
        if error is not None and self.error is None:
            self.error = (f"{message.topic()}-{message.partition()}: {error.str()}")


Headers = list[tuple[str, str | bytes | None]]
OutRecord = tuple[str, bytes | None, bytes | None, int | None, Headers | None]


def produce_all(client: dict[str, str], records: Iterable[OutRecord]) -> int:
    """Produce every record idempotently and wait for all acknowledgements; raises
    :class:`DeliveryError` at the first failure. Returns the count delivered."""
    producer = Producer({**client_config(client), "enable.idempotence": True, "acks": "all"})
    delivery = Delivery()
    count = 0
    for topic, key, value, partition, headers in records:
        _produce(producer, delivery.report, topic, key, value, partition, headers)
        count += 1
        if delivery.error is not None:
            break
    timeout_s = float(client.get("delivery.timeout.ms", "300000")) / 1000
    left = producer.flush(timeout_s)
    if delivery.error is not None:
        raise DeliveryError(f"could not deliver a record: {delivery.error}")
    if left:
        raise DeliveryError(f"{left} record(s) not acknowledged in {timeout_s:g} s")
    return count


def _produce(producer: Producer, report: Callable[[KafkaError | None, Message], None],
             topic: str, key: bytes | None, value: bytes | None, partition: int | None,
             headers: Headers | None) -> None:
    while True:
        try:
            producer.produce(topic, value=value, key=key, headers=headers, on_delivery=report,
                             partition=UNASSIGNED if partition is None else partition)
            return
        except BufferError:  # the local queue is full: serve deliveries to make room
            producer.poll(QUEUE_FULL_WAIT_S)
