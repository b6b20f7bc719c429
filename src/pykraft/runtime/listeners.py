"""One raft core, several state machines: the bench counter and the controller both listen."""

from __future__ import annotations

from pykraft.raft.api import LeaderAndEpoch, RaftListener
from pykraft.raft.log import OffsetAndEpoch
from pykraft.records.batch import RecordBatch


class FanOutListener:
    """Hands every core event to each listener in order (the core takes only one)."""

    def __init__(self, *listeners: RaftListener) -> None:
        self._listeners = listeners

    def handle_commit(self, batch: RecordBatch) -> None:
        for listener in self._listeners:
            listener.handle_commit(batch)

    def handle_leader_change(self, leader: LeaderAndEpoch) -> None:
        for listener in self._listeners:
            listener.handle_leader_change(leader)

    def handle_load_snapshot(self, snapshot_id: OffsetAndEpoch) -> None:
        for listener in self._listeners:
            listener.handle_load_snapshot(snapshot_id)
