"""NATS JetStream (Debian ``nats-server``), driven by nats-py: one server with streams of one
replica, or 3 servers clustered by routes (each its own store directory and ports) with
streams of 3 replicas (JetStream's Raft: a publish is acknowledged once a majority, 2 of 3,
stored it), file storage either way. Produce pipelines ``publish_async`` (every publish is
acknowledged by the server once stored); consume is a pull consumer without acks; latency
uses an ordered push consumer. The client connects to the first server, which routes to the
stream's leader wherever it is. JetStream's file store syncs to disk every 2 minutes by
default (``sync_interval``; 2.9 cannot change it), so like Kafka's an acknowledgement means
written, not fsynced.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

import nats
from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.errors import Error as NatsError
from nats.js import JetStreamContext
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy, StorageType

from peers.base import HOST, BenchError, ProcessGroup, until
from peers.streams import (
    PHASE_TIMEOUT_S,
    StreamSystem,
    latency_ms,
    paced,
    payload,
    stamped,
    wait_count,
)
from pykraft.tools.local_cluster import free_ports

PENDING = 4000
CLUSTER = "bench"


def nats_version() -> str:
    out = subprocess.run(["nats-server", "--version"], capture_output=True, text=True,
                         timeout=30, check=True)
    return out.stdout.strip().split()[-1]


async def _ignore(_error: Exception) -> None:
    """nats-py prints a traceback per refused connection by default; ``until`` retries."""


def cluster_config(node: int, directory: Path, ports: list[int], routes: list[int]) -> str:
    """nats-server configuration of ``node`` of a 3-server JetStream cluster on HOST."""
    peers = ", ".join(f'"nats://{HOST}:{port}"' for port in routes)
    return (f'server_name: "n{node}"\nlisten: "{HOST}:{ports[node]}"\n'
            f'jetstream {{ store_dir: "{directory / f"store-{node}"}" }}\n'
            f'cluster {{ name: "{CLUSTER}", listen: "{HOST}:{routes[node]}", '
            f"routes: [{peers}] }}\n")


class JetStream(StreamSystem):
    name = "jetstream"

    def __init__(self, replicas: int = 1) -> None:
        self.replicas = replicas
        self.durability = (f"file storage, {replicas} replica{'s' if replicas > 1 else ''}, "
                           f"ack once stored{' on 2 of 3' if replicas > 1 else ''} (fsync "
                           "every 2 min: its default)")
        self.version = nats_version()
        self._processes = ProcessGroup()
        self._client: Client | None = None

    @property
    def js(self) -> JetStreamContext:
        if self._client is None:
            raise BenchError("jetstream is not started")
        return self._client.jetstream(publish_async_max_pending=PENDING)

    async def start(self, base: Path) -> None:
        directory = base / "jetstream"
        shutil.rmtree(directory, ignore_errors=True)
        directory.mkdir(parents=True)
        if self.replicas == 1:
            port = free_ports(1)[0]
            self._processes.start(0, ["nats-server", "-js", "-sd", str(directory), "-a", HOST,
                                      "-p", str(port)], directory / "server.log")
        else:
            ports = free_ports(2 * self.replicas)
            clients, routes = ports[:self.replicas], ports[self.replicas:]
            port = clients[0]
            for node in range(self.replicas):
                config = directory / f"n{node}.conf"
                config.write_text(cluster_config(node, directory, clients, routes))
                self._processes.start(node, ["nats-server", "-c", str(config)],
                                      directory / f"n{node}.log")

        async def connect() -> Client:
            for node in range(self.replicas):
                self._processes.check_alive(node)
            return await nats.connect(f"nats://{HOST}:{port}", allow_reconnect=False,
                                      connect_timeout=1, error_cb=_ignore)
        self._client = await until("nats-server", connect)
        if self.replicas > 1:  # streams need a meta leader (elected once routes are up)
            await until("jetstream cluster", self._meta_ready, interval_s=0.2)

    async def stop(self) -> None:
        if self._client is not None:
            await self._client.close()
        self._processes.stop_all()

    async def _meta_ready(self) -> bool | None:
        """Whether the cluster can create a replicated stream now (None: not yet)."""
        try:
            await self._stream("ready")
        except NatsError as exc:
            raise BenchError(f"jetstream: {exc}") from exc
        return True

    async def _stream(self, stream: str) -> None:
        await self.js.add_stream(name=stream, subjects=[stream], storage=StorageType.FILE,
                                 num_replicas=self.replicas)

    async def produce(self, stream: str, count: int, size: int) -> float:
        await self._stream(stream)
        body = payload(size)
        js = self.js
        started = time.monotonic()
        acks = [await js.publish_async(stream, body) for _ in range(count)]
        await js.publish_async_completed()
        elapsed = time.monotonic() - started
        failed = [ack.exception() for ack in acks if ack.exception() is not None]
        if failed:
            raise BenchError(f"jetstream: {len(failed)} publishes failed: {failed[0]}")
        if self.replicas > 1:
            await self._check_replicated(stream)
        return elapsed

    async def _check_replicated(self, stream: str) -> None:
        """A replicated figure counts only if the stream has a leader and every other
        server as a current replica (fewer would acknowledge after fewer copies)."""
        cluster = (await self.js.stream_info(stream)).cluster
        current = [] if cluster is None else [p.name for p in cluster.replicas or []
                                               if p.current and not p.offline]
        if cluster is None or cluster.leader is None or len(current) != self.replicas - 1:
            raise BenchError(f"jetstream: stream {stream} cluster {cluster}, expected a "
                             f"leader and {self.replicas - 1} current replicas")

    async def consume(self, stream: str, count: int) -> float:
        started = time.monotonic()
        sub = await self.js.pull_subscribe(stream, config=ConsumerConfig(
            ack_policy=AckPolicy.NONE, deliver_policy=DeliverPolicy.ALL))
        got = 0
        try:
            while got < count:
                if time.monotonic() - started > PHASE_TIMEOUT_S:
                    raise BenchError(f"jetstream: consumed {got} of {count}")
                got += len(await sub.fetch(batch=min(10_000, count - got), timeout=5))
            return time.monotonic() - started
        finally:
            await sub.unsubscribe()

    async def latencies(self, stream: str, rate: int, seconds: float, size: int) -> list[float]:
        await self._stream(stream)
        measured: list[float] = []

        async def received(msg: Msg) -> None:
            measured.append(latency_ms(msg.data))

        js = self.js
        sub = await js.subscribe(stream, cb=received, ordered_consumer=True,
                                 deliver_policy=DeliverPolicy.NEW)
        try:
            sent = await paced(rate, seconds, lambda: js.publish_async(stream, stamped(size)))
            await js.publish_async_completed()
            await wait_count("jetstream latency", lambda: len(measured), sent)
        finally:
            await sub.unsubscribe()
        return measured
