"""pykraft's fast failover (beyond Kafka): the active controller notices a broker's death
well before ``broker.session.timeout.ms``, without fencing a broker that is only slow.

A SIGKILLed process's kernel closes its sockets at once: its heartbeat connection to the
active controller ends, and connects to its listeners are refused (nothing listens). A
paused process keeps its connections and its kernel still accepts connects into the
backlog; a lossy link or a partition shows timeouts, not refusals; a slow disk changes
nothing on the network. So when the connection a broker heartbeats on closes, every
listener it registered is probed with a bounded TCP connect, in a few rounds a short while
apart (the kernel may close the listening socket just after the connection); a round in
which all of them refuse is evidence that the process is gone, and the controller core
(:meth:`~pykraft.controller.QuorumController.broker_unreachable`) fences the incarnation
the probe was about. Anything else (accepted, timed out, reset, no route) is no evidence:
the session timeout still applies.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

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
    """Watches the connections brokers heartbeat on; probes a broker whose connection
    closed and tells ``report(broker_id, epoch)`` when its listeners all refused.
    ``registration`` looks a broker up in the controller's current image."""

    def __init__(self, registration: Callable[[int], BrokerRegistration | None],
                 report: Callable[[int, int], bool], *, rounds: int = PROBE_ROUNDS,
                 spacing_s: float = PROBE_SPACING_S,
                 connect_timeout_s: float = CONNECT_TIMEOUT_S) -> None:
        self._registration = registration
        self._report = report
        self._rounds = rounds
        self._spacing_s = spacing_s
        self._connect_timeout_s = connect_timeout_s
        self._heartbeating: dict[str, int] = {}
        """Client address of a live connection -> the broker that heartbeats on it."""
        self._probes: set[asyncio.Task[None]] = set()

    def heartbeat_from(self, client_address: str, broker_id: int) -> None:
        self._heartbeating[client_address] = broker_id

    def closed(self, client_address: str) -> None:
        """A controller-listener connection closed: probe the broker heartbeating on it."""
        broker_id = self._heartbeating.pop(client_address, None)
        if broker_id is None:
            return
        registration = self._registration(broker_id)
        if registration is None or registration.fenced or not registration.listeners:
            return
        task = asyncio.get_running_loop().create_task(self._probe(registration))
        self._probes.add(task)
        task.add_done_callback(self._probes.discard)

    async def settled(self) -> None:
        """Until every probe under way has ended (tests, and a caller that must know)."""
        await asyncio.gather(*self._probes, return_exceptions=True)

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
        for task in self._probes:
            task.cancel()
        self._probes.clear()
        self._heartbeating.clear()
