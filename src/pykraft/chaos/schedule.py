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
         safe: bool = False) -> list[Fault]:
    """``count`` faults drawn from ``random.Random(seed)``."""
    rng = random.Random(seed)
    return [_fault(rng, index, topology, timing, safe) for index in range(count)]


def _fault(rng: random.Random, index: int, topology: Topology, timing: Timing,
           safe: bool) -> Fault:
    kinds = (KILL, PAUSE, RESTART, PARTITION) if safe else KINDS
    kind = rng.choice(kinds)
    gap, hold = rng.randint(*timing.gap), rng.randint(*timing.hold)
    nodes = [f"node:{n}" for n in (*topology.controllers, *topology.brokers)]
    if kind == KILL_ACTIVE_CONTROLLER:
        return Fault(index, kind, ACTIVE_CONTROLLER, None, gap, hold)
    if safe:
        target = IDLE_BROKER
    else:
        leaders = [f"leader:{p}" for p in range(topology.partitions)]
        target = rng.choice(leaders if rng.random() < 0.5 else nodes)
    peer = None
    if kind == PARTITION:
        peer = rng.choice([n for n in nodes if n != target])
    return Fault(index, kind, target, peer, gap, hold)
