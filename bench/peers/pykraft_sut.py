"""pykraft: 3 controllers (``LocalCluster``) driven through the append request of
:mod:`pykraft.testing.append`.

A write is acknowledged once committed, i.e. fsynced (group commit) on a majority. One
connection per writer, as Kafka serves one request per connection at a time.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from peers.base import BenchError, System, Writer, until
from pykraft import __version__
from pykraft.errors import PyKraftError
from pykraft.testing.append import APPEND_PROPERTIES, AppendClient
from pykraft.tools.local_cluster import LocalCluster
from pykraft.tools.quorum_tool import describe_quorum, parse_host_port

PROBE_TIMEOUT_S = 3.0


class BenchAppendWriter(Writer):
    """A writer over the append request (pykraft, and the PySyncObj host process)."""

    def __init__(self, client: AppendClient, system: str) -> None:
        self._client = client
        self._system = system

    async def write(self, value: bytes) -> None:
        try:
            result = await self._client.append(value)
        except PyKraftError as exc:
            raise BenchError(f"{self._system} append failed: {exc}") from exc
        if result.error_code != 0:
            raise BenchError(f"{self._system} refused the write: error {result.error_code}")

    async def close(self) -> None:
        self._client.close()


class Pykraft(System):
    name = "pykraft"
    version = __version__

    def __init__(self, properties: dict[str, str] | None = None) -> None:
        self._properties = {**APPEND_PROPERTIES, **(properties or {})}
        self._cluster: LocalCluster | None = None
        linger = self._properties.get("controller.quorum.append.linger.ms", "25 (Kafka's default)")
        loop = self._properties.get("pykraft.event.loop", "uvloop")
        self.durability = ("fsync on a majority before the ack (group commit), "
                           f"append linger.ms {linger}, event loop {loop}")

    @property
    def cluster(self) -> LocalCluster:
        if self._cluster is None:
            raise BenchError("pykraft is not started")
        return self._cluster

    def _address(self, node: int) -> tuple[str, int]:
        return parse_host_port(self.cluster.nodes[node + 1].address)

    async def start(self, base: Path) -> None:
        self._cluster = LocalCluster.create(base, 3, self._properties)
        self._cluster.start_all()
        await self.leader()

    async def stop(self) -> None:
        if self._cluster is not None:
            self._cluster.stop_all()

    async def leader(self, exclude: int | None = None) -> int:
        async def attempt() -> int | None:
            for node in range(3):
                if node == exclude or not self.cluster.is_running(node + 1):
                    continue
                try:
                    info = await describe_quorum(self._address(node), timeout_s=1.0)
                except PyKraftError:
                    continue
                if info.leader_id - 1 not in (exclude, -2) and info.high_watermark > 0:
                    return info.leader_id - 1
            return None
        return await until("pykraft leader", attempt)

    async def writers(self, node: int, count: int) -> list[Writer]:
        host, port = self._address(node)
        return [BenchAppendWriter(await AppendClient.connect(host, port), self.name)
                for _ in range(count)]

    async def probe(self, node: int, value: bytes) -> None:
        host, port = self._address(node)
        client = await AppendClient.connect(host, port)
        try:
            await asyncio.wait_for(BenchAppendWriter(client, self.name).write(value),
                                   PROBE_TIMEOUT_S)
        finally:
            client.close()

    def kill(self, node: int) -> None:
        self.cluster.kill(node + 1)

    async def restart(self, node: int) -> None:
        self.cluster.start(node + 1)

    async def caught_up(self, node: int) -> bool:
        info = await describe_quorum(self._address(await self.leader()), timeout_s=1.0)
        ends = {r.replica_id: r.log_end_offset for r in info.voters}
        if ends.get(node + 1, -1) >= info.high_watermark > 0:
            return True
        raise BenchError(f"node {node + 1} not caught up: leader {info.leader_id} epoch "
                         f"{info.leader_epoch}, high watermark {info.high_watermark}, "
                         f"voter end offsets {ends}")
