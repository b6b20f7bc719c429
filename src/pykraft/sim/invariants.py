"""Safety properties checked after every simulated event (Kafka's simulation invariants)."""

from __future__ import annotations

from collections.abc import Callable

from pykraft.raft.states import Leader
from pykraft.sim.cluster import Cluster
from pykraft.sim.state_machine import InvariantViolation

Invariant = Callable[[Cluster], None]


class SingleLeader:
    """At most one leader per epoch, judged from every node's persisted election state."""

    def __init__(self) -> None:
        self._leaders: dict[int, int] = {}

    def __call__(self, cluster: Cluster) -> None:
        for node in cluster.nodes.values():
            stored = node.store.read()
            if stored is None or stored.leader_id is None:
                continue
            known = self._leaders.setdefault(stored.epoch, stored.leader_id)
            if known != stored.leader_id:
                raise InvariantViolation(
                    "SingleLeader",
                    f"epoch {stored.epoch} has leaders {known} and {stored.leader_id}",
                )


class MonotonicEpoch:
    """Each node's persisted epoch never decreases and matches its in-memory epoch."""

    def __init__(self) -> None:
        self._epochs: dict[int, int] = {}

    def __call__(self, cluster: Cluster) -> None:
        for node in cluster.nodes.values():
            stored = node.store.read()
            if stored is None:
                continue  # never written, or the whole disk was lost
            previous = self._epochs.get(node.node_id, 0)
            if stored.epoch < previous:
                raise InvariantViolation(
                    "MonotonicEpoch",
                    f"node {node.node_id} persisted epoch {stored.epoch} after {previous}",
                )
            self._epochs[node.node_id] = stored.epoch
            if node.client is not None and node.client.epoch != stored.epoch:
                raise InvariantViolation(
                    "MonotonicEpoch",
                    f"node {node.node_id} is in epoch {node.client.epoch} but persisted "
                    f"{stored.epoch}",
                )


class MonotonicHighWatermark:
    """The current leader's high watermark never goes below any earlier leader's."""

    def __init__(self) -> None:
        self._hwm = 0

    def __call__(self, cluster: Cluster) -> None:
        leader = cluster.leader()
        if leader is None or leader.high_watermark is None:
            return
        if leader.high_watermark < self._hwm:
            raise InvariantViolation(
                "MonotonicHighWatermark",
                f"leader {leader.node_id} (epoch {leader.epoch}) has HWM "
                f"{leader.high_watermark} after {self._hwm}",
            )
        self._hwm = leader.high_watermark


def majority_reached_high_watermark(cluster: Cluster) -> None:
    """Every leader's HWM is durable (flushed) on a majority of voters."""
    for client in cluster.live_clients():
        if not isinstance(client.state, Leader) or client.high_watermark is None:
            continue
        hwm = client.high_watermark
        reached = [v for v in cluster.voter_ids if cluster.nodes[v].log.flushed_offset >= hwm]
        if len(reached) < len(cluster.voter_ids) // 2 + 1:
            raise InvariantViolation(
                "MajorityReachedHighWatermark",
                f"leader {client.node_id} has HWM {hwm}, flushed only on voters {reached}",
            )


class StableLeadership:
    """Once armed, the leader and epoch must not change (the KIP-996 pre-vote promise)."""

    def __init__(self, leader_id: int, epoch: int) -> None:
        self._leader_id = leader_id
        self._epoch = epoch

    def __call__(self, cluster: Cluster) -> None:
        for client in cluster.live_clients():
            if client.epoch != self._epoch:
                raise InvariantViolation(
                    "StableLeadership",
                    f"node {client.node_id} moved to epoch {client.epoch}; leader "
                    f"{self._leader_id} of epoch {self._epoch} should have stayed",
                )


def default_invariants() -> list[Invariant]:
    return [SingleLeader(), MonotonicEpoch(), MonotonicHighWatermark(),
            majority_reached_high_watermark]
