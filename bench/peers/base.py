"""What the load generator needs from a system under test, and the process plumbing they share.

Every system is a 3-node cluster of child processes on 127.0.0.1, started in its own session
and stopped by PID (SIGTERM, bounded wait, SIGKILL). The load generator only sees
:class:`System`: find the leader, open writers to a node, kill and restart a node.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import time
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

HOST = "127.0.0.1"
STOP_TIMEOUT_S = 10.0
#: Bound on every "until the cluster answers" wait.
READY_TIMEOUT_S = 60.0
T = TypeVar("T")


class BenchError(Exception):
    """A system could not be installed, started or driven."""


class Writer(ABC):
    """One client issuing writes one at a time (a load generator worker owns one)."""

    @abstractmethod
    async def write(self, value: bytes) -> None:
        """Return once the system acknowledged ``value`` as durably written; raise otherwise."""

    @abstractmethod
    async def close(self) -> None: ...


class System(ABC):
    """A running 3-node cluster of one system."""

    name: str
    version: str
    durability: str

    @abstractmethod
    async def start(self, base: Path) -> None:
        """Write configs under ``base``, start all nodes, return once writes succeed."""

    @abstractmethod
    async def stop(self) -> None: ...

    @abstractmethod
    async def leader(self, exclude: int | None = None) -> int:
        """Index (0-2) of the current leader other than ``exclude``; waits (bounded)."""

    @abstractmethod
    async def writers(self, node: int, count: int) -> list[Writer]:
        """``count`` writers sending to ``node``."""

    @abstractmethod
    async def probe(self, node: int, value: bytes) -> None:
        """One write attempt against ``node`` (or the survivors), raising on failure; used
        while the cluster recovers from a leader kill."""

    async def prepare_failover(self, leader: int) -> None:  # noqa: B027 (optional hook)
        """Set up what :meth:`probe` needs before ``leader`` is killed (default: nothing)."""

    async def end_failover(self) -> None:  # noqa: B027 (optional hook)
        """Release what :meth:`prepare_failover` set up."""

    @abstractmethod
    def kill(self, node: int) -> None: ...

    @abstractmethod
    async def restart(self, node: int) -> None:
        """Start a killed node again with the same data directory."""

    @abstractmethod
    async def caught_up(self, node: int) -> bool:
        """Whether a restarted ``node`` is back in the quorum, able to vote and replicate
        (the next leader kill must not find a cluster of one)."""


@dataclass
class ProcessGroup:
    """Child processes by node index, each in its own session, stopped by PID."""

    children: dict[int, subprocess.Popen[bytes]] = field(default_factory=dict)

    def start(self, node: int, argv: list[str], log: Path, cwd: Path | None = None,
              env: dict[str, str] | None = None) -> None:
        with log.open("ab") as out:
            self.children[node] = subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=out, stderr=out, cwd=cwd,
                env={**os.environ, **(env or {})}, start_new_session=True,
            )

    def pid(self, node: int) -> int:
        return self.children[node].pid

    def running(self, node: int) -> bool:
        child = self.children.get(node)
        return child is not None and child.poll() is None

    def check_alive(self, node: int) -> None:
        child = self.children[node]
        if child.poll() is not None:
            raise BenchError(f"node {node} (pid {child.pid}) exited with {child.returncode}")

    def kill(self, node: int) -> None:
        """SIGKILL (a crash) and reap."""
        child = self.children.pop(node)
        with contextlib.suppress(ProcessLookupError):
            os.kill(child.pid, signal.SIGKILL)
        child.wait(STOP_TIMEOUT_S)

    def stop_all(self) -> None:
        for child in self.children.values():
            with contextlib.suppress(ProcessLookupError):
                os.kill(child.pid, signal.SIGTERM)
        deadline = time.monotonic() + STOP_TIMEOUT_S
        for child in self.children.values():
            try:
                child.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                os.kill(child.pid, signal.SIGKILL)
                child.wait(STOP_TIMEOUT_S)
        self.children.clear()


async def until(what: str, attempt: Callable[[], Awaitable[T | None]],
                timeout_s: float = READY_TIMEOUT_S, interval_s: float = 0.05) -> T:
    """Call ``attempt`` until it returns non-None (bounded; its errors mean "not yet")."""
    deadline = time.monotonic() + timeout_s
    last: BaseException | None = None
    while time.monotonic() < deadline:
        try:
            result = await attempt()
        except (OSError, TimeoutError, BenchError) as exc:
            last, result = exc, None
        if result is not None:
            return result
        await asyncio.sleep(interval_s)
    raise BenchError(f"{what}: nothing within {timeout_s:.0f} s (last error: {last})")
