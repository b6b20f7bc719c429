"""Benchmark pykraft's group coordinator on 127.0.0.1: rebalance time of a classic consumer
group after a member leaves and after one crashes, and OffsetCommit throughput.

Cluster: ``LocalCluster`` with 1 controller and 1 broker (``__consumer_offsets`` RF=1), or
with ``--brokers 3`` (RF=3, min.insync.replicas=2); ``offsets.topic.num.partitions`` is
Kafka's default (50); ``group.initial.rebalance.delay.ms=0`` (it delays only the first join
into an empty group, which the measured rounds never see). Topic: 6 partitions.

Rebalances: 3 confluent-kafka consumers (``bench/group_member.py``, each its own process,
librdkafka's default eager range assignor) in one group on the topic, each holding 2
partitions. A round waits a random pause in [0, ``heartbeat.interval.ms``) (the members
last heartbeat at a random phase, as in a running group, not all at the end of the last
rebalance), removes the oldest member, then starts a new one and waits until the three
hold 2 partitions each again. ``leave``: SIGTERM, the member ``close()``s (LeaveGroup);
the gap runs from the member's ``close()`` call. ``crash``: SIGKILL; the gap runs from the
kill. The gap ends at the later of the two survivors' ``on_assign`` callbacks that gives
them the 6 partitions between them (every time read from CLOCK_MONOTONIC, shared by all
processes). Survivors learn of a rebalance from their next heartbeat, so a leave costs up to
``heartbeat.interval.ms``, and a crash ``session.timeout.ms`` after the dead member's last
heartbeat; "detect" is the gap up to the later survivor's ``on_revoke`` (it learnt),
"protocol" the rest (JoinGroup, SyncGroup, both survivors' assignments). For a crash the
time past ``session.timeout.ms`` is reported too.

Commit throughput: N committers, each on its own connection to its own group's coordinator
(found by FindCoordinator) and its own group, send OffsetCommit of the topic's 6 partitions
(generation -1: groups without members), one at a time, for ``--seconds`` after an
uncounted ``--warmup``. The coordinator answers once the commit's batch is committed in
``__consumer_offsets`` (the high watermark passed it: on RF=3 every in-sync replica has it,
as Kafka's coordinator appends with acks=all). No Kafka-compatible group coordinator other
than Apache Kafka (absent: JVM broker) is packaged on Debian or PyPI, so the row beside it
is the bare request path instead: the same connections sending ApiVersions (answered by the
broker's network layer alone) at the same concurrency; commits/ApiVersions is the share of
the bare round-trip rate the coordinator keeps. The committers are pykraft's Python client
in this process; "client CPU" is this process's CPU time over the wall time (near 100 %:
the client, not the broker, limits the row). The same levels then commit through
confluent-kafka (librdkafka, Kafka's wire client in C): N consumers of groups of their own,
no subscription, ``commit(asynchronous=False)`` of the 6 partitions back to back, each in
its own thread. ``--profile`` samples the first broker with
py-spy while the last level commits and prints its 10 hottest frames (own time).

    .venv/bin/python bench/groups.py [--brokers 1|3] [--rounds 20] [--committers 1,4,16]
        [--seconds 5] [--session-timeout-ms 6000] [--heartbeat-interval-ms 1000]
        [--profile] [--quick] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from rich.console import Console
from rich.table import Table

from dataplane import top_frames
from group_cluster import (
    MIN_SESSION_TIMEOUT_MS,
    PARTITIONS,
    cluster_properties,
    create_bench_topic,
    running_cluster,
)
from group_commits import CommitFigures, commit_levels
from group_rebalance import MEMBERS, RebalanceFigures, rebalances
from peers.base import HOST
from pykraft import __version__


def rebalance_table(figures: list[RebalanceFigures], args: argparse.Namespace) -> Table:
    table = Table(title=f"rebalance of {MEMBERS} confluent-kafka members on {PARTITIONS} "
                        f"partitions, {args.rounds} rounds each (session.timeout.ms="
                        f"{args.session_timeout_ms}, heartbeat.interval.ms="
                        f"{args.heartbeat_interval_ms})")
    for column in ("member", "figure", "p50 ms", "p99 ms", "max ms"):
        table.add_column(column, justify="left" if column in ("member", "figure") else "right")
    for rows in figures:
        summary = rows.summary()
        for name in ("gap", "detect", "protocol", "past_session_timeout"):
            if name in summary:
                stats = summary[name]
                table.add_row(rows.kind, name.replace("_", " "), f"{stats['p50_ms']:.0f}",
                              f"{stats['p99_ms']:.0f}", f"{stats['max_ms']:.0f}")
    return table


def commit_table(figures: list[CommitFigures], brokers: int) -> Table:
    table = Table(title=f"OffsetCommit of {PARTITIONS} partitions by N committers (one group "
                        f"each), {brokers} broker(s), __consumer_offsets RF={brokers}; beside "
                        "it the bare request path (ApiVersions) on the same connections. "
                        "Latencies in ms, CPU: the client's; ratio: commit/s over ApiV/s")
    for column in ("N", "commit/s", "offset/s", "p50", "p99", "CPU", "ApiV/s", "p50 ", "CPU ",
                   "ratio"):
        table.add_column(column, justify="right")
    for level in figures:
        row = level.summary()
        table.add_row(str(row["committers"]), f"{row['commits_per_s']:,.0f}",
                      f"{row['offsets_per_s']:,.0f}", f"{row['commit_p50_ms']:.2f}",
                      f"{row['commit_p99_ms']:.2f}", f"{row['commit_client_cpu']:.0%}",
                      f"{row['api_versions_per_s']:,.0f}", f"{row['api_versions_p50_ms']:.2f}",
                      f"{row['api_versions_client_cpu']:.0%}",
                      f"{row['commits_over_api_versions']:.3f}")
    return table


def rdkafka_table(figures: list[CommitFigures]) -> Table:
    table = Table(title="the same commits through confluent-kafka: N consumers of their own "
                        "groups, commit(asynchronous=False) in N threads; latencies in ms")
    for column in ("N", "commit/s", "offset/s", "p50", "p99"):
        table.add_column(column, justify="right")
    for level in figures:
        row = level.summary()
        table.add_row(str(row["committers"]), f"{row['rdkafka_commits_per_s']:,.0f}",
                      f"{row['rdkafka_commits_per_s'] * PARTITIONS:,.0f}",
                      f"{row['rdkafka_commit_p50_ms']:.2f}",
                      f"{row['rdkafka_commit_p99_ms']:.2f}")
    return table


def git_commit() -> str:
    done = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                          text=True, cwd=Path(__file__).parent, check=False)
    return done.stdout.strip() or "unknown"


async def main(args: argparse.Namespace) -> int:
    console = Console(stderr=args.json)
    load_before = os.getloadavg()
    console.print(f"{platform.node()}: {os.cpu_count()} cpus, load average "
                  f"{load_before[0]:.2f} (1 min) at start")
    properties = cluster_properties(args.brokers, args.session_timeout_ms)
    with running_cluster(Path(args.dir), properties, args.brokers) as cluster:
        bootstrap = cluster.bootstrap_servers
        await create_bench_topic(bootstrap, args.brokers)
        rebalance_figures = await rebalances(bootstrap, args, console)
        coordinator = cluster.brokers[0]
        out = Path(args.dir) / "commit-profile.txt"
        commit_figures = await commit_levels(bootstrap, args, console, (
            cluster.pids[coordinator], out) if args.profile else None)
        frames = top_frames(out) if out.exists() else []
    load_after = os.getloadavg()
    console.print(f"load average {load_after[0]:.2f} (1 min) at the end")
    if args.json:
        print(json.dumps({
            "commit": git_commit(), "version": __version__, "host": HOST,
            "brokers": args.brokers, "partitions": PARTITIONS, "members": MEMBERS,
            "session_timeout_ms": args.session_timeout_ms,
            "heartbeat_interval_ms": args.heartbeat_interval_ms,
            "broker_properties": properties,
            "load_average": {"start": round(load_before[0], 2), "end": round(load_after[0], 2)},
            "rebalances": [f.summary() for f in rebalance_figures],
            "commits": [f.summary() for f in commit_figures], "profile_top": frames},
            indent=2))
    console.print(rebalance_table(rebalance_figures, args))
    console.print(commit_table(commit_figures, args.brokers))
    console.print(rdkafka_table(commit_figures))
    if frames:
        table = Table(title=f"broker {coordinator} while {args.committers[-1]} committers "
                            "commit: top frames (own time)")
        table.add_column("frame")
        table.add_column("% samples", justify="right")
        for frame, share in frames:
            table.add_row(frame, f"{share:.1f}")
        console.print(table)
    return 0


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--brokers", type=int, choices=(1, 3), default=1,
                        help="1: __consumer_offsets RF=1; 3: RF=3, min.insync.replicas=2")
    parser.add_argument("--rounds", type=int, default=20, help="rebalances of each kind")
    parser.add_argument("--committers", type=lambda s: [int(x) for x in s.split(",") if x],
                        default=[1, 4, 16], help="comma-separated concurrency levels")
    parser.add_argument("--seconds", type=float, default=5.0, help="measured per level")
    parser.add_argument("--warmup", type=float, default=1.0, help="uncounted, per level")
    parser.add_argument("--session-timeout-ms", type=int, default=MIN_SESSION_TIMEOUT_MS,
                        help="the members' (below 6000 the broker's group.min.session."
                             "timeout.ms is lowered to it)")
    parser.add_argument("--heartbeat-interval-ms", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=16,
                        help="of the pauses before each removal")
    parser.add_argument("--profile", action="store_true",
                        help="py-spy the first broker while the last level commits")
    parser.add_argument("--quick", action="store_true",
                        help="2 rounds, session 3 s, heartbeat 0.5 s, 1 and 2 committers "
                             "for 1 s each: a smoke run")
    parser.add_argument("--dir", default="/tmp/pykraft-bench-groups",
                        help="the cluster's data directories go here")
    parser.add_argument("--json", action="store_true", help="print JSON only (tables to stderr)")
    args = parser.parse_args(argv)
    if args.quick:
        args.rounds, args.committers, args.seconds, args.warmup = 2, [1, 2], 1.0, 0.5
        args.session_timeout_ms, args.heartbeat_interval_ms = 3000, 500
    if not args.committers or min([args.rounds, args.heartbeat_interval_ms,
                                   *args.committers]) < 1 or (
            args.seconds <= 0 or args.warmup < 0):
        parser.error("--rounds, --committers, --seconds and --heartbeat-interval-ms must be "
                     "positive")
    if args.heartbeat_interval_ms >= args.session_timeout_ms:
        parser.error("--heartbeat-interval-ms must be below --session-timeout-ms")
    return args


if __name__ == "__main__":
    sys.exit(asyncio.run(main(parse_args())))
