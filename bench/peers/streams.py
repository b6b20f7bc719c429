"""What bench/dataplane.py needs from a message system, and the latency stamp they share.

A :class:`StreamSystem` runs one server, or a cluster of three replicating each stream, on
127.0.0.1 and offers three
bounded measurements on a named stream (a Kafka topic of one partition, a JetStream stream,
a RabbitMQ queue): produce ``count`` messages of ``size`` bytes and return once every one is
acknowledged; consume ``count`` messages from the beginning; send at a fixed rate and return
each message's produce->consume latency. Every call is bounded by :data:`PHASE_TIMEOUT_S`.
"""

from __future__ import annotations

import asyncio
import struct
import time
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable
from pathlib import Path

from peers.base import BenchError

#: Bound on one produce, consume or latency phase (a slow system fails, it does not hang).
PHASE_TIMEOUT_S = 120.0
_STAMP = struct.Struct(">q")


def payload(size: int) -> bytes:
    """A message body of ``size`` bytes (incompressible enough: no system compresses here)."""
    return bytes(i % 251 for i in range(size))


def stamped(size: int) -> bytes:
    """A ``size``-byte body starting with the monotonic send time in ns."""
    return _STAMP.pack(time.monotonic_ns()) + b"x" * max(0, size - _STAMP.size)


def latency_ms(body: bytes) -> float:
    """Milliseconds since the :func:`stamped` body was made (same process, same clock)."""
    sent_ns: int = _STAMP.unpack_from(body)[0]
    return (time.monotonic_ns() - sent_ns) / 1e6


class StreamSystem(ABC):
    name: str
    version: str
    durability: str
    #: Settings measured one after the other on the same running system (e.g. acks=all
    #: then acks=1); "" when there is only one.
    modes: tuple[str, ...] = ("",)

    def select(self, mode: str) -> None:  # noqa: B027 (optional hook)
        """Use ``mode`` (one of :attr:`modes`) for the next phases."""

    @abstractmethod
    async def start(self, base: Path) -> None: ...

    @abstractmethod
    async def stop(self) -> None: ...

    @abstractmethod
    async def produce(self, stream: str, count: int, size: int) -> float:
        """Seconds until all ``count`` messages are acknowledged (creates ``stream``)."""

    @abstractmethod
    async def consume(self, stream: str, count: int) -> float:
        """Seconds to receive ``count`` messages of ``stream`` from its beginning."""

    @abstractmethod
    async def latencies(self, stream: str, rate: int, seconds: float, size: int) -> list[float]:
        """Send ``rate`` stamped messages/s for ``seconds`` while consuming them; the
        produce->consume latency of each message received, in ms."""

    def server_pid(self) -> int | None:
        """The server process to profile (None: not profiled)."""
        return None


async def paced(rate: int, seconds: float, send: Callable[[], Awaitable[object] | None]) -> int:
    """Call ``send`` ``rate`` times a second for ``seconds`` (on schedule, not back to back:
    a late send does not shift the next ones); returns how many were sent."""
    total = int(rate * seconds)
    started = time.monotonic()
    for i in range(total):
        delay = started + i / rate - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)
        result = send()
        if result is not None:
            await result
    return total


async def wait_count(what: str, done: Callable[[], int], count: int) -> None:
    """Wait (bounded by :data:`PHASE_TIMEOUT_S`) until ``done()`` reaches ``count``."""
    deadline = time.monotonic() + PHASE_TIMEOUT_S
    while done() < count:
        if time.monotonic() > deadline:
            raise BenchError(f"{what}: {done()} of {count} after {PHASE_TIMEOUT_S:.0f} s")
        await asyncio.sleep(0.01)
