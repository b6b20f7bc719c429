"""The persisted election state (Kafka's ``quorum-state`` file) and where it is kept.

Writes are synchronous and durable by contract: a vote is on disk before any response that
reports it exists, which is what keeps a restarted voter from voting twice in one epoch.
A store refuses (``StorageError``, nothing written) a state it could not read back, so the
core, which writes before it acts, never acts in such a state. ``kraft_version`` is the
finalized kraft.version when the state is written: from 1 on, the vote's directory id is
kept too (Kafka's ``FileQuorumStateStore`` picks the file's data version from it).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Protocol

from pykraft.errors import StorageError
from pykraft.raft.limits import INT32_MAX


@dataclass(frozen=True, slots=True)
class ElectionState:
    """(epoch, leader?, vote?) as stored; at most one of leader and vote matters for restart."""

    epoch: int
    leader_id: int | None = None
    voted_id: int | None = None
    voted_directory_id: uuid.UUID | None = None


def check_storable(state: ElectionState) -> None:
    """Refuse a state whose epoch or ids the int32 fields of ``quorum-state`` cannot hold."""
    fields = {"epoch": state.epoch, "leader_id": state.leader_id, "voted_id": state.voted_id}
    for name, value in fields.items():
        if value is not None and not 0 <= value <= INT32_MAX:
            raise StorageError(f"refusing to store election state {state}: {name} {value} "
                               f"is outside 0..{INT32_MAX}")


class QuorumStateStore(Protocol):
    def read(self) -> ElectionState | None:
        """The last written state, None if nothing was ever written."""
        ...

    def write(self, state: ElectionState, kraft_version: int = 0) -> None:
        """Durably replace the stored state before returning; refuse (``StorageError``,
        nothing written) a state :func:`check_storable` refuses."""
        ...


class MemoryQuorumStateStore:
    """A store that survives simulated crashes (it models the small atomic file, whose
    version 0 has no room for the vote's directory id)."""

    def __init__(self, initial: ElectionState | None = None) -> None:
        self._state = initial
        self.writes = 0

    def read(self) -> ElectionState | None:
        return self._state

    def write(self, state: ElectionState, kraft_version: int = 0) -> None:
        check_storable(state)
        if kraft_version < 1 and state.voted_directory_id is not None:
            state = ElectionState(state.epoch, state.leader_id, state.voted_id)
        self._state = state
        self.writes += 1

    def wipe(self) -> None:
        self._state = None
