"""An in-memory ZooKeeper for migration tests: a tree of znodes with ZooKeeper's versions,
sequential names, ephemeral nodes per session and atomic ``multi``, behind
:class:`pykraft.migration.zk_ops.ZkClient`, so the migration's writes run without processes.

What it keeps of ZooKeeper (3.8's ``PrepRequestProcessor``, ``DataTree`` and ``DataNode``): a
create needs its parent (NONODE) and a free name (NODEEXISTS); a set bumps the node's
``version`` (its zkVersion); set, delete and check compare versions (-1: any) and fail
BADVERSION; a delete needs no children (NOTEMPTY). A node counts the children ever created
under it: a sequential create appends that count as 10 digits, and the ``cversion`` a client
sees is twice the count minus the children there now (so creates and deletes each move it
by one). A ``multi`` checks every operation against the state the earlier ones left and
applies all or nothing, answering the first failure's error and ROLLED_BACK for the others
(ZooKeeper answers OK for those before it and RUNTIMEINCONSISTENCY after; kazoo and
:mod:`pykraft.migration.zk_ops` make both ROLLED_BACK). Children come back in the order of
Java's ``HashSet`` of their names, as ``DataNode`` keeps them. Checked against ZooKeeper
3.8.4 with kazoo on random multis (results, data, versions, cversions, child order). Not
modelled: ACLs, watches, ``stat`` times, NOCHILDRENFOREPHEMERALS (no migration path creates
under an ephemeral node).

Faults: :attr:`SimZooKeeper.available` off makes every call raise
:class:`ZkUnavailableError`; :meth:`SimZooKeeper.expire` ends a session (its ephemeral nodes
vanish; its client raises until :meth:`SimZkSession.reconnect`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pykraft.java import java_hash_order, java_string_hash
from pykraft.migration.zk_ops import (
    ANY_VERSION,
    CheckOp,
    CreateOp,
    DeleteOp,
    SetDataOp,
    ZkError,
    ZkOp,
    ZkOpResult,
    ZkUnavailableError,
)
from pykraft.migration.zk_tree import ZkRead

ROOT = "/"
_CHILDREN_INITIAL_CAPACITY = 8
"""``DataNode.addChild`` makes ``new HashSet<>(8)``."""
_LOAD_FACTOR = 0.75
LOADED_SESSION = 0
"""The session owning the ephemeral nodes of a loaded dump (the ZK brokers' sessions)."""


class _OpFailedError(Exception):
    """One operation's ZooKeeper error inside :meth:`SimZooKeeper.multi` (internal)."""

    def __init__(self, error: ZkError) -> None:
        super().__init__(error.value)
        self.error = error


@dataclass(slots=True)
class _Node:
    data: bytes | None
    version: int = 0
    creates: int = 0
    """Children ever created here (``StatPersisted.cversion``): the next sequential number."""
    owner: int | None = None
    """The session of an ephemeral node, None for a persistent one."""
    children: dict[str, None] = field(default_factory=dict)
    """Child names in insertion order (an ordered set)."""
    capacity: int = _CHILDREN_INITIAL_CAPACITY
    """The children ``HashSet``'s table size: it grows with the children, never shrinks."""
    hidden: int = 0
    """Children ZooKeeper has and the sim leaves out: the root's ``/zookeeper``."""

    def add_child(self, name: str) -> None:
        self.children[name] = None
        while len(self.children) > self.capacity * _LOAD_FACTOR:
            self.capacity *= 2

    @property
    def cversion(self) -> int:
        """What a client's ``Stat`` shows (``DataNode.copyStat``)."""
        return 2 * self.creates - len(self.children) - self.hidden


def parent_of(path: str) -> str:
    return path.rpartition("/")[0] or ROOT


def _check_path(path: str) -> None:
    """ZooKeeper's ``PathUtils.validatePath``, the parts a test can get wrong."""
    if not path.startswith("/") or (path != ROOT and (path.endswith("/") or "//" in path)):
        raise ValueError(f"invalid znode path {path!r}")


class SimZooKeeper:
    """The ensemble: one tree every session sees."""

    def __init__(self) -> None:
        self._nodes: dict[str, _Node] = {ROOT: _Node(None, hidden=1)}
        self.available = True
        self._next_session = LOADED_SESSION + 1
        self._expired: set[int] = set()

    # --- sessions and faults ----------------------------------------------------------------

    def session(self) -> SimZkSession:
        """A new client session (kazoo's ``KazooClient`` once connected)."""
        session_id = self._next_session
        self._next_session += 1
        return SimZkSession(self, session_id)

    def expire(self, session_id: int) -> None:
        """The session expires: its ephemeral nodes go (children before parents)."""
        self._expired.add(session_id)
        owned = [path for path, node in self._nodes.items() if node.owner == session_id]
        for path in sorted(owned, key=lambda p: p.count("/"), reverse=True):
            self._remove(path)

    def is_expired(self, session_id: int) -> bool:
        return session_id in self._expired

    # --- reads ------------------------------------------------------------------------------

    def get(self, path: str) -> ZkRead | None:
        _check_path(path)
        node = self._nodes.get(path)
        return None if node is None else ZkRead(node.data, node.version)

    def children(self, path: str) -> list[str] | None:
        _check_path(path)
        node = self._nodes.get(path)
        if node is None:
            return None
        return java_hash_order(list(node.children), java_string_hash,
                               initial_capacity=node.capacity)

    def reads(self) -> dict[str, ZkRead]:
        """Every znode but the root, as :meth:`ZkTree.from_reads` takes them, parents first
        and children in ZooKeeper's order."""
        found: dict[str, ZkRead] = {}

        def walk(path: str) -> None:
            for name in self.children(path) or ():
                child = f"{path.rstrip('/')}/{name}"
                node = self._nodes[child]
                found[child] = ZkRead(node.data, node.version)
                walk(child)

        walk(ROOT)
        return found

    def stat(self, path: str) -> tuple[int, int, bool] | None:
        """(version, cversion, ephemeral) of a znode, None if absent."""
        node = self._nodes.get(path)
        return None if node is None else (node.version, node.cversion, node.owner is not None)

    # --- writes -----------------------------------------------------------------------------

    def multi(self, ops: Sequence[ZkOp], session_id: int) -> list[ZkOpResult]:
        """Run ``ops`` atomically for ``session_id`` (see the module's docstring)."""
        for op in ops:
            _check_path(op.path)
        scratch = {path: dataclasses.replace(node, children=dict(node.children))
                   for path, node in self._nodes.items()}
        results: list[ZkOpResult] = []
        for index, op in enumerate(ops):
            try:
                results.append(_apply(scratch, op, session_id))
            except _OpFailedError as failure:
                return [ZkOpResult(failure.error) if i == index else ZkOpResult(ZkError.ROLLED_BACK)
                        for i in range(len(ops))]
        self._nodes = scratch
        return results

    def _remove(self, path: str) -> None:
        del self._nodes[path]
        parent = self._nodes[parent_of(path)]
        del parent.children[path.rpartition("/")[2]]

    # --- dumps ------------------------------------------------------------------------------

    @classmethod
    def from_dump(cls, dump: Mapping[str, Mapping[str, Any]]) -> SimZooKeeper:
        """A tree from ``captured/znodes-*.json`` (path -> raw, version, cversion, ephemeral;
        ``data`` is ignored): parents must be in the dump; ephemeral nodes belong to
        :data:`LOADED_SESSION`. A dump does not say in which order children were created,
        which decides the order of two in one bucket: they are taken in path order."""
        zk = cls()
        for path in sorted(dump, key=lambda p: (p.count("/"), p)):
            _check_path(path)
            entry = dump[path]
            raw = entry["raw"]
            data = None if raw is None else str(raw).encode("utf-8")
            node = _Node(data, int(entry["version"]),
                         owner=LOADED_SESSION if entry.get("ephemeral") else None)
            if path == ROOT:
                zk._nodes[ROOT] = dataclasses.replace(node, hidden=1)
                continue
            parent = zk._nodes.get(parent_of(path))
            if parent is None:
                raise ValueError(f"dump has {path} without its parent")
            parent.add_child(path.rpartition("/")[2])
            zk._nodes[path] = node
        for path, node in zk._nodes.items():
            seen = int(dump[path]["cversion"]) + len(node.children) + node.hidden \
                if path in dump else 0
            if seen % 2:
                raise ValueError(f"dump has {path} at cversion {dump[path]['cversion']} with "
                                 f"{len(node.children)} children: ZooKeeper cannot")
            node.creates = seen // 2
        return zk

    def dump(self) -> dict[str, dict[str, object]]:
        """The tree in the shape of ``captured/znodes-*.json`` (without ``data``), by path."""
        return {path: {"raw": None if node.data is None else node.data.decode("utf-8"),
                       "version": node.version, "cversion": node.cversion,
                       "ephemeral": node.owner is not None}
                for path, node in sorted(self._nodes.items())}


def _apply(nodes: dict[str, _Node], op: ZkOp, session_id: int) -> ZkOpResult:
    """One operation on ``nodes`` (the scratch copy of a multi), ZooKeeper's checks in its
    order; raises :class:`_OpFailedError`."""
    if isinstance(op, CreateOp):
        return _create(nodes, op, session_id)
    node = nodes.get(op.path)
    if node is None:
        raise _OpFailedError(ZkError.NO_NODE)
    if op.version not in (ANY_VERSION, node.version):
        raise _OpFailedError(ZkError.BAD_VERSION)
    if isinstance(op, SetDataOp):
        node.data = op.data
        node.version += 1
        return ZkOpResult(ZkError.OK, op.path, node.version)
    if isinstance(op, DeleteOp):
        if op.path == ROOT:
            raise ValueError("the root znode cannot be deleted")
        if node.children:
            raise _OpFailedError(ZkError.NOT_EMPTY)
        del nodes[op.path]
        del nodes[parent_of(op.path)].children[op.path.rpartition("/")[2]]
        return ZkOpResult(ZkError.OK, op.path)
    assert isinstance(op, CheckOp)
    return ZkOpResult(ZkError.OK, op.path, node.version)


def _create(nodes: dict[str, _Node], op: CreateOp, session_id: int) -> ZkOpResult:
    if op.path == ROOT:
        raise _OpFailedError(ZkError.NODE_EXISTS)
    parent = nodes.get(parent_of(op.path))
    if parent is None:
        raise _OpFailedError(ZkError.NO_NODE)
    path = f"{op.path}{parent.creates:010d}" if op.sequential else op.path
    if path in nodes:
        raise _OpFailedError(ZkError.NODE_EXISTS)
    parent.add_child(path.rpartition("/")[2])
    parent.creates += 1
    nodes[path] = _Node(op.data, owner=session_id if op.ephemeral else None)
    return ZkOpResult(ZkError.OK, path, 0)


class SimZkSession:
    """One client session of a :class:`SimZooKeeper`: a :class:`ZkClient`."""

    def __init__(self, zk: SimZooKeeper, session_id: int) -> None:
        self.zk = zk
        self.session_id = session_id

    def reconnect(self) -> None:
        """A new session after an expiry (kazoo reconnects by itself)."""
        self.session_id = self.zk.session().session_id

    def _ready(self) -> None:
        if not self.zk.available:
            raise ZkUnavailableError("ZooKeeper is unavailable (connection loss)")
        if self.zk.is_expired(self.session_id):
            raise ZkUnavailableError(f"session {self.session_id} expired")

    def get(self, path: str) -> ZkRead | None:
        self._ready()
        return self.zk.get(path)

    def children(self, path: str) -> list[str] | None:
        self._ready()
        return self.zk.children(path)

    def multi(self, ops: Sequence[ZkOp]) -> list[ZkOpResult]:
        self._ready()
        return self.zk.multi(ops, self.session_id)
