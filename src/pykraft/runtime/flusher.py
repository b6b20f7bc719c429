"""Group commit: at most one fsync round in flight, each covering every append before it.

The core asks for a flush after appends (``Ready.flush``). While a round is running in the
worker thread, further requests only set a flag; when the round ends, one new round covers
everything appended meanwhile. Under load this turns N appends into far fewer fsyncs, and
the event loop never blocks on the disk.

A round that cannot open a file because the process is out of descriptors (EMFILE, ENFILE:
too many connections) is not a failed fsync: nothing was lost, so the same round is retried
with a growing backoff while the node goes on serving, and commits resume once descriptors
are free. Any other failure is fatal, as Kafka halts on a failed flush.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import errno
import logging
from collections.abc import Callable

from pykraft.runtime.backoff import ExponentialBackoff
from pykraft.runtime.disk_log import DiskRaftLog, FlushJob, run_flush
from pykraft.runtime.logfmt import event
from pykraft.runtime.waits import wait_set

log = logging.getLogger(__name__)
#: Errors that say the process lacks descriptors, not that the disk failed.
OUT_OF_DESCRIPTORS = frozenset({errno.EMFILE, errno.ENFILE})
RETRY_BACKOFF_MAX_MS = 1000


class GroupCommitFlusher:
    """Runs :func:`run_flush` off the loop and reports each new flushed offset."""

    def __init__(
        self,
        disk_log: DiskRaftLog,
        on_flushed: Callable[[int], None],
        on_error: Callable[[BaseException], None],
        *,
        fsync: Callable[[FlushJob], None] = run_flush,
        executor: concurrent.futures.Executor | None = None,
    ) -> None:
        self._log = disk_log
        self._on_flushed = on_flushed
        self._on_error = on_error
        self._fsync = fsync
        self._executor = executor
        self._running: asyncio.Future[None] | None = None
        self._retry: asyncio.TimerHandle | None = None
        self._backoff = ExponentialBackoff(maximum_ms=RETRY_BACKOFF_MAX_MS)
        self._pending = False
        self._idle = asyncio.Event()
        self._idle.set()
        self.rounds = 0

    @property
    def busy(self) -> bool:
        return self._running is not None or self._retry is not None

    def request(self) -> None:
        """Ask for everything appended so far to become durable."""
        if self.busy:
            self._pending = True
            return
        self._start()

    async def wait_idle(self, timeout_s: float | None = None) -> bool:
        """Whether no round is running or pending within ``timeout_s`` (None: no limit);
        bounded at shutdown, where a round may wait for descriptors that never come."""
        return await wait_set(self._idle, timeout_s)

    def _start(self) -> None:
        job = self._log.prepare_flush()
        if job is None:
            self._idle.set()
            return
        self._idle.clear()
        self._run(job)

    def _run(self, job: FlushJob) -> None:
        self._retry = None
        running = asyncio.get_running_loop().run_in_executor(self._executor, self._fsync, job)
        self._running = running
        running.add_done_callback(lambda done: self._finished(job, done))

    def _finished(self, job: FlushJob, done: asyncio.Future[None]) -> None:
        self._running = None
        if done.cancelled():
            self._idle.set()
            return
        error = done.exception()
        if isinstance(error, OSError) and error.errno in OUT_OF_DESCRIPTORS:
            delay_ms = self._backoff.next_delay_ms()
            event(log, "flush_delayed", level=logging.ERROR if self._backoff.failures == 1
                  else logging.DEBUG, error=str(error), retry_ms=delay_ms)
            self._retry = asyncio.get_running_loop().call_later(delay_ms / 1000, self._run, job)
            return
        self._backoff.reset()
        if error is not None:
            log.error("fsync failed: %s", error)
            self._idle.set()
            self._on_error(error)
            return
        self.rounds += 1
        offset = self._log.complete_flush(job)
        self._on_flushed(offset)
        if self._pending:
            self._pending = False
            self._start()
        else:
            self._idle.set()
