"""Apache Kafka and pykraft side by side (issue 29): one run on this machine, the two systems
alternated workload by workload (Kafka first), each a fresh cluster of real processes (1
controller + 3 brokers; Kafka's JVMs as ``kafka-server-start.sh`` runs them) started and
stopped by the bench, driven by the same load generators with the same arguments: Kafka's
own ``ProducerPerformance``, ``ConsumerPerformance`` and ``EndToEndLatency``, and librdkafka
(confluent-kafka). Workloads (``--workloads``):

- ``produce``: a matrix of replication (RF=1 acks=1, RF=3 acks=all with
  min.insync.replicas=2), record size, partitions and compression (``--replication``,
  ``--sizes``, ``--partitions``, ``--compression`` pick a subset). ProducerPerformance runs
  once uncounted to learn the rate (``--calibration-bytes``), then with enough records for
  ``--seconds``; librdkafka produces back to back for ``--seconds``.
- ``consume``: a log of ``--consume-bytes`` of 1 KiB records (12 partitions, RF=3) read from
  its start by ConsumerPerformance (one consumer), by one librdkafka consumer and by a group
  of 3 librdkafka consumers.
- ``latency``: produce->consume latency at fixed rates (``--rates``, RF=3 acks=all):
  ProducerPerformance ``--throughput`` paces, a librdkafka consumer times each record from
  its CreateTime (1 ms resolution); then EndToEndLatency (one record in flight).

Every row also gets the servers' resources (:mod:`server_usage`): CPU-seconds of all server
processes per GB of payload produced + replicated + consumed, and each node's peak and final
RSS. The machine's limits (loopback copy, fsync'd append) are measured in the same run.

    .venv/bin/python bench/vs_kafka.py [--workloads produce,consume,latency] [--quick]
        [--seconds 20] [--json]
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from rich.console import Console
from rich.table import Table

from dataplane import fsync_append_mb_s, loopback_mb_s
from java_perf import TOOL_JVM_OPTIONS, JavaTools
from peers.base import BenchError
from rdkafka_load import (
    LatencyProbe,
    consume_all,
    create_topic,
    delete_topic,
    percentile,
    produce_for,
    record_count,
    wait_brokers,
)
from server_usage import Usage, measured

from pykraft import __version__
from pykraft.tools.kafka_runtime import SERVER_START_JVM_OPTIONS, KafkaRuntime, write_log4j2
from pykraft.tools.local_cluster import LocalCluster

ROOT = Path(__file__).resolve().parent.parent
SYSTEMS = ("kafka", "pykraft")
WORKLOADS = ("produce", "consume", "latency")
BROKERS = 3
#: Both clusters get these (Kafka's own config/server.properties sets the group delay to 0
#: for a local cluster); otherwise each runs at its defaults.
CLUSTER_PROPERTIES = {"group.initial.rebalance.delay.ms": "0"}
LISTEN_TIMEOUT_S = 120.0
CONSUME_SIZE = 1024
CONSUME_PARTITIONS = 12
LATENCY_WARMUP_S = 1.0
GB = 1e9
#: wide enough for a row's label and every column, also when output is not a terminal
CONSOLE_WIDTH = 160
MB = 1e6


@dataclass
class Measurement:
    """One system's figures for one row, the servers' use meanwhile, and the payload bytes
    the servers took in, copied to followers and served (for CPU-seconds per GB)."""

    figures: dict[str, float]
    usage: Usage
    moved_bytes: int

    @property
    def cpu_s_per_gb(self) -> float:
        return self.usage.total_cpu_s / (self.moved_bytes / GB) if self.moved_bytes else 0.0

    def summary(self) -> dict[str, object]:
        return {"figures": {k: round(v, 3) for k, v in self.figures.items()},
                "moved_bytes": self.moved_bytes, "cpu_s_per_gb": round(self.cpu_s_per_gb, 2),
                "usage": self.usage.summary()}


@dataclass
class Results:
    """Rows in the order first measured: label -> system -> measurement."""

    rows: dict[str, dict[str, Measurement]] = field(default_factory=dict)
    workload_of: dict[str, str] = field(default_factory=dict)

    def add(self, workload: str, label: str, system: str, measurement: Measurement) -> None:
        self.rows.setdefault(label, {})[system] = measurement
        self.workload_of[label] = workload


@dataclass(frozen=True)
class Target:
    """One running cluster, as the workloads see it."""

    system: str
    cluster: LocalCluster
    tools: JavaTools
    args: argparse.Namespace

    @property
    def bootstrap(self) -> str:
        return self.cluster.bootstrap_servers

    @property
    def pids(self) -> dict[int, int]:
        return dict(self.cluster.pids)

    @property
    def timeout_s(self) -> float:
        """Bound on one generator's run: well over its expected ``--seconds``."""
        return float(self.args.seconds * 6 + 120)

    def measure(self, results: Results, workload: str, label: str, moved_bytes: int,
                run: Callable[[], dict[str, float]]) -> dict[str, float]:
        """Run one row's load under :func:`server_usage.measured` and record it."""
        with measured(self.pids) as usage:
            figures = run()
        results.add(workload, label, self.system, Measurement(figures, usage, moved_bytes))
        return figures


