"""The replicated state machine of each simulated node: a counter of committed records
(Kafka's simulation runs a ``ReplicatedCounter`` too).

It is also the probe of the ConsistentCommittedData invariant: every committed record, and
the count every snapshot holds, is checked against one
:class:`~pykraft.sim.committed_data.CommittedHistory` shared by all nodes and incarnations.
"""

from __future__ import annotations

from pykraft.raft.api import LeaderAndEpoch, ReadSnapshot
from pykraft.raft.log import OffsetAndEpoch
from pykraft.records.batch import RecordBatch
from pykraft.sim.committed_data import CommittedHistory
from pykraft.sim.violations import InvariantViolation


class CounterMachine:
    """Counts committed data records and checks each against the shared history."""

    def __init__(self, node_id: int, history: CommittedHistory,
                 read_snapshot: ReadSnapshot) -> None:
        self.node_id = node_id
        self._history = history
        self._read_snapshot = read_snapshot
        self.next_offset = 0
        self.last_epoch = 0
        self.count = 0
        self.snapshot_count = 0  # count at the latest snapshot this machine asked for
        self.loads_since_leader_change = 0
        self.loads = 0
        self.leader: LeaderAndEpoch | None = None

    def handle_commit(self, batch: RecordBatch) -> None:
        if batch.base_offset != self.next_offset:
            raise InvariantViolation(
                "ConsistentCommittedData",
                f"node {self.node_id} got batch at {batch.base_offset}, expected "
                f"{self.next_offset}",
            )
        for record in batch.records():
            self._history.check(self.node_id, record.offset, batch.epoch, record.value,
                                not batch.is_control)
            if not batch.is_control:
                self.count += 1
        self.next_offset = batch.last_offset + 1
        self.last_epoch = batch.epoch

    def handle_leader_change(self, leader: LeaderAndEpoch) -> None:
        self.leader = leader
        self.loads_since_leader_change = 0

    def handle_load_snapshot(self, snapshot_id: OffsetAndEpoch) -> None:
        values = [r.value for b in self._read_snapshot(snapshot_id) if not b.is_control
                  for r in b.records()]
        if len(values) != 1 or values[0] is None or not values[0].isdigit():
            raise InvariantViolation("ConsistentCommittedData",
                                     f"node {self.node_id}: snapshot {snapshot_id} holds {values}")
        count = int(values[0])
        self._history.check_snapshot(self.node_id, snapshot_id.offset, count)
        self.count = self.snapshot_count = count
        self.next_offset = snapshot_id.offset
        self.last_epoch = snapshot_id.epoch
        self.loads += 1
        self.loads_since_leader_change += 1
