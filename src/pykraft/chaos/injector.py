"""Carries out a schedule's faults on a :class:`ChaosCluster`, one at a time.

Role targets are resolved when the fault begins: a partition's leader from a Metadata
request through the brokers, the active controller from DescribeQuorum (as
``pykraft metadata-quorum`` finds it), an idle broker as one that leads no partition of the
topic. A fault whose target cannot be resolved (no leader known, the only idle broker is
the link's other end) is skipped and recorded as such.
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pykraft.chaos.checker import SKIPPED
from pykraft.chaos.nodes import ChaosCluster
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
from pykraft.chaos.workload import CLIENT_LOGGING
from pykraft.errors import PyKraftError
from pykraft.tools.quorum_tool import describe_quorum, parse_bootstrap

METADATA_TIMEOUT_S = 5.0


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


class Injector:
    def __init__(self, nodes: ChaosCluster, topic: str,
                 record: Callable[[str, str, str], None]) -> None:
        self._nodes = nodes
        self._cluster = nodes.cluster
        self._topic = topic
        self._record = record  # (kind, target, phase)
        self._active: list[Active] = []
        self._admin: Any = None  # confluent-kafka's AdminClient, made on first use

    def leaders(self) -> dict[int, int]:
        """Partition -> leader id (-1 when it has none) as a broker's Metadata says; none
        when no broker answers in time."""
        from confluent_kafka import KafkaException
        from confluent_kafka.admin import AdminClient

        if self._admin is None:
            self._admin = AdminClient({"bootstrap.servers": self._cluster.bootstrap_servers,
                                       **CLIENT_LOGGING})
        try:
            topics = self._admin.list_topics(self._topic, timeout=METADATA_TIMEOUT_S).topics
        except KafkaException:
            return {}
        found = topics.get(self._topic)
        if found is None or found.error is not None:
            return {}
        return {p: int(meta.leader) for p, meta in found.partitions.items()}

    def active_controller(self) -> int | None:
        try:
            info = asyncio.run(describe_quorum(
                *parse_bootstrap(self._cluster.bootstrap_controllers),
                timeout_s=METADATA_TIMEOUT_S))
        except PyKraftError:
            return None
        return info.leader_id if info.leader_id >= 0 else None

    def _resolve(self, target: str, index: int, avoid: int | None = None) -> int | None:
        """The node ``target`` names now; an idle broker other than ``avoid``."""
        role, _, which = target.partition(":")
        if role == "node":
            return int(which)
        if target == ACTIVE_CONTROLLER:
            return self.active_controller()
        leaders = self.leaders()
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
            self._record(fault.kind, f"{fault.target} {fault.peer or ''}".strip(), SKIPPED)
            return None
        nodes = (target,) if peer is None else (target, peer)
        active = Active(fault.kind, nodes, fault.target)
        self._record(fault.kind, active.target, "start")
        if fault.kind in (KILL, KILL_ACTIVE_CONTROLLER):
            self._cluster.kill(target)
        elif fault.kind == PAUSE:
            self._cluster.signal(target, signal.SIGSTOP)
        elif fault.kind == RESTART:
            self._cluster.stop(target)
        elif fault.kind == PARTITION:
            self._nodes.links.cut(*nodes)
        self._active.append(active)
        return active

    def end(self, active: Active) -> None:
        if active.kind == PAUSE:
            self._cluster.signal(active.nodes[0], signal.SIGCONT)
        elif active.kind == PARTITION:
            self._nodes.links.heal(*active.nodes)
        elif not self._cluster.is_running(active.nodes[0]):
            self._cluster.start(active.nodes[0])
        self._active.remove(active)
        self._record(active.kind, active.target, "end")

    def heal_all(self) -> None:
        for active in list(self._active):
            self.end(active)

    def close(self) -> None:
        """Drop the admin client (librdkafka destroys it with its last reference) before
        the cluster stops, so it does not log its reconnection attempts afterwards."""
        self._admin = None
