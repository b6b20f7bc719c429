"""The persisted election state (Kafka's ``quorum-state`` file) and where it is kept.

Writes are synchronous and durable by contract: a vote is on disk before any response that
reports it exists, which is what keeps a restarted voter from voting twice in one epoch.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True, slots=True)
class ElectionState:
    """(epoch, leader?, vote?) as stored; at most one of leader and vote matters for restart."""

    epoch: int
    leader_id: int | None = None
    voted_id: int | None = None
    voted_directory_id: uuid.UUID | None = None


class QuorumStateStore(Protocol):
    def read(self) -> ElectionState | None:
        """The last written state, None if nothing was ever written."""
        ...

    def write(self, state: ElectionState) -> None:
        """Durably replace the stored state before returning."""
        ...


class MemoryQuorumStateStore:
    """A store that survives simulated crashes (it models the small atomic file)."""

    def __init__(self, initial: ElectionState | None = None) -> None:
        self._state = initial
        self.writes = 0

    def read(self) -> ElectionState | None:
        return self._state

    def write(self, state: ElectionState) -> None:
        self._state = state
        self.writes += 1

    def wipe(self) -> None:
        self._state = None
