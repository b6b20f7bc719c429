"""Registration and heartbeats (Kafka's BrokerLifecycleManager), on the broker's clock.

A broker registers with a fresh incarnation id per process start, then heartbeats every
``broker.heartbeat.interval.ms`` with the offset its metadata image reached (at start-up, as
Kafka's, at once and every 10 ms until first unfenced): the controller unfences it once that
offset passes its registration record, and fences it when heartbeats
stop for ``broker.session.timeout.ms``. A heartbeat refused for a stale epoch (the controller
lost our registration, e.g. after an unregister) sends the broker back to registering. An
answer saying an unfenced broker is fenced again (its session lapsed) changes nothing here,
as in Kafka: the next heartbeat, caught up, gets it unfenced.

Controlled shutdown (Kafka's PENDING_CONTROLLED_SHUTDOWN): :meth:`controlled_shutdown`
heartbeats at once with ``WantShutDown``, again 50 ms after the first answer, then at the
usual interval, until the controller answers ``ShouldShutDown`` (it moved our leaderships
away and the other brokers saw it) or the caller's bound passes. Meanwhile the broker keeps
serving, so clients and followers move to the new leaders before it goes. A broker that was
never unfenced has nothing to hand over and skips it, as Kafka's does.

A failed log directory (:meth:`BrokerLifecycle.report_offline_dir`, KIP-858) is named in
every heartbeat's ``OfflineLogDirs`` from then on, the next heartbeat sent at once; if no
heartbeat naming it is answered within ``log.dir.failure.timeout.ms``, the broker shuts
down (``give_up``), as Kafka's ``OfflineDirBrokerFailureEvent``.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass

from pykraft.broker.metadata_listener import BrokerMetadataListener
from pykraft.config.server import Endpoint
from pykraft.errors import NetworkError
from pykraft.features import SUPPORTED_FEATURES
from pykraft.messages.kafka.broker_heartbeat_request import BrokerHeartbeatRequest
from pykraft.messages.kafka.broker_heartbeat_response import BrokerHeartbeatResponse
from pykraft.messages.kafka.broker_registration_request import (
    BrokerRegistrationRequest,
    Feature,
    Listener,
)
from pykraft.messages.kafka.broker_registration_response import BrokerRegistrationResponse
from pykraft.protocol.errors import ErrorCode
from pykraft.runtime.controller_channel import ControllerChannel
from pykraft.runtime.logfmt import event
from pykraft.runtime.waits import wait_set
from pykraft.security.session import SecurityProtocol

log = logging.getLogger("pykraft.broker")
FIRST_SHUTDOWN_RETRY_S = 0.05  # Kafka's BrokerLifecycleManager: sooner after the first answer
#: Kafka's BrokerLifecycleManager while STARTING: a heartbeat right after registering, then
#: every 10 ms until caught up (and, logs loaded, unfenced), not after the 2 s interval
STARTING_HEARTBEAT_S = 0.01


@dataclass(frozen=True, slots=True)
class BrokerIdentity:
    broker_id: int
    cluster_id: str
    endpoints: tuple[tuple[Endpoint, SecurityProtocol], ...]
    """Every advertised client listener, with its protocol."""
    rack: str | None
    log_dirs: tuple[uuid.UUID, ...]
    heartbeat_interval_ms: int
    previous_broker_epoch: int = -1
    """The epoch the last process shut down cleanly with (its log directories' clean
    shutdown markers), -1 if it did not: the controller takes a broker back from an
    unclean shutdown out of the eligible leader replicas (KIP-966)."""


class BrokerLifecycle:
    """Keeps this broker registered and its session alive; see the module docstring."""

    def __init__(self, identity: BrokerIdentity, channel: ControllerChannel,
                 metadata: BrokerMetadataListener,
                 give_up: Callable[[], None] = lambda: None) -> None:
        self._identity = identity
        self._channel = channel
        self._metadata = metadata
        self.incarnation_id = uuid.uuid4()
        self.epoch = -1
        self.fenced = True
        self.first_unfenced = asyncio.Event()
        self.shutdown_granted = asyncio.Event()
        self._wants_shut_down = False
        self._pause_s: float | None = None  # the next pause, if not the interval
        self._asked_once = False
        self._wake = asyncio.Event()
        self._offline_dirs: dict[uuid.UUID, bool] = {}  # failed dir -> heartbeat answered
        self._give_up = give_up

    def report_offline_dir(self, dir_id: uuid.UUID, timeout_ms: int) -> None:
        """Name the failed directory ``dir_id`` in the heartbeats, the next one now; shut
        down (``give_up``) unless one naming it is answered within ``timeout_ms``."""
        self._offline_dirs.setdefault(dir_id, False)
        if self.epoch >= 0:
            self._wake.set()
        asyncio.get_running_loop().call_later(timeout_ms / 1000, self._check_reported, dir_id)

    def _check_reported(self, dir_id: uuid.UUID) -> None:
        if not self._offline_dirs.get(dir_id, False):
            event(log, "offline_dir_not_reported", level=logging.ERROR,
                  message="Shutting down because couldn't communicate offline log dir "
                          f"{dir_id} with controllers")
            self._give_up()

    def registration(self) -> BrokerRegistrationRequest:
        ident = self._identity
        return BrokerRegistrationRequest(
            broker_id=ident.broker_id, cluster_id=ident.cluster_id,
            incarnation_id=self.incarnation_id,
            listeners=tuple(Listener(name=e.name, host=e.host, port=e.port,
                                     security_protocol=protocol)
                            for e, protocol in ident.endpoints),
            features=tuple(Feature(name=name, min_supported_version=low,
                                   max_supported_version=high)
                           for name, (low, high) in sorted(SUPPORTED_FEATURES.items())),
            rack=ident.rack, log_dirs=ident.log_dirs,
            previous_broker_epoch=ident.previous_broker_epoch)

    def heartbeat(self) -> BrokerHeartbeatRequest:
        return BrokerHeartbeatRequest(
            broker_id=self._identity.broker_id, broker_epoch=self.epoch,
            current_metadata_offset=max(0, self._metadata.committed_offset),
            want_fence=False, want_shut_down=self._wants_shut_down,
            offline_log_dirs=tuple(self._offline_dirs))

    async def run(self) -> None:
        """Register, then heartbeat, until cancelled."""
        interval_s = self._identity.heartbeat_interval_ms / 1000
        while True:
            try:
                if self.epoch < 0:
                    await self._register()
                else:
                    await self._heartbeat()
            except NetworkError as exc:
                event(log, "controller_unreachable", level=logging.DEBUG, error=str(exc))
            pause, self._pause_s = self._pause_s, None
            await wait_set(self._wake, interval_s if pause is None else pause)  # the cadence
            self._wake.clear()

    async def controlled_shutdown(self, timeout_s: float) -> bool:
        """Ask the controller to move our leaderships away and wait (at most ``timeout_s``)
        until it tells us to shut down; False if it did not in time. :meth:`run` must be
        running."""
        if not self.first_unfenced.is_set():
            return True
        event(log, "controlled_shutdown_started", broker_epoch=self.epoch)
        self._wants_shut_down = True
        self._wake.set()
        if not await wait_set(self.shutdown_granted, timeout_s):
            event(log, "controlled_shutdown_timed_out", level=logging.ERROR,
                  waited_ms=int(timeout_s * 1000))
            return False
        return True

    async def _register(self) -> None:
        response = await self._channel.send(self.registration())
        assert isinstance(response, BrokerRegistrationResponse)
        if response.error_code != ErrorCode.NONE:
            # INFO as Kafka's BrokerLifecycleManager: a broker restarted within its old
            # session's timeout is refused (DUPLICATE_BROKER_REGISTRATION) and retries
            event(log, "registration_refused", error=ErrorCode(response.error_code).name)
            return
        self.epoch = response.broker_epoch
        self._pause_s = 0.0  # Kafka: "Immediately send a heartbeat"
        event(log, "registered", broker_epoch=self.epoch,
              incarnation_id=str(self.incarnation_id))

    async def _heartbeat(self) -> None:
        request = self.heartbeat()
        response = await self._channel.send(request)
        assert isinstance(response, BrokerHeartbeatResponse)
        if response.error_code in (ErrorCode.STALE_BROKER_EPOCH,
                                   ErrorCode.BROKER_ID_NOT_REGISTERED):
            event(log, "registration_lost", error=ErrorCode(response.error_code).name)
            self.epoch = -1
            self.fenced = True
            return
        if response.error_code != ErrorCode.NONE:
            return
        for dir_id in request.offline_log_dirs:
            self._offline_dirs[dir_id] = True
        if response.is_fenced != self.fenced:
            self.fenced = response.is_fenced
            event(log, "fenced" if self.fenced else "unfenced", broker_epoch=self.epoch)
        if not self.fenced:
            self.first_unfenced.set()
        elif not self.first_unfenced.is_set():
            self._pause_s = STARTING_HEARTBEAT_S
        if not request.want_shut_down:  # an answer to a heartbeat sent before we asked
            return
        if response.should_shut_down:
            event(log, "controlled_shutdown_granted", broker_epoch=self.epoch)
            self.shutdown_granted.set()
        elif not self._asked_once:
            self._asked_once = True
            self._pause_s = FIRST_SHUTDOWN_RETRY_S
