"""ConsistentCommittedData, the one invariant checked as records commit rather than after
each event: every node commits the same (epoch, value) at an offset, and every snapshot holds
the count of data records below it. Each node's
:class:`~pykraft.sim.replicated_counter.CounterMachine` reports to one shared history.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pykraft.sim.violations import InvariantViolation


@dataclass(slots=True)
class CommittedHistory:
    """ConsistentCommittedData, checked as records commit: offset -> (epoch, value) of every
    record any node ever saw committed, and the count each snapshot holds."""

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
