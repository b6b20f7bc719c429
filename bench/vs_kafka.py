"""Apache Kafka and pykraft side by side (issue 29): one run on this machine, the two systems
alternated workload by workload (Kafka first), each a fresh cluster of real processes (1
controller + 3 brokers; Kafka's JVMs as ``kafka-server-start.sh`` runs them,
:mod:`vs_kafka_run`) started and stopped by the bench, driven by the same load generators
with the same arguments: Kafka's own ``ProducerPerformance``, ``ConsumerPerformance`` and
``EndToEndLatency`` (:mod:`java_perf`), and librdkafka through confluent-kafka
(:mod:`rdkafka_load`). ``--workloads`` picks among produce, consume, latency
(:mod:`vs_kafka_load`), failover, restart and scale (:mod:`vs_kafka_faults`) and
transactions (:mod:`vs_kafka_txn`).

Every row also gets the servers' resources (:mod:`server_usage`): CPU-seconds of all server
processes per GB of payload produced + replicated + consumed, and each node's peak and final
RSS. The machine's limits (loopback copy, fsync'd append: ``bench/dataplane.py``'s) are
measured in the same run; load average before and after, the commit and the JVM options are
printed with the tables (and in ``--json``).

    .venv/bin/python bench/vs_kafka.py [--workloads produce,consume,latency,...] [--quick]
        [--seconds 20] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import confluent_kafka
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from dataplane import fsync_append_mb_s, loopback_mb_s
from java_perf import TOOL_JVM_OPTIONS, JavaTools
from peers.base import BenchError
from pykraft import __version__
from pykraft.tools.kafka_runtime import SERVER_START_JVM_OPTIONS, KafkaRuntime, write_log4j2
from vs_kafka_faults import failover_workload, restart_workload, scale_workload
from vs_kafka_load import consume_workload, latency_workload, produce_workload
from vs_kafka_run import CLUSTER_PROPERTIES, GB, SYSTEMS, Results, Target, running
from vs_kafka_txn import transactions_workload

ROOT = Path(__file__).resolve().parent.parent
#: wide enough for a row's label and every column, also when output is not a terminal
CONSOLE_WIDTH = 160
#: each workload, by its name in ``--workloads``, in the order they run
WORKLOADS: dict[str, Callable[[Target, Results], None]] = {
    "produce": produce_workload, "consume": consume_workload, "latency": latency_workload,
    "failover": failover_workload, "restart": restart_workload, "scale": scale_workload,
    "transactions": transactions_workload}


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
            table.add_row(escape(label) if name == names[0] else "", name,
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
            table.add_row(escape(label) if system == next(iter(systems)) else "", system,
                          f"{m.moved_bytes / GB:.2f}", f"{m.usage.total_cpu_s:.1f}",
                          f"{m.cpu_s_per_gb:.1f}" if m.moved_bytes else "-",
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
    failures: list[str] = []
    for system, workloads in plan(args):
        console.print(f"== {', '.join(workloads)} on {system}", style="bold")
        try:
            with running(system, directory / system, kafka, tools, args, console) as target:
                for workload in workloads:
                    WORKLOADS[workload](target, results)
        except (BenchError, confluent_kafka.KafkaException) as exc:  # the rows measured so
            # far, and the next workloads, stand
            failures.append(f"{', '.join(workloads)} on {system}: {exc}")
            console.print(f"FAILED: {failures[-1]}", style="red")
    load_end = os.getloadavg()
    console.print(f"load average {load_end} at the end")
    for workload in args.workloads:
        console.print(figures_table(results, workload))
    console.print(resources_table(results))
    if args.json:
        print(json.dumps({
            **header, "load_average": {"start": load_start, "end": load_end},
            "limits": {k: round(v, 1) for k, v in limits.items()}, "failures": failures,
            "rows": [{"label": label, "workload": results.workload_of[label],
                      **{s: m.summary() for s, m in systems.items()}}
                     for label, systems in results.rows.items()]}, indent=2))
    for failure in failures:
        console.print(f"FAILED: {failure}", style="red")
    return 1 if failures else 0


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
    parser.add_argument("--txn-records", type=ints, default=[100, 1000],
                        help="transactions: records per transaction")
    parser.add_argument("--trials", type=int, default=5, help="failover: kills of each kind")
    parser.add_argument("--restart-bytes", type=int, default=5 * 10**9,
                        help="restart: data on the killed broker")
    parser.add_argument("--scale-partitions", type=int, default=1000,
                        help="scale: the partitions produced to")
    parser.add_argument("--scale-producers", type=int, default=20, help="scale")
    parser.add_argument("--scale-topics", type=int, default=1000,
                        help="scale: topics of 10 partitions to create (100 a request)")
    parser.add_argument("--quick", action="store_true",
                        help="a smoke run: 2 s rows, 20 MB to consume or restart on, one "
                             "failover trial, a small scale; ProducerPerformance runs only "
                             "its calibration's 2 MiB, counted")
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
    counts = [*args.sizes, *args.partitions, *args.rates, *args.txn_records, args.latency_size,
              args.e2e_records, args.trials, args.restart_bytes, args.scale_partitions,
              args.scale_producers, args.scale_topics]
    if min(counts) < 1 or args.seconds <= 0:
        parser.error("sizes, partitions, rates, counts and --seconds must be positive")
    if args.quick:
        args.seconds = min(args.seconds, 2.0)
        args.consume_bytes = min(args.consume_bytes, 20 * 10**6)
        args.calibration_bytes = min(args.calibration_bytes, 2 * 2**20)
        args.e2e_records = min(args.e2e_records, 200)
        args.trials = 1
        args.restart_bytes = min(args.restart_bytes, 20 * 10**6)
        args.scale_partitions = min(args.scale_partitions, 50)
        args.scale_producers = min(args.scale_producers, 4)
        args.scale_topics = min(args.scale_topics, 20)
    return args


if __name__ == "__main__":
    sys.exit(main(parse_args()))
