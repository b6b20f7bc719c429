"""Safety properties checked after every simulated event (Kafka's simulation invariants)."""

from __future__ import annotations

from collections.abc import Callable

from pykraft.raft.snapshots import BOOTSTRAP_SNAPSHOT_ID
from pykraft.raft.states import Leader
from pykraft.raft.voter_set import VoterSet
from pykraft.sim.simulated_cluster import Cluster, SimNode
from pykraft.sim.violations import InvariantViolation

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
    """Each node's persisted epoch never decreases (on one disk) and matches its in-memory
    epoch."""

    def __init__(self) -> None:
        self._epochs: dict[tuple[int, int], int] = {}

    def __call__(self, cluster: Cluster) -> None:
        for node in cluster.nodes.values():
            stored = node.store.read()
            if stored is None:
                continue  # never written, or the whole disk was lost
            disk = (node.node_id, node.disks)
            previous = self._epochs.get(disk, 0)
            if stored.epoch < previous:
                raise InvariantViolation(
                    "MonotonicEpoch",
                    f"node {node.node_id} persisted epoch {stored.epoch} after {previous}",
                )
            self._epochs[disk] = stored.epoch
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
    """Every leader's HWM is durable (flushed) on a majority of the voters: of its latest
    voter set, or of the set in force at HWM - 1 (KIP-853 mode), each voter counting only
    with the directory it was added with."""
    for client in cluster.live_clients():
        if not isinstance(client.state, Leader) or client.high_watermark is None:
            continue
        hwm = client.high_watermark
        sets = [client.voters, client.control_state.voter_set_at(hwm - 1)]
        if not any(_flushed_on_majority(cluster, voters, hwm) for voters in sets):
            raise InvariantViolation(
                "MajorityReachedHighWatermark",
                f"leader {client.node_id} has HWM {hwm}, flushed on too few of {sets[0]!r}",
            )


def _flushed_on_majority(cluster: Cluster, voters: VoterSet, hwm: int) -> bool:
    reached = [n.key.id for n in voters.nodes if n.key.id in cluster.nodes
               and voters.is_voter(cluster.key_of(n.key.id))
               and cluster.nodes[n.key.id].log.flushed_offset >= hwm]
    return voters.is_majority(reached)


class SnapshotAtLogStart:
    """The earliest snapshot is at the log start once the log start moved, and no snapshot
    lies below it; (offset, epoch) of the earliest one is a position of the log. (A node is
    re-checked only when its snapshots or log start changed.)"""

    def __init__(self) -> None:
        self._checked: dict[int, int] = {}

    def __call__(self, cluster: Cluster) -> None:
        for node in cluster.nodes.values():
            if self._checked.get(node.node_id) != node.log.generation:
                _check_snapshot_at_log_start(node)
                self._checked[node.node_id] = node.log.generation


def _check_snapshot_at_log_start(node: SimNode) -> None:
    log = node.log
    ids = [s.snapshot_id for s in log.snapshots() if s.snapshot_id != BOOTSTRAP_SNAPSHOT_ID]
    start = log.log_start_offset
    if not ids:
        if start > 0:
            raise InvariantViolation("SnapshotAtLogStart",
                                     f"node {node.node_id}: log start {start}, no snapshot")
        return
    earliest = ids[0]
    if earliest.offset < start or (start > 0 and earliest.offset != start):
        raise InvariantViolation(
            "SnapshotAtLogStart",
            f"node {node.node_id}: earliest snapshot {earliest}, log start {start}",
        )
    if start > 0 and log.end_offset_for_epoch(earliest.epoch).epoch != earliest.epoch:
        raise InvariantViolation(
            "SnapshotAtLogStart",
            f"node {node.node_id}: earliest snapshot {earliest} is not a log position",
        )


def leader_never_loads_snapshot(cluster: Cluster) -> None:
    """A leader that took office (its state machine knows) never loads a snapshot."""
    for node in cluster.nodes.values():
        client, machine = node.client, node.machine
        if client is None or machine is None or not isinstance(client.state, Leader):
            continue
        if machine.leader == client.leader_and_epoch and machine.loads_since_leader_change:
            raise InvariantViolation(
                "LeaderNeverLoadSnapshot",
                f"leader {node.node_id} of epoch {client.epoch} loaded a snapshot",
            )


def at_most_one_uncommitted_voter_set(cluster: Cluster) -> None:
    """Between the HWM and the log end a leader holds at most one new voter set."""
    for client in cluster.live_clients():
        if not isinstance(client.state, Leader):
            continue
        hwm = client.high_watermark
        if hwm is None:
            continue  # what is committed is unknown until the leader commits its epoch start
        pending = client.control_state.voters.entries_after(hwm - 1)
        if len(pending) > 1:
            raise InvariantViolation(
                "AtMostOneUncommittedVoterSet",
                f"leader {client.node_id} (HWM {hwm}) has uncommitted voter sets at offsets "
                f"{[offset for offset, _ in pending]}",
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
            majority_reached_high_watermark, SnapshotAtLogStart(), leader_never_loads_snapshot,
            at_most_one_uncommitted_voter_set]
