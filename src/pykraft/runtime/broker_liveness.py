"""pykraft's fast failover (beyond Kafka): the active controller notices a broker's death
well before ``broker.session.timeout.ms``, without fencing a broker that is only slow.

A SIGKILLed process's kernel closes its sockets at once: its heartbeat connection to the
active controller ends, and connects to its listeners are refused (nothing listens). A
paused process keeps its connections and its kernel still accepts connects into the
backlog; a lossy link or a partition shows timeouts, not refusals; a slow disk changes
nothing on the network. So when the connection a broker heartbeats on closes (or its
heartbeats are two ``broker.heartbeat.interval.ms`` late: a connection whose end was not
seen), every listener it registered is probed with a bounded TCP connect, in a few rounds a
short while apart (the kernel may close the listening socket just after the connection); a
round in which all of them refuse is evidence that the process is gone, and the controller
core (:meth:`~pykraft.controller.QuorumController.broker_unreachable`) fences the
incarnation the probe was about. Anything else (accepted, timed out, reset, no route) is no
evidence: the session timeout still applies.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterable

from pykraft.image.cluster_image import BrokerRegistration
from pykraft.runtime.logfmt import event

log = logging.getLogger("pykraft.liveness")
#: Rounds of probes after a heartbeat connection closes, and the pause between two.
PROBE_ROUNDS = 3
PROBE_SPACING_S = 0.2
#: A probe that neither connects nor is refused within this long is no evidence.
CONNECT_TIMEOUT_S = 1.0


async def refuses(host: str, port: int, timeout_s: float = CONNECT_TIMEOUT_S) -> bool:
    """Whether a TCP connect to ``host:port`` is refused (an accepted one is closed at
    once; a timeout or any other failure is not a refusal)."""
    try:
        async with asyncio.timeout(timeout_s):
            _, writer = await asyncio.open_connection(host, port)
    except ConnectionRefusedError:
        return True
    except (OSError, TimeoutError):
        return False
    writer.close()
    return False


class BrokerLiveness:
    """Watches the brokers' heartbeats to the active controller; probes a broker whose
    heartbeat connection closed, or whose heartbeats are ``overdue_s`` late (once per
    silence), and tells ``report(broker_id, epoch)`` when its listeners all refused.
    ``registration`` looks a broker up in the controller's current image, ``unfenced``
    lists its unfenced brokers: one that never heartbeats to this controller (it died as
    the previous active controller did) is overdue from when the watch began."""

    def __init__(self, registration: Callable[[int], BrokerRegistration | None],
                 report: Callable[[int, int], bool], *,
                 unfenced: Callable[[], Iterable[int]] = tuple,
                 overdue_s: float | None = None,
                 rounds: int = PROBE_ROUNDS, spacing_s: float = PROBE_SPACING_S,
                 connect_timeout_s: float = CONNECT_TIMEOUT_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._registration = registration
        self._report = report
        self._unfenced = unfenced
        self._overdue_s = overdue_s
        self._rounds = rounds
        self._spacing_s = spacing_s
        self._connect_timeout_s = connect_timeout_s
        self._clock = clock
        self._heartbeating: dict[str, int] = {}
        """Client address of a live connection -> the broker that heartbeats on it."""
        self._last_heartbeat: dict[int, float] = {}
        self._probed_silence: set[int] = set()
        """Brokers probed since their last heartbeat for being overdue."""
        self._probing: dict[int, asyncio.Task[None]] = {}
        self._watchdog: asyncio.Task[None] | None = None

    def heartbeat_from(self, client_address: str, broker_id: int) -> None:
        self._heartbeating[client_address] = broker_id
        self._last_heartbeat[broker_id] = self._clock()
        self._probed_silence.discard(broker_id)
        if self._overdue_s is not None and self._watchdog is None:
            self._watchdog = asyncio.get_running_loop().create_task(
                self._watch(self._overdue_s))

    def closed(self, client_address: str) -> None:
        """A controller-listener connection closed: probe the broker heartbeating on it."""
        broker_id = self._heartbeating.pop(client_address, None)
        if broker_id is not None:
            self._start_probe(broker_id)

    async def settled(self) -> None:
        """Until every probe under way has ended (tests, and a caller that must know)."""
        await asyncio.gather(*self._probing.values(), return_exceptions=True)

    async def _watch(self, overdue_s: float) -> None:
        """Probe each broker whose heartbeats are overdue, once per silence."""
        while True:
            await asyncio.sleep(overdue_s / 2)
            now = self._clock()
            for broker_id in self._unfenced():
                self._last_heartbeat.setdefault(broker_id, now)
            for broker_id, at in list(self._last_heartbeat.items()):
                if now - at >= overdue_s and broker_id not in self._probed_silence:
                    self._probed_silence.add(broker_id)
                    self._start_probe(broker_id)

    def _start_probe(self, broker_id: int) -> None:
        registration = self._registration(broker_id)
        if registration is None or registration.fenced or not registration.listeners:
            self._last_heartbeat.pop(broker_id, None)  # watched again once it heartbeats
            return
        if broker_id in self._probing:
            return
        task = asyncio.get_running_loop().create_task(self._probe(registration))
        self._probing[broker_id] = task
        task.add_done_callback(lambda _: self._probing.pop(broker_id, None))

    async def _probe(self, broker: BrokerRegistration) -> None:
        endpoints = sorted({(listener.host, listener.port) for listener in broker.listeners})
        named = ",".join(f"{host}:{port}" for host, port in endpoints)
        for round_ in range(self._rounds):
            if round_:
                await asyncio.sleep(self._spacing_s)
            if all(await asyncio.gather(*(refuses(host, port, self._connect_timeout_s)
                                          for host, port in endpoints))):
                fenced = self._report(broker.broker_id, broker.epoch)
                event(log, "broker_listeners_refused", broker=broker.broker_id,
                      broker_epoch=broker.epoch, fenced=fenced, endpoints=named)
                return
        event(log, "broker_listeners_not_refused", broker=broker.broker_id,
              broker_epoch=broker.epoch, endpoints=named)

    def close(self) -> None:
        for task in [*self._probing.values(), self._watchdog]:
            if task is not None:
                task.cancel()
        self._probing.clear()
        self._watchdog = None
        self._heartbeating.clear()
        self._last_heartbeat.clear()
