"""What the cluster says of itself: partition leaders and ISRs from a broker's Metadata, the
active controller from DescribeQuorum (as ``pykraft metadata-quorum`` finds it).

The injector asks when it aims a fault at a role; :class:`Observing` samples both, and which
nodes are down, about once a second into the history, so the checker can say whether a
stall had a live leader and enough live in-sync replicas (a slow recovery) or not (an
outage the faults caused).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any

from pykraft.chaos.history import Observed
from pykraft.chaos.recorder import Recorder
from pykraft.chaos.workload import CLIENT_LOGGING
from pykraft.errors import PyKraftError
from pykraft.tools.quorum_tool import describe_quorum, parse_bootstrap

METADATA_TIMEOUT_S = 5.0
SAMPLE_INTERVAL_S = 1.0
#: A sample's own bound: a sample that waits out a dead node would hide the next second.
SAMPLE_TIMEOUT_S = 2.0


class ClusterView:
    """One thread's view: confluent-kafka's AdminClient (made on first use) is not shared."""

    def __init__(self, bootstrap_servers: str, bootstrap_controllers: str, topic: str) -> None:
        self._servers = bootstrap_servers
        self._controllers = bootstrap_controllers
        self._topic = topic
        self._admin: Any = None

    def partitions(self, timeout_s: float = METADATA_TIMEOUT_S) -> dict[int, tuple[int,
                                                                                 list[int]]]:
        """Partition -> (leader id or -1, ISR) as a broker's Metadata says; none when no
        broker answers in time."""
        from confluent_kafka import KafkaException
        from confluent_kafka.admin import AdminClient

        if self._admin is None:
            self._admin = AdminClient({"bootstrap.servers": self._servers, **CLIENT_LOGGING})
        try:
            topics = self._admin.list_topics(self._topic, timeout=timeout_s).topics
        except KafkaException:
            return {}
        found = topics.get(self._topic)
        if found is None or found.error is not None:
            return {}
        return {p: (int(meta.leader), sorted(meta.isrs))
                for p, meta in found.partitions.items()}

    def leaders(self) -> dict[int, int]:
        return {p: leader for p, (leader, _) in self.partitions().items()}

    def active_controller(self, timeout_s: float = METADATA_TIMEOUT_S) -> int | None:
        try:
            info = asyncio.run(describe_quorum(*parse_bootstrap(self._controllers),
                                               timeout_s=timeout_s))
        except PyKraftError:
            return None
        return info.leader_id if info.leader_id >= 0 else None

    def close(self) -> None:
        """Drop the admin client (librdkafka destroys it with its last reference) before
        the cluster stops, so it does not log its reconnection attempts afterwards."""
        self._admin = None


class Observing(threading.Thread):
    """Records an :class:`Observed` about once a second until stopped."""

    def __init__(self, view: ClusterView, partitions: int, down: Callable[[], list[int]],
                 recorder: Recorder, stop: threading.Event) -> None:
        super().__init__(name="chaos-observer", daemon=True)
        self._view = view
        self._down = down
        self._count = partitions
        self._recorder = recorder
        self._stop_event = stop

    def run(self) -> None:
        try:
            while not self._stop_event.wait(SAMPLE_INTERVAL_S):
                t = self._recorder.now()
                down = sorted(self._down())
                found = self._view.partitions(SAMPLE_TIMEOUT_S)
                controller = self._view.active_controller(SAMPLE_TIMEOUT_S)
                known = [found.get(p) for p in range(self._count)]
                self._recorder.write(Observed(
                    t, [-1 if k is None else k[0] for k in known] if found else [],
                    [[] if k is None else k[1] for k in known] if found else [],
                    -1 if controller is None else controller, down))
        finally:
            self._view.close()
