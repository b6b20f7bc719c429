"""A client's throughput under a byte rate quota, on a running cluster: set the quota for
a client id with ``pykraft configs`` (a process of its own), then send or read a bounded
amount as fast as confluent-kafka can and time it. Shared by the acceptance test, which
holds the ratio to the quota, and ``bench/quota_throttle.py``, which prints it."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from typing import Any

#: Quota windows for a measurement that settles in seconds: Kafka's rate spreads a client's
#: first bytes over all windows but one, a burst of ``(num - 1) * size`` seconds at the
#: quota; with 2 windows of 1 s, that burst is a second's worth.
WINDOWS = {"quota.window.num": "2", "quota.window.size.seconds": "1"}
VALUE = b"v" * 1000
#: A consumer's answers at most: small beside the quotas measured.
FETCH_BYTES = 32_768


def set_client_quota(bootstrap: str, client_id: str, key: str, rate: int) -> None:
    """``pykraft configs --alter`` for ``client_id``, then until the broker describes it
    (DescribeClientQuotas is answered from the broker's image, which enforces it)."""
    tool = [sys.executable, "-m", "pykraft", "configs", "--bootstrap-server", bootstrap,
            "--entity-type", "clients", "--entity-name", client_id]
    subprocess.run([*tool, "--alter", "--add-config", f"{key}={rate}"], check=True,
                   env=os.environ, capture_output=True, timeout=60)
    deadline = time.monotonic() + 30
    while f"{key}={rate}" not in subprocess.run(
            [*tool, "--describe"], check=True, env=os.environ, capture_output=True,
            text=True, timeout=60).stdout:
        assert time.monotonic() < deadline, f"the broker never described {key} of {client_id}"


def produce_rate(bootstrap: str, topic: str, client_id: str, total: int) -> float:
    """Bytes of values a second, sending ``total`` bytes of them as fast as the producer
    can (acks=1, its throttle time honoured)."""
    import confluent_kafka

    producer = confluent_kafka.Producer({
        "bootstrap.servers": bootstrap, "client.id": client_id, "acks": 1,
        "linger.ms": 5, "batch.size": 16384, "enable.idempotence": False})
    failures: list[Any] = []
    count = total // len(VALUE)
    started = time.monotonic()
    for _ in range(count):
        while True:
            try:
                producer.produce(topic, VALUE, on_delivery=lambda error, _m: (
                    failures.append(error) if error else None))
                break
            except BufferError:  # the local queue is full: the broker throttles us
                producer.poll(0.01)
        producer.poll(0)
    assert producer.flush(120) == 0
    elapsed = time.monotonic() - started
    assert failures == []
    return count * len(VALUE) / elapsed


def consume_rate(bootstrap: str, topic: str, client_id: str, total: int) -> float:
    """Bytes of values a second, reading ``total`` bytes of them from the start of
    partition 0 as fast as the consumer can, in answers of at most :data:`FETCH_BYTES`: a
    throttled Fetch is answered empty and its bytes not counted, so answers as large as a
    window's quota would alternate with empty ones (half the quota, as Kafka's would)."""
    import confluent_kafka

    consumer = confluent_kafka.Consumer({
        "bootstrap.servers": bootstrap, "client.id": client_id, "group.id": client_id,
        "enable.auto.commit": False, "fetch.wait.max.ms": 100,
        "fetch.max.bytes": FETCH_BYTES, "message.max.bytes": FETCH_BYTES,
        "max.partition.fetch.bytes": FETCH_BYTES})
    consumer.assign([confluent_kafka.TopicPartition(topic, 0, confluent_kafka.OFFSET_BEGINNING)])
    read = 0
    started = None
    deadline = time.monotonic() + 120
    try:
        while read < total:
            assert time.monotonic() < deadline, f"read {read} of {total} bytes"
            message = consumer.poll(0.5)
            if message is None or message.error():
                continue
            if started is None:
                started = time.monotonic()
            read += len(message.value() or b"")
    finally:
        consumer.close()
    assert started is not None
    return read / (time.monotonic() - started)
