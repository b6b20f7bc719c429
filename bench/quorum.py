"""Benchmark 3-node durable quorums on 127.0.0.1: pykraft against etcd, ZooKeeper, PySyncObj.

One asyncio load generator (bench/harness.py) measures every system the same way: 100-byte
writes at concurrency 1, 16 and 64 (writes/s, p50, p99), then the unavailability after a
SIGKILL of the leader (median of 5). pykraft is driven through its bench-only append request.
Missing peers are installed first (apt-get, pip). Everything started is stopped by PID.

    .venv/bin/python bench/quorum.py [--seconds 10] [--systems pykraft,etcd,...] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import shutil
import sys
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from harness import SystemResult, run_level, unavailability_ms
from install import ensure_debian, ensure_python
from peers.base import System

CONCURRENCY = (1, 16, 64)
SYSTEMS = ("pykraft", "etcd", "zookeeper", "pysyncobj")


def make_system(name: str, args: argparse.Namespace) -> System:
    """Install what ``name`` needs, then import its driver (they import the client libs)."""
    if name == "pykraft":
        from peers.pykraft_sut import Pykraft
        props = {"pykraft.event.loop": args.event_loop}
        if args.linger_ms >= 0:
            props["controller.quorum.append.linger.ms"] = str(args.linger_ms)
        return Pykraft(props)
    if name == "etcd":
        ensure_debian(["etcd-server"])
        ensure_python(["aiohttp"])
        from peers.etcd import Etcd
        return Etcd()
    if name == "zookeeper":
        ensure_debian(["zookeeper"])
        ensure_python(["kazoo"])
        from peers.zookeeper import ZooKeeper
        return ZooKeeper()
    ensure_python(["pysyncobj"])
    from peers.pysyncobj_sut import PySyncObj
    return PySyncObj()


async def measure(system: System, args: argparse.Namespace, console: Console) -> SystemResult:
    base = Path(args.dir) / system.name
    shutil.rmtree(base, ignore_errors=True)
    base.mkdir(parents=True)
    try:  # stop() also when start() fails half-way: some nodes may be running
        await system.start(base)
        leader = await system.leader()
        levels = []
        for concurrency in args.concurrency:
            level = await run_level(system, leader, concurrency, args.seconds, args.warmup)
            console.log(f"{system.name} C={concurrency}: {level.writes_per_s:.0f} writes/s, "
                        f"p50 {level.percentile(0.5):.1f} ms, p99 {level.percentile(0.99):.1f}")
            levels.append(level)
        gaps = []
        for _ in range(args.failovers):
            gaps.append(await unavailability_ms(system))
            console.log(f"{system.name} unavailability {gaps[-1]:.0f} ms")
        return SystemResult(system.name, system.version, system.durability, levels, gaps)
    finally:
        await system.stop()


def system_table(result: SystemResult) -> Table:
    table = Table(title=f"{result.name} {result.version} ({result.durability})")
    for column in ("concurrency", "writes/s", "p50 ms", "p99 ms", "errors"):
        table.add_column(column, justify="right")
    for level in result.levels:
        table.add_row(str(level.concurrency), f"{level.writes_per_s:.0f}",
                      f"{level.percentile(0.5):.1f}", f"{level.percentile(0.99):.1f}",
                      str(level.errors))
    gaps = ", ".join(f"{g:.0f}" for g in result.unavailability_ms)
    table.caption = (f"unavailability after leader SIGKILL: median "
                     f"{result.median_unavailability_ms:.0f} ms ({gaps})")
    return table


def ratios(results: dict[str, SystemResult]) -> dict[str, dict[str, float]]:
    """pykraft / peer: writes/s per concurrency (higher is better for pykraft), p50 and
    unavailability (lower is better for pykraft)."""
    ours = results.get("pykraft")
    out: dict[str, dict[str, float]] = {}
    if ours is None:
        return out
    for name, peer in results.items():
        if name == "pykraft":
            continue
        row: dict[str, float] = {}
        for mine, theirs in zip(ours.levels, peer.levels, strict=True):
            c = mine.concurrency
            row[f"writes_c{c}"] = round(mine.writes_per_s / theirs.writes_per_s, 2)
            row[f"p50_c{c}"] = round(mine.percentile(0.5) / theirs.percentile(0.5), 2)
        row["unavailability"] = round(
            ours.median_unavailability_ms / peer.median_unavailability_ms, 2)
        out[name] = row
    return out


def ratio_table(table_ratios: dict[str, dict[str, float]]) -> Table:
    table = Table(title="pykraft / peer (writes: >1 is pykraft faster; p50 and "
                        "unavailability: <1 is pykraft better)")
    columns = next(iter(table_ratios.values())).keys()
    table.add_column("peer")
    for column in columns:
        table.add_column(column, justify="right")
    for name, row in table_ratios.items():
        table.add_row(name, *(f"{row[c]:.2f}" for c in columns))
    return table


def machine() -> str:
    cpu = next((line.split(":", 1)[1].strip() for line in
                Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), platform.processor())
    return f"{os.cpu_count()} cores ({cpu}), {platform.system()} {platform.release()}"


async def main(args: argparse.Namespace) -> None:
    console = Console(stderr=args.json, width=120)  # the ratio table needs the width
    systems = [make_system(name, args) for name in args.systems]
    results: dict[str, SystemResult] = {}
    started = time.strftime("%Y-%m-%d %H:%M:%S %Z")
    load_before = os.getloadavg()[0]
    for system in systems:
        results[system.name] = await measure(system, args, console)
    summary = {
        "date": started, "machine": machine(), "python": platform.python_version(),
        # Everything shares the 2 cores: a high load average means someone else was busy.
        "loadavg_1min": {"before": load_before, "after": os.getloadavg()[0]},
        "seconds_per_level": args.seconds, "warmup_s": args.warmup, "value_bytes": 100,
        "systems": [r.summary() for r in results.values()], "ratios": ratios(results),
    }
    if args.json:
        json.dump(summary, sys.stdout, indent=2)
        print()
        return
    console.print(f"{summary['date']}, {summary['machine']}, Python {summary['python']}, "
                  f"1-min load average {load_before:.2f} before, "
                  f"{os.getloadavg()[0]:.2f} after")
    for result in results.values():
        console.print(system_table(result))
    if summary["ratios"]:
        console.print(ratio_table(ratios(results)))


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0, help="measured s per level")
    parser.add_argument("--warmup", type=float, default=2.0, help="uncounted s per level")
    parser.add_argument("--failovers", type=int, default=5)
    parser.add_argument("--concurrency", type=lambda s: [int(c) for c in s.split(",")],
                        default=list(CONCURRENCY))
    parser.add_argument("--systems", type=lambda s: s.split(","), default=list(SYSTEMS))
    parser.add_argument("--linger-ms", type=int, default=0,
                        help="pykraft controller.quorum.append.linger.ms: 0 (the peers do not "
                             "linger either; appends of one loop iteration still share a "
                             "batch), or -1 for Kafka's default (25)")
    parser.add_argument("--event-loop", choices=("uvloop", "asyncio"), default="uvloop",
                        help="pykraft.event.loop of the pykraft servers")
    parser.add_argument("--dir", default="/tmp/pykraft-bench",
                        help="data directories (use a real disk, not tmpfs)")
    parser.add_argument("--json", action="store_true", help="print JSON only (tables to stderr)")
    args = parser.parse_args()
    unknown = set(args.systems) - set(SYSTEMS)
    if unknown:
        parser.error(f"unknown systems {sorted(unknown)}; choose from {', '.join(SYSTEMS)}")
    return args


if __name__ == "__main__":
    asyncio.run(main(parse_args()))
