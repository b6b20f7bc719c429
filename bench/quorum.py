"""Benchmark a local 3-controller pykraft quorum: durable writes and failover time.

Writes go through the bench-only append request (one 100-byte record, answered once
committed, i.e. fsynced on a majority), at concurrency 1, 16 and 64 (one connection per
in-flight request, as Kafka serves one request per connection at a time). Unavailability is
the time from SIGKILL of the leader to the first write acknowledged by the next leader,
median of 5. Everything runs on 127.0.0.1 and stops by itself.

    .venv/bin/python bench/quorum.py [--seconds 5] [--dir /tmp/pykraft-bench]

Peers (etcd, ZooKeeper, PySyncObj) side by side are not implemented yet.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import time
from pathlib import Path

from pykraft.errors import PyKraftError
from pykraft.runtime.bench_api import BenchClient
from pykraft.tools.cluster import LocalCluster
from pykraft.tools.quorum_tool import describe_quorum, parse_host_port

VALUE = b"v" * 100
CONCURRENCY = (1, 16, 64)
FAILOVERS = 5


async def find_leader(cluster: LocalCluster, exclude: int | None = None,
                      timeout_s: float = 30.0) -> int:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for node_id in cluster.nodes:
            if not cluster.is_running(node_id):
                continue
            try:
                info = await describe_quorum(parse_host_port(cluster.nodes[node_id].address),
                                             timeout_s=1.0)
            except PyKraftError:
                continue
            if info.leader_id != exclude and info.high_watermark > 0:
                return info.leader_id
        await asyncio.sleep(0.05)
    raise SystemExit("no leader within the deadline")


async def load(cluster: LocalCluster, leader: int, concurrency: int,
               seconds: float) -> tuple[int, list[float]]:
    host, port = parse_host_port(cluster.nodes[leader].address)
    clients = [await BenchClient.connect(host, port) for _ in range(concurrency)]
    latencies: list[float] = []
    stop_at = time.monotonic() + seconds

    async def worker(client: BenchClient) -> None:
        while time.monotonic() < stop_at:
            started = time.monotonic()
            result = await client.append(VALUE)
            if result.error_code != 0:
                raise SystemExit(f"write refused: error {result.error_code}")
            latencies.append((time.monotonic() - started) * 1000)

    try:
        await asyncio.gather(*(worker(c) for c in clients))
    finally:
        for client in clients:
            client.close()
    return len(latencies), latencies


async def unavailability(cluster: LocalCluster) -> float:
    """Kill the leader; time until some other node acknowledges a write."""
    leader = await find_leader(cluster)
    killed_at = time.monotonic()
    cluster.kill(leader)
    while True:
        for node_id in cluster.nodes:
            if node_id == leader:
                continue
            host, port = parse_host_port(cluster.nodes[node_id].address)
            try:
                client = await BenchClient.connect(host, port)
                try:
                    result = await asyncio.wait_for(client.append(VALUE), 2.0)
                finally:
                    client.close()
            except (OSError, TimeoutError, PyKraftError):
                continue
            if result.error_code == 0:
                elapsed = (time.monotonic() - killed_at) * 1000
                cluster.start(leader)
                await find_leader(cluster)
                return elapsed
        if time.monotonic() - killed_at > 60:
            raise SystemExit("no new leader within 60 s")
        await asyncio.sleep(0.01)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def main(args: argparse.Namespace) -> None:
    base = Path(args.dir)
    shutil.rmtree(base, ignore_errors=True)
    cluster = LocalCluster.create(base, 3, {"pykraft.bench.append.enable": "true"})
    cluster.start_all()
    try:
        leader = await find_leader(cluster)
        print(f"pykraft 3 controllers on 127.0.0.1, leader {leader}, 100-byte values, "
              f"{args.seconds:.0f} s per level, fsync on every node (group commit)")
        print(f"{'concurrency':>11} {'writes/s':>10} {'p50 ms':>8} {'p99 ms':>8}")
        for concurrency in CONCURRENCY:
            count, latencies = await load(cluster, leader, concurrency, args.seconds)
            print(f"{concurrency:>11} {count / args.seconds:>10.0f} "
                  f"{percentile(latencies, 0.5):>8.1f} {percentile(latencies, 0.99):>8.1f}")
        gaps = [await unavailability(cluster) for _ in range(FAILOVERS)]
        print(f"unavailability after SIGKILL of the leader: median "
              f"{statistics.median(gaps):.0f} ms over {FAILOVERS} "
              f"(all: {', '.join(f'{g:.0f}' for g in gaps)} ms)")
    finally:
        cluster.stop_all()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--dir", default="/tmp/pykraft-bench")
    asyncio.run(main(parser.parse_args()))
