"""``bench/vs_kafka.py``'s ``transactions`` workload (issue 30): librdkafka's transactional
producer against its idempotent one on the same cluster, each for ``--seconds`` on a topic of
its own (RF=3, acks=all, 512 B records, 6 partitions): records/s, and for transactions of
``--txn-records`` records each the commit latency (``commit_transaction``, which returns
once the coordinator has written PrepareCommit: the markers follow) and transactions/s.

Kafka's ProducerPerformance also takes a transactional id, but it commits by elapsed time
(``--transaction-duration-ms``), not by count; librdkafka alone drives both systems here, so
each row's figures come from the same client doing the same thing.
"""

from __future__ import annotations

import functools
import time

import confluent_kafka

from peers.base import BenchError
from rdkafka_load import QUEUE_KBYTES, create_topic, delete_topic, payload, percentile, produce_for
from vs_kafka_run import BROKERS, MB, Results, Target

TXN_SIZE = 512
TXN_PARTITIONS = 6
INIT_TIMEOUT_S = 60.0
COMMIT_TIMEOUT_S = 60.0


def transactions_workload(target: Target, results: Results) -> None:
    label = f"RF={BROKERS} acks=all {TXN_SIZE} B {TXN_PARTITIONS}p"
    topic = "txn-idempotent"
    create_topic(target.bootstrap, topic, TXN_PARTITIONS, BROKERS)

    def idempotent() -> tuple[dict[str, float], int]:
        done = produce_for(target.bootstrap, topic, TXN_SIZE, target.args.seconds, acks="all",
                           compression="none")
        rate = done.records / done.seconds
        return ({"MB/s": rate * TXN_SIZE / MB, "records/s": rate},
                done.records * TXN_SIZE * BROKERS)

    target.measure(results, "transactions", f"idempotent {label} [librdkafka]", idempotent)
    delete_topic(target.bootstrap, topic)
    for count in target.args.txn_records:
        topic = f"txn-{count}"
        create_topic(target.bootstrap, topic, TXN_PARTITIONS, BROKERS)
        target.measure(results, "transactions",
                       f"transactions of {count} {label} [librdkafka]",
                       functools.partial(_transactional, target, topic, count))
        delete_topic(target.bootstrap, topic)


def _transactional(target: Target, topic: str, count: int) -> tuple[dict[str, float], int]:
    """Transactions of ``count`` records back to back for ``--seconds``, each committed."""
    producer = confluent_kafka.Producer({
        "bootstrap.servers": target.bootstrap, "transactional.id": f"bench-{topic}",
        "queue.buffering.max.kbytes": QUEUE_KBYTES})
    producer.init_transactions(INIT_TIMEOUT_S)
    value = payload(TXN_SIZE)
    commits: list[float] = []
    records = 0
    started = time.monotonic()
    try:
        while time.monotonic() - started < target.args.seconds:
            producer.begin_transaction()
            for _ in range(count):
                while True:
                    try:
                        producer.produce(topic, value)
                        break
                    except BufferError:
                        producer.poll(0.005)
                producer.poll(0)
            ending = time.monotonic()
            producer.commit_transaction(COMMIT_TIMEOUT_S)  # flushes, then EndTxn
            commits.append((time.monotonic() - ending) * 1000)
            records += count
    except confluent_kafka.KafkaException as exc:
        raise BenchError(f"{target.system}: transaction {len(commits) + 1} failed: "
                         f"{exc.args[0]}") from None
    seconds = time.monotonic() - started
    rate = records / seconds
    return ({"MB/s": rate * TXN_SIZE / MB, "records/s": rate,
             "txn/s": len(commits) / seconds,
             "commit p50 ms": percentile(commits, 0.5),
             "commit p99 ms": percentile(commits, 0.99)},
            records * TXN_SIZE * BROKERS)
