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

import asyncio
import concurrent.futures
import logging
import random
import secrets
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping

from pykraft.config.server import parse_count
from pykraft.controller.migration_ops import (
    AbortMigration,
    BeginMigration,
    CompleteMigration,
    MigrationBatch,
    MigrationRequest,
    MigrationWritten,
    zk_migration_not_ready_reason,
)
from pykraft.image.image import MetadataDelta, MetadataImage
from pykraft.migration.driver import MigrationCommitError, MigrationDriver
from pykraft.migration.password_encoder import (
    CBC,
    DEFAULT_ITERATIONS,
    DEFAULT_KEY_FACTORY,
    DEFAULT_KEY_LENGTH,
)
from pykraft.migration.propagator import LegacyRequest, MigrationPropagator, PropagationError
from pykraft.migration.zk_config_writes import Passwords
from pykraft.migration.zk_migration_client import ZkMigrationClient
from pykraft.migration.zk_ops import ZkUnavailableError
from pykraft.records.metadata import MetadataRecord
from pykraft.runtime.backoff import ExponentialBackoff
from pykraft.runtime.controller_service import ControllerService
from pykraft.runtime.legacy_channel import LegacyChannel
from pykraft.runtime.node import RaftNode
from pykraft.runtime.settings import NodeSettings, ZkClientSettings
from pykraft.runtime.zk_session import ZkSession
from pykraft.runtime.zk_write_metrics import ZkWriteMetrics

log = logging.getLogger(__name__)

POLL_INITIAL_MS = 100
POLL_MAX_MS = 60_000
POLL_JITTER = 0.02
CLOSE_TIMEOUT_S = 10.0
"""How long :meth:`MigrationService.close` waits for the event in progress (a ZooKeeper call
blocked on a lost connection gives up with the session)."""

METADATA_COMMIT_MAX_WAIT_S = 300.0
"""Kafka's ``METADATA_COMMIT_MAX_WAIT_MS``: how long the driver waits for a load write."""

Event = Callable[[], None]


class MigrationService:
    """Owns the driver's worker thread; every method but the worker's is called from the
    event loop's thread."""

    def __init__(self, driver: MigrationDriver, *, connect: Callable[[], None] = lambda: None,
                 rng_seed: int | None = None) -> None:
        self.driver = driver
        self._connect = connect
        """Opens the ZooKeeper session, on the worker (it blocks); retried with the poll
        backoff until it succeeds, the driver's events waiting meanwhile."""
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

    def wake(self) -> None:
        """Poll at once, the backoff reset: ZooKeeper is back, so what waited for it is
        written now (Kafka's driver, blocked until ZooKeeper answers, goes on then), not at
        the next poll of a backoff that grew to a minute in dual write. Any thread."""
        with self._cond:
            self._backoff.reset()
            self._poll_at = 0.0
            self._cond.notify()

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

    def _connected(self) -> bool:
        while True:
            try:
                self._connect()
                return True
            except ZkUnavailableError as e:
                delay_s = self._backoff.next_delay_ms() / 1000
                log.warning("Could not connect to ZooKeeper (%s); retrying in %.1f s", e,
                            delay_s)
            with self._cond:
                if self._cond.wait_for(lambda: self._closed, delay_s):
                    return False

    def _run(self) -> None:
        if not self._connected():
            return
        self._backoff.reset()
        while (event := self._next()) is not None:
            try:
                event()
            except Exception:  # a bug or a ZooKeeper failure the driver does not expect
                log.exception("Unhandled error in the migration driver; retrying on the "
                              "next poll")
            if self.driver.wakeup:
                self.driver.wakeup = False
                self.wake()



class ControllerRecords:
    """The driver's :class:`~pykraft.migration.driver.MigrationRecords`: each write is
    submitted to the controller on the event loop and waited for, committed, from the
    driver's thread."""

    def __init__(self, service: ControllerService, loop: asyncio.AbstractEventLoop, *,
                 timeout_s: float = METADATA_COMMIT_MAX_WAIT_S) -> None:
        self._service = service
        self._loop = loop
        self._timeout_s = timeout_s

    def begin(self) -> None:
        self._write(BeginMigration())

    def accept_batch(self, records: tuple[MetadataRecord, ...]) -> None:
        self._write(MigrationBatch(records))
        log.info("Finished waiting for the metadata layer to commit %d migration records",
                 len(records))

    def complete(self) -> tuple[int, int]:
        written = self._write(CompleteMigration())
        return written.offset, written.epoch

    def abort(self) -> None:
        try:
            self._write(AbortMigration())
        except MigrationCommitError as e:
            log.warning("Could not abort the ZK migration's transaction (%s); the next active "
                        "controller aborts it", e)

    def _write(self, request: MigrationRequest) -> MigrationWritten:
        future = asyncio.run_coroutine_threadsafe(self._service.submit(request), self._loop)
        try:
            answer = future.result(self._timeout_s)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise MigrationCommitError(
                f"{type(request).__name__} did not commit within {self._timeout_s:.0f} s"
            ) from None
        except (concurrent.futures.CancelledError, RuntimeError) as e:
            raise MigrationCommitError(f"{type(request).__name__} was not written: {e}") from e
        if not isinstance(answer, MigrationWritten):
            raise MigrationCommitError(f"{type(request).__name__} refused: {answer}")
        if answer.warning is not None:
            log.warning("%s", answer.warning)
        return answer


