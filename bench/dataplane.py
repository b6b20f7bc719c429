"""Benchmark pykraft's data path against the machine's limit and against NATS JetStream and
RabbitMQ, all on 127.0.0.1, in one run: single-replica, or with ``--replicas 3`` each
system as a 3-node cluster replicating every stream 3 times.

Single replica (pykraft: 1 controller + 1 broker, confluent-kafka producer acks=1 with its
default linger, consumer by ``assign``; JetStream: one server, file storage; RabbitMQ: one
node, a durable classic queue). Replicated: pykraft 1 controller + 3 brokers, topics RF=3
with min.insync.replicas=2, measured with acks=all and then acks=1 on the same cluster;
JetStream 3 servers clustered by routes, streams of 3 replicas on file storage; RabbitMQ 3
nodes (``rabbitmqctl join_cluster``), stream queues of initial cluster size 3. Per system
and mode: produce ``--count-100`` messages of 100 B and
``--count-1k`` of 1 KiB (MB/s, msgs/s, until every message is acknowledged), consume each
set from the beginning (MB/s), and produce->consume latency p50/p99 at ``--rate`` msgs/s
for ``--latency-seconds`` (after one uncounted second). The machine's limit is measured
first in the same run: a raw loopback TCP copy and an fsync'd file append (1 MiB writes) in
the ``--dir`` file system. The peers are driven by pure-Python clients (nats-py, aio-pika)
and pykraft by librdkafka, so each produce row shows the load generator's own CPU use
("client CPU", this process's CPU time over the wall time): near 100 % or more (librdkafka
has threads) the client, not the server, may be the limit.
``--profile`` samples the pykraft broker with py-spy during the 100 B produce and the 1 KiB
consume and prints each one's 10 hottest frames (own time).

    .venv/bin/python bench/dataplane.py [--systems pykraft,jetstream,rabbitmq]
        [--replicas 1|3] [--count-100 100000] [--count-1k 30000] [--rate 1000]
        [--profile] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import json
import os
import platform
import shutil
import socket
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from rich.console import Console
from rich.table import Table

from install import ensure_debian, ensure_python
from peers.base import HOST, BenchError
from peers.streams import StreamSystem

SYSTEMS = ("pykraft", "jetstream", "rabbitmq")
MIB = 1024 * 1024
LOOPBACK_BYTES = 1024 * MIB
FSYNC_BYTES = 256 * MIB
RAW_SECONDS = 3.0
PROFILE_TOP = 10
#: Latency messages sent first and not counted (the consumer's first fetch, connections).
LATENCY_WARMUP_S = 1.0


@dataclass
class Limits:
    loopback_mb_s: float
    fsync_append_mb_s: float


@dataclass
class Figures:
    name: str
    version: str
    durability: str
    #: message size -> (produce s, consume s, count)
    runs: dict[int, tuple[float, float, int]] = field(default_factory=dict)
    #: message size -> this process's CPU seconds / wall seconds while producing (near 1 or
    #: above: the client, not the server, may be what limits the figure)
    produce_client_cpu: dict[int, float] = field(default_factory=dict)
    #: message size -> CPU seconds the (leader) server process spent serving the consume
    #: (0 for a system without a profiled process): less noisy than MB/s on a busy machine
    consume_server_cpu_s: dict[int, float] = field(default_factory=dict)
    latencies_ms: list[float] = field(default_factory=list)
    sent_for_latency: int = 0

    def produce_mb_s(self, size: int) -> float:
        produce_s, _, count = self.runs[size]
        return count * size / produce_s / 1e6

    def produce_msgs_s(self, size: int) -> float:
        produce_s, _, count = self.runs[size]
        return count / produce_s

    def consume_mb_s(self, size: int) -> float:
        _, consume_s, count = self.runs[size]
        return count * size / consume_s / 1e6

    def consume_cpu_s_per_gb(self, size: int) -> float:
        _, _, count = self.runs[size]
        return self.consume_server_cpu_s.get(size, 0.0) / (count * size / 1e9)

    def percentile(self, q: int) -> float:
        return statistics.quantiles(self.latencies_ms, n=100)[q - 1]


def cpu_seconds(pid: int | None) -> float:
    """A process's user + system CPU seconds so far (Linux ``/proc``); 0 without one."""
    if pid is None:
        return 0.0
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def loopback_mb_s() -> float:
    """Bytes through one 127.0.0.1 TCP connection (a reader thread discarding them)."""
    with socket.create_server((HOST, 0)) as server:
        received = 0

        def drain() -> None:
            nonlocal received
            conn, _ = server.accept()
            buffer = bytearray(MIB)
            with conn:
                while chunk := conn.recv_into(buffer):
                    received += chunk

        reader = threading.Thread(target=drain)
        reader.start()
        chunk = b"\0" * MIB
        with socket.create_connection(server.getsockname()) as client:
            started = time.monotonic()
            sent = 0
            while sent < LOOPBACK_BYTES and time.monotonic() - started < RAW_SECONDS:
                client.sendall(chunk)
                sent += len(chunk)
        reader.join(RAW_SECONDS * 10)
        return received / (time.monotonic() - started) / 1e6


