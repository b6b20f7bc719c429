"""NATS JetStream (Debian ``nats-server``): one server, file storage, one replica, driven by
nats-py. Produce pipelines ``publish_async`` (every publish is acknowledged by the server
once stored); consume is a pull consumer without acks; latency uses an ordered push
consumer. JetStream's file store syncs to disk every 2 minutes by default (``sync_interval``),
so like Kafka's acks=1 an acknowledgement means written, not fsynced.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

import nats
from nats.aio.client import Client
from nats.aio.msg import Msg
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


def nats_version() -> str:
    out = subprocess.run(["nats-server", "--version"], capture_output=True, text=True,
                         timeout=30, check=True)
    return out.stdout.strip().split()[-1]


async def _ignore(_error: Exception) -> None:
    """nats-py prints a traceback per refused connection by default; ``until`` retries."""


class JetStream(StreamSystem):
    name = "jetstream"
    durability = "file storage, 1 replica, ack once stored (fsync every 2 min: its default)"

    def __init__(self) -> None:
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
        port = free_ports(1)[0]
        self._processes.start(0, ["nats-server", "-js", "-sd", str(directory), "-a", HOST,
                                  "-p", str(port)], directory / "server.log")

        async def connect() -> Client:
            self._processes.check_alive(0)
            return await nats.connect(f"nats://{HOST}:{port}", allow_reconnect=False,
                                      connect_timeout=1, error_cb=_ignore)
        self._client = await until("nats-server", connect)

    async def stop(self) -> None:
        if self._client is not None:
            await self._client.close()
        self._processes.stop_all()

    def server_pid(self) -> int | None:
        return self._processes.pid(0)

    async def _stream(self, stream: str) -> None:
        await self.js.add_stream(name=stream, subjects=[stream], storage=StorageType.FILE,
                                 num_replicas=1)

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
        return elapsed

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
