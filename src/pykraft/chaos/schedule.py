"""A seeded, replayable schedule of faults: the same seed and options give the same list.

Faults run one at a time: wait ``gap_ms``, begin the fault, hold it ``hold_ms``, heal it.
Kinds:

* ``kill``: SIGKILL the node, start it again when healed (a crash and reboot);
* ``pause``: SIGSTOP, then SIGCONT (a long GC pause or a frozen VM);
* ``restart``: SIGTERM (a clean shutdown, brokers leave through controlled shutdown), start;
* ``partition``: cut the network link between two nodes both ways, then mend it;
* ``kill-active-controller``: ``kill`` aimed at whichever controller is active then.

A target is a node (``node:<id>``) or a role the injector resolves when the fault begins:
``leader:<partition>`` (the partition's leader), ``idle-broker`` (a broker leading no
partition of the workload's topic) or ``active-controller``. A ``safe`` schedule touches
only idle brokers: no leader or active controller fails, so no acknowledged write may be
lost even without replication.

Two mixes. ``bounded`` (the default) is the issue's: kills, pauses and restarts of brokers
(a partition's leader or any broker, so followers too), link cuts between any two nodes,
and one active-controller kill per :data:`CONTROLLER_KILL_EVERY` faults; the runner starts
each fault only once the cluster is whole again (every node listening, every partition led
with its full ISR, a controller active), so at most one replica of a partition is out at a
time. ``stress`` draws every kind alike (a fifth of the faults kill the active controller),
aims kills and pauses at controllers too and does not wait: faults can outpace recovery,
and partitions then go offline (too few in-sync replicas, no controller quorum) for as long
as that lasts, as a 300-fault short run showed (gaps of 30-50 s).
"""

from __future__ import annotations

import random
from dataclasses import asdict, dataclass
from typing import Any

KILL = "kill"
PAUSE = "pause"
RESTART = "restart"
PARTITION = "partition"
KILL_ACTIVE_CONTROLLER = "kill-active-controller"
KINDS = (KILL, PAUSE, RESTART, PARTITION, KILL_ACTIVE_CONTROLLER)
IDLE_BROKER = "idle-broker"
ACTIVE_CONTROLLER = "active-controller"
BOUNDED = "bounded"
STRESS = "stress"
MIXES = (BOUNDED, STRESS)
#: The bounded mix's active-controller kills: the 50th fault, the 100th, ...
CONTROLLER_KILL_EVERY = 50


@dataclass(frozen=True, slots=True)
class Fault:
    index: int
    kind: str
    target: str
    peer: str | None  # the other end of a partitioned link
    gap_ms: int
    hold_ms: int

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, row: dict[str, Any]) -> Fault:
        return cls(**row)


@dataclass(frozen=True, slots=True)
class Timing:
    """Ranges (ms, inclusive) of the wait before each fault and of its duration."""

    gap: tuple[int, int]
    hold: tuple[int, int]


NORMAL = Timing(gap=(1000, 3000), hold=(1000, 6000))
SHORT = Timing(gap=(200, 800), hold=(300, 1500))


@dataclass(frozen=True, slots=True)
class Topology:
    brokers: tuple[int, ...]
    controllers: tuple[int, ...]
    partitions: int


def plan(seed: int, count: int, topology: Topology, *, timing: Timing = NORMAL,
         safe: bool = False, mix: str = BOUNDED) -> list[Fault]:
    """``count`` faults drawn from ``random.Random(seed)``."""
    rng = random.Random(seed)
    return [_fault(rng, index, topology, timing, safe, mix) for index in range(count)]


def _fault(rng: random.Random, index: int, topology: Topology, timing: Timing,
           safe: bool, mix: str) -> Fault:
    kind = _kind(rng, index, safe, mix)
    gap, hold = rng.randint(*timing.gap), rng.randint(*timing.hold)
    nodes = [f"node:{n}" for n in (*topology.controllers, *topology.brokers)]
    if kind == KILL_ACTIVE_CONTROLLER:
        return Fault(index, kind, ACTIVE_CONTROLLER, None, gap, hold)
    if safe:
        target = IDLE_BROKER
    else:
        leaders = [f"leader:{p}" for p in range(topology.partitions)]
        hosts = ([f"node:{n}" for n in topology.brokers]
                 if mix == BOUNDED and kind != PARTITION else nodes)
        target = rng.choice(leaders if rng.random() < 0.5 else hosts)
    peer = None
    if kind == PARTITION:
        peer = rng.choice([n for n in nodes if n != target])
    return Fault(index, kind, target, peer, gap, hold)


def _kind(rng: random.Random, index: int, safe: bool, mix: str) -> str:
    node_kinds = (KILL, PAUSE, RESTART, PARTITION)
    if safe:
        return rng.choice(node_kinds)
    if mix == STRESS:
        return rng.choice(KINDS)
    if index % CONTROLLER_KILL_EVERY == CONTROLLER_KILL_EVERY - 1:
        return KILL_ACTIVE_CONTROLLER
    return rng.choice(node_kinds)
