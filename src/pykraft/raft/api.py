"""What the core hands back to its driver: messages, flushes, timers and listener events.

The driver's obligations (persist-before-send): send ``requests`` and ``responses`` as
given, perform ``flush`` asynchronously and report it with ``flush_completed``, and call
``tick`` no later than ``next_tick_ms``. The core already withholds every message whose
meaning depends on unflushed data.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from pykraft.raft.log import OffsetAndEpoch
from pykraft.raft.rpc import RaftRequest, RaftResponse
from pykraft.records.batch import RecordBatch


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
class Ready:
    """Everything produced since the previous drain (etcd's ``Ready``)."""

    requests: tuple[OutboundRequest, ...]
    responses: tuple[OutboundResponse, ...]
    flush: FlushRequest | None
    next_tick_ms: int


class RaftListener(Protocol):
    """The replicated state machine's side of the core."""

    def handle_commit(self, batch: RecordBatch) -> None:
        """A batch below the high watermark, data or control, delivered once, in order."""
        ...

    def handle_leader_change(self, leader: LeaderAndEpoch) -> None:
        """A new epoch or leader; on the new leader only after its LeaderChange commits."""
        ...

    def handle_load_snapshot(self, snapshot_id: OffsetAndEpoch) -> None:
        """Placeholder until snapshots exist: never called yet."""
        ...