class ChannelPropagator:
    """The driver's :class:`~pykraft.migration.driver.LegacyPropagator`: requests made on
    the driver's thread by Kafka's propagator, delivered by the legacy channel on the loop."""

    def __init__(self, propagator: MigrationPropagator, channel: LegacyChannel,
                 loop: asyncio.AbstractEventLoop) -> None:
        self._propagator = propagator
        self._channel = channel
        self._loop = loop

    def send_full(self, image: MetadataImage, zk_controller_epoch: int) -> None:
        self._deliver(image, zk_controller_epoch,
                      lambda: self._propagator.image_requests(image, zk_controller_epoch))

    def send_delta(self, previous: MetadataImage, image: MetadataImage,
                   zk_controller_epoch: int) -> None:
        self._deliver(image, zk_controller_epoch, lambda: self._propagator.delta_requests(
            previous, image, zk_controller_epoch))

    def _deliver(self, image: MetadataImage, zk_controller_epoch: int,
                 make: Callable[[], list[LegacyRequest]]) -> None:
        try:
            requests = make()
        except PropagationError as e:
            log.error("Not sending metadata RPCs to the ZooKeeper brokers: %s", e)
            return
        self._loop.call_soon_threadsafe(self._channel.deliver, image, requests,
                                        zk_controller_epoch)


def passwords_of(properties: Mapping[str, str]) -> Passwords | None:
    """``password.encoder.secret`` and its cipher settings (Kafka 3.9's names and defaults),
    or None without a secret: a password broker config in ZooKeeper then fails the load, as
    Kafka's does."""
    secret = properties.get("password.encoder.secret")
    if not secret:
        return None
    return Passwords.with_secret(
        secret, secrets.token_bytes,
        key_factory=properties.get("password.encoder.keyfactory.algorithm",
                                   DEFAULT_KEY_FACTORY),
        cipher=properties.get("password.encoder.cipher.algorithm", CBC),
        key_length=parse_count(properties.get("password.encoder.key.length",
                                              str(DEFAULT_KEY_LENGTH)),
                               "password.encoder.key.length"),
        iterations=parse_count(properties.get("password.encoder.iterations",
                                              str(DEFAULT_ITERATIONS)),
                               "password.encoder.iterations"))


class MigrationRuntime:
    """What a controller with ``zookeeper.metadata.migration.enable`` runs for the driver:
    the ZooKeeper session, the driver on its worker, the legacy channel, the ZooKeeper write
    metrics. Built and closed on the event loop; registered as a publisher of the
    controller's images."""

    def __init__(self, settings: NodeSettings, zookeeper: ZkClientSettings,
                 controller: ControllerService, node: RaftNode) -> None:
        loop = asyncio.get_running_loop()
        config = settings.controller
        passwords = passwords_of(config.properties)
        self.session = ZkSession(zookeeper, on_connected=self._zookeeper_connected)
        self.channel = LegacyChannel(settings.node_id, config.inter_broker_listener_name,
                                     tls=settings.legacy_tls, sasl=settings.legacy_sasl)
        self.metrics = ZkWriteMetrics()
        driver = MigrationDriver(
            settings.node_id,
            zk=ZkMigrationClient(self.session, clock=lambda: int(time.time() * 1000),
                                 passwords=passwords),
            records=ControllerRecords(controller, loop),
            propagator=ChannelPropagator(
                MigrationPropagator(settings.node_id, config.inter_broker_listener_name),
                self.channel, loop),
            quorum_readiness=lambda image: zk_migration_not_ready_reason(
                image, list(node.core.voters)),
            metrics=self.metrics, rng=random.Random(), clock=lambda: int(time.monotonic() * 1000),
            min_batch_size=config.zk_migration_min_batch_size,
            password_decoder=None if passwords is None else passwords.decode)
        self.service = MigrationService(driver, connect=self.session.start)
        controller.publishers.append(self.service)
        self.service.start()

    def _zookeeper_connected(self) -> None:
        self.service.wake()

    async def close(self) -> None:
        """Stop the driver (the event in progress finishes or gives up with its ZooKeeper
        call) and end the session, off the loop; then drop the brokers' queues."""
        await asyncio.to_thread(self._stop_driver)
        self.channel.close()

    def _stop_driver(self) -> None:
        self.service.close()
        self.session.close()
