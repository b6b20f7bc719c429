"""The replicated state machine of each simulated node: a counter of committed records.

Every committed record is also checked against one history shared by all nodes and all
incarnations, which is the ConsistentCommittedData property checked as it happens; so is
the count every snapshot holds.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from pykraft.raft.api import LeaderAndEpoch
from pykraft.raft.log import OffsetAndEpoch
from pykraft.records.batch import RecordBatch


class InvariantViolation(Exception):  # noqa: N818 - it names a broken property, not an error
    """A safety or liveness property failed; ``invariant`` names it."""

    def __init__(self, invariant: str, detail: str) -> None:
        super().__init__(f"{invariant}: {detail}")
        self.invariant = invariant
        self.detail = detail


@dataclass(slots=True)
class CommittedHistory:
    """offset -> (epoch, value) of every record any node ever saw committed."""

    records: dict[int, tuple[int, bytes | None]] = field(default_factory=dict)
    data_offsets: set[int] = field(default_factory=set)
    snapshot_counts: dict[int, int] = field(default_factory=dict)

    def check(self, node_id: int, offset: int, epoch: int, value: bytes | None,
              is_data: bool = True) -> None:
        seen = self.records.setdefault(offset, (epoch, value))
        if seen != (epoch, value):
            raise InvariantViolation(
                "ConsistentCommittedData",
                f"node {node_id} committed {(epoch, value)!r} at offset {offset}, "
                f"another node committed {seen!r}",
            )
        if is_data:
            self.data_offsets.add(offset)

    def check_snapshot(self, node_id: int, end_offset: int, count: int) -> None:
        """A snapshot up to ``end_offset`` must hold the number of data records below it."""
        seen = self.snapshot_counts.setdefault(end_offset, count)
        known = all(offset in self.records for offset in range(end_offset))
        expected = sum(1 for o in self.data_offsets if o < end_offset) if known else count
        if seen != count or expected != count:
            raise InvariantViolation(
                "ConsistentCommittedData",
                f"node {node_id}: snapshot at {end_offset} counts {count} records; "
                f"other snapshots {seen}, committed history {expected}",
            )


SnapshotReader = Callable[[OffsetAndEpoch], list[RecordBatch]]


class CounterMachine:
    """Counts committed data records and checks each against the shared history."""

    def __init__(self, node_id: int, history: CommittedHistory,
                 read_snapshot: SnapshotReader) -> None:
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
