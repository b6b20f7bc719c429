"""ZooKeeper operations as values: what the migration reads and writes (migration-plan §5, §7).

The migration's logic never talks to ZooKeeper itself: it names reads and multi-op writes
with these types, and a :class:`ZkClient` runs them — kazoo against a real ensemble
(``runtime/zk_session.py``) or an in-memory tree in tests. Every write is a ``multi`` (a
single create is a multi of one), so fencing (a ``check`` of ``/controller_epoch`` and of
``/migration`` before the write, §5) is just more operations in the same list. Versions are
ZooKeeper's ``zkVersion`` (``-1``: any version). Results keep ZooKeeper's error names
(kazoo's exception classes, Kafka's ``KeeperException.Code``).
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from pykraft.errors import PyKraftError
from pykraft.migration.zk_tree import ZkRead

ANY_VERSION = -1


@dataclass(frozen=True, slots=True)
class CreateOp:
    """``create(path, data)``: persistent unless ``ephemeral``; with ``sequential`` ZooKeeper
    appends a 10-digit counter to the name (config and ACL change notifications)."""

    path: str
    data: bytes
    sequential: bool = False
    ephemeral: bool = False


@dataclass(frozen=True, slots=True)
class SetDataOp:
    path: str
    data: bytes
    version: int = ANY_VERSION


@dataclass(frozen=True, slots=True)
class DeleteOp:
    path: str
    version: int = ANY_VERSION


@dataclass(frozen=True, slots=True)
class CheckOp:
    """Fails the whole multi unless ``path`` is at ``version`` (the fencing checks)."""

    path: str
    version: int


ZkOp = CreateOp | SetDataOp | DeleteOp | CheckOp


class ZkError(enum.Enum):
    """ZooKeeper's result codes the migration tells apart."""

    OK = "OK"
    NO_NODE = "NONODE"
    NODE_EXISTS = "NODEEXISTS"
    BAD_VERSION = "BADVERSION"
    NOT_EMPTY = "NOTEMPTY"
    ROLLED_BACK = "RUNTIMEINCONSISTENCY"
    """Not run: another operation of the same multi failed (kazoo's RolledBackError)."""
    CONNECTION_LOSS = "CONNECTIONLOSS"
    SESSION_EXPIRED = "SESSIONEXPIRED"
    NO_AUTH = "NOAUTH"


@dataclass(frozen=True, slots=True)
class ZkOpResult:
    """One operation's outcome. ``path``: the created path (with a sequential suffix);
    ``version``: the node's zkVersion after a set (or 0 after a create)."""

    error: ZkError
    path: str | None = None
    version: int | None = None

    @property
    def ok(self) -> bool:
        return self.error is ZkError.OK


class ZkClient(Protocol):
    """What the migration needs of a ZooKeeper session: reads and atomic multis. Calls block
    (the runtime runs them off its event loop); a lost connection raises
    :class:`ZkUnavailableError` rather than returning partial results."""

    def get(self, path: str) -> ZkRead | None:
        """The node's data and zkVersion; None if it does not exist."""

    def children(self, path: str) -> list[str] | None:
        """The names of the node's children in ZooKeeper's order; None if it does not exist."""

    def multi(self, ops: Sequence[ZkOp]) -> list[ZkOpResult]:
        """Run ``ops`` atomically: all succeed, or the first failure's error and
        ``ROLLED_BACK`` for the others."""


class ZkUnavailableError(PyKraftError):
    """The ZooKeeper session could not answer (connection lost, session expired): the
    caller retries later; nothing of the request is known to have happened, except that a
    multi is atomic."""
