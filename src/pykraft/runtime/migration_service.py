"""The migration driver in a controller process (``zookeeper.metadata.migration.enable``).

:class:`~pykraft.migration.driver.MigrationDriver` is deterministic and its ports block (a
ZooKeeper write waits for the connection, a load batch for its commit), so it runs on a
worker thread of its own, one event at a time, as Kafka's driver runs on its event-queue
thread: the leader changes and committed images the controller publishes on the event
loop are queued to it, and polls are re-armed with Kafka's backoff (100 ms doubling to
60 s, 2 % jitter; at once after a transition). The load's writes go back to the loop as
controller submissions and wait there for their commit, at most Kafka's
``METADATA_COMMIT_MAX_WAIT_MS``.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable

from pykraft.image.image import MetadataDelta, MetadataImage
from pykraft.migration.driver import MigrationDriver
from pykraft.runtime.backoff import ExponentialBackoff

log = logging.getLogger(__name__)

POLL_INITIAL_MS = 100
POLL_MAX_MS = 60_000
POLL_JITTER = 0.02
CLOSE_TIMEOUT_S = 10.0
"""How long :meth:`MigrationService.close` waits for the event in progress (a ZooKeeper call
blocked on a lost connection gives up with the session)."""

Event = Callable[[], None]


class MigrationService:
    """Owns the driver's worker thread; every method but the worker's is called from the
    event loop's thread."""

    def __init__(self, driver: MigrationDriver, *, rng_seed: int | None = None) -> None:
        self.driver = driver
        self._events: deque[Event] = deque()
        self._cond = threading.Condition()
        self._closed = False
        self._poll_at = 0.0
        self._backoff = ExponentialBackoff(POLL_INITIAL_MS, POLL_MAX_MS, POLL_JITTER)
        if rng_seed is not None:
            self._backoff.rng.seed(rng_seed)
        self._thread = threading.Thread(target=self._run, name="migration-driver",
                                        daemon=True)

    def start(self) -> None:
        self._thread.start()

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify()
        if self._thread.is_alive():
            self._thread.join(CLOSE_TIMEOUT_S)

    # -- inputs, from the event loop ----------------------------------------------------

    def leader_changed(self, leader_id: int | None, epoch: int) -> None:
        self._enqueue(lambda: self.driver.on_leader_change(leader_id, epoch))

    def published(self, delta: MetadataDelta, image: MetadataImage, *,
                  is_snapshot: bool) -> None:
        self._enqueue(lambda: self.driver.on_metadata(delta, image, is_snapshot=is_snapshot))

    # -- the worker ---------------------------------------------------------------------

    def _enqueue(self, event: Event) -> None:
        with self._cond:
            self._events.append(event)
            self._cond.notify()

    def _next(self) -> Event | None:
        """The next event: queued ones first, else the poll when it is due."""
        with self._cond:
            while not self._closed:
                if self._events:
                    return self._events.popleft()
                wait_s = self._poll_at - time.monotonic()
                if wait_s <= 0:
                    self._poll_at = time.monotonic() + self._backoff.next_delay_ms() / 1000
                    return self.driver.poll
                self._cond.wait(wait_s)
            return None

    def _run(self) -> None:
        while (event := self._next()) is not None:
            try:
                event()
            except Exception:  # a bug or a ZooKeeper failure the driver does not expect
                log.exception("Unhandled error in the migration driver; retrying on the "
                              "next poll")
            if self.driver.wakeup:
                self.driver.wakeup = False
                with self._cond:
                    self._backoff.reset()
                    self._poll_at = 0.0

