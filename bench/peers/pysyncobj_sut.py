"""PySyncObj (PyPI): 3 embedding processes (``pysyncobj_node.py``) with journal files.

Durability, exactly: PySyncObj 0.3.x writes its journal into an mmap'd file and never calls
fsync/msync on the write path (there is no option for it), so an acknowledged write survives
a process crash (the page cache keeps it) but not an OS crash or power loss. pykraft, etcd
and ZooKeeper fsync before acknowledging; PySyncObj's numbers are therefore an upper bound.
"""

from __future__ import annotations

import asyncio
import sys
from importlib.metadata import version
from pathlib import Path

from peers.base import HOST, BenchError, ProcessGroup, System, Writer, until
from peers.pykraft_sut import BenchAppendWriter
from pykraft.errors import PyKraftError
from pykraft.testing.append import AppendClient
from pykraft.tools.local_cluster import free_ports

NODE_SCRIPT = Path(__file__).with_name("pysyncobj_node.py")
PROBE_TIMEOUT_S = 3.0


class PySyncObj(System):
    name = "pysyncobj"
    durability = ("journal in an mmap'd file, never fsynced: survives a process kill, "
                  "not an OS crash")

    def __init__(self) -> None:
        self.version = version("pysyncobj")
        self._processes = ProcessGroup()
        self._argv: dict[int, list[str]] = {}
        self._logs: dict[int, Path] = {}
        self._client_ports: list[int] = []

    async def start(self, base: Path) -> None:
        ports = free_ports(6)
        self._client_ports, raft_ports = ports[:3], ports[3:]
        for node in range(3):
            directory = base / f"pysyncobj-{node}"
            directory.mkdir(parents=True, exist_ok=True)
            self._logs[node] = directory / "node.log"
            self._argv[node] = [
                sys.executable, str(NODE_SCRIPT), str(node), ",".join(map(str, raft_ports)),
                str(self._client_ports[node]), str(directory),
            ]
            self._processes.start(node, self._argv[node], self._logs[node])
        await self.leader()

    async def stop(self) -> None:
        self._processes.stop_all()

    async def _write(self, node: int, value: bytes) -> int:
        """One write through ``node``; the leader index it reports."""
        client = await AppendClient.connect(HOST, self._client_ports[node])
        try:
            result = await asyncio.wait_for(client.append(value), PROBE_TIMEOUT_S)
        except PyKraftError as exc:
            raise BenchError(f"pysyncobj write failed: {exc}") from exc
        finally:
            client.close()
        if result.error_code != 0:
            raise BenchError(f"pysyncobj refused the write: error {result.error_code}")
        return result.leader_id

    async def leader(self, exclude: int | None = None) -> int:
        async def attempt() -> int | None:
            for node in range(3):
                if node == exclude or not self._processes.running(node):
                    continue
                leader = await self._write(node, b"ready")
                if leader not in (-1, exclude):
                    return leader
            return None
        return await until("pysyncobj leader", attempt)

    async def writers(self, node: int, count: int) -> list[Writer]:
        port = self._client_ports[node]
        return [BenchAppendWriter(await AppendClient.connect(HOST, port), self.name)
                for _ in range(count)]

    async def probe(self, node: int, value: bytes) -> None:
        await self._write(node, value)

    def kill(self, node: int) -> None:
        self._processes.kill(node)

    async def restart(self, node: int) -> None:
        self._processes.start(node, self._argv[node], self._logs[node])

    async def caught_up(self, node: int) -> bool:
        """A write through ``node`` is forwarded to the leader: it is connected again."""
        return await self._write(node, b"ready") >= 0
