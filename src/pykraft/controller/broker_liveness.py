"""pykraft's fast failover (beyond Kafka), its decisions: the active controller notices a
broker's death well before ``broker.session.timeout.ms``, without fencing a broker that is
only slow. Sans-I/O: :mod:`pykraft.runtime.broker_liveness` drives it with TCP connects and
timers, the replication simulator (:mod:`pykraft.sim.replica_cluster`) with a simulated
world.

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
incarnation the probe was about, only while it is still the registered one
(:func:`evidence_is_current`). Anything else (accepted, timed out, reset, no route) is no
evidence: the session timeout still applies.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from pykraft.image.cluster_image import BrokerRegistration

#: Rounds of probes after a heartbeat connection closes, and the pause between two.
PROBE_ROUNDS = 3
PROBE_SPACING_MS = 200
#: Heartbeat intervals without a heartbeat after which a broker is probed.
OVERDUE_HEARTBEATS = 2

Endpoint = tuple[str, int]


class ProbeOutcome(enum.Enum):
    """What one TCP connect to one listener saw."""

    REFUSED = "refused"  # nothing listens on the port: the process is gone
    ACCEPTED = "accepted"  # a process, perhaps paused, still holds the port
    TIMED_OUT = "timed out"  # lost or black-holed: a lossy link or a partition
    FAILED = "failed"  # reset, no route, any other error


@dataclass(frozen=True, slots=True)
class Incarnation:
    """An unfenced broker's registration, as a probe needs it: its epoch names the process
    the evidence is about."""

    broker_id: int
    epoch: int
    endpoints: tuple[Endpoint, ...]


def incarnation_of(registration: BrokerRegistration | None) -> Incarnation | None:
    """The incarnation to probe, or None (unknown, fenced, or no listener to probe)."""
    if registration is None or registration.fenced or not registration.listeners:
        return None
    endpoints = sorted({(listener.host, listener.port) for listener in registration.listeners})
    return Incarnation(registration.broker_id, registration.epoch, tuple(endpoints))


def evidence_is_current(current_epoch: int | None, epoch: int) -> bool:
    """Whether refusals about incarnation ``epoch`` may fence the broker whose registered,
    unfenced incarnation is ``current_epoch`` (None: none is): only the same one. Evidence
    about a process that has since re-registered is stale and fences nothing."""
    return current_epoch == epoch


@dataclass(frozen=True, slots=True)
class Probe:
    """Connect to every endpoint of ``target`` now; ``round`` counts from 0."""

    target: Incarnation
    round: int = 0


@dataclass(frozen=True, slots=True)
class Report:
    """Every endpoint refused: tell the controller that ``target`` is gone."""

    target: Incarnation


@dataclass(frozen=True, slots=True)
class ProbeAgain:
    """No evidence yet: run ``probe`` (the next round) at ``at_ms``."""

    probe: Probe
    at_ms: float


@dataclass(frozen=True, slots=True)
class NoEvidence:
    """Every round saw something other than refusals everywhere: leave it to the session."""

    target: Incarnation


Verdict = Report | ProbeAgain | NoEvidence


class LivenessWatch:
    """Watches the brokers' heartbeats to the active controller; decides to probe a broker
    whose heartbeat connection closed, or whose heartbeats are ``overdue_ms`` late (once per
    silence), at most one probe per incarnation at a time (a probe of an older one still
    under way does not hold back the probe of a process that re-registered and died in
    turn), and judges each round's outcomes.
    ``lookup`` gives a broker's current incarnation; ``unfenced`` lists the unfenced
    brokers: one that never heartbeats to this controller (it died as the previous active
    controller did) is overdue from when the watch began."""

    def __init__(self, lookup: Callable[[int], Incarnation | None], *,
                 unfenced: Callable[[], Iterable[int]] = tuple,
                 overdue_ms: float | None = None, rounds: int = PROBE_ROUNDS,
                 spacing_ms: float = PROBE_SPACING_MS) -> None:
        if rounds < 1:
            raise ValueError(f"rounds must be at least 1, got {rounds}")
        self._lookup = lookup
        self._unfenced = unfenced
        self._overdue_ms = overdue_ms
        self._rounds = rounds
        self._spacing_ms = spacing_ms
        self._heartbeating: dict[str, int] = {}
        """A live connection -> the broker that heartbeats on it."""
        self._last_heartbeat: dict[int, float] = {}
        self._probed_silence: set[int] = set()
        """Brokers probed since their last heartbeat for being overdue."""
        self._probing: dict[int, int] = {}
        """Broker -> the epoch of the incarnation whose probe is under way."""

    @property
    def check_every_ms(self) -> float | None:
        """How often the driver calls :meth:`overdue` (None: heartbeats are not watched)."""
        return None if self._overdue_ms is None else self._overdue_ms / 2

    def heartbeat(self, now_ms: float, connection: str, broker_id: int) -> None:
        self._heartbeating[connection] = broker_id
        self._last_heartbeat[broker_id] = now_ms
        self._probed_silence.discard(broker_id)

    def closed(self, connection: str) -> Probe | None:
        """A controller-listener connection closed: probe the broker heartbeating on it."""
        broker_id = self._heartbeating.pop(connection, None)
        return None if broker_id is None else self._start(broker_id)

    def overdue(self, now_ms: float) -> list[Probe]:
        """Probes of the brokers whose heartbeats are overdue, once per silence."""
        if self._overdue_ms is None:
            return []
        for broker_id in self._unfenced():
            self._last_heartbeat.setdefault(broker_id, now_ms)
        probes: list[Probe] = []
        for broker_id, at in list(self._last_heartbeat.items()):
            if now_ms - at >= self._overdue_ms and broker_id not in self._probed_silence:
                self._probed_silence.add(broker_id)
                if (probe := self._start(broker_id)) is not None:
                    probes.append(probe)
        return probes

    def round_done(self, now_ms: float, probe: Probe,
                   outcomes: Sequence[ProbeOutcome]) -> Verdict:
        """What a round's outcomes (one per endpoint, in order) mean."""
        if len(outcomes) != len(probe.target.endpoints):
            raise ValueError(f"{len(outcomes)} outcomes for "
                             f"{len(probe.target.endpoints)} endpoints")
        if all(outcome is ProbeOutcome.REFUSED for outcome in outcomes):
            self.abandon(probe.target)
            return Report(probe.target)
        if probe.round + 1 < self._rounds:
            return ProbeAgain(Probe(probe.target, probe.round + 1), now_ms + self._spacing_ms)
        self.abandon(probe.target)
        return NoEvidence(probe.target)

    def abandon(self, target: Incarnation) -> None:
        """The probe of ``target`` ended (or was dropped): a later one may start."""
        if self._probing.get(target.broker_id) == target.epoch:
            del self._probing[target.broker_id]

    def clear(self) -> None:
        """Forget everything (the controller resigned or stopped)."""
        self._heartbeating.clear()
        self._last_heartbeat.clear()
        self._probed_silence.clear()
        self._probing.clear()

    def _start(self, broker_id: int) -> Probe | None:
        target = self._lookup(broker_id)
        if target is None:
            self._last_heartbeat.pop(broker_id, None)  # watched again once it heartbeats
            return None
        if self._probing.get(broker_id) == target.epoch:
            return None
        self._probing[broker_id] = target.epoch
        return Probe(target)
