"""Group commit: at most one fsync round in flight, each covering every append before it.

The core asks for a flush after appends (``Ready.flush``). While a round is running in the
worker thread, further requests only set a flag; when the round ends, one new round covers
everything appended meanwhile. Under load this turns N appends into far fewer fsyncs, and
the event loop never blocks on the disk.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
from collections.abc import Callable

from pykraft.runtime.disk_log import DiskRaftLog, FlushJob, run_flush

log = logging.getLogger(__name__)


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
        self._pending = False
        self._idle = asyncio.Event()
        self._idle.set()
        self.rounds = 0

    @property
    def busy(self) -> bool:
        return self._running is not None

    def request(self) -> None:
        """Ask for everything appended so far to become durable."""
        if self._running is not None:
            self._pending = True
            return
        self._start()

    async def wait_idle(self) -> None:
        """Until no round is running or pending (used at shutdown and in tests)."""
        await self._idle.wait()

    def _start(self) -> None:
        job = self._log.prepare_flush()
        if job is None:
            self._idle.set()
            return
        self._idle.clear()
        loop = asyncio.get_running_loop()
        running = loop.run_in_executor(self._executor, self._fsync, job)
        self._running = running
        running.add_done_callback(lambda done: self._finished(job, done))

    def _finished(self, job: FlushJob, done: asyncio.Future[None]) -> None:
        self._running = None
        if done.cancelled():
            self._idle.set()
            return
        error = done.exception()
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
