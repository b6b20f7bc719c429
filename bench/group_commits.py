"""OffsetCommit throughput of N committers, each its own group on its own connection to
that group's coordinator, beside ApiVersions on the same connections (the bare request
path), and the same commits through confluent-kafka; bench/groups.py describes what is
measured."""

from __future__ import annotations

import argparse
import asyncio
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import confluent_kafka
from rich.console import Console

from dataplane import profiled
from group_cluster import PARTITIONS, TOPIC
from harness import LevelResult
from peers.base import BenchError
from pykraft import __version__
from pykraft.messages.kafka.api_versions_request import ApiVersionsRequest
from pykraft.messages.kafka.offset_commit_request import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
)
from pykraft.protocol.api_versions import listener_ranges, offsets_by_name
from pykraft.protocol.apis import Listener
from pykraft.protocol.errors import ErrorCode, error_name
from pykraft.runtime.kafka_client import ClientConnection, open_with_timeout
from pykraft.tools.admin_client import admin_settings
from pykraft.tools.broker_clients import BrokerClients
from pykraft.tools.group_admin import GroupClient

CONNECT_TIMEOUT_S = 10.0
COORDINATOR_TIMEOUT_S = 60.0
BROKER_RANGES = offsets_by_name(listener_ranges(Listener.BROKER))


def commit_body(group: str, offset: int) -> OffsetCommitRequest:
    return OffsetCommitRequest(
        group_id=group, generation_id_or_member_epoch=-1, member_id="",
        group_instance_id=None, topics=(OffsetCommitRequestTopic(
            name=TOPIC, partitions=tuple(OffsetCommitRequestPartition(
                partition_index=p, committed_offset=offset,
                committed_leader_epoch=-1, committed_metadata="")
                for p in range(PARTITIONS))),))


def check_commit(answer: Any) -> None:
    codes = {int(p.error_code) for t in answer.topics for p in t.partitions}
    if codes != {ErrorCode.NONE}:
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


class Window:
    """A level's measured span: after ``warmup_s`` uncounted, every request started from
    then on counts, for ``seconds``, or longer until each worker has one (a stall longer
    than the window on a loaded machine then gives a low figure, never none); the span ends
    at the later of the planned end and the last counted answer."""

    def __init__(self, warmup_s: float, seconds: float) -> None:
        self.measure_from = time.monotonic() + warmup_s
        self.stop_at = self.measure_from + seconds
        self._last_done = self.stop_at
        self._lock = threading.Lock()

    def more(self, counted: int) -> bool:
        """Whether a worker that has ``counted`` requests so far starts another."""
        return time.monotonic() < self.stop_at or counted == 0

    def record(self, result: LevelResult, started: float, done: float) -> int:
        """Count the request if it started in the span; 1 if counted."""
        if started < self.measure_from:
            return 0
        with self._lock:
            result.latencies_ms.append((done - started) * 1000)
            self._last_done = max(self._last_done, done)
            result.seconds = self._last_done - self.measure_from
        return 1


async def round_trips(connections: list[tuple[str, ClientConnection]], seconds: float,
                      warmup_s: float, call: Callable[[str, ClientConnection, int],
                                                      Awaitable[None]]) -> tuple[
                                                          LevelResult, float]:
    """Each connection calls ``call`` back to back; (the measured window, client CPU)."""
    result = LevelResult(len(connections), seconds)
    window = Window(warmup_s, seconds)
    cpu = 0.0

    async def worker(group: str, connection: ClientConnection) -> None:
        sequence = counted = 0
        while window.more(counted):
            sequence += 1
            started = time.monotonic()
            await call(group, connection, sequence)
            counted += window.record(result, started, time.monotonic())

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
    if answer.error_code != ErrorCode.NONE:
        raise BenchError(f"ApiVersions answered {error_name(answer.error_code)}")


def rdkafka_commits(bootstrap: str, count: int, seconds: float, warmup_s: float,
                    ) -> LevelResult:
    """``count`` threads, each a confluent-kafka consumer of its own group (no
    subscription) calling ``commit(asynchronous=False)`` back to back."""
    result = LevelResult(count, seconds)
    consumers = [confluent_kafka.Consumer({
        "bootstrap.servers": bootstrap, "group.id": f"bench-rdkafka-{index}",
        "enable.auto.commit": False}) for index in range(count)]
    failures: list[BaseException] = []

    def offsets(offset: int) -> list[confluent_kafka.TopicPartition]:
        return [confluent_kafka.TopicPartition(TOPIC, p, offset) for p in range(PARTITIONS)]

    def synchronous(consumer: confluent_kafka.Consumer, offset: int) -> None:
        answered = consumer.commit(offsets=offsets(offset), asynchronous=False) or []
        errors = {str(tp.error) for tp in answered if tp.error is not None}
        if errors:
            raise BenchError(f"confluent-kafka commit failed: {sorted(errors)}")

    def worker(consumer: confluent_kafka.Consumer) -> None:
        sequence = counted = 0
        try:
            while window.more(counted):
                sequence += 1
                started = time.monotonic()
                synchronous(consumer, sequence)
                counted += window.record(result, started, time.monotonic())
        except (BenchError, confluent_kafka.KafkaException) as exc:
            failures.append(exc)

    try:
        for consumer in consumers:  # each finds its coordinator first, uncounted
            synchronous(consumer, 0)
        window = Window(warmup_s, seconds)
        threads = [threading.Thread(target=worker, args=(c,)) for c in consumers]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(warmup_s + seconds + 60)
    finally:
        for consumer in consumers:
            consumer.close()
    if failures or any(t.is_alive() for t in threads):
        raise BenchError(f"confluent-kafka committers failed: {failures[:1]}")
    return result


@dataclass
class CommitFigures:
    commits: LevelResult
    commit_cpu: float
    bare: LevelResult
    bare_cpu: float
    rdkafka: LevelResult

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
                "commits_over_api_versions": round(commits_s / self.bare.writes_per_s, 3),
                "rdkafka_commits_per_s": round(self.rdkafka.writes_per_s, 1),
                "rdkafka_commit_p50_ms": round(self.rdkafka.percentile(0.5), 2),
                "rdkafka_commit_p99_ms": round(self.rdkafka.percentile(0.99), 2)}


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
        rdkafka = await asyncio.to_thread(rdkafka_commits, bootstrap, count, args.seconds,
                                          args.warmup)
        results.append(CommitFigures(commits, commit_cpu, bare, bare_cpu, rdkafka))
        console.print(f"{count} committers: {commits.writes_per_s:.0f} commits/s, "
                      f"{bare.writes_per_s:.0f} ApiVersions/s, confluent-kafka "
                      f"{rdkafka.writes_per_s:.0f} commits/s", style="dim")
    return results
