"""The replicated state machine of a raft-only node: it counts committed records.

It also lets the bench-only append request wait for its record to commit: a waiter resolves
True once the commit passes its offset, False if leadership moves on first (the record's
fate is then unknown to this node, so the client must not count it as written).

Its snapshot is the count itself (one data record, an 8-byte big-endian integer). With a
:class:`SnapshotPolicy` it asks for one when Kafka's thresholds pass, so the log can be
cleaned behind it and a replica far behind catches up with FetchSnapshot; the node writes it
(``core.create_snapshot``) right after handing over the events that made it due.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass

from pykraft.errors import CorruptRecordError
from pykraft.image.snapshot import SnapshotPolicy
from pykraft.raft.api import LeaderAndEpoch, ReadSnapshot
from pykraft.raft.log import OffsetAndEpoch
from pykraft.records.batch import RecordBatch

_COUNT = struct.Struct(">q")


@dataclass(frozen=True, slots=True)
class CounterSnapshot:
    """A snapshot to write: the count of data records below ``snapshot_id.offset``."""

    snapshot_id: OffsetAndEpoch
    records: int

    def batches(self) -> list[list[bytes]]:
        return [[_COUNT.pack(self.records)]]


def records_in_snapshot(batches: list[RecordBatch], snapshot_id: OffsetAndEpoch) -> int:
    """The count a counter snapshot holds; a typed error for any other content."""
    values = [record.value for batch in batches if not batch.is_control
              for record in batch.records()]
    if len(values) != 1 or values[0] is None or len(values[0]) != _COUNT.size:
        raise CorruptRecordError(f"snapshot {snapshot_id} is not a record counter's snapshot "
                                 f"(expected one {_COUNT.size}-byte data record)")
    count: int = _COUNT.unpack(values[0])[0]
    if not 0 <= count <= snapshot_id.offset:
        raise CorruptRecordError(f"snapshot {snapshot_id} counts {count} records, more than "
                                 "its offsets can hold")
    return count


class CommittedCounter:
    """A :class:`~pykraft.raft.api.RaftListener` that counts committed data records."""

    def __init__(self, node_id: int, policy: SnapshotPolicy | None = None,
                 clock: Callable[[], int] = lambda: 0) -> None:
        self.node_id = node_id
        self.records = 0
        self.next_offset = 0
        self.leader: LeaderAndEpoch | None = None
        self.commit_latencies_ms: list[float] = []
        self.policy = policy
        """Snapshot thresholds; None when another listener snapshots for the node."""
        self.snapshot_due: CounterSnapshot | None = None
        """Set by a commit that passed the thresholds; the node takes it and writes it."""
        self._clock = clock
        self._reader: ReadSnapshot | None = None
        self._waiters: list[tuple[int, int, float, asyncio.Future[bool]]] = []
        self._sequence = itertools.count()

    def attach(self, reader: ReadSnapshot) -> None:
        """Read snapshots with ``reader`` (``core.read_snapshot``): the core is built after
        its state machine, and hands out no event before its driver starts."""
        self._reader = reader
        if self.policy is not None:
            self.policy.snapshot_taken(self._clock())  # the interval runs from start-up

    def handle_commit(self, batch: RecordBatch) -> None:
        if not batch.is_control:
            self.records += batch.last_offset - batch.base_offset + 1
        self._advance_to(batch.last_offset + 1)
        if self.policy is None:
            return
        self.policy.committed(len(batch.data))
        if self.snapshot_due is None and self.policy.reason(self._clock()) is not None:
            self.snapshot_due = CounterSnapshot(
                OffsetAndEpoch(self.next_offset, batch.epoch), self.records)
            self.policy.snapshot_taken(self._clock())

    def handle_leader_change(self, leader: LeaderAndEpoch) -> None:
        self.leader = leader
        if leader.leader_id == self.node_id:
            return
        for _, _, _, waiter in self._waiters:
            if not waiter.done():
                waiter.set_result(False)
        self._waiters.clear()

    def handle_load_snapshot(self, snapshot_id: OffsetAndEpoch) -> None:
        """The log below ``snapshot_id`` is gone: go on from the count it holds."""
        if self._reader is None:
            raise RuntimeError("CommittedCounter.attach() was not called")
        if self.policy is not None:  # else the snapshots are another listener's (metadata)
            self.records = records_in_snapshot(self._reader(snapshot_id), snapshot_id)
            self.policy.snapshot_taken(self._clock())
        self.snapshot_due = None  # a pending snapshot may now be below the log start
        self._advance_to(snapshot_id.offset)

    def take_snapshot_due(self) -> CounterSnapshot | None:
        due, self.snapshot_due = self.snapshot_due, None
        return due

    def wait_committed(self, offset: int) -> asyncio.Future[bool]:
        """A future that says whether ``offset`` committed while this node stayed leader."""
        waiter: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        if offset < self.next_offset:
            waiter.set_result(True)
        else:
            heapq.heappush(self._waiters,
                           (offset, next(self._sequence), time.monotonic(), waiter))
        return waiter

    def take_commit_latencies(self) -> list[float]:
        taken, self.commit_latencies_ms = self.commit_latencies_ms, []
        return taken

    def _advance_to(self, next_offset: int) -> None:
        self.next_offset = next_offset
        now = time.monotonic()
        while self._waiters and self._waiters[0][0] < self.next_offset:
            _, _, started, waiter = heapq.heappop(self._waiters)
            if not waiter.done():
                self.commit_latencies_ms.append((now - started) * 1000)
                waiter.set_result(True)
