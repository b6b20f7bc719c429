"""Carries out a schedule's faults on a :class:`ChaosCluster`, one at a time.

Role targets are resolved when the fault begins (see :class:`ClusterView`): a partition's
leader, the active controller, an idle broker as one that leads no partition of the topic.
A fault whose target cannot be resolved (no leader known, the only idle broker is the
link's other end) is skipped and recorded as such.
"""

from __future__ import annotations

import signal
from collections.abc import Callable
from dataclasses import dataclass

from pykraft.chaos.checker import SKIPPED
from pykraft.chaos.nodes import ChaosCluster
from pykraft.chaos.observer import ClusterView
from pykraft.chaos.schedule import (
    ACTIVE_CONTROLLER,
    IDLE_BROKER,
    KILL,
    KILL_ACTIVE_CONTROLLER,
    PARTITION,
    PAUSE,
    RESTART,
    Fault,
)


@dataclass(frozen=True, slots=True)
class Active:
    """A fault in force: its kind and the node(s) it holds."""

    kind: str
    nodes: tuple[int, ...]
    spec: str  # the schedule's words for the target, e.g. leader:0

    @property
    def target(self) -> str:
        """``node:1000`` (with the role it was chosen for: ``leader:0=node:1000``), or a
        link ``node:1-node:1000``."""
        nodes = "-".join(f"node:{n}" for n in self.nodes)
        return nodes if self.spec.startswith("node:") else f"{self.spec}={nodes}"

    @classmethod
    def parse(cls, kind: str, target: str) -> Active:
        """The fault a recorded ``target`` names (the inverse of :attr:`target`)."""
        spec, _, nodes = target.rpartition("=")
        ids = tuple(int(node.removeprefix("node:")) for node in nodes.split("-"))
        return cls(kind, ids, spec or f"node:{ids[0]}")


class Injector:
    def __init__(self, nodes: ChaosCluster, topic: str,
                 record: Callable[[str, str, str], None]) -> None:
        self._nodes = nodes
        self._cluster = nodes.cluster
        self._record = record  # (kind, target, phase)
        self._active: list[Active] = []
        self.view = ClusterView(self._cluster.bootstrap_servers,
                                self._cluster.bootstrap_controllers, topic)

    def _resolve(self, target: str, index: int, avoid: int | None = None) -> int | None:
        """The node ``target`` names now; an idle broker other than ``avoid``."""
        role, _, which = target.partition(":")
        if role == "node":
            return int(which)
        if target == ACTIVE_CONTROLLER:
            return self.view.active_controller()
        leaders = self.view.leaders()
        if role == "leader":
            leader = leaders.get(int(which), -1)
            return leader if leader >= 0 else None
        if target == IDLE_BROKER and leaders and -1 not in leaders.values():
            idle = sorted(set(self._cluster.brokers) - set(leaders.values()) - {avoid})
            return idle[index % len(idle)] if idle else None
        return None

    def begin(self, fault: Fault) -> Active | None:
        """Resolve and start ``fault``; None (recorded as skipped) if it cannot be aimed."""
        peer = None if fault.peer is None else self._resolve(fault.peer, fault.index)
        target = self._resolve(fault.target, fault.index, avoid=peer)
        if target is None or (fault.kind == PARTITION and (peer is None or peer == target)):
            self.skip(fault.kind, f"{fault.target} {fault.peer or ''}".strip())
            return None
        nodes = (target,) if peer is None else (target, peer)
        return self.apply(Active(fault.kind, nodes, fault.target))

    def apply(self, active: Active) -> Active:
        """Start a fault already aimed (a replay names its nodes as the recorded run did)."""
        self._record(active.kind, active.target, "start")
        target = active.nodes[0]
        if active.kind in (KILL, KILL_ACTIVE_CONTROLLER):
            self._nodes.kill(target)
        elif active.kind == PAUSE:
            self._cluster.signal(target, signal.SIGSTOP)
        elif active.kind == RESTART:
            self._nodes.stop(target)
        elif active.kind == PARTITION:
            self._nodes.links.cut(*active.nodes)
        self._active.append(active)
        return active

    def skip(self, kind: str, target: str) -> None:
        self._record(kind, target, SKIPPED)

    def end(self, active: Active) -> None:
        if active.kind == PAUSE:
            self._cluster.signal(active.nodes[0], signal.SIGCONT)
        elif active.kind == PARTITION:
            self._nodes.links.heal(*active.nodes)
        elif not self._cluster.is_running(active.nodes[0]):
            self._nodes.start(active.nodes[0])
        self._active.remove(active)
        self._record(active.kind, active.target, "end")

    def paused(self) -> list[int]:
        return [active.nodes[0] for active in list(self._active) if active.kind == PAUSE]

    def heal_all(self) -> None:
        for active in list(self._active):
            self.end(active)

    def close(self) -> None:
        self.view.close()
