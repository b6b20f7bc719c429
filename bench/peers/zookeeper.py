"""ZooKeeper (Debian ``zookeeper``): a 3-server ensemble, writes as kazoo ``set`` on a znode.

Each server has its own dataDir and ``forceSync=yes`` (fsync of the transaction log before
a proposal is acknowledged; also ZooKeeper's default). Timings are the sample config's
(tickTime 2000, initLimit 10, syncLimit 5). kazoo is thread-based: its async results are
bridged into the event loop. A ZooKeeper session pipelines requests, so writers share at
most :data:`MAX_SESSIONS` sessions instead of opening one session (and two threads) each.
"""

from __future__ import annotations

import asyncio
import logging
import shutil
import subprocess
from pathlib import Path
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import KazooException

from peers.base import HOST, BenchError, ProcessGroup, System, Writer, until
from pykraft.tools.local_cluster import free_ports

CLASSPATH = "/usr/share/java/zookeeper.jar"
MAX_SESSIONS = 16
PROBE_TIMEOUT_S = 3.0
CONNECT_TIMEOUT_S = 15.0
# kazoo logs every lost connection at WARNING; the leader kills make plenty on purpose.
logging.getLogger("kazoo").setLevel(logging.CRITICAL)


def zookeeper_version() -> str:
    out = subprocess.run(["dpkg-query", "-W", "-f=${Version}", "zookeeper"],
                         capture_output=True, text=True, timeout=30, check=True)
    return out.stdout.strip() or "unknown"


async def four_letter(port: int, word: bytes) -> str:
    """A four-letter-word command (``srvr``) on a client port."""
    reader, writer = await asyncio.wait_for(asyncio.open_connection(HOST, port), 1.0)
    try:
        writer.write(word)
        return (await asyncio.wait_for(reader.read(), 1.0)).decode(errors="replace")
    finally:
        writer.close()


async def kazoo_call(start: Any) -> Any:
    """Await a kazoo ``*_async`` call (its callback fires on a kazoo thread)."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[Any] = loop.create_future()

    def finished(result: Any) -> None:
        loop.call_soon_threadsafe(_settle, done, result)

    try:
        start().rawlink(finished)
    except KazooException as exc:
        raise BenchError(f"zookeeper: {type(exc).__name__}: {exc}") from exc
    return await done


def _settle(done: asyncio.Future[Any], result: Any) -> None:
    if done.done():
        return
    try:
        done.set_result(result.get_nowait())
    except Exception as exc:  # kazoo reports every failure through the result
        done.set_exception(BenchError(f"zookeeper: {type(exc).__name__}: {exc}"))


async def connected_client(hosts: str) -> KazooClient:
    client = KazooClient(hosts=hosts, timeout=10.0, connection_retry={
        "max_tries": -1, "delay": 0.05, "backoff": 1, "max_delay": 0.05})
    try:
        await asyncio.to_thread(client.start, CONNECT_TIMEOUT_S)
    except Exception as exc:
        await asyncio.to_thread(client.close)
        raise BenchError(f"zookeeper: no session with {hosts}: {exc}") from exc
    return client


async def close_client(client: KazooClient) -> None:
    await asyncio.to_thread(client.stop)
    await asyncio.to_thread(client.close)


class ZkWriter(Writer):
    def __init__(self, client: KazooClient, path: str, owns_client: bool) -> None:
        self._client = client
        self._path = path
        self._owns = owns_client

    async def write(self, value: bytes) -> None:
        await kazoo_call(lambda: self._client.set_async(self._path, value))

    async def close(self) -> None:
        if self._owns:
            await close_client(self._client)


class ZooKeeper(System):
    name = "zookeeper"
    durability = "forceSync=yes: txn log fsync on a quorum before the ack"

    def __init__(self) -> None:
        self.version = zookeeper_version()
        self._processes = ProcessGroup()
        self._argv: dict[int, list[str]] = {}
        self._logs: dict[int, Path] = {}
        self._client_ports: list[int] = []
        self._probe_client: KazooClient | None = None

    def _hosts(self, nodes: list[int]) -> str:
        return ",".join(f"{HOST}:{self._client_ports[n]}" for n in nodes)

    async def start(self, base: Path) -> None:
        ports = free_ports(9)
        self._client_ports = ports[:3]
        servers = "".join(f"server.{i + 1}={HOST}:{ports[3 + i]}:{ports[6 + i]}\n"
                          for i in range(3))
        for node in range(3):
            directory = base / f"zookeeper-{node}"
            shutil.rmtree(directory, ignore_errors=True)
            (directory / "data").mkdir(parents=True)
            (directory / "data" / "myid").write_text(f"{node + 1}\n")
            config = directory / "zoo.cfg"
            config.write_text(
                "tickTime=2000\ninitLimit=10\nsyncLimit=5\n"
                f"dataDir={directory / 'data'}\nclientPort={self._client_ports[node]}\n"
                f"clientPortAddress={HOST}\nforceSync=yes\nmaxClientCnxns=0\n"
                "admin.enableServer=false\n4lw.commands.whitelist=srvr\n" + servers)
            self._logs[node] = directory / "zookeeper.log"
            self._argv[node] = [
                "java", "-Xmx512m", f"-Dzookeeper.log.dir={directory}", "-cp", CLASSPATH,
                "org.apache.zookeeper.server.quorum.QuorumPeerMain", str(config),
            ]
            self._processes.start(node, self._argv[node], self._logs[node])
        leader = await self.leader()
        client = await connected_client(self._hosts([leader]))
        try:
            for i in range(64):
                await kazoo_call(lambda i=i: client.create_async(f"/bench-{i}", b""))
            await kazoo_call(lambda: client.create_async("/probe", b""))
        finally:
            await close_client(client)

    async def stop(self) -> None:
        await self.end_failover()
        self._processes.stop_all()

    async def leader(self, exclude: int | None = None) -> int:
        async def attempt() -> int | None:
            for node in range(3):
                if node == exclude or not self._processes.running(node):
                    continue
                if "Mode: leader" in await four_letter(self._client_ports[node], b"srvr"):
                    return node
            return None
        return await until("zookeeper leader", attempt)

    async def writers(self, node: int, count: int) -> list[Writer]:
        sessions = [await connected_client(self._hosts([node]))
                    for _ in range(min(count, MAX_SESSIONS))]
        return [ZkWriter(sessions[i % len(sessions)], f"/bench-{i}",
                         owns_client=i < len(sessions)) for i in range(count)]

    async def prepare_failover(self, leader: int) -> None:
        survivors = [n for n in range(3) if n != leader]
        self._probe_client = await connected_client(self._hosts(survivors))

    async def end_failover(self) -> None:
        if self._probe_client is not None:
            await close_client(self._probe_client)
            self._probe_client = None

    async def probe(self, node: int, value: bytes) -> None:
        client = self._probe_client
        if client is None:
            raise BenchError("zookeeper probe without prepare_failover")
        await asyncio.wait_for(kazoo_call(lambda: client.set_async("/probe", value)),
                               PROBE_TIMEOUT_S)

    def kill(self, node: int) -> None:
        self._processes.kill(node)

    async def restart(self, node: int) -> None:
        self._processes.start(node, self._argv[node], self._logs[node])

    async def caught_up(self, node: int) -> bool:
        """A ZooKeeper follower serves (``srvr`` answers) only after syncing with the leader."""
        return "Mode: follower" in await four_letter(self._client_ports[node], b"srvr")
