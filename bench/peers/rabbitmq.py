"""RabbitMQ (Debian ``rabbitmq-server``), driven by aio-pika over AMQP 0.9.1 with publisher
confirms. One node: a durable classic queue of persistent messages; a confirm comes once
RabbitMQ has written (and fsynced, in batches) it to its message store. Three nodes: each its
own node name, ports, data directory and the same Erlang cookie, nodes 2 and 3 joined to the
first with ``rabbitmqctl join_cluster``, and a stream queue (``x-queue-type=stream``) of
initial cluster size 3 declared through the first node (so led there, where the client is);
a confirm comes once a majority of the stream's replicas (2 of 3) wrote it, without fsync
(streams rely on replication). Produce keeps :data:`WINDOW` publishes in flight; consume
reads with a prefetch of :data:`PREFETCH` (automatic acks on a classic queue; a stream from
offset ``first`` needs manual ones, sent every :data:`ACK_EVERY`); latency uses a consumer
callback. Erlang distribution listens on 127.0.0.1 only (``inet_dist_use_interface``).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import secrets
import shutil
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

import aio_pika
from aio_pika.abc import (
    AbstractChannel,
    AbstractConnection,
    AbstractIncomingMessage,
    AbstractQueue,
)

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

WINDOW = 1000
PREFETCH = 2000
ACK_EVERY = 500
START_TIMEOUT_S = 120.0
CTL_TIMEOUT_S = 120.0
EPMD_PORT = 4369
SBIN = "/usr/lib/rabbitmq/bin"
# aio-pika logs every refused connection while the node boots.
logging.getLogger("aiormq").setLevel(logging.CRITICAL)
logging.getLogger("aio_pika").setLevel(logging.CRITICAL)


def rabbitmq_version() -> str:
    out = subprocess.run(["dpkg-query", "-W", "-f=${Version}", "rabbitmq-server"],
                         capture_output=True, text=True, timeout=30, check=True)
    return out.stdout.strip() or "unknown"


def _epmd_running() -> bool:
    try:
        socket.create_connection((HOST, EPMD_PORT), 1).close()
    except OSError:
        return False
    return True


class RabbitMq(StreamSystem):
    name = "rabbitmq"

    def __init__(self, replicas: int = 1) -> None:
        self.replicas = replicas
        self.durability = ("durable queue, persistent messages, publisher confirms"
                           if replicas == 1 else
                           f"stream queue on {replicas} nodes, publisher confirms once 2 of "
                           f"{replicas} wrote it (no fsync: streams rely on replication)")
        self.version = rabbitmq_version()
        self._processes = ProcessGroup()
        self._connection: AbstractConnection | None = None
        self._channel: AbstractChannel | None = None
        self._started_epmd = False
        self._names: list[str] = []
        self._home = Path()

    @property
    def channel(self) -> AbstractChannel:
        if self._channel is None:
            raise BenchError("rabbitmq is not started")
        return self._channel

    async def start(self, base: Path) -> None:
        directory = base / "rabbitmq"
        shutil.rmtree(directory, ignore_errors=True)
        directory.mkdir(parents=True)
        self._started_epmd = not _epmd_running()
        cookie = secrets.token_hex(16)
        ports = free_ports(2 * self.replicas)
        amqp = ports[:self.replicas]
        for node in range(self.replicas):
            self._start_node(node, directory / f"n{node}", amqp[node], ports[self.replicas + node],
                             cookie)
        self._home = directory / "n0"
        connections = await asyncio.gather(*(self._connect(n, amqp[n])
                                             for n in range(self.replicas)))
        for extra in connections[1:]:
            await extra.close()
        self._connection = connections[0]
        for node in range(1, self.replicas):
            await self._ctl(node, "stop_app")
            await self._ctl(node, "join_cluster", self._names[0])
            await self._ctl(node, "start_app")
        if self.replicas > 1:
            status = json.loads(await self._ctl(0, "cluster_status", "--formatter", "json"))
            if sorted(status.get("running_nodes", [])) != sorted(self._names):
                raise BenchError(f"rabbitmq: cluster of {status.get('running_nodes')}, "
                                 f"expected {self._names}")
        self._channel = await self._connection.channel(publisher_confirms=True)
        await self._channel.set_qos(prefetch_count=PREFETCH)

    def _start_node(self, node: int, directory: Path, amqp: int, dist: int,
                    cookie: str) -> None:
        """Start one node; the Erlang cookie is read from ``$HOME/.erlang.cookie``."""
        directory.mkdir()
        (directory / "enabled_plugins").write_text("[].\n")
        cookie_file = directory / ".erlang.cookie"
        cookie_file.write_text(cookie)
        cookie_file.chmod(0o400)
        name = f"bench{amqp}@localhost"
        self._names.append(name)
        env = {"RABBITMQ_NODENAME": name, "RABBITMQ_NODE_IP_ADDRESS": HOST,
               "RABBITMQ_NODE_PORT": str(amqp), "RABBITMQ_DIST_PORT": str(dist),
               "RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS": "-kernel inet_dist_use_interface "
                                                      "{127,0,0,1}",
               "ERL_EPMD_ADDRESS": HOST,
               "RABBITMQ_MNESIA_BASE": str(directory / "mnesia"),
               "RABBITMQ_LOG_BASE": str(directory / "log"),
               "RABBITMQ_ENABLED_PLUGINS_FILE": str(directory / "enabled_plugins"),
               "RABBITMQ_CONFIG_FILE": str(directory / "rabbitmq"), "HOME": str(directory)}
        self._processes.start(node, [f"{SBIN}/rabbitmq-server"], directory / "server.log",
                              cwd=directory, env=env)

    async def _connect(self, node: int, port: int) -> AbstractConnection:
        async def connect() -> AbstractConnection:
            self._processes.check_alive(node)
            return await aio_pika.connect(f"amqp://guest:guest@{HOST}:{port}/", timeout=2)
        return await until(f"rabbitmq node {node}", connect, timeout_s=START_TIMEOUT_S,
                           interval_s=0.5)

    async def _ctl(self, node: int, *args: str) -> str:
        """``rabbitmqctl`` against ``node`` (with the cluster's cookie); its output."""
        argv = [f"{SBIN}/rabbitmqctl", "-n", self._names[node], *args]
        done = await asyncio.to_thread(
            subprocess.run, argv, capture_output=True, text=True, timeout=CTL_TIMEOUT_S,
            check=False, env={**os.environ, "HOME": str(self._home)})
        if done.returncode != 0:
            raise BenchError(f"rabbitmq: {' '.join(argv[1:])} failed ({done.returncode}): "
                             f"{(done.stderr or done.stdout)[-1000:]}")
        return done.stdout

    async def _declare(self, stream: str) -> AbstractQueue:
        if self.replicas == 1:
            return await self.channel.declare_queue(stream, durable=True)
        return await self.channel.declare_queue(stream, durable=True, arguments={
            "x-queue-type": "stream", "x-initial-cluster-size": self.replicas})

    async def stop(self) -> None:
        if self._connection is not None:
            await self._connection.close()
        self._processes.stop_all()
        if self._started_epmd:  # the Erlang port mapper the node daemonized
            subprocess.run(["epmd", "-kill"], capture_output=True, timeout=30, check=False)

    async def _publish(self, stream: str, body: bytes) -> None:
        await self.channel.default_exchange.publish(
            aio_pika.Message(body, delivery_mode=aio_pika.DeliveryMode.PERSISTENT),
            routing_key=stream)

    async def produce(self, stream: str, count: int, size: int) -> float:
        await self._declare(stream)
        body = payload(size)
        started = time.monotonic()
        for first in range(0, count, WINDOW):
            await asyncio.gather(*(self._publish(stream, body)
                                   for _ in range(min(WINDOW, count - first))))
        elapsed = time.monotonic() - started
        if self.replicas > 1:
            await self._check_replicated(stream)
        return elapsed

    async def _check_replicated(self, stream: str) -> None:
        """A replicated figure counts only if the stream has a member on every node, all
        online (a stream on fewer nodes would confirm after fewer copies than claimed)."""
        listed = json.loads(await self._ctl(0, "list_queues", "name", "members", "online",
                                            "--formatter", "json"))
        queue: dict[str, Any] = next((q for q in listed if q.get("name") == stream), {})
        if sorted(queue.get("members", [])) != sorted(self._names) \
                or sorted(queue.get("online", [])) != sorted(self._names):
            raise BenchError(f"rabbitmq: stream {stream} is {queue}, expected members and "
                             f"online {self._names}")

    async def consume(self, stream: str, count: int) -> float:
        queue = await self._declare(stream)
        started = time.monotonic()
        got = 0
        streamed = self.replicas > 1
        options = {"arguments": {"x-stream-offset": "first"}} if streamed else {}
        async with queue.iterator(no_ack=not streamed, **options) as messages:
            async for message in messages:
                got += 1
                if streamed and (got % ACK_EVERY == 0 or got == count):
                    await message.ack(multiple=True)
                if got == count:
                    break
                if time.monotonic() - started > PHASE_TIMEOUT_S:
                    raise BenchError(f"rabbitmq: consumed {got} of {count}")
        return time.monotonic() - started

    async def latencies(self, stream: str, rate: int, seconds: float, size: int) -> list[float]:
        queue = await self._declare(stream)
        measured: list[float] = []
        streamed = self.replicas > 1

        async def received(message: AbstractIncomingMessage) -> None:
            measured.append(latency_ms(message.body))
            if streamed:
                await message.ack()

        tag = await queue.consume(received, no_ack=not streamed)
        pending: set[asyncio.Task[None]] = set()

        def send() -> None:
            task = asyncio.create_task(self._publish(stream, stamped(size)))
            pending.add(task)
            task.add_done_callback(pending.discard)
        try:
            sent = await paced(rate, seconds, send)
            await asyncio.gather(*pending)
            await wait_count("rabbitmq latency", lambda: len(measured), sent)
        finally:
            await queue.cancel(tag)
        return measured
