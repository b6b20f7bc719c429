"""Benchmark pykraft as a metadata store, against etcd and ZooKeeper, on 127.0.0.1.

Two measurements, each on its own pykraft cluster of 3 controllers:

* **writes**: committed single config changes per second (IncrementalAlterConfigs setting
  one topic's ``retention.ms``, answered after commit) at concurrency 1, 16 and 64, p50 and
  p99, with ``--brokers`` brokers running; etcd and ZooKeeper 3-node clusters do single-key
  writes (100-byte values) in the same run with the same load generator (bench/harness.py);
* **propagation**: ``--topics`` topics created one at a time on the active controller; for
  each, the time from the CreateTopics answer until every one of ``--propagation-brokers``
  brokers answers a Metadata request with it (median and p99 over the topics).

    .venv/bin/python bench/metadata.py [--seconds 10] [--systems pykraft,etcd,zookeeper]
        [--via controller|broker] [--topics 200] [--propagation-brokers 10] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import platform
import shutil
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from harness import LevelResult, run_level
from install import ensure_debian, ensure_python
from peers.base import System
from peers.pykraft_metadata import VIA, Propagation, PropagationProbe, PykraftMetadata
from quorum import machine

CONCURRENCY = (1, 16, 64)
SYSTEMS = ("pykraft", "etcd", "zookeeper")


def make_system(name: str, args: argparse.Namespace) -> System:
    """Install what ``name`` needs, then import its driver (they import the client libs)."""
    if name == "pykraft":
        return PykraftMetadata(args.brokers, args.via, linger(args))
    if name == "etcd":
        ensure_debian(["etcd-server"])
        ensure_python(["aiohttp"])
        from peers.etcd import Etcd
        return Etcd()
    ensure_debian(["zookeeper"])
    ensure_python(["kazoo"])
    from peers.zookeeper import ZooKeeper
    return ZooKeeper()


def linger(args: argparse.Namespace) -> dict[str, str]:
    return {} if args.linger_ms < 0 else {
        "controller.quorum.append.linger.ms": str(args.linger_ms)}


def fresh_dir(args: argparse.Namespace, name: str) -> Path:
    base = Path(args.dir) / name
    shutil.rmtree(base, ignore_errors=True)
    base.mkdir(parents=True)
    return base


async def measure_writes(system: System, args: argparse.Namespace,
                         console: Console) -> list[LevelResult]:
    try:  # stop() also when start() fails half-way: some nodes may be running
        await system.start(fresh_dir(args, system.name))
        leader = await system.leader()
        levels = []
        for concurrency in args.concurrency:
            level = await run_level(system, leader, concurrency, args.seconds, args.warmup)
            console.log(f"{system.name} C={concurrency}: {level.writes_per_s:.0f} writes/s, "
                        f"p50 {level.percentile(0.5):.1f} ms, p99 {level.percentile(0.99):.1f}")
            levels.append(level)
        return levels
    finally:
        await system.stop()


async def measure_propagation(args: argparse.Namespace, console: Console) -> list[Propagation]:
    system = PykraftMetadata(args.propagation_brokers, "controller", linger(args))
    probe = PropagationProbe(system, args.poll_ms / 1000)
    try:
        await system.start(fresh_dir(args, "pykraft-propagation"))
        await probe.open()
        results = []
        for index in range(args.topics):
            results.append(await probe.measure(f"prop-{index}", args.partitions))
        console.log(f"propagation to {args.propagation_brokers} brokers over {args.topics} "
                    f"topics: median {percentile([r.all_brokers_ms for r in results], 0.5):.1f}"
                    f" ms")
        return results
    finally:
        probe.close()
        await system.stop()


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile, as :class:`harness.LevelResult` computes it."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def ratio(mine: float, theirs: float) -> float | None:
    """``mine / theirs`` rounded, or None when a side measured nothing (JSON has no NaN)."""
    if not theirs or math.isnan(mine) or math.isnan(theirs):
        return None
    return round(mine / theirs, 2)


def level_ratios(results: dict[str, list[LevelResult]]) -> dict[str, dict[str, float | None]]:
    """pykraft / peer per concurrency: writes/s (>1: pykraft faster), p50 and p99 (<1:
    pykraft better)."""
    ours = results.get("pykraft")
    out: dict[str, dict[str, float | None]] = {}
    for name, theirs in results.items():
        if ours is None or name == "pykraft":
            continue
        row: dict[str, float | None] = {}
        for mine, peer in zip(ours, theirs, strict=True):
            c = mine.concurrency
            row[f"writes_c{c}"] = ratio(mine.writes_per_s, peer.writes_per_s)
            row[f"p50_c{c}"] = ratio(mine.percentile(0.5), peer.percentile(0.5))
            row[f"p99_c{c}"] = ratio(mine.percentile(0.99), peer.percentile(0.99))
        out[name] = row
    return out


def propagation_summary(results: list[Propagation], args: argparse.Namespace) -> dict[str, Any]:
    every = [r.all_brokers_ms for r in results]
    single = [ms for r in results for ms in r.per_broker_ms.values()]
    return {
        "brokers": args.propagation_brokers, "topics": len(results),
        "partitions_per_topic": args.partitions, "poll_interval_ms": args.poll_ms,
        "all_brokers_ms": {"median": round(statistics.median(every), 1) if every else None,
                           "p99": round(percentile(every, 0.99), 1),
                           "max": round(max(every), 1) if every else None},
        "one_broker_ms": {"median": round(statistics.median(single), 1) if single else None,
                          "p99": round(percentile(single, 0.99), 1)},
    }


def writes_table(results: dict[str, list[LevelResult]], versions: dict[str, str]) -> Table:
    table = Table(title="committed writes (pykraft: one IncrementalAlterConfigs each)")
    for column in ("system", "C", "writes/s", "p50 ms", "p99 ms", "errors"):
        table.add_column(column, justify="right")
    for name, levels in results.items():
        for level in levels:
            table.add_row(f"{name} {versions[name]}", str(level.concurrency),
                          f"{level.writes_per_s:.0f}", f"{level.percentile(0.5):.1f}",
                          f"{level.percentile(0.99):.1f}", str(level.errors))
    return table


def ratio_table(ratios: dict[str, dict[str, float | None]]) -> Table:
    table = Table(title="pykraft / peer (writes: >1 is pykraft faster; p50, p99: <1 is "
                        "pykraft better)")
    columns = list(next(iter(ratios.values())).keys())
    table.add_column("peer")
    for column in columns:
        table.add_column(column, justify="right")
    for name, row in ratios.items():
        table.add_row(name, *("-" if row[c] is None else f"{row[c]:.2f}" for c in columns))
    return table


async def main(args: argparse.Namespace) -> None:
    console = Console(stderr=args.json, width=140)
    systems = [make_system(name, args) for name in args.systems]
    started = time.strftime("%Y-%m-%d %H:%M:%S %Z")
    load_before = os.getloadavg()[0]
    writes: dict[str, list[LevelResult]] = {}
    for system in systems:
        writes[system.name] = await measure_writes(system, args, console)
    load_after_writes = os.getloadavg()[0]
    propagation = await measure_propagation(args, console) if args.topics else []
    summary: dict[str, Any] = {
        "date": started, "machine": machine(), "python": platform.python_version(),
        # Everything shares the machine: a high load average means someone else was busy.
        "loadavg_1min": {"before": load_before, "after_writes": load_after_writes,
                         "after": os.getloadavg()[0]},
        "seconds_per_level": args.seconds, "warmup_s": args.warmup,
        "pykraft": {"brokers": args.brokers, "via": args.via, "linger_ms": args.linger_ms},
        "writes": {s.name: {"version": s.version, "durability": s.durability,
                            "levels": [level.summary() for level in writes[s.name]]}
                   for s in systems},
        "ratios": level_ratios(writes),
        "propagation": propagation_summary(propagation, args) if propagation else None,
    }
    if args.json:
        json.dump(summary, sys.stdout, indent=2)
        print()
        return
    console.print(f"{started}, {summary['machine']}, Python {summary['python']}, 1-min load "
                  f"average {load_before:.2f} before, {load_after_writes:.2f} after the "
                  f"writes, {summary['loadavg_1min']['after']:.2f} at the end")
    if writes:
        console.print(writes_table(writes, {s.name: s.version for s in systems}))
    if summary["ratios"]:
        console.print(ratio_table(summary["ratios"]))
    if propagation:
        console.print(json.dumps(summary["propagation"]))


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0, help="measured s per level")
    parser.add_argument("--warmup", type=float, default=2.0, help="uncounted s per level")
    parser.add_argument("--concurrency", type=lambda s: [int(c) for c in s.split(",")],
                        default=list(CONCURRENCY))
    parser.add_argument("--systems", type=lambda s: [x for x in s.split(",") if x],
                        default=list(SYSTEMS), help="empty to skip the writes")
    parser.add_argument("--brokers", type=int, default=1,
                        help="pykraft brokers during the writes (1-3)")
    parser.add_argument("--via", choices=VIA, default="controller",
                        help="send the admin writes to the active controller or to brokers")
    parser.add_argument("--linger-ms", type=int, default=0,
                        help="controller.quorum.append.linger.ms (-1: Kafka's default 25)")
    parser.add_argument("--topics", type=int, default=200,
                        help="topics of the propagation run (0 skips it)")
    parser.add_argument("--partitions", type=int, default=3, help="per propagation topic")
    parser.add_argument("--propagation-brokers", type=int, default=10)
    parser.add_argument("--poll-ms", type=float, default=2.0,
                        help="pause between one broker's Metadata polls")
    parser.add_argument("--dir", default="/tmp/pykraft-bench-metadata",
                        help="data directories (use a real disk, not tmpfs)")
    parser.add_argument("--json", action="store_true", help="print JSON only (tables to stderr)")
    args = parser.parse_args(argv)
    unknown = set(args.systems) - set(SYSTEMS)
    if unknown:
        parser.error(f"unknown systems {sorted(unknown)}; choose from {', '.join(SYSTEMS)}")
    if not 1 <= args.brokers <= 3:
        parser.error("--brokers must be 1, 2 or 3")
    if args.topics < 0 or args.propagation_brokers < 1 or max(args.concurrency) > 64:
        parser.error("--topics >= 0, --propagation-brokers >= 1, concurrency <= 64")
    return args


if __name__ == "__main__":
    asyncio.run(main(parse_args()))