@contextmanager
def running(system: str, base: Path, kafka: KafkaRuntime, tools: JavaTools,
            args: argparse.Namespace, console: Console) -> Iterator[Target]:
    """A fresh 1 controller + 3 brokers cluster of ``system`` in ``base``; every node stopped
    by PID and ``base`` removed afterwards, also on an error or Ctrl-C."""
    shutil.rmtree(base, ignore_errors=True)
    if system == "kafka":
        cluster = LocalCluster.create(base, 0, CLUSTER_PROPERTIES, 0, kafka_controllers=1,
                                      kafka_brokers=BROKERS, kafka=kafka)
    else:
        cluster = LocalCluster.create(base, 1, CLUSTER_PROPERTIES, BROKERS)
    try:
        started = time.monotonic()
        cluster.start_all()
        cluster.wait_listening(list(cluster.nodes), LISTEN_TIMEOUT_S)
        wait_brokers(cluster.bootstrap_servers, BROKERS)
        console.print(f"{system}: {len(cluster.nodes)} nodes up in "
                      f"{time.monotonic() - started:.1f} s (pids {cluster.pids})", style="dim")
        yield Target(system, cluster, tools, args)
    finally:
        cluster.stop_all()
        shutil.rmtree(base, ignore_errors=True)


def produce_workload(target: Target, results: Results) -> None:
    args = target.args
    for replicas, size, partitions, compression in itertools.product(
            args.replication, args.sizes, args.partitions, args.compression):
        acks = "all" if replicas > 1 else "1"
        label = f"produce RF={replicas} acks={acks} {size} B {partitions}p {compression}"
        topic = f"produce-{replicas}-{size}-{partitions}-{compression}"
        create_topic(target.bootstrap, topic, partitions, replicas)
        records = max(100, args.calibration_bytes // size)
        if not args.quick:  # a smoke run counts its calibration-sized run directly
            calibration = target.tools.produce(
                target.bootstrap, topic, records, size, acks=acks, compression=compression,
                timeout_s=target.timeout_s)
            records = max(100, min(int(calibration.records_s * args.seconds),
                                   args.cell_bytes // size))

        def java() -> dict[str, float]:
            done = target.tools.produce(target.bootstrap, topic, records, size, acks=acks,
                                        compression=compression, timeout_s=target.timeout_s)
            return {"MB/s": done.records_s * size / MB, "records/s": done.records_s,
                    "ack p50 ms": done.p50_ms, "ack p99 ms": done.p99_ms,
                    "ack p99.9 ms": done.p999_ms}

        target.measure(results, "produce", f"{label} [ProducerPerformance]",
                       records * size * replicas, java)
        with measured(target.pids) as usage:
            produced = produce_for(target.bootstrap, topic, size, args.seconds, acks=acks,
                                   compression=compression)
        rate = produced.records / produced.seconds
        results.add("produce", f"{label} [librdkafka]", target.system, Measurement(
            {"MB/s": rate * size / MB, "records/s": rate}, usage,
            produced.records * size * replicas))
        delete_topic(target.bootstrap, topic)


def consume_workload(target: Target, results: Results) -> None:
    args = target.args
    topic = "consume"
    records = max(1, args.consume_bytes // CONSUME_SIZE)
    create_topic(target.bootstrap, topic, CONSUME_PARTITIONS, BROKERS)
    target.measure(results, "consume", "consume: log fill RF=3 acks=all 1 KiB 12p "
                   "[ProducerPerformance]", records * CONSUME_SIZE * BROKERS,
                   lambda: _fill(target, topic, records))
    stored = record_count(target.bootstrap, topic, CONSUME_PARTITIONS)
    if stored != records:
        raise BenchError(f"{target.system}: {stored} records in {topic}, {records} produced")
    moved = records * CONSUME_SIZE

    def java() -> dict[str, float]:
        done = target.tools.consume(target.bootstrap, topic, records, "perf-1",
                                    target.timeout_s)
        if done.records != records:  # it gave up after its --timeout without a record
            raise BenchError(f"ConsumerPerformance read {done.records} of {records}")
        return {"MB/s": done.mb_s * 2**20 / MB, "records/s": done.records_s,
                "fetch MB/s": done.fetch_mb_s * 2**20 / MB}

    target.measure(results, "consume", "consume 1 consumer [ConsumerPerformance]", moved, java)
    for members in (1, 3):
        def librdkafka(members: int = members) -> dict[str, float]:
            done = consume_all(target.bootstrap, topic, records, members=members,
                               group=f"rdkafka-{members}", timeout_s=target.timeout_s)
            return {"MB/s": done.bytes / done.seconds / MB,
                    "records/s": done.records / done.seconds}

        what = "1 consumer" if members == 1 else f"group of {members}"
        target.measure(results, "consume", f"consume {what} [librdkafka]", moved, librdkafka)


def _fill(target: Target, topic: str, records: int) -> dict[str, float]:
    done = target.tools.produce(target.bootstrap, topic, records, CONSUME_SIZE, acks="all",
                                compression="none", timeout_s=target.timeout_s)
    return {"MB/s": done.records_s * CONSUME_SIZE / MB, "records/s": done.records_s}


def latency_workload(target: Target, results: Results) -> None:
    args = target.args
    size = args.latency_size
    for rate in args.rates:
        topic = f"latency-{rate}"
        create_topic(target.bootstrap, topic, 1, BROKERS)
        warmup = int(rate * LATENCY_WARMUP_S)
        records = warmup + int(rate * args.seconds)
        probe = LatencyProbe(target.bootstrap, topic)

        def paced(probe: LatencyProbe = probe, rate: int = rate,
                  records: int = records, warmup: int = warmup) -> dict[str, float]:
            try:
                done = target.tools.produce(target.bootstrap, topic, records, size,
                                            throughput=rate, acks="all", compression="none",
                                            timeout_s=target.timeout_s)
            except BaseException:
                probe.close()
                raise
            probe.wait_for(records, target.timeout_s)
            measured_ms = probe.latencies_ms[warmup:]
            return {"e2e p50 ms": percentile(measured_ms, 0.5),
                    "e2e p99 ms": percentile(measured_ms, 0.99),
                    "e2e p99.9 ms": percentile(measured_ms, 0.999),
                    "ack p99 ms": done.p99_ms, "records/s": done.records_s}

        target.measure(results, "latency", f"latency {rate}/s RF=3 acks=all {size} B "
                       "[ProducerPerformance --throughput, librdkafka consumer]",
                       records * size * (BROKERS + 1), paced)
    topic = "latency-one-at-a-time"
    create_topic(target.bootstrap, topic, 1, BROKERS)

    def one_at_a_time() -> dict[str, float]:
        done = target.tools.end_to_end(target.bootstrap, topic, args.e2e_records, size,
                                       target.timeout_s)
        return {"e2e avg ms": done.avg_ms, "e2e p50 ms": done.p50_ms,
                "e2e p99 ms": done.p99_ms, "e2e p99.9 ms": done.p999_ms}

    target.measure(results, "latency", f"latency one in flight RF=3 acks=all {size} B "
                   "[EndToEndLatency]", args.e2e_records * size * (BROKERS + 1), one_at_a_time)


RUNS: dict[str, Callable[[Target, Results], None]] = {
    "produce": produce_workload, "consume": consume_workload, "latency": latency_workload}


def plan(args: argparse.Namespace) -> list[tuple[str, list[str]]]:
    """Which cluster runs which workloads, in order: a fresh cluster of each system per
    workload (Kafka first), or with ``--cluster-per run`` one per system for them all."""
    if args.cluster_per == "run":
        return [(system, list(args.workloads)) for system in SYSTEMS]
    return [(system, [workload]) for workload in args.workloads for system in SYSTEMS]


def git_commit() -> str:
    done = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                          capture_output=True, text=True, timeout=10, check=False)
    return done.stdout.strip() or "unknown"


def kafka_version(kafka: KafkaRuntime) -> str:
    """The version in the name of Kafka's server jar (``kafka_2.13-4.4.0.jar``)."""
    server = next(jar for jar in kafka.jars if jar.name.startswith("kafka_"))
    return server.stem.rpartition("-")[2]


def default_kafka_home() -> Path | None:
    """The newest Kafka ``make kafka`` put in ``.cache/kafka``, else None ($KAFKA_HOME)."""
    homes = sorted((ROOT / ".cache" / "kafka").glob("*/libs"))
    return homes[-1].parent if homes else None


def ratio(mine: float, theirs: float) -> str:
    return f"{mine / theirs:.2f}" if theirs else "-"


def figures_table(results: Results, workload: str) -> Table:
    table = Table(title=f"{workload}: every figure (MB = 10^6 bytes of payload)")
    for column in ("row", "figure", "Kafka", "pykraft", "pykraft / Kafka"):
        table.add_column(column, justify="left" if column in ("row", "figure") else "right")
    for label, systems in results.rows.items():
        if results.workload_of[label] != workload:
            continue
        names = list(next(iter(systems.values())).figures)
        for name in names:
            kafka, pykraft = (systems[s].figures.get(name) if s in systems else None
                              for s in SYSTEMS)
            table.add_row(label if name == names[0] else "", name,
                          *(f"{v:,.2f}" if v is not None else "-" for v in (kafka, pykraft)),
                          ratio(pykraft, kafka) if kafka is not None and pykraft is not None
                          else "-")
    return table


def resources_table(results: Results) -> Table:
    table = Table(title="server resources per row: CPU-s of all server processes per GB of "
                        "payload produced + replicated + consumed; RSS in MiB")
    for column in ("row", "system", "GB moved", "CPU-s", "CPU-s/GB", "broker peak RSS (max)",
                   "broker RSS at end", "controller peak RSS"):
        table.add_column(column, justify="left" if column in ("row", "system") else "right")
    for label, systems in results.rows.items():
        for system, m in systems.items():
            brokers = [n for n in m.usage.peak_rss if n >= 1000]
            controllers = [n for n in m.usage.peak_rss if n < 1000]
            table.add_row(label if system == next(iter(systems)) else "", system,
                          f"{m.moved_bytes / GB:.2f}", f"{m.usage.total_cpu_s:.1f}",
                          f"{m.cpu_s_per_gb:.1f}",
                          f"{max(m.usage.peak_rss[n] for n in brokers) / 2**20:.0f}",
                          " ".join(f"{m.usage.end_rss[n] / 2**20:.0f}" for n in brokers),
                          " ".join(f"{m.usage.peak_rss[n] / 2**20:.0f}" for n in controllers))
    return table


def main(args: argparse.Namespace) -> int:
    console = Console(stderr=args.json, width=CONSOLE_WIDTH)
    kafka = KafkaRuntime.locate(args.kafka_home, SERVER_START_JVM_OPTIONS)
    directory = Path(args.dir)
    directory.mkdir(parents=True, exist_ok=True)
    tools = JavaTools.of(kafka, write_log4j2(directory))
    load_start = os.getloadavg()
    limits = {"loopback_mb_s": loopback_mb_s(), "fsync_append_mb_s": fsync_append_mb_s(directory)}
    header = {"commit": git_commit(), "pykraft_version": __version__,
              "kafka_version": kafka_version(kafka), "host": platform.node(),
              "cpus": os.cpu_count(), "kafka_server_jvm_options": list(kafka.jvm_options),
              "tool_jvm_options": list(TOOL_JVM_OPTIONS),
              "cluster_properties": CLUSTER_PROPERTIES, "seconds": args.seconds}
    console.print(header)
    console.print(f"load average {load_start} at start; limits: loopback "
                  f"{limits['loopback_mb_s']:.0f} MB/s, fsync'd append "
                  f"{limits['fsync_append_mb_s']:.0f} MB/s")
    results = Results()
    for system, workloads in plan(args):
        console.print(f"== {', '.join(workloads)} on {system}", style="bold")
        with running(system, directory / system, kafka, tools, args, console) as target:
            for workload in workloads:
                RUNS[workload](target, results)
    load_end = os.getloadavg()
    console.print(f"load average {load_end} at the end")
    for workload in args.workloads:
        console.print(figures_table(results, workload))
    console.print(resources_table(results))
    if args.json:
        print(json.dumps({
            **header, "load_average": {"start": load_start, "end": load_end},
            "limits": {k: round(v, 1) for k, v in limits.items()},
            "rows": [{"label": label, "workload": results.workload_of[label],
                      **{s: m.summary() for s, m in systems.items()}}
                     for label, systems in results.rows.items()]}, indent=2))
    return 0


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    def ints(text: str) -> list[int]:
        return [int(x) for x in text.split(",") if x]

    def words(text: str) -> list[str]:
        return [x for x in text.split(",") if x]

    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--workloads", type=words, default=list(WORKLOADS),
                        help=f"comma-separated, of {', '.join(WORKLOADS)}")
    parser.add_argument("--cluster-per", choices=("workload", "run"), default="workload",
                        help="a fresh cluster per workload, alternating the systems "
                             "workload by workload; or one per system for the whole run "
                             "(faster, for a smoke run)")
    parser.add_argument("--seconds", type=float, default=20.0, help="of load per row")
    parser.add_argument("--replication", type=ints, default=[1, 3],
                        help="produce: 1 (acks=1) and/or 3 (acks=all, min.insync.replicas=2)")
    parser.add_argument("--sizes", type=ints, default=[100, 1024, 16384],
                        help="produce: record sizes in bytes")
    parser.add_argument("--partitions", type=ints, default=[1, 12], help="produce")
    parser.add_argument("--compression", type=words, default=["none", "lz4"], help="produce")
    parser.add_argument("--calibration-bytes", type=int, default=64 * 2**20,
                        help="produce: the uncounted ProducerPerformance run that sizes the "
                             "counted one")
    parser.add_argument("--cell-bytes", type=int, default=8 * 10**9,
                        help="produce: at most this much payload per counted run")
    parser.add_argument("--consume-bytes", type=int, default=2 * 10**9)
    parser.add_argument("--rates", type=ints, default=[1000, 20000],
                        help="latency: records/s")
    parser.add_argument("--latency-size", type=int, default=100, help="latency: bytes")
    parser.add_argument("--e2e-records", type=int, default=5000,
                        help="latency: EndToEndLatency's records (one in flight)")
    parser.add_argument("--quick", action="store_true",
                        help="a smoke run: 2 s rows, 20 MB to consume, ProducerPerformance "
                             "runs only its calibration's 2 MiB, counted")
    parser.add_argument("--kafka-home", type=Path, default=default_kafka_home(),
                        help="a Kafka distribution or jar directory (default: .cache/kafka)")
    parser.add_argument("--dir", default="/tmp/pykraft-bench-vs-kafka",
                        help="the clusters' data (removed after each) and the fsync'd append")
    parser.add_argument("--json", action="store_true", help="print JSON (tables to stderr)")
    args = parser.parse_args(argv)
    unknown = set(args.workloads) - set(WORKLOADS)
    if unknown or not args.workloads:
        parser.error(f"--workloads: any of {', '.join(WORKLOADS)} (unknown: {sorted(unknown)})")
    if set(args.replication) - {1, 3} or set(args.compression) - {"none", "lz4"}:
        parser.error("--replication takes 1 and/or 3, --compression none and/or lz4")
    counts = [*args.sizes, *args.partitions, *args.rates, args.latency_size, args.e2e_records]
    if min(counts) < 1 or args.seconds <= 0:
        parser.error("sizes, partitions, rates, counts and --seconds must be positive")
    if args.quick:
        args.seconds = min(args.seconds, 2.0)
        args.consume_bytes = min(args.consume_bytes, 20 * 10**6)
        args.calibration_bytes = min(args.calibration_bytes, 2 * 2**20)
        args.e2e_records = min(args.e2e_records, 200)
    return args


if __name__ == "__main__":
    sys.exit(main(parse_args()))
