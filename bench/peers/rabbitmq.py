"""RabbitMQ (Debian ``rabbitmq-server``): one node, a durable classic queue, persistent
messages, publisher confirms, driven by aio-pika. Produce keeps :data:`WINDOW` publishes in
flight (each confirmed by the broker); consume reads with automatic acks and a prefetch of
:data:`PREFETCH`; latency uses a consumer callback. A confirm for a persistent message comes
once RabbitMQ has written (and fsynced, in batches) it to its message store.
"""

from __future__ import annotations

import asyncio
import logging
import shutil
import socket
import subprocess
import time
from pathlib import Path

import aio_pika
from aio_pika.abc import AbstractChannel, AbstractConnection, AbstractIncomingMessage

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
START_TIMEOUT_S = 120.0
EPMD_PORT = 4369
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
    durability = "durable queue, persistent messages, publisher confirms"

    def __init__(self) -> None:
        self.version = rabbitmq_version()
        self._processes = ProcessGroup()
        self._connection: AbstractConnection | None = None
        self._channel: AbstractChannel | None = None
        self._started_epmd = False

    @property
    def channel(self) -> AbstractChannel:
        if self._channel is None:
            raise BenchError("rabbitmq is not started")
        return self._channel

    async def start(self, base: Path) -> None:
        directory = base / "rabbitmq"
        shutil.rmtree(directory, ignore_errors=True)
        directory.mkdir(parents=True)
        amqp, dist = free_ports(2)
        (directory / "enabled_plugins").write_text("[].\n")
        self._started_epmd = not _epmd_running()
        env = {"RABBITMQ_NODENAME": f"bench{amqp}@localhost", "RABBITMQ_NODE_IP_ADDRESS": HOST,
               "RABBITMQ_NODE_PORT": str(amqp), "RABBITMQ_DIST_PORT": str(dist),
               "RABBITMQ_MNESIA_BASE": str(directory / "mnesia"),
               "RABBITMQ_LOG_BASE": str(directory / "log"),
               "RABBITMQ_ENABLED_PLUGINS_FILE": str(directory / "enabled_plugins"),
               "RABBITMQ_CONFIG_FILE": str(directory / "rabbitmq"), "HOME": str(directory)}
        self._processes.start(0, ["/usr/lib/rabbitmq/bin/rabbitmq-server"],
                              directory / "server.log", cwd=directory, env=env)

        async def connect() -> AbstractConnection:
            self._processes.check_alive(0)
            return await aio_pika.connect(f"amqp://guest:guest@{HOST}:{amqp}/", timeout=2)
        self._connection = await until("rabbitmq", connect, timeout_s=START_TIMEOUT_S,
                                       interval_s=0.5)
        self._channel = await self._connection.channel(publisher_confirms=True)
        await self._channel.set_qos(prefetch_count=PREFETCH)

    async def stop(self) -> None:
        if self._connection is not None:
            await self._connection.close()
        self._processes.stop_all()
        if self._started_epmd:  # the Erlang port mapper the node daemonized
            subprocess.run(["epmd", "-kill"], capture_output=True, timeout=30, check=False)

    def server_pid(self) -> int | None:
        return self._processes.pid(0)

    async def _publish(self, stream: str, body: bytes) -> None:
        await self.channel.default_exchange.publish(
            aio_pika.Message(body, delivery_mode=aio_pika.DeliveryMode.PERSISTENT),
            routing_key=stream)

    async def produce(self, stream: str, count: int, size: int) -> float:
        await self.channel.declare_queue(stream, durable=True)
        body = payload(size)
        started = time.monotonic()
        for first in range(0, count, WINDOW):
            await asyncio.gather(*(self._publish(stream, body)
                                   for _ in range(min(WINDOW, count - first))))
        return time.monotonic() - started

    async def consume(self, stream: str, count: int) -> float:
        queue = await self.channel.declare_queue(stream, durable=True)
        started = time.monotonic()
        got = 0
        async with queue.iterator(no_ack=True) as messages:
            async for _ in messages:
                got += 1
                if got == count:
                    break
                if time.monotonic() - started > PHASE_TIMEOUT_S:
                    raise BenchError(f"rabbitmq: consumed {got} of {count}")
        return time.monotonic() - started

    async def latencies(self, stream: str, rate: int, seconds: float, size: int) -> list[float]:
        queue = await self.channel.declare_queue(stream, durable=True)
        measured: list[float] = []

        async def received(message: AbstractIncomingMessage) -> None:
            measured.append(latency_ms(message.body))

        tag = await queue.consume(received, no_ack=True)
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
