"""Fast failover in the replication simulation: the controller's
:class:`~pykraft.controller.broker_liveness.LivenessWatch` (the core the asyncio controller
drives) fed by simulated heartbeat connections and simulated TCP probes.

What the world shows the controller, as the kernel and TCP would:

* a live broker heartbeats every HEARTBEAT_INTERVAL_MS on one connection, whose messages
  arrive in order over the broker's link to the controller; a message the link loses breaks
  the connection (the broker opens a new one, and its end reaches the controller unless
  that is lost too);
* a crashed broker's kernel closes its connection (its end travels the same link, or is
  lost) and refuses connects to its listeners;
* a paused broker sends nothing but keeps its connection, and its kernel accepts connects;
* a connect across a blocked or lossy link, or slower than CONNECT_TIMEOUT_MS, times out;
* a slow disk slows the broker's work, not its network.

The timings are Kafka's (2 s heartbeats, 9 s sessions, 1 s connect timeout) scaled to the
simulation's 200 ms session.
"""

from __future__ import annotations

import functools
import random
from collections.abc import Callable
from typing import Protocol

from pykraft.controller.broker_liveness import (
    OVERDUE_HEARTBEATS,
    PROBE_ROUNDS,
    Endpoint,
    Incarnation,
    LivenessWatch,
    Probe,
    ProbeAgain,
    ProbeOutcome,
    Report,
)
from pykraft.sim.replica_controller import SimController

CONTROLLER = -5  # the controller's node on the network
HEARTBEAT_INTERVAL_MS = 40
OVERDUE_MS = OVERDUE_HEARTBEATS * HEARTBEAT_INTERVAL_MS
CONNECT_TIMEOUT_MS = 25
PROBE_SPACING_MS = 10
LISTENER_PORTS = (9092, 9093)
WatchFactory = Callable[..., LivenessWatch]


class LivenessWorld(Protocol):
    """What the watch's driver needs from the simulated cluster."""

    controller: SimController
    rng: random.Random
    paused: set[int]

    @property
    def now_ms(self) -> int: ...

    def schedule(self, delay_ms: int, label: str, action: Callable[[], None]) -> None: ...

    def link_delay(self, source: int, destination: int) -> int | None: ...

    def listening(self, broker_id: int) -> bool: ...

    def runs(self, broker_id: int, incarnation: int) -> bool: ...

    def log(self, text: str) -> None: ...


