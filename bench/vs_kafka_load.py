"""``bench/vs_kafka.py``'s throughput and latency workloads, each a function of one running
cluster (:class:`vs_kafka_run.Target`) adding its rows to the results.

- ``produce``: per cell of the matrix (replication, size, partitions, compression),
  ProducerPerformance once uncounted to learn the rate (``--calibration-bytes``), then in a
  new JVM that first sends as many again as ``--warmup-records`` and is counted over the
  rate x ``--seconds`` records after them; librdkafka back to back for ``--seconds``.
- ``consume``: a log of ``--consume-bytes`` of 1 KiB records (12 partitions, RF=3) read from
  its start by ConsumerPerformance, by one librdkafka consumer and by a group of 3.
- ``latency``: at each of ``--rates``, ProducerPerformance ``--throughput`` paces (RF=3,
  acks=all) while a librdkafka consumer times each record from its CreateTime (1 ms
  resolution); then EndToEndLatency, one record in flight.

Payload bytes moved (for CPU-seconds per GB) count each record once per replica written and
once per read: produced x RF, + consumed.
"""

from __future__ import annotations

import itertools

from peers.base import BenchError
from rdkafka_load import (
    LatencyProbe,
    consume_all,
    create_topic,
    delete_topic,
    percentile,
    produce_for,
    record_count,
)
from vs_kafka_run import BROKERS, MB, Results, Target

CONSUME_SIZE = 1024
CONSUME_PARTITIONS = 12
LATENCY_WARMUP_S = 1.0
#: ConsumerPerformance's MB are 2^20 bytes; the bench's are 10^6
_MIB_TO_MB = 2**20 / MB


def produce_workload(target: Target, results: Results) -> None:
    args = target.args
    for cell in itertools.product(args.replication, args.sizes, args.partitions,
                                  args.compression):
        produce_cell(target, results, *cell)


