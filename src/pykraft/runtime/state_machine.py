"""The replicated state machine until the controller exists: it counts committed records.

It also lets the bench-only append request wait for its record to commit: a waiter resolves
True once the commit passes its offset, False if leadership moves on first (the record's
fate is then unknown to this node, so the client must not count it as written).
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import time

from pykraft.raft.api import LeaderAndEpoch
from pykraft.raft.log import OffsetAndEpoch
from pykraft.records.batch import RecordBatch


class CommittedCounter:
    """A :class:`~pykraft.raft.api.RaftListener` that counts committed data records."""

    def __init__(self, node_id: int) -> None:
        self.node_id = node_id
        self.records = 0
        self.next_offset = 0
        self.leader: LeaderAndEpoch | None = None
        self.commit_latencies_ms: list[float] = []
        self._waiters: list[tuple[int, int, float, asyncio.Future[bool]]] = []
        self._sequence = itertools.count()

    def handle_commit(self, batch: RecordBatch) -> None:
        if not batch.is_control:
            self.records += batch.last_offset - batch.base_offset + 1
        self.next_offset = batch.last_offset + 1
        now = time.monotonic()
        while self._waiters and self._waiters[0][0] < self.next_offset:
            _, _, started, waiter = heapq.heappop(self._waiters)
            if not waiter.done():
                self.commit_latencies_ms.append((now - started) * 1000)
                waiter.set_result(True)

    def handle_leader_change(self, leader: LeaderAndEpoch) -> None:
        self.leader = leader
        if leader.leader_id == self.node_id:
            return
        for _, _, _, waiter in self._waiters:
            if not waiter.done():
                waiter.set_result(False)
        self._waiters.clear()

    def handle_load_snapshot(self, snapshot_id: OffsetAndEpoch) -> None:
        """Snapshots arrive with issue 4; a counter would reload its count from one."""

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