class SimLiveness:
    """The active controller's watch of the brokers, and the brokers' heartbeat
    connections to it."""

    def __init__(self, world: LivenessWorld, brokers: tuple[int, ...],
                 watch_factory: WatchFactory = LivenessWatch) -> None:
        self._world = world
        self.endpoints: dict[int, tuple[Endpoint, ...]] = {
            b: tuple((f"broker{b}", port)
                     for port in LISTENER_PORTS[:world.rng.randint(1, len(LISTENER_PORTS))])
            for b in brokers}
        """Each broker's listeners, one or two per run."""
        controller = world.controller
        self.watch = watch_factory(self._lookup,
                                   unfenced=lambda: sorted(controller.broker_epochs),
                                   overdue_ms=OVERDUE_MS, rounds=PROBE_ROUNDS,
                                   spacing_ms=PROBE_SPACING_MS)
        self._connection: dict[int, str] = {}
        """A broker's current heartbeat connection."""
        self._arrival: dict[str, int] = {}
        """When the last message of a connection arrives: TCP delivers in order."""
        self._opened = 0

    def start(self) -> None:
        """The controller checks for overdue heartbeats every half of OVERDUE_MS."""
        def check() -> None:
            for probe in self.watch.overdue(self._world.now_ms):
                self._probe(probe)
            self._world.schedule(OVERDUE_MS // 2, "controller: overdue heartbeats?", check)
        self._world.schedule(OVERDUE_MS // 2, "controller: overdue heartbeats?", check)

    def broker_started(self, broker_id: int, incarnation: int) -> None:
        self._open(broker_id)

        def beat() -> None:
            if not self._world.runs(broker_id, incarnation):
                return  # that process is gone
            if broker_id not in self._world.paused:
                self._heartbeat(broker_id)
            self._world.schedule(HEARTBEAT_INTERVAL_MS, f"heartbeat timer {broker_id}", beat)
        beat()

    def broker_crashed(self, broker_id: int) -> None:
        """The kernel closes the dead process's connection."""
        self._close(broker_id)

    # ------------------------------------------------------------------ connections

    def _open(self, broker_id: int) -> None:
        self._opened += 1
        self._connection[broker_id] = f"{broker_id}/{self._opened}"

    def _send(self, broker_id: int, label: str, arrive: Callable[[str], None]) -> bool:
        """One message on the broker's connection; False if the link lost it."""
        connection = self._connection[broker_id]
        delay = self._world.link_delay(broker_id, CONTROLLER)
        if delay is None:
            return False
        now = self._world.now_ms
        at = max(now + delay, self._arrival.get(connection, 0))
        self._arrival[connection] = at
        self._world.schedule(at - now, f"{broker_id}->controller {label}",
                             lambda: arrive(connection))
        return True

    def _heartbeat(self, broker_id: int) -> None:
        if not self._send(broker_id, "heartbeat", lambda connection: self.watch.heartbeat(
                self._world.now_ms, connection, broker_id)):
            self._close(broker_id)  # the broker gives up on a broken connection
            self._open(broker_id)

    def _close(self, broker_id: int) -> None:
        def closed(connection: str) -> None:
            self._arrival.pop(connection, None)
            if (probe := self.watch.closed(connection)) is not None:
                self._probe(probe)
        self._send(broker_id, "connection closed", closed)

    # ------------------------------------------------------------------ probes

    def _lookup(self, broker_id: int) -> Incarnation | None:
        epoch = self._world.controller.broker_epochs.get(broker_id)
        return None if epoch is None else Incarnation(broker_id, epoch,
                                                      self.endpoints[broker_id])

    def _probe(self, probe: Probe) -> None:
        target = probe.target
        outcomes: dict[int, ProbeOutcome] = {}

        def seen(index: int, outcome: ProbeOutcome) -> None:
            outcomes[index] = outcome
            if len(outcomes) == len(target.endpoints):
                self._judge(probe, [outcomes[i] for i in range(len(outcomes))])
        for index in range(len(target.endpoints)):
            self._connect(target.broker_id, functools.partial(seen, index))

    def _connect(self, broker_id: int, seen: Callable[[ProbeOutcome], None]) -> None:
        world = self._world
        there, back = world.link_delay(CONTROLLER, broker_id), world.link_delay(broker_id,
                                                                                CONTROLLER)
        if there is None or back is None or there + back > CONNECT_TIMEOUT_MS:
            world.schedule(CONNECT_TIMEOUT_MS, f"controller probe of {broker_id} times out",
                           lambda: seen(ProbeOutcome.TIMED_OUT))
            return

        def arrive() -> None:
            outcome = ProbeOutcome.ACCEPTED if world.listening(broker_id) else (
                ProbeOutcome.REFUSED)
            world.schedule(back, f"{broker_id}->controller probe {outcome.value}",
                           lambda: seen(outcome))
        world.schedule(there, f"controller->{broker_id} probe", arrive)

    def _judge(self, probe: Probe, outcomes: list[ProbeOutcome]) -> None:
        """Act on the watch's verdict, and on nothing else (the incarnation it names)."""
        world = self._world
        verdict = self.watch.round_done(world.now_ms, probe, outcomes)
        if isinstance(verdict, ProbeAgain):
            world.schedule(int(verdict.at_ms) - world.now_ms,
                           f"probe {probe.target.broker_id} again",
                           lambda: self._probe(verdict.probe))
            return
        target = verdict.target
        if isinstance(verdict, Report):
            fenced = world.controller.broker_unreachable(target.broker_id, target.epoch)
            world.log(f"controller: broker {target.broker_id} epoch {target.epoch} refused "
                      f"everywhere (fenced: {fenced})")
        else:
            world.log(f"controller: broker {target.broker_id} epoch {target.epoch} not "
                      f"refused: no evidence")
