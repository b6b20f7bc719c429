"""The replicated state machine of each simulated node: a counter of committed records.

Every committed record is also checked against one history shared by all nodes and all
incarnations, which is the ConsistentCommittedData property checked as it happens.
"""

from __future__ import annotations

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

    def check(self, node_id: int, offset: int, epoch: int, value: bytes | None) -> None:
        seen = self.records.setdefault(offset, (epoch, value))
        if seen != (epoch, value):
            raise InvariantViolation(
                "ConsistentCommittedData",
                f"node {node_id} committed {(epoch, value)!r} at offset {offset}, "
                f"another node committed {seen!r}",
            )


class CounterMachine:
    """Counts committed data records and checks each against the shared history."""

    def __init__(self, node_id: int, history: CommittedHistory) -> None:
        self.node_id = node_id
        self._history = history
        self.next_offset = 0
        self.count = 0
        self.leader: LeaderAndEpoch | None = None

    def handle_commit(self, batch: RecordBatch) -> None:
        if batch.base_offset != self.next_offset:
            raise InvariantViolation(
                "ConsistentCommittedData",
                f"node {self.node_id} got batch at {batch.base_offset}, expected "
                f"{self.next_offset}",
            )
        for record in batch.records():
            self._history.check(self.node_id, record.offset, batch.epoch, record.value)
            if not batch.is_control:
                self.count += 1
        self.next_offset = batch.last_offset + 1

    def handle_leader_change(self, leader: LeaderAndEpoch) -> None:
        self.leader = leader

    def handle_load_snapshot(self, snapshot_id: OffsetAndEpoch) -> None:
        raise InvariantViolation("NoSnapshots", f"unexpected snapshot {snapshot_id}")
