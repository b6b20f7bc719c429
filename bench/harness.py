"""The one load generator every system is measured with (asyncio, in this process).

Throughput: ``concurrency`` workers, each with its own writer to the leader, send 100-byte
writes back to back; a warm-up runs first and is not counted, then every acknowledged write
of the measured window is counted and its latency kept. Unavailability: SIGKILL the leader,
then start one write attempt every :data:`PROBE_INTERVAL_S` against the survivors in turn
(each attempt bounded by the system's probe timeout) until one is acknowledged; the gap is
the time from the kill to that acknowledgement.
"""

from __future__ import annotations

import asyncio
import itertools
import statistics
import time
from collections.abc import Awaitable
from dataclasses import dataclass, field

from peers.base import BenchError, System, Writer, until

VALUE = b"v" * 100
PROBE_INTERVAL_S = 0.01
MAX_PROBES_IN_FLIGHT = 200
FAILOVER_DEADLINE_S = 60.0


@dataclass
class LevelResult:
    concurrency: int
    seconds: float
    latencies_ms: list[float] = field(default_factory=list)
    errors: int = 0

    @property
    def writes_per_s(self) -> float:
        return len(self.latencies_ms) / self.seconds

    def percentile(self, q: float) -> float:
        if not self.latencies_ms:
            return float("nan")
        ordered = sorted(self.latencies_ms)
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))]

    def summary(self) -> dict[str, float | int]:
        return {"concurrency": self.concurrency, "writes_per_s": round(self.writes_per_s, 1),
                "p50_ms": round(self.percentile(0.5), 2),
                "p99_ms": round(self.percentile(0.99), 2), "errors": self.errors}


async def run_level(system: System, leader: int, concurrency: int, seconds: float,
                    warmup_s: float) -> LevelResult:
    writers = await system.writers(leader, concurrency)
    result = LevelResult(concurrency, seconds)
    started = time.monotonic()
    measure_from = started + warmup_s
    stop_at = measure_from + seconds

    async def worker(writer: Writer) -> None:
        while (now := time.monotonic()) < stop_at:
            try:
                await writer.write(VALUE)
            except BenchError:
                result.errors += 1
                if result.errors > 100:
                    raise
                continue
            done = time.monotonic()
            if now >= measure_from and done <= stop_at:
                result.latencies_ms.append((done - now) * 1000)

    try:
        await asyncio.wait_for(asyncio.gather(*(worker(w) for w in writers)),
                               warmup_s + seconds + 30)
    finally:
        for writer in writers:
            await writer.close()
    return result


async def unavailability_ms(system: System) -> float:
    """One leader kill: ms until a survivor acknowledges a write; then heal the cluster."""
    leader = await system.leader()
    await system.prepare_failover(leader)
    survivors = itertools.cycle([n for n in range(3) if n != leader])
    acknowledged: asyncio.Future[float] = asyncio.get_running_loop().create_future()
    probes: set[asyncio.Task[None]] = set()

    async def attempt(node: int) -> None:
        try:
            await system.probe(node, VALUE)
        except (BenchError, OSError, TimeoutError):
            return
        if not acknowledged.done():
            acknowledged.set_result(time.monotonic())

    try:
        killed_at = time.monotonic()
        system.kill(leader)
        while not acknowledged.done():
            if time.monotonic() - killed_at > FAILOVER_DEADLINE_S:
                raise BenchError(f"{system.name}: no write acknowledged "
                                 f"{FAILOVER_DEADLINE_S:.0f} s after the leader kill")
            if len(probes) < MAX_PROBES_IN_FLIGHT:
                task = asyncio.create_task(attempt(next(survivors)))
                probes.add(task)
                task.add_done_callback(probes.discard)
            await asyncio.wait([acknowledged], timeout=PROBE_INTERVAL_S)
        gap_ms = (acknowledged.result() - killed_at) * 1000
    finally:
        for task in list(probes):
            task.cancel()
        await asyncio.gather(*probes, return_exceptions=True)
        await system.end_failover()
    await system.restart(leader)
    await until(f"{system.name} node {leader} caught up",
                lambda: _true_or_none(system.caught_up(leader)))
    return gap_ms


async def _true_or_none(check: Awaitable[bool]) -> bool | None:
    return True if await check else None


@dataclass
class SystemResult:
    name: str
    version: str
    durability: str
    levels: list[LevelResult]
    unavailability_ms: list[float]

    @property
    def median_unavailability_ms(self) -> float:
        return statistics.median(self.unavailability_ms) if self.unavailability_ms else (
            float("nan"))

    def summary(self) -> dict[str, object]:
        return {
            "name": self.name, "version": self.version, "durability": self.durability,
            "levels": [level.summary() for level in self.levels],
            "unavailability_ms": [round(g, 1) for g in self.unavailability_ms],
            "median_unavailability_ms": round(self.median_unavailability_ms, 1),
        }
