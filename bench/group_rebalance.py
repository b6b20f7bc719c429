"""Rebalance time of a classic group of 3 confluent-kafka members (bench/group_member.py
processes) after one leaves or crashes; bench/groups.py describes what is measured."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import random
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console

from group_cluster import PARTITIONS, TOPIC
from peers.base import BenchError

MEMBER_SCRIPT = Path(__file__).parent / "group_member.py"
MEMBERS = 3
GROUP = "bench-rebalance"
#: Bound on one rebalance (start, leave or crash) and on a member's exit.
REBALANCE_DEADLINE_S = 60.0
STOP_TIMEOUT_S = 10.0


@dataclass
class Member:
    """One member process and the callbacks it reported: (kind, monotonic time, partitions)."""

    process: asyncio.subprocess.Process
    events: list[tuple[str, float, frozenset[int]]] = field(default_factory=list)

    @property
    def assignment(self) -> frozenset[int]:
        """What it holds now (eager protocol: a revoke drops everything)."""
        held: frozenset[int] = frozenset()
        for kind, _, partitions in self.events:
            if kind in ("assigned", "revoked"):
                held = partitions
        return held

    def first(self, kind: str, after: float) -> float | None:
        return next((t for k, t, _ in self.events if k == kind and t >= after), None)

    def last(self, kind: str) -> float:
        return max(t for k, t, _ in self.events if k == kind)


@dataclass
class Rebalance:
    gap_ms: float
    detect_ms: float


class Group:
    """The member processes of the rebalance group, and waits on what they report."""

    def __init__(self, bootstrap: str, session_ms: int, heartbeat_ms: int) -> None:
        self.bootstrap = bootstrap
        self.session_ms = session_ms
        self.heartbeat_ms = heartbeat_ms
        self.members: list[Member] = []
        self._changed = asyncio.Event()
        self._readers: set[asyncio.Task[None]] = set()

    async def add(self) -> Member:
        process = await asyncio.create_subprocess_exec(
            sys.executable, str(MEMBER_SCRIPT), self.bootstrap, GROUP, TOPIC,
            str(self.session_ms), str(self.heartbeat_ms), stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, start_new_session=True)
        member = Member(process)
        reader = asyncio.create_task(self._read(member))
        self._readers.add(reader)
        reader.add_done_callback(self._readers.discard)
        self.members.append(member)
        return member

    async def _read(self, member: Member) -> None:
        assert member.process.stdout is not None
        async for line in member.process.stdout:
            kind, stamp, *rest = line.decode().split(" ", 2)
            held = frozenset(int(p) for p in rest[0].split(",") if p.strip()) if (
                kind == "assigned" and rest) else frozenset()
            member.events.append((kind, float(stamp), held))
            self._changed.set()

    async def wait(self, what: str, ready: Callable[[], float | None]) -> float:
        """``ready()``'s first non-None value, re-checked at every member report (bounded)."""
        deadline = time.monotonic() + REBALANCE_DEADLINE_S
        while (found := ready()) is None:
            if any(m.process.returncode is not None for m in self.members):
                raise BenchError(f"{what}: a member process exited")
            self._changed.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(),
                                       max(0.0, deadline - time.monotonic()))
            if time.monotonic() >= deadline:
                raise BenchError(f"{what}: not within {REBALANCE_DEADLINE_S:.0f} s")
        return found

    def settled(self, since: float) -> float | None:
        """When every member came to hold its share of the 6 partitions (all assigned after
        ``since``, disjoint, covering the topic), or None if they do not yet."""
        held = [m.assignment for m in self.members]
        if any(not h for h in held) or sum(map(len, held)) != PARTITIONS or (
                frozenset().union(*held) != frozenset(range(PARTITIONS))):
            return None
        stamps = [m.last("assigned") for m in self.members]
        return max(stamps) if min(stamps) >= since else None

    async def fill(self) -> None:
        """Start members until there are 3, then wait until they share the partitions."""
        since = time.monotonic()
        while len(self.members) < MEMBERS:
            await self.add()
        await self.wait(f"{MEMBERS} members assigned", lambda: self.settled(since))

    async def remove_oldest(self, crash: bool, pause_s: float) -> Rebalance:
        """Leave (SIGTERM: ``close()``) or crash (SIGKILL) the oldest member ``pause_s``
        from now: the time until the survivors hold all partitions."""
        await asyncio.sleep(pause_s)
        victim = self.members.pop(0)
        if crash:
            started = time.monotonic()
            victim.process.kill()
        else:
            victim.process.send_signal(signal.SIGTERM)
            await self.wait("the member closing", lambda: victim.first("closing", 0.0))
            started = victim.last("closing")
        done = await self.wait("the survivors assigned", lambda: self.settled(started))
        learnt = [m.first("revoked", started) for m in self.members]
        detect = max((t for t in learnt if t is not None), default=done)
        await asyncio.wait_for(victim.process.wait(), STOP_TIMEOUT_S)
        return Rebalance((done - started) * 1000, (detect - started) * 1000)

    async def stop(self) -> None:
        for member in self.members:
            if member.process.returncode is None:
                member.process.kill()
            await member.process.wait()
        for reader in list(self._readers):
            reader.cancel()
        await asyncio.gather(*self._readers, return_exceptions=True)


@dataclass
class RebalanceFigures:
    kind: str
    rounds: list[Rebalance]
    #: subtracted from each gap for "past" (the crash's session timeout; 0 for a leave)
    offset_ms: float = 0.0

    @staticmethod
    def stats(values: list[float]) -> dict[str, float]:
        p99 = statistics.quantiles(values, n=100, method="inclusive")[98] if len(
            values) > 1 else values[0]
        return {"p50_ms": round(statistics.median(values), 1), "p99_ms": round(p99, 1),
                "max_ms": round(max(values), 1)}

    def summary(self) -> dict[str, Any]:
        gaps = [r.gap_ms for r in self.rounds]
        return {"kind": self.kind, "rounds": len(self.rounds),
                "gaps_ms": [round(g, 1) for g in gaps], "gap": self.stats(gaps),
                "detect": self.stats([r.detect_ms for r in self.rounds]),
                "protocol": self.stats([r.gap_ms - r.detect_ms for r in self.rounds]),
                **({"past_session_timeout": self.stats([g - self.offset_ms for g in gaps])}
                   if self.offset_ms else {})}


async def rebalances(bootstrap: str, args: argparse.Namespace, console: Console,
                     ) -> list[RebalanceFigures]:
    group = Group(bootstrap, args.session_timeout_ms, args.heartbeat_interval_ms)
    rng = random.Random(args.seed)
    results = []
    try:
        await group.fill()
        for kind, crash in (("leave", False), ("crash", True)):
            rounds = []
            for index in range(args.rounds):
                pause_s = rng.uniform(0, args.heartbeat_interval_ms / 1000)
                rounds.append(await group.remove_oldest(crash, pause_s))
                console.print(f"{kind} {index + 1}/{args.rounds}: {rounds[-1].gap_ms:.0f} ms",
                              style="dim")
                await group.fill()
            results.append(RebalanceFigures(
                kind, rounds, float(args.session_timeout_ms) if crash else 0.0))
    finally:
        await group.stop()
    return results
