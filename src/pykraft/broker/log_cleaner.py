"""The broker's log cleaner task (Kafka's ``LogCleaner`` and its ``CleanerThread``'s loop):
a pass over the compacted logs (:meth:`ReplicaManager.run_cleaner`), then another at once
if it cleaned something, else a pause of ``log.cleaner.backoff.ms``. The settings follow
the dynamic broker configs (``configs --alter --entity-type brokers [--entity-default]``):
a change is validated as Kafka's ``validateReconfiguration`` and restarts the loop, so a
new backoff or throttle rate holds at once; a refused one is logged and the settings in
force stay (Kafka's ``DynamicBrokerConfig`` does the same with a record it cannot apply).

Interface::

    cleaner = LogCleanerTask(replicas, static_properties, clock_ms)
    task = loop.create_task(cleaner.run())
    cleaner.apply_configs(image.configs)   # a metadata publisher
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Mapping

from pykraft.broker.replica_manager import ReplicaManager
from pykraft.errors import ConfigError, StorageIOError
from pykraft.image.configs import ConfigurationsImage
from pykraft.log.cleaner_config import CleanerConfig, check_reconfiguration

log = logging.getLogger("pykraft.log.cleaner")


class LogCleanerTask:
    """Runs the cleaner's passes and applies its dynamic settings."""

    def __init__(self, replicas: ReplicaManager, static: Mapping[str, str], broker_id: int,
                 clock_ms: Callable[[], int]) -> None:
        self._replicas = replicas
        self._static = dict(static)
        self._broker_id = str(broker_id)
        self._clock_ms = clock_ms
        self._restart = asyncio.Event()
        replicas.cleaner.started = True

    @property
    def config(self) -> CleanerConfig:
        return self._replicas.cleaner.config

    def apply_configs(self, configs: ConfigurationsImage) -> None:
        """The settings of the properties file under the cluster default's and this
        broker's dynamic configs; a change restarts the loop."""
        try:
            new = CleanerConfig.from_layers(self._static, configs.broker(""),
                                            configs.broker(self._broker_id))
            if new == self.config:
                return
            check_reconfiguration(self.config, new)
        except ConfigError as exc:
            log.error("log cleaner reconfiguration refused: %s", exc)
            return
        log.info("log cleaner reconfigured: %s", new)
        self._replicas.cleaner.reconfigure(new)
        self._restart.set()

    async def run(self) -> None:
        """Passes until cancelled; an unexpected failure ends the loop (a dead cleaner
        thread, DeadThreadCount) until a reconfiguration restarts it."""
        while True:
            self._restart.clear()
            try:
                await self._passes()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("the log cleaner failed")
                self._replicas.cleaner.dead_threads = 1
                await self._restart.wait()
                self._replicas.cleaner.dead_threads = 0

    async def _passes(self) -> None:
        while not self._restart.is_set():
            try:
                cleaned = await self._replicas.run_cleaner(self._clock_ms())
            except StorageIOError:
                cleaned = 0  # the directory is failed and its logs closed: go on
            if cleaned:
                continue
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._restart.wait(), self.config.backoff_ms / 1000)
