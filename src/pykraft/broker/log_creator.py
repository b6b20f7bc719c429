"""New partitions' logs created on a worker thread, a chunk at a time (issue 24, defect 5).

Creating a log costs three fsyncs (its directory after the first segment,
``partition.metadata`` and its directory): done inside ``ReplicaManager.apply_image``, a
CreateTopics of 1,000 partitions held the broker's event loop for 13-20 s, heartbeats
included, and got the broker fenced. Kafka creates logs on its metadata publisher
thread while its request threads serve. Here the replica manager keeps the partitions an
image adds as awaiting their logs; this driver creates up to :data:`CHUNK` of them at a
time on its one worker thread (fsync releases the GIL, and the interpreter hands the loop
the GIL every switch interval), and the loop hosts each chunk in one short turn. One
worker: the chunks are created in order, never two logs of one partition at once.

The first :data:`INLINE_LOGS` new logs of a loop turn are still created by the replica
manager as it applies the image: a small topic's partitions are then served as soon as
Metadata shows them (as before; Kafka's clients retry NOT_LEADER_OR_FOLLOWER, but a hop to
the worker is not worth it for a few fsyncs).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Callable

from pykraft.broker.replica_manager import CreatedLogs, ReplicaManager
from pykraft.log.log_manager import create_logs
from pykraft.storage.partition_log import PartitionLog

#: Logs created per worker round: the loop turn hosting them stays short (milliseconds).
CHUNK = 32
#: New logs the replica manager creates on the loop per loop turn (three fsyncs each).
INLINE_LOGS = 4


class LogCreator:
    """Set as the replica manager's ``defer_logs`` (:meth:`wake`), then :meth:`run` as a
    task; :meth:`close` before the replica manager shuts down. ``worker`` (one thread, the
    caller's) runs the file work."""

    def __init__(self, replicas: ReplicaManager, now_ms: Callable[[], int],
                 hosted: Callable[[], None], worker: concurrent.futures.Executor) -> None:
        self._replicas = replicas
        self._now_ms = now_ms
        self._hosted = hosted
        self._wanted = asyncio.Event()
        self._executor = worker
        self._in_flight: concurrent.futures.Future[CreatedLogs] | None = None
        replicas.inline_logs = INLINE_LOGS

    def wake(self) -> None:
        """Partitions await their logs."""
        self._wanted.set()

    async def run(self) -> None:
        """Create the awaited logs chunk by chunk, hosting each chunk as it is done and
        then telling ``hosted`` (the replica fetchers follow the new partitions)."""
        while True:
            await self._wanted.wait()
            self._wanted.clear()
            self._replicas.inline_logs = INLINE_LOGS  # a later loop turn than the image's
            while planned := self._replicas.logs_to_create(CHUNK):
                self._in_flight = self._executor.submit(create_logs, planned, self._now_ms())
                created = await asyncio.wrap_future(self._in_flight)
                self._in_flight = None
                self._replicas.logs_created(created, self._now_ms())
                self._hosted()

    def close(self) -> None:
        """Wait for the chunk that was in flight when :meth:`run` was cancelled and hand its
        logs to the log manager, which closes them cleanly on shutdown."""
        in_flight, self._in_flight = self._in_flight, None
        if in_flight is None or in_flight.cancelled():
            return
        for planned, outcome in in_flight.result():
            if isinstance(outcome, PartitionLog):
                self._replicas.logs.adopt(planned.tp, outcome)
