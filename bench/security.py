"""What security costs: the same figures on a PLAINTEXT cluster and on a ``cluster up
--secure`` one (every listener SASL_SSL, SCRAM-SHA-512 clients, the StandardAuthorizer with
``admin`` as super user), in one run, with the ratios secure / plaintext.

Each cluster (1 controller and ``--brokers`` brokers, topics of replication factor
``--brokers``, made by ``LocalCluster`` as ``cluster up`` makes it) is measured in turn while
the other idles (both start together). Per cluster:

* **produce**: confluent-kafka (librdkafka) with acks=all sends ``--count`` records of
  ``--size`` bytes to a 1-partition topic, timed from the first send until every record is
  acknowledged (one uncounted record first: metadata and connections); MB/s and records/s,
  and this process's CPU over the wall time. 16 KiB records by default: with 1 KiB ones
  the Python loop calling ``produce`` (about 90,000 calls/s here) is the limit of both
  clusters alike.
  On the secure cluster the records cross TLS from the client and, with 2 brokers or more,
  again to the follower (inter-broker SASL_SSL).
* **metadata write**: ``--writes`` IncrementalAlterConfigs round trips (one topic's
  ``retention.ms``) through a broker, one at a time on one connection; the broker forwards
  each to the controller (over its SASL_SSL controller channel in the secure cluster),
  which answers once the record is committed. p50 and p99.
* **connect**: ``--connects`` new connections to a broker, each until usable: TCP,
  ApiVersions, and on the secure cluster the TLS handshake and the SCRAM-SHA-512 login
  (4096 PBKDF2 iterations on both sides). p50 and p99.

    .venv/bin/python bench/security.py [--brokers 2] [--count 10000] [--size 16384]
        [--writes 300] [--connects 50] [--dir DIR] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from rich.console import Console
from rich.table import Table

from peers.base import BenchError
from peers.pykraft_metadata import ConfigWriter, call, create_topics_request, created_or_exists
from pykraft.protocol.api_versions import listener_ranges
from pykraft.protocol.apis import Listener
from pykraft.runtime.kafka_client import ClientConnection, open_with_timeout
from pykraft.tools.admin_client import ClientSecurity
from pykraft.tools.local_cluster import HOST, LocalCluster
from quorum import machine

MODES = ("PLAINTEXT", "SASL_SSL")
MIB = 1024 * 1024
CONNECT_TIMEOUT_S = 10.0
PRODUCE_TIMEOUT_S = 600.0
PROPERTIES = {"pykraft.shutdown.timeout.ms": "3000"}
PRODUCE_TOPIC = "bench-produce"
CONFIG_TOPIC = "bench-config"


@dataclass(frozen=True)
class Figures:
    produce_mb_s: float
    produce_records_s: float
    client_cpu: float
    write_ms: list[float]
    connect_ms: list[float]

    def summary(self) -> dict[str, float]:
        return {"produce_mb_s": self.produce_mb_s, "produce_records_s": self.produce_records_s,
                "client_cpu": self.client_cpu,
                "write_p50_ms": percentile(self.write_ms, 50),
                "write_p99_ms": percentile(self.write_ms, 99),
                "connect_p50_ms": percentile(self.connect_ms, 50),
                "connect_p99_ms": percentile(self.connect_ms, 99)}


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * len(ordered)) - 1))]


def librdkafka_settings(cluster: LocalCluster) -> dict[str, Any]:
    if cluster.secure:
        return {**cluster.security_files.librdkafka_settings()}
    return {"bootstrap.servers": cluster.bootstrap_servers}


async def connect(cluster: LocalCluster, security: ClientSecurity) -> ClientConnection:
    port = cluster.nodes[cluster.brokers[0]].port
    return await open_with_timeout(HOST, port, client_id="pykraft-bench-security",
                                   ours=listener_ranges(Listener.BROKER),
                                   timeout_s=CONNECT_TIMEOUT_S, tls=security.tls,
                                   sasl=security.sasl)


async def create_topics(connection: ClientConnection, replicas: int) -> None:
    """Both topics, retried while the brokers are still registering."""
    deadline = time.monotonic() + CONNECT_TIMEOUT_S * 6
    while True:
        answer = await call(connection, create_topics_request(
            [PRODUCE_TOPIC, CONFIG_TOPIC], 1, replicas))
        if created_or_exists(answer):
            return
        if time.monotonic() > deadline:
            raise BenchError(f"CreateTopics keeps failing: {answer.topics}")
        await asyncio.sleep(0.2)  # brokers not all registered yet: poll the controller


async def metadata_writes(cluster: LocalCluster, count: int) -> list[float]:
    """IncrementalAlterConfigs round trips in milliseconds."""
    security = cluster.security()
    writer = ConfigWriter(await connect(cluster, security), CONFIG_TOPIC)
    writes = []
    try:
        for _ in range(count):
            started = time.perf_counter()
            await writer.write(b"")
            writes.append((time.perf_counter() - started) * 1000)
    finally:
        await writer.close()
    return writes


async def connects(cluster: LocalCluster, count: int) -> list[float]:
    """Times to a usable connection (TLS, ApiVersions, SASL login), in milliseconds."""
    security = cluster.security()
    times = []
    for _ in range(count):
        started = time.perf_counter()
        connection = await connect(cluster, security)
        times.append((time.perf_counter() - started) * 1000)
        connection.close()
    return times


def produce(cluster: LocalCluster, count: int, size: int) -> tuple[float, float, float]:
    """(MB/s, records/s, client CPU) of ``count`` acks=all records of ``size`` bytes; the
    client CPU is this process's CPU time over the wall time (near 1 or above: librdkafka
    and the produce loop, not the cluster, limit the rate)."""
    from confluent_kafka import Producer

    failures: list[str] = []

    def delivered(error: Any, _message: Any) -> None:
        if error is not None:
            failures.append(str(error))

    producer = Producer({**librdkafka_settings(cluster), "acks": "all",
                         "queue.buffering.max.messages": max(count, 100_000)})
    producer.produce(PRODUCE_TOPIC, b"warm-up", on_delivery=delivered)
    if producer.flush(CONNECT_TIMEOUT_S * 6) or failures:
        raise BenchError(f"the first record was not acknowledged: {failures}")
    payload = os.urandom(size)
    started, cpu = time.perf_counter(), time.process_time()
    for _ in range(count):
        while True:
            try:
                producer.produce(PRODUCE_TOPIC, payload, on_delivery=delivered)
                break
            except BufferError:
                producer.poll(0.05)  # the local queue is full: let deliveries drain it
    left = producer.flush(PRODUCE_TIMEOUT_S)
    elapsed = time.perf_counter() - started
    cpu = time.process_time() - cpu
    if left or failures:
        raise BenchError(f"{left} records unacknowledged, {len(failures)} failed: "
                         f"{failures[:3]}")
    return count * size / MIB / elapsed, count / elapsed, cpu / elapsed


def measure(cluster: LocalCluster, args: argparse.Namespace, console: Console) -> Figures:
    mode = "SASL_SSL" if cluster.secure else "PLAINTEXT"

    async def setup() -> None:
        connection = await connect(cluster, cluster.security())
        try:
            await create_topics(connection, args.brokers)
        finally:
            connection.close()
    asyncio.run(setup())
    console.print(f"{mode}: producing {args.count} x {args.size} B")
    mb_s, records_s, client_cpu = produce(cluster, args.count, args.size)
    console.print(f"{mode}: {args.writes} metadata writes, {args.connects} connections")
    writes = asyncio.run(metadata_writes(cluster, args.writes))
    connect_ms = asyncio.run(connects(cluster, args.connects))
    return Figures(mb_s, records_s, client_cpu, writes, connect_ms)


def measure_all(args: argparse.Namespace, console: Console) -> dict[str, dict[str, float]]:
    """Both clusters start together (their start-up is most of a short run's time); each
    is then measured while the other idles, and deleted at the end."""
    with contextlib.ExitStack() as stack:
        clusters = []
        for mode in MODES:
            cluster = LocalCluster.create(args.dir / mode.lower(), 1, PROPERTIES, args.brokers,
                                          secure=mode == "SASL_SSL")
            stack.callback(cluster.delete)
            clusters.append(cluster)
        for cluster in clusters:
            for node_id in cluster.nodes:
                cluster.start(node_id)
        for cluster in clusters:
            cluster.wait_listening([*cluster.controllers, *cluster.brokers])
        return {mode: measure(cluster, args, console).summary()
                for mode, cluster in zip(MODES, clusters, strict=True)}


ROWS = (("produce MB/s", "produce_mb_s", "{:,.1f}"),
        ("produce records/s", "produce_records_s", "{:,.0f}"),
        ("client CPU while producing", "client_cpu", "{:.0%}"),
        ("metadata write p50 ms", "write_p50_ms", "{:,.1f}"),
        ("metadata write p99 ms", "write_p99_ms", "{:,.1f}"),
        ("connect p50 ms", "connect_p50_ms", "{:,.1f}"),
        ("connect p99 ms", "connect_p99_ms", "{:,.1f}"))


def ratios(summaries: dict[str, dict[str, float]]) -> dict[str, float]:
    """SASL_SSL / PLAINTEXT for every figure (above 1 for times: slower; below 1 for
    rates: slower)."""
    plain, secure = summaries["PLAINTEXT"], summaries["SASL_SSL"]
    return {key: secure[key] / plain[key] if plain[key] else float("nan") for key in plain}


def table(summaries: dict[str, dict[str, float]], args: argparse.Namespace) -> Table:
    result = Table(title=f"security cost: 1 controller + {args.brokers} brokers, acks=all, "
                         f"{args.count} x {args.size} B")
    for column in ("figure", *MODES, "SASL_SSL / PLAINTEXT"):
        result.add_column(column, justify="right")
    ratio = ratios(summaries)
    for label, key, shown in ROWS:
        result.add_row(label, *(shown.format(summaries[m][key]) for m in MODES),
                       f"{ratio[key]:.2f}")
    return result


def main(args: argparse.Namespace) -> None:
    console = Console(stderr=args.json, width=120)
    load_before = os.getloadavg()[0]
    started = time.strftime("%Y-%m-%d %H:%M:%S %Z")
    summaries = measure_all(args, console)
    report = {"started": started, "machine": machine(), "brokers": args.brokers,
              "count": args.count, "size": args.size, "writes": args.writes,
              "connects": args.connects, "load_before": load_before,
              "load_after": os.getloadavg()[0], "modes": summaries,
              "ratios": ratios(summaries)}
    if args.json:
        print(json.dumps(report, indent=2))
        return
    console.print(table(summaries, args))
    console.print(f"{report['machine']}; load average {load_before:.1f} before, "
                  f"{report['load_after']:.1f} after")


def positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} must be positive")
    return value


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--brokers", type=positive, default=2)
    parser.add_argument("--count", type=positive, default=10_000)
    parser.add_argument("--size", type=positive, default=16_384)
    parser.add_argument("--writes", type=positive, default=300)
    parser.add_argument("--connects", type=positive, default=50)
    parser.add_argument("--dir", type=Path, default=None,
                        help="where the clusters live (a temporary directory by default)")
    parser.add_argument("--json", action="store_true")
    return parser.parse_args(argv)


if __name__ == "__main__":
    arguments = parse_args()
    try:
        if arguments.dir is None:
            with tempfile.TemporaryDirectory(prefix="pykraft-bench-security-") as scratch:
                arguments.dir = Path(scratch)
                main(arguments)
        else:
            main(arguments)
    except BenchError as exc:
        sys.exit(f"bench/security.py: {exc}")
