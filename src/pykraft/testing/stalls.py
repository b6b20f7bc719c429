"""How long a node stops answering while it serves one expensive request, and what that
cost the cluster: the tools of ``bench/stalls.py`` and the stall tests.

:class:`StallProbe` runs in its own process (so neither the client that builds a huge
request nor its GIL delays it) and sends ApiVersions over its own connection to one node
every :data:`PROBE_INTERVAL_S`; the longest round trip, a request still unanswered at the
end counted up to then, is the node's longest event-loop stall as a client sees it.
:func:`fences_of` counts the times the controller fenced a broker, read from a node's
metadata log on disk (complete batches only, so a live log may be read).
:func:`latest_offsets` and :func:`serves_all` tell when a broker serves every partition of a
new topic (it creates their logs after its image shows them).
"""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing
import time
from dataclasses import dataclass
from multiprocessing.synchronize import Event
from pathlib import Path
from types import TracebackType

from pykraft import __version__
from pykraft.log.partition_reads import LATEST_TIMESTAMP
from pykraft.messages.kafka.list_offsets_request import (
    ListOffsetsPartition,
    ListOffsetsRequest,
    ListOffsetsTopic,
)
from pykraft.messages.kafka.list_offsets_response import ListOffsetsResponse
from pykraft.protocol.api_versions import ApiVersionsRequest, listener_ranges
from pykraft.protocol.apis import Listener
from pykraft.protocol.errors import ErrorCode
from pykraft.records.batch import RecordBatch, complete_batches
from pykraft.records.metadata import decode_metadata_record
from pykraft.records.metadata_records import BrokerRegistrationChangeRecord, FenceBrokerRecord
from pykraft.runtime.kafka_client import CONNECTION_ERRORS, ClientConnection
from pykraft.storage.bootstrap import METADATA_LOG_DIR_NAME

PROBE_INTERVAL_S = 0.05
#: How long the probe process may take to start and get its first answer.
PROBE_START_S = 60.0
_STOP_POLL_S = 0.01


@dataclass(frozen=True, slots=True)
class ProbeResult:
    """The worst ApiVersions round trip (s), how many were answered, and the first
    connection error (the probe stops at it)."""

    worst_s: float
    answered: int
    error: str | None


class StallProbe:
    """A context manager: probe ``host:port`` (a node of ``listener``) from the moment the
    first answer came until :meth:`stop` (or the end of the ``with``)."""

    def __init__(self, host: str, port: int, listener: Listener) -> None:
        context = multiprocessing.get_context("spawn")
        self._ready = context.Event()
        self._stop = context.Event()
        self._results: multiprocessing.SimpleQueue[ProbeResult] = context.SimpleQueue()
        self._process = context.Process(
            target=_probe_main, daemon=True,
            args=(host, port, listener, self._ready, self._stop, self._results))
        self.result: ProbeResult | None = None

    def __enter__(self) -> StallProbe:
        self._process.start()
        if not self._ready.wait(PROBE_START_S):
            self._process.kill()
            raise TimeoutError(f"the stall probe got no first answer in {PROBE_START_S:.0f} s")
        return self

    def stop(self) -> ProbeResult:
        """End probing; the result (also kept in :attr:`result`)."""
        if self.result is None:
            self._stop.set()
            self.result = self._results.get()
            self._process.join(PROBE_START_S)
        return self.result

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 traceback: TracebackType | None) -> None:
        if self._process.is_alive() and self.result is None:
            self.stop()
        if self._process.is_alive():
            self._process.kill()


def _probe_main(host: str, port: int, listener: Listener, ready: Event, stop: Event,
                results: multiprocessing.SimpleQueue[ProbeResult]) -> None:
    results.put(asyncio.run(_probe(host, port, listener, ready, stop)))


async def _probe(host: str, port: int, listener: Listener, ready: Event,
                 stop: Event) -> ProbeResult:
    connection = await ClientConnection.open(host, port, client_id="stall-probe",
                                             ours=listener_ranges(listener))
    worst = 0.0
    answered = 0
    sent_at: float | None = None
    error: str | None = None

    async def ask() -> None:
        nonlocal worst, answered, sent_at, error
        request = ApiVersionsRequest(client_software_name="pykraft-stall-probe",
                                     client_software_version=__version__)
        while True:
            sent_at = time.monotonic()
            try:
                await connection.request(request)
            except CONNECTION_ERRORS as exc:
                error = f"{type(exc).__name__}: {exc}"
                return
            worst = max(worst, time.monotonic() - sent_at)
            sent_at = None
            answered += 1
            ready.set()
            await asyncio.sleep(PROBE_INTERVAL_S)

    task = asyncio.create_task(ask())
    try:
        while not stop.is_set() and not task.done():
            await asyncio.sleep(_STOP_POLL_S)
        if sent_at is not None:  # unanswered at the end: it stalled at least this long
            worst = max(worst, time.monotonic() - sent_at)
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        connection.close()
    ready.set()  # a probe that failed before its first answer must not leave __enter__ waiting
    return ProbeResult(worst, answered, error)


def fences_of(data_dir: Path, broker_id: int) -> int:
    """How many times the metadata log under ``data_dir`` fenced ``broker_id`` (a lapsed
    session or a controlled shutdown; not its registration, which starts fenced)."""
    fenced = 0
    for segment in sorted((data_dir / METADATA_LOG_DIR_NAME).glob("*.log")):
        data = segment.read_bytes()
        headers, _ = complete_batches(data)
        position = 0
        for header in headers:
            batch = RecordBatch(header, data[position:position + header.size], position)
            position += header.size
            if batch.is_control:
                continue
            for record in batch.records():
                message = decode_metadata_record(record.value or b"").message
                if (isinstance(message, FenceBrokerRecord) and message.id == broker_id) or (
                        isinstance(message, BrokerRegistrationChangeRecord)
                        and message.broker_id == broker_id and message.fenced == 1):
                    fenced += 1
    return fenced



def latest_offsets(topic: str, partitions: int) -> ListOffsetsRequest:
    """A consumer's ListOffsets (latest) of partitions 0 to ``partitions`` - 1 of ``topic``."""
    return ListOffsetsRequest(
        replica_id=-1, isolation_level=0, timeout_ms=0,
        topics=(ListOffsetsTopic(name=topic, partitions=tuple(
            ListOffsetsPartition(partition_index=p, current_leader_epoch=-1,
                                 timestamp=LATEST_TIMESTAMP)
            for p in range(partitions))),))


def serves_all(answer: ListOffsetsResponse) -> bool:
    """Whether every partition asked by :func:`latest_offsets` was answered: only a leader
    hosting the partition does (one whose log is still being created answers
    NOT_LEADER_OR_FOLLOWER)."""
    return all(p.error_code == ErrorCode.NONE for t in answer.topics for p in t.partitions)
