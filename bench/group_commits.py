"""OffsetCommit throughput of N committers, each its own group on its own connection to
that group's coordinator, beside ApiVersions on the same connections (the bare request
path); bench/groups.py describes what is measured."""

from __future__ import annotations

import argparse
import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kio.schema.api_versions.v4.request import ApiVersionsRequest
from kio.schema.offset_commit.v9.request import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
)
from kio.schema.types import GroupId, TopicName
from kio.static.primitive import i32, i64
from rich.console import Console

from dataplane import profiled
from group_cluster import PARTITIONS, TOPIC
from harness import LevelResult
from peers.base import BenchError
from pykraft import __version__
from pykraft.protocol.api_versions import listener_ranges
from pykraft.protocol.apis import Listener
from pykraft.protocol.errors import ErrorCode, error_name
from pykraft.runtime.kafka_client import ClientConnection, open_with_timeout
from pykraft.tools.admin_client import admin_settings
from pykraft.tools.broker_clients import BrokerClients
from pykraft.tools.group_admin import GroupClient

CONNECT_TIMEOUT_S = 10.0
COORDINATOR_TIMEOUT_S = 60.0
BROKER_RANGES = listener_ranges(Listener.BROKER)


def commit_body(group: str, offset: int) -> OffsetCommitRequest:
    return OffsetCommitRequest(
        group_id=GroupId(group), generation_id_or_member_epoch=i32(-1), member_id="",
        group_instance_id=None, topics=(OffsetCommitRequestTopic(
            name=TopicName(TOPIC), partitions=tuple(OffsetCommitRequestPartition(
                partition_index=i32(p), committed_offset=i64(offset),
                committed_leader_epoch=i32(-1), committed_metadata="")
                for p in range(PARTITIONS))),))


def check_commit(answer: Any) -> None:
    codes = {int(p.error_code) for t in answer.topics for p in t.partitions}
    if codes != {ErrorCode.none}:
        raise BenchError(f"OffsetCommit answered {sorted(error_name(c) for c in codes)}")


async def committer_connections(bootstrap: str, count: int) -> list[tuple[str,
                                                                          ClientConnection]]:
    """(group, connection to its coordinator) for groups bench-commit-0..count-1."""
    opened: list[tuple[str, ClientConnection]] = []
    try:
        async with BrokerClients(admin_settings(bootstrap)) as brokers:
            finder = GroupClient(brokers, timeout_s=COORDINATOR_TIMEOUT_S)
            for index in range(count):
                group = f"bench-commit-{index}"
                coordinator = await finder.coordinator(group)
                opened.append((group, await open_with_timeout(
                    coordinator.host, coordinator.port, client_id=f"bench-committer-{index}",
                    ours=BROKER_RANGES, timeout_s=CONNECT_TIMEOUT_S)))
    except BaseException:
        for _, connection in opened:
            connection.close()
        raise
    return opened


async def round_trips(connections: list[tuple[str, ClientConnection]], seconds: float,
                      warmup_s: float, call: Callable[[str, ClientConnection, int],
                                                      Awaitable[None]]) -> tuple[
                                                          LevelResult, float]:
    """Each connection calls ``call`` back to back; (the measured window, client CPU)."""
    result = LevelResult(len(connections), seconds)
    measure_from = time.monotonic() + warmup_s
    stop_at = measure_from + seconds
    cpu = 0.0

    async def worker(group: str, connection: ClientConnection) -> None:
        sequence = 0
        while (now := time.monotonic()) < stop_at:
            sequence += 1
            await call(group, connection, sequence)
            done = time.monotonic()
            if now >= measure_from and done <= stop_at:
                result.latencies_ms.append((done - now) * 1000)

    async def cpu_of_window() -> None:
        nonlocal cpu
        await asyncio.sleep(warmup_s)
        before = time.process_time()
        await asyncio.sleep(seconds)
        cpu = (time.process_time() - before) / seconds

    await asyncio.wait_for(asyncio.gather(cpu_of_window(), *(
        worker(g, c) for g, c in connections)), warmup_s + seconds + 60)
    return result, cpu


async def commit(group: str, connection: ClientConnection, sequence: int) -> None:
    check_commit(await connection.request(commit_body(group, sequence)))


async def api_versions(_group: str, connection: ClientConnection, _sequence: int) -> None:
    answer = await connection.request(ApiVersionsRequest(
        client_software_name="pykraft-bench", client_software_version=__version__))
    if answer.error_code != ErrorCode.none:
        raise BenchError(f"ApiVersions answered {error_name(answer.error_code)}")


@dataclass
class CommitFigures:
    commits: LevelResult
    commit_cpu: float
    bare: LevelResult
    bare_cpu: float

    def summary(self) -> dict[str, Any]:
        commits_s = self.commits.writes_per_s
        return {"committers": self.commits.concurrency,
                "commits_per_s": round(commits_s, 1),
                "offsets_per_s": round(commits_s * PARTITIONS, 1),
                "commit_p50_ms": round(self.commits.percentile(0.5), 2),
                "commit_p99_ms": round(self.commits.percentile(0.99), 2),
                "commit_client_cpu": round(self.commit_cpu, 2),
                "api_versions_per_s": round(self.bare.writes_per_s, 1),
                "api_versions_p50_ms": round(self.bare.percentile(0.5), 2),
                "api_versions_p99_ms": round(self.bare.percentile(0.99), 2),
                "api_versions_client_cpu": round(self.bare_cpu, 2),
                "commits_over_api_versions": round(commits_s / self.bare.writes_per_s, 3)}


async def commit_levels(bootstrap: str, args: argparse.Namespace, console: Console,
                        profile: tuple[int, Path] | None = None) -> list[CommitFigures]:
    """Each level's figures; with ``profile`` (pid, output), py-spy samples that process
    while the last level commits."""
    results = []
    for count in args.committers:
        connections = await committer_connections(bootstrap, count)
        sampled = profile is not None and count == args.committers[-1]
        pid, out = profile or (None, Path())
        try:
            with profiled(pid, out, sampled):
                commits, commit_cpu = await round_trips(connections, args.seconds,
                                                        args.warmup, commit)
            bare, bare_cpu = await round_trips(connections, args.seconds, args.warmup,
                                               api_versions)
        finally:
            for _, connection in connections:
                connection.close()
        results.append(CommitFigures(commits, commit_cpu, bare, bare_cpu))
        console.print(f"{count} committers: {commits.writes_per_s:.0f} commits/s, "
                      f"{bare.writes_per_s:.0f} ApiVersions/s", style="dim")
    return results
