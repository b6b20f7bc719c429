"""The state of one replica's move between log directories (AlterReplicaLogDirs): Kafka's
``ReplicaAlterLogDirsThread.PromotionState``, sans I/O.

Interface::

    move = LogDirMove(original_dir=a, target_dir=b, assigns=True)
    step = move.caught_up()    # the future log holds all the current one does: what now
    move.accepted()            # the controller took the AssignReplicasToDirs
    move.revert_to             # cancelled now: the directory to assign back (or None)

A move copies (COPYING) until its future log catches up with the current one; then, where
the controller tracks directories (``assigns``: metadata.version 3.7-IV2 and directory
ids), it asks the controller to place the replica in the target directory (QUEUED) and
keeps copying; once the controller accepted it (ACCEPTED), the next catch-up swaps the
logs (DONE). Kafka assigns first so that the metadata never names a directory the replica
has left; a move cancelled after asking assigns the original directory back. Without
``assigns`` the first catch-up swaps.
"""

from __future__ import annotations

import enum
import uuid
from dataclasses import dataclass


class MoveState(enum.Enum):
    COPYING = "copying"
    QUEUED = "queued"
    ACCEPTED = "accepted"
    DONE = "done"


class Step(enum.Enum):
    """What a catch-up calls for."""

    ASSIGN = "assign"  # send AssignReplicasToDirs for the target directory
    WAIT = "wait"      # the controller has not answered yet: copy on
    SWAP = "swap"      # replace the current log with the future one


@dataclass(slots=True)
class LogDirMove:
    """One partition's move; see the module docstring."""

    original_dir: uuid.UUID | None
    target_dir: uuid.UUID | None
    assigns: bool
    state: MoveState = MoveState.COPYING

    def caught_up(self) -> Step:
        """The future log reached the current log's end: the next step."""
        if self.state is MoveState.DONE:
            raise RuntimeError("a replica's move swapped its logs twice")
        if self.state is MoveState.COPYING and self.assigns:
            self.state = MoveState.QUEUED
            return Step.ASSIGN
        if self.state is MoveState.QUEUED:
            return Step.WAIT
        self.state = MoveState.DONE
        return Step.SWAP

    def accepted(self) -> None:
        """The controller placed the replica in the target directory."""
        if self.state is MoveState.QUEUED:
            self.state = MoveState.ACCEPTED

    @property
    def revert_to(self) -> uuid.UUID | None:
        """Cancelled now, the directory the controller must be told again: the original,
        once the target may have been assigned (Kafka's ``maybeInconsistentMetadata``)."""
        if self.state in (MoveState.QUEUED, MoveState.ACCEPTED):
            return self.original_dir
        return None
