"""etcd (Debian ``etcd-server``): 3 members, writes through the gRPC gateway's JSON API.

Client choice: ``POST /v3/kv/put`` over aiohttp keep-alive connections. python-etcd3 is
unmaintained (pins an old grpcio/protobuf), while the gateway is part of every etcd server
and aiohttp is the fastest asyncio HTTP client we have; one connection per writer, like the
other systems. etcd fsyncs its WAL before acknowledging (its default; no flag weakens it).
"""

from __future__ import annotations

import asyncio
import base64
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import aiohttp

from peers.base import HOST, BenchError, ProcessGroup, System, Writer, until
from pykraft.tools.local_cluster import free_ports

PROBE_TIMEOUT_S = 3.0


def etcd_version() -> str:
    out = subprocess.run(["etcd", "--version"], capture_output=True, text=True,
                         timeout=30, check=True)
    return out.stdout.splitlines()[0].removeprefix("etcd Version: ").strip()


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


async def _post(session: aiohttp.ClientSession, url: str, body: dict[str, Any]) -> Any:
    try:
        async with session.post(url, data=json.dumps(body)) as response:
            payload = await response.json(content_type=None)
            if response.status != 200 or "error" in payload:
                raise BenchError(f"etcd {url}: HTTP {response.status} {payload}")
            return payload
    except aiohttp.ClientError as exc:
        raise BenchError(f"etcd {url}: {type(exc).__name__}: {exc}") from exc


class EtcdWriter(Writer):
    def __init__(self, url: str, key: bytes) -> None:
        self._session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=1))
        self._url = url
        self._key = _b64(key)

    async def write(self, value: bytes) -> None:
        await _post(self._session, self._url, {"key": self._key, "value": _b64(value)})

    async def close(self) -> None:
        await self._session.close()


class Etcd(System):
    name = "etcd"
    durability = "WAL fsync on every member before the ack (etcd default)"

    def __init__(self) -> None:
        self.version = etcd_version()
        self._processes = ProcessGroup()
        self._argv: dict[int, list[str]] = {}
        self._logs: dict[int, Path] = {}
        self._client_ports: list[int] = []
        self._session: aiohttp.ClientSession | None = None

    def _url(self, node: int, path: str) -> str:
        return f"http://{HOST}:{self._client_ports[node]}{path}"

    async def start(self, base: Path) -> None:
        ports = free_ports(6)
        self._client_ports, peer_ports = ports[:3], ports[3:]
        cluster = ",".join(f"n{i}=http://{HOST}:{peer_ports[i]}" for i in range(3))
        for node in range(3):
            directory = base / f"etcd-{node}"
            shutil.rmtree(directory, ignore_errors=True)
            directory.mkdir(parents=True)
            self._logs[node] = directory / "etcd.log"
            self._argv[node] = [
                "etcd", "--name", f"n{node}", "--data-dir", str(directory / "data"),
                "--listen-client-urls", self._url(node, ""),
                "--advertise-client-urls", self._url(node, ""),
                "--listen-peer-urls", f"http://{HOST}:{peer_ports[node]}",
                "--initial-advertise-peer-urls", f"http://{HOST}:{peer_ports[node]}",
                "--initial-cluster", cluster, "--initial-cluster-token", "bench",
                "--initial-cluster-state", "new", "--logger", "zap", "--log-level", "warn",
            ]
            self._processes.start(node, self._argv[node], self._logs[node])
        self._session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0))
        await self.leader()

    async def stop(self) -> None:
        if self._session is not None:
            await self._session.close()
        self._processes.stop_all()

    @property
    def session(self) -> aiohttp.ClientSession:
        if self._session is None:
            raise BenchError("etcd is not started")
        return self._session

    async def leader(self, exclude: int | None = None) -> int:
        async def attempt() -> int | None:
            members: dict[int, int] = {}
            leader_id = None
            for node in range(3):
                if node == exclude or not self._processes.running(node):
                    continue
                status = await asyncio.wait_for(
                    _post(self.session, self._url(node, "/v3/maintenance/status"), {}), 1.0)
                members[int(status["header"]["member_id"])] = node
                leader_id = int(status.get("leader", 0))
            if leader_id not in members:
                return None
            leader = members[leader_id]
            await asyncio.wait_for(self.probe(leader, b"ready"), PROBE_TIMEOUT_S)
            return leader
        return await until("etcd leader", attempt)

    async def writers(self, node: int, count: int) -> list[Writer]:
        url = self._url(node, "/v3/kv/put")
        return [EtcdWriter(url, f"bench-{i}".encode()) for i in range(count)]

    async def probe(self, node: int, value: bytes) -> None:
        body = {"key": _b64(b"probe"), "value": _b64(value)}
        await asyncio.wait_for(_post(self.session, self._url(node, "/v3/kv/put"), body),
                               PROBE_TIMEOUT_S)

    def kill(self, node: int) -> None:
        self._processes.kill(node)

    async def restart(self, node: int) -> None:
        self._processes.start(node, self._argv[node], self._logs[node])

    async def caught_up(self, node: int) -> bool:
        leader = await self.leader(exclude=node)
        url = "/v3/maintenance/status"
        theirs = await asyncio.wait_for(_post(self.session, self._url(leader, url), {}), 1.0)
        ours = await asyncio.wait_for(_post(self.session, self._url(node, url), {}), 1.0)
        return int(ours.get("raftIndex", 0)) >= int(theirs.get("raftIndex", 0)) > 0
