"""What the core hands back to its driver: messages, flushes, timers and application events.

The driver's obligations (persist-before-send): send ``requests`` and ``responses`` as
given, perform ``flush`` asynchronously and report it with ``flush_completed``, call
``tick`` no later than ``next_tick_ms``, and hand ``events`` to the application in order
(:func:`deliver`). The core already withholds every message whose meaning depends on
unflushed data.

Events are outputs like messages (etcd's ``Ready.CommittedEntries``), not callbacks: the
core never calls the application, so the application may call back into the core
(``append``, ``create_snapshot``) from its handlers without re-entering a core step.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Protocol

from pykraft.raft.log import OffsetAndEpoch
from pykraft.raft.rpc import RaftRequest, RaftResponse
from pykraft.records.batch import RecordBatch

ReadSnapshot = Callable[[OffsetAndEpoch], list[RecordBatch]]
"""The core's ``read_snapshot``: a frozen snapshot's batches, for the state machines that
load one."""


@dataclass(frozen=True, slots=True)
class LeaderAndEpoch:
    leader_id: int | None
    epoch: int


@dataclass(frozen=True, slots=True)
class OutboundRequest:
    destination: int
    correlation_id: int
    request: RaftRequest


@dataclass(frozen=True, slots=True)
class OutboundResponse:
    destination: int
    correlation_id: int
    response: RaftResponse


@dataclass(frozen=True, slots=True)
class FlushRequest:
    """Make the log durable up to this offset, then call ``flush_completed``."""

    up_to_offset: int


@dataclass(frozen=True, slots=True)
class Committed:
    """A batch below the high watermark, data or control: each one once, in offset order."""

    batch: RecordBatch


@dataclass(frozen=True, slots=True)
class LoadSnapshot:
    """The log below ``snapshot_id`` is gone: the application restarts from that snapshot
    (``read_snapshot``); the next ``Committed`` batch starts at its end offset."""

    snapshot_id: OffsetAndEpoch


@dataclass(frozen=True, slots=True)
class LeaderChange:
    """A new epoch or leader; on the new leader only once its LeaderChange record commits."""

    leader: LeaderAndEpoch


RaftEvent = Committed | LoadSnapshot | LeaderChange


@dataclass(frozen=True, slots=True)
class Ready:
    """Everything produced since the previous drain (etcd's ``Ready``)."""

    requests: tuple[OutboundRequest, ...]
    responses: tuple[OutboundResponse, ...]
    flush: FlushRequest | None
    next_tick_ms: int
    events: tuple[RaftEvent, ...]


class RaftListener(Protocol):
    """The replicated state machine's side: what a driver hands ``Ready.events`` to."""

    def handle_commit(self, batch: RecordBatch) -> None:
        """A batch below the high watermark, data or control, delivered once, in order."""
        ...

    def handle_leader_change(self, leader: LeaderAndEpoch) -> None:
        """A new epoch or leader; on the new leader only after its LeaderChange commits."""
        ...

    def handle_load_snapshot(self, snapshot_id: OffsetAndEpoch) -> None:
        """See :class:`LoadSnapshot`."""
        ...


def deliver(events: Iterable[RaftEvent], *listeners: RaftListener) -> None:
    """Hand each event, in order, to each listener in turn (the driver's half of ``Ready``)."""
    for raft_event in events:
        for listener in listeners:
            if isinstance(raft_event, Committed):
                listener.handle_commit(raft_event.batch)
            elif isinstance(raft_event, LoadSnapshot):
                listener.handle_load_snapshot(raft_event.snapshot_id)
            else:
                listener.handle_leader_change(raft_event.leader)