def produce_cell(target: Target, results: Results, replicas: int, size: int,
                 partitions: int, compression: str) -> None:
    """One cell of the produce matrix, by both generators, on a topic of its own."""
    args = target.args
    acks = "all" if replicas > 1 else "1"
    label = f"produce RF={replicas} acks={acks} {size} B {partitions}p {compression}"
    topic = f"produce-{replicas}-{size}-{partitions}-{compression}"
    create_topic(target.bootstrap, topic, partitions, replicas)
    warmup = max(100, args.calibration_bytes // size)
    records = 0
    if not args.quick:  # a smoke run counts its calibration-sized run, warm-up and all
        calibration = target.tools.produce(target.bootstrap, topic, warmup, size, acks=acks,
                                           compression=compression,
                                           timeout_s=target.timeout_s)
        records = max(100, min(int(calibration.records_s * args.seconds),
                               args.cell_bytes // size))

    def java() -> tuple[dict[str, float], int]:
        # the counted JVM warms up on the calibration's count first, figures after it only
        done = target.tools.produce(target.bootstrap, topic, warmup + records, size,
                                    acks=acks, compression=compression,
                                    timeout_s=target.timeout_s, warmup_records=warmup
                                    if records else 0)
        return ({"MB/s": done.records_s * size / MB, "records/s": done.records_s,
                 "ack p50 ms": done.p50_ms, "ack p99 ms": done.p99_ms,
                 "ack p99.9 ms": done.p999_ms}, (warmup + records) * size * replicas)

    def librdkafka() -> tuple[dict[str, float], int]:
        done = produce_for(target.bootstrap, topic, size, args.seconds, acks=acks,
                           compression=compression)
        rate = done.records / done.seconds
        return ({"MB/s": rate * size / MB, "records/s": rate}, done.records * size * replicas)

    target.measure(results, "produce", f"{label} [ProducerPerformance]", java)
    target.measure(results, "produce", f"{label} [librdkafka]", librdkafka)
    delete_topic(target.bootstrap, topic)


def consume_workload(target: Target, results: Results) -> None:
    topic = "consume"
    records = max(1, target.args.consume_bytes // CONSUME_SIZE)
    create_topic(target.bootstrap, topic, CONSUME_PARTITIONS, BROKERS)

    def fill() -> tuple[dict[str, float], int]:
        done = target.tools.produce(target.bootstrap, topic, records, CONSUME_SIZE,
                                    acks="all", compression="none",
                                    timeout_s=target.timeout_s)
        return ({"MB/s": done.records_s * CONSUME_SIZE / MB, "records/s": done.records_s},
                records * CONSUME_SIZE * BROKERS)

    target.measure(results, "consume", "consume: the log's fill, RF=3 acks=all 1 KiB 12p "
                   "[ProducerPerformance]", fill)
    stored = record_count(target.bootstrap, topic, CONSUME_PARTITIONS)
    if stored != records:
        raise BenchError(f"{target.system}: {stored} records in {topic}, {records} produced")

    def java() -> tuple[dict[str, float], int]:
        done = target.tools.consume(target.bootstrap, topic, records, "perf-1",
                                    target.timeout_s)
        if done.records != records:  # it gave up after its --timeout without a record
            raise BenchError(f"ConsumerPerformance read {done.records} of {records}")
        return ({"MB/s": done.mb_s * _MIB_TO_MB, "records/s": done.records_s,
                 "fetch MB/s": done.fetch_mb_s * _MIB_TO_MB}, records * CONSUME_SIZE)

    target.measure(results, "consume", "consume 1 consumer [ConsumerPerformance]", java)
    for members in (1, 3):
        consume_librdkafka(target, results, topic, records, members)


def consume_librdkafka(target: Target, results: Results, topic: str, records: int,
                       members: int) -> None:
    """``records`` of ``topic`` from its start by ``members`` librdkafka consumers of a new
    group."""
    def run() -> tuple[dict[str, float], int]:
        done = consume_all(target.bootstrap, topic, records, members=members,
                           group=f"rdkafka-{members}", timeout_s=target.timeout_s)
        return ({"MB/s": done.bytes / done.seconds / MB,
                 "records/s": done.records / done.seconds,
                 "fetch MB/s": done.after_assignment_mb_s,
                 "join s": done.assigned_s}, done.bytes)

    what = "1 consumer" if members == 1 else f"group of {members}"
    target.measure(results, "consume", f"consume {what} [librdkafka]", run)


def latency_workload(target: Target, results: Results) -> None:
    for rate in target.args.rates:
        paced_latency(target, results, rate)
    size = target.args.latency_size
    records = target.args.e2e_records
    topic = "latency-one-at-a-time"
    create_topic(target.bootstrap, topic, 1, BROKERS)

    def one_at_a_time() -> tuple[dict[str, float], int]:
        done = target.tools.end_to_end(target.bootstrap, topic, records, size,
                                       target.timeout_s)
        return ({"e2e avg ms": done.avg_ms, "e2e p50 ms": done.p50_ms,
                 "e2e p99 ms": done.p99_ms, "e2e p99.9 ms": done.p999_ms},
                records * size * (BROKERS + 1))

    target.measure(results, "latency", f"latency one in flight RF=3 acks=all {size} B "
                   "[EndToEndLatency]", one_at_a_time)


def paced_latency(target: Target, results: Results, rate: int) -> None:
    """Produce->consume latency at ``rate`` records/s (the first second uncounted)."""
    size = target.args.latency_size
    topic = f"latency-{rate}"
    create_topic(target.bootstrap, topic, 1, BROKERS)
    warmup = int(rate * LATENCY_WARMUP_S)
    records = warmup + int(rate * target.args.seconds)

    def run() -> tuple[dict[str, float], int]:
        probe = LatencyProbe(target.bootstrap, topic)
        try:
            done = target.tools.produce(target.bootstrap, topic, records, size,
                                        throughput=rate, acks="all", compression="none",
                                        timeout_s=target.timeout_s)
        except BaseException:
            probe.close()
            raise
        probe.wait_for(records, target.timeout_s)
        measured_ms = probe.latencies_ms[warmup:]
        return ({"e2e p50 ms": percentile(measured_ms, 0.5),
                 "e2e p99 ms": percentile(measured_ms, 0.99),
                 "e2e p99.9 ms": percentile(measured_ms, 0.999),
                 "ack p99 ms": done.p99_ms, "records/s": done.records_s},
                records * size * (BROKERS + 1))

    target.measure(results, "latency", f"latency {rate}/s RF=3 acks=all {size} B "
                   "[ProducerPerformance --throughput, librdkafka consumer]", run)