def fsync_append_mb_s(directory: Path) -> float:
    """Appends of 1 MiB, each followed by fsync, to a new file in ``directory``."""
    path = directory / "fsync-append.bin"
    chunk = os.urandom(MIB)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        started = time.monotonic()
        written = 0
        while written < FSYNC_BYTES and time.monotonic() - started < RAW_SECONDS:
            written += os.write(fd, chunk)
            os.fsync(fd)
        return written / (time.monotonic() - started) / 1e6
    finally:
        os.close(fd)
        path.unlink()


def make_system(name: str, replicas: int) -> StreamSystem:
    if name == "pykraft":
        from peers.kafka_stream import PykraftStream
        return PykraftStream(replicas)
    if name == "jetstream":
        ensure_debian(["nats-server"])
        ensure_python(["nats"])
        from peers.jetstream import JetStream
        return JetStream(replicas)
    ensure_debian(["rabbitmq-server"])
    ensure_python(["aio_pika"])
    from peers.rabbitmq import RabbitMq
    return RabbitMq(replicas)


@contextlib.contextmanager
def profiled(pid: int | None, out: Path, enabled: bool) -> Any:
    """py-spy sampling ``pid`` while the block runs (raw collapsed stacks in ``out``)."""
    if not enabled or pid is None:
        yield
        return
    binary = Path(sys.executable).parent / "py-spy"
    if not binary.exists():
        raise BenchError(f"--profile needs py-spy ({binary}): pip install -e '.[bench]'")
    spy = subprocess.Popen([str(binary), "record", "--pid", str(pid), "--format", "raw",
                            "--nonblocking", "--nolineno", "--rate", "500", "--output", str(out)],
                           stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
    try:
        yield
    finally:
        spy.send_signal(2)  # SIGINT: py-spy writes what it sampled and exits
        try:
            spy.wait(30)
        except subprocess.TimeoutExpired:
            spy.kill()
            spy.wait(10)


def top_frames(collapsed: Path, top: int = PROFILE_TOP) -> list[tuple[str, float]]:
    """The ``top`` leaf frames of a py-spy raw profile and their share of the samples."""
    own: collections.Counter[str] = collections.Counter()
    for line in collapsed.read_text().splitlines():
        stack, _, samples = line.rpartition(" ")
        own[stack.rsplit(";", 1)[-1]] += int(samples)
    total = sum(own.values()) or 1
    return [(frame, 100 * n / total) for frame, n in own.most_common(top)]


async def measure(name: str, args: argparse.Namespace, console: Console,
                  ) -> tuple[list[Figures], dict[str, list[tuple[str, float]]]]:
    """Start ``name``, measure each of its modes, stop it (also on error)."""
    system = make_system(name, args.replicas)
    base = Path(args.dir) / name
    shutil.rmtree(base, ignore_errors=True)
    base.mkdir(parents=True)
    results: list[Figures] = []
    frames: dict[str, list[tuple[str, float]]] = {}
    try:
        await system.start(base)
        for index, mode in enumerate(system.modes):
            system.select(mode)
            label = f"{system.name} {mode}".strip()
            figures = Figures(label, system.version, system.durability)
            for size, count in ((100, args.count_100), (1024, args.count_1k)):
                stream = f"bench-{index}-{size}"
                sampled = args.profile and name == "pykraft" and index == 0
                profile = base / f"produce-{index}-{size}.txt"
                with profiled(system.server_pid(), profile, sampled and size == 100):
                    cpu_before = time.process_time()
                    produce_s = await system.produce(stream, count, size)
                    figures.produce_client_cpu[size] = ((time.process_time() - cpu_before)
                                                        / produce_s)
                consumed = base / f"consume-{index}-{size}.txt"
                with profiled(system.server_pid(), consumed, sampled and size == 1024):
                    cpu_before = cpu_seconds(system.server_pid())
                    consume_s = await system.consume(stream, count)
                    figures.consume_server_cpu_s[size] = (cpu_seconds(system.server_pid())
                                                          - cpu_before)
                for what, path in ((f"{size} B produce", profile),
                                   (f"{size} B consume", consumed)):
                    if path.exists():
                        frames[what] = top_frames(path)
                figures.runs[size] = (produce_s, consume_s, count)
                console.print(f"{label}: {size} B x {count}: produce {produce_s:.2f} s, "
                              f"consume {consume_s:.2f} s", style="dim")
            warmup = int(args.rate * LATENCY_WARMUP_S)
            figures.sent_for_latency = int(args.rate * args.latency_seconds)
            received = await system.latencies(f"bench-{index}-latency", args.rate,
                                              args.latency_seconds + LATENCY_WARMUP_S,
                                              args.latency_size)
            figures.latencies_ms = received[warmup:]
            results.append(figures)
    finally:
        await system.stop()
    return results, frames


def results_table(results: list[Figures], limits: Limits, replicas: int) -> Table:
    copies = "single replica" if replicas == 1 else f"{replicas} replicas"
    table = Table(title=f"{copies} on {HOST}; limit: loopback {limits.loopback_mb_s:.0f}"
                        f" MB/s, fsync'd append {limits.fsync_append_mb_s:.0f} MB/s")
    for column in ("system", "size", "produce MB/s", "produce msgs/s", "client CPU",
                   "consume MB/s", "consume server CPU s/GB",
                   "produce / loopback", "produce / fsync append"):
        table.add_column(column, justify="left" if column == "system" else "right")
    for figures in results:
        for size in figures.runs:
            mb_s = figures.produce_mb_s(size)
            table.add_row(f"{figures.name} {figures.version}", f"{size} B", f"{mb_s:.2f}",
                          f"{figures.produce_msgs_s(size):,.0f}",
                          f"{figures.produce_client_cpu[size]:.0%}",
                          f"{figures.consume_mb_s(size):.2f}",
                          f"{figures.consume_cpu_s_per_gb(size):.2f}",
                          f"{mb_s / limits.loopback_mb_s:.4f}",
                          f"{mb_s / limits.fsync_append_mb_s:.3f}")
    return table


def latency_table(results: list[Figures], rate: int, size: int) -> Table:
    table = Table(title=f"produce->consume latency at {rate} msgs/s, {size} B")
    for column in ("system", "received", "p50 ms", "p99 ms"):
        table.add_column(column, justify="left" if column == "system" else "right")
    for figures in results:
        table.add_row(figures.name, f"{len(figures.latencies_ms)}/{figures.sent_for_latency}",
                      f"{figures.percentile(50):.2f}", f"{figures.percentile(99):.2f}")
    return table


def ratio_table(ours: list[Figures], peers: list[Figures]) -> Table:
    """Each pykraft row / each peer for each figure (throughput: >1 is pykraft faster;
    latency: <1)."""
    table = Table(title="pykraft / peer (MB/s: >1 is pykraft faster; p50, p99: <1 is "
                        "pykraft faster)")
    sizes = list(ours[0].runs)
    columns = [f"produce {s} B" for s in sizes] + [f"consume {s} B" for s in sizes]
    for column in ["pykraft", "peer", *columns, "p50", "p99"]:
        table.add_column(column, justify="right" if column in columns else "left")
    for mine in ours:
        for peer in peers:
            cells = [mine.produce_mb_s(s) / peer.produce_mb_s(s) for s in sizes]
            cells += [mine.consume_mb_s(s) / peer.consume_mb_s(s) for s in sizes]
            cells += [mine.percentile(q) / peer.percentile(q) for q in (50, 99)]
            table.add_row(mine.name, peer.name, *(f"{c:.3f}" for c in cells))
    return table


def summary(figures: Figures) -> dict[str, Any]:
    return {
        "name": figures.name, "version": figures.version, "durability": figures.durability,
        "sizes": {size: {"count": figures.runs[size][2],
                         "produce_mb_s": round(figures.produce_mb_s(size), 3),
                         "produce_msgs_s": round(figures.produce_msgs_s(size), 1),
                         "produce_client_cpu": round(figures.produce_client_cpu[size], 2),
                         "consume_mb_s": round(figures.consume_mb_s(size), 3),
                         "consume_server_cpu_s_per_gb": round(
                             figures.consume_cpu_s_per_gb(size), 3)}
                  for size in figures.runs},
        "latency": {"received": len(figures.latencies_ms), "sent": figures.sent_for_latency,
                    "p50_ms": round(figures.percentile(50), 3),
                    "p99_ms": round(figures.percentile(99), 3)},
    }


async def main(args: argparse.Namespace) -> int:
    console = Console(stderr=args.json)
    directory = Path(args.dir)
    directory.mkdir(parents=True, exist_ok=True)
    limits = Limits(loopback_mb_s(), fsync_append_mb_s(directory))
    console.print(f"{platform.node()}: {os.cpu_count()} cpus, load average "
                  f"{os.getloadavg()[0]:.2f} (1 min) at start")
    results: list[Figures] = []
    skipped: dict[str, str] = {}
    frames: dict[str, list[tuple[str, float]]] = {}
    ours: list[Figures] = []
    for name in args.systems:
        try:
            figures, system_frames = await measure(name, args, console)
        except BenchError as exc:
            if name == "pykraft":
                raise
            skipped[name] = str(exc)
            console.print(f"{name} skipped: {exc}", style="yellow")
            continue
        results.extend(figures)
        ours = ours or figures
        frames = frames or system_frames
    console.print(f"load average {os.getloadavg()[0]:.2f} (1 min) at the end")
    if args.json:
        print(json.dumps({"limits": vars(limits), "replicas": args.replicas,
                          "systems": [summary(f) for f in results],
                          "skipped": skipped, "profile_top": frames}, indent=2))
    console.print(results_table(results, limits, args.replicas))
    console.print(latency_table(results, args.rate, args.latency_size))
    peers = results[len(ours):]
    if peers:
        console.print(ratio_table(ours, peers))
    for what, top in frames.items():
        table = Table(title=f"pykraft (leader) broker during the {what}, "
                            f"{ours[0].name}: top frames (own time)")
        table.add_column("frame")
        table.add_column("% samples", justify="right")
        for frame, share in top:
            table.add_row(frame, f"{share:.1f}")
        console.print(table)
    return 0


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--systems", type=lambda s: [x for x in s.split(",") if x],
                        default=list(SYSTEMS), help="comma-separated, pykraft first")
    parser.add_argument("--replicas", type=int, choices=(1, 3), default=1,
                        help="1: one server each; 3: 3-node clusters, every stream on all 3")
    parser.add_argument("--count-100", type=int, default=100_000, help="100 B messages")
    parser.add_argument("--count-1k", type=int, default=30_000, help="1 KiB messages")
    parser.add_argument("--rate", type=int, default=1000, help="msgs/s for the latency")
    parser.add_argument("--latency-seconds", type=float, default=5.0)
    parser.add_argument("--latency-size", type=int, default=100, help="bytes")
    parser.add_argument("--profile", action="store_true",
                        help="py-spy the pykraft broker during the 100 B produce")
    parser.add_argument("--dir", default="/tmp/pykraft-bench-dataplane",
                        help="data directories (and the fsync'd append) go here")
    parser.add_argument("--json", action="store_true", help="print JSON only (tables to stderr)")
    args = parser.parse_args(argv)
    unknown = set(args.systems) - set(SYSTEMS)
    if unknown or args.systems[:1] != ["pykraft"]:
        parser.error(f"--systems: pykraft first, then any of {', '.join(SYSTEMS[1:])}"
                     f"{f' (unknown: {sorted(unknown)})' if unknown else ''}")
    if min(args.count_100, args.count_1k, args.rate) < 1 or args.latency_seconds <= 0:
        parser.error("counts, --rate and --latency-seconds must be positive")
    return args


if __name__ == "__main__":
    sys.exit(asyncio.run(main(parse_args())))
