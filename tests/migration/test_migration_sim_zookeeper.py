"""The simulated ZooKeeper keeps ZooKeeper's rules: multi is atomic (checked against an
independent model of single operations), versions, cversions and sequential names move as
ZooKeeper moves them, sessions own their ephemeral nodes, and captured dumps load and dump
back unchanged."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from migration_captures import CAPTURED, znode_dump

from pykraft.migration.zk_ops import (
    CheckOp,
    CreateOp,
    DeleteOp,
    SetDataOp,
    ZkError,
    ZkOp,
    ZkUnavailableError,
)
from pykraft.testing.sim_zookeeper import LOADED_SESSION, SimZooKeeper


@dataclass
class _Model:
    """ZooKeeper's rules for one operation at a time, written plainly: ``creates`` counts
    the children ever created under a node (its sequential numbers); a client sees
    ``cversion`` = creates + deletes."""

    data: dict[str, bytes | None] = field(default_factory=lambda: {"/": None})
    version: dict[str, int] = field(default_factory=lambda: {"/": 0})
    creates: dict[str, int] = field(default_factory=lambda: {"/": 0})
    deletes: dict[str, int] = field(default_factory=lambda: {"/": 0})

    def children(self, path: str) -> list[str]:
        prefix = path.rstrip("/") + "/"
        return [p for p in self.data if p.startswith(prefix) and "/" not in p[len(prefix):]]

    def apply(self, op: ZkOp) -> ZkError:
        parent = op.path.rpartition("/")[0] or "/"
        if isinstance(op, CreateOp):
            if parent not in self.data:
                return ZkError.NO_NODE
            path = f"{op.path}{self.creates[parent]:010d}" if op.sequential else op.path
            if path in self.data:
                return ZkError.NODE_EXISTS
            self.data[path], self.version[path] = op.data, 0
            self.creates[path] = self.deletes[path] = 0
            self.creates[parent] += 1
            return ZkError.OK
        if op.path not in self.data:
            return ZkError.NO_NODE
        if op.version not in (-1, self.version[op.path]):
            return ZkError.BAD_VERSION
        if isinstance(op, SetDataOp):
            self.data[op.path] = op.data
            self.version[op.path] += 1
        elif isinstance(op, DeleteOp):
            if self.children(op.path):
                return ZkError.NOT_EMPTY
            for table in (self.data, self.version, self.creates, self.deletes):
                del table[op.path]
            self.deletes[parent] += 1
        return ZkError.OK

    def dump(self) -> dict[str, tuple[bytes | None, int, int]]:
        hidden = {"/": 1}  # ZooKeeper's /zookeeper, a child of the root never created
        return {p: (self.data[p], self.version[p],
                    self.creates[p] + self.deletes[p] - hidden.get(p, 0)) for p in self.data}


def _sim_state(zk: SimZooKeeper) -> dict[str, tuple[bytes | None, int, int]]:
    found = {}
    for path, node in zk.dump().items():
        raw = node["raw"]
        found[path] = (None if raw is None else str(raw).encode(), int(str(node["version"])),
                       int(str(node["cversion"])))
    return found


_PATHS = st.sampled_from(["/a", "/b", "/a/x", "/a/y", "/b/x", "/a/x/z", "/c/x"])
_VERSIONS = st.sampled_from([-1, 0, 1, 2])
_DATA = st.sampled_from([b"", b"1", b"22"])
_OPS = st.one_of(
    st.builds(CreateOp, _PATHS, _DATA, st.booleans()),
    st.builds(SetDataOp, _PATHS, _DATA, _VERSIONS),
    st.builds(DeleteOp, _PATHS, _VERSIONS),
    st.builds(CheckOp, _PATHS, _VERSIONS),
)


@settings(max_examples=300, deadline=None)
@given(setup=st.lists(_OPS, max_size=12), ops=st.lists(_OPS, min_size=1, max_size=6))
def test_multi_applies_all_or_nothing_and_names_the_first_failure(
        setup: list[ZkOp], ops: list[ZkOp]) -> None:
    zk, model = SimZooKeeper(), _Model()
    for op in setup:  # the same start on both: each setup op alone
        assert zk.multi([op], 1)[0].error is model.apply(op)
    before = _sim_state(zk)
    assert before == model.dump()
    results = zk.multi(ops, 1)
    errors = [model.apply(op) for op in ops]
    failed = next((i for i, e in enumerate(errors) if e is not ZkError.OK), None)
    if failed is None:
        assert [r.error for r in results] == [ZkError.OK] * len(ops)
        assert _sim_state(zk) == model.dump()
    else:
        assert [r.error for r in results] == [
            errors[failed] if i == failed else ZkError.ROLLED_BACK for i in range(len(ops))]
        assert _sim_state(zk) == before


def test_sequential_names_count_the_children_created() -> None:
    zk = SimZooKeeper()
    zk.multi([CreateOp("/changes", b"")], 1)
    first = zk.multi([CreateOp("/changes/c_", b"1", sequential=True)], 1)[0]
    zk.multi([CreateOp("/changes/other", b""), DeleteOp("/changes/other")], 1)
    second = zk.multi([CreateOp("/changes/c_", b"2", sequential=True)], 1)[0]
    # the number counts creates only (ZooKeeper 3.8.4 gave the same on this sequence)
    assert (first.path, second.path) == ("/changes/c_0000000000", "/changes/c_0000000002")
    assert zk.stat("/changes") == (0, 4, False)


def test_set_returns_the_new_version_and_check_fails_on_an_old_one() -> None:
    zk = SimZooKeeper()
    zk.multi([CreateOp("/n", b"a")], 1)
    assert zk.multi([SetDataOp("/n", b"b", 0)], 1)[0].version == 1
    assert [r.error for r in zk.multi([CheckOp("/n", 0), SetDataOp("/n", b"c")], 1)] == \
        [ZkError.BAD_VERSION, ZkError.ROLLED_BACK]
    read = zk.get("/n")
    assert read is not None and (read.raw, read.version) == (b"b", 1)


def test_an_expired_session_loses_its_ephemeral_nodes_and_cannot_call() -> None:
    zk = SimZooKeeper()
    owner, other = zk.session(), zk.session()
    other.multi([CreateOp("/ids", b"")])
    owner.multi([CreateOp("/ids/1", b"x", ephemeral=True)])
    other.multi([CreateOp("/ids/2", b"y", ephemeral=True)])
    zk.expire(owner.session_id)
    assert other.children("/ids") == ["2"]
    assert zk.stat("/ids") == (0, 3, False)
    with pytest.raises(ZkUnavailableError):
        owner.get("/ids")
    owner.reconnect()
    assert owner.children("/ids") == ["2"]


def test_an_unavailable_ensemble_answers_no_call() -> None:
    zk = SimZooKeeper()
    client = zk.session()
    zk.available = False
    for call in (lambda: client.get("/"), lambda: client.children("/"),
                 lambda: client.multi([CreateOp("/a", b"")])):
        with pytest.raises(ZkUnavailableError):
            call()
    zk.available = True
    assert client.multi([CreateOp("/a", b"")])[0].ok


def test_children_come_in_java_hash_set_order() -> None:
    """The reference run created t-rf3, t-compact, t-plain, then __consumer_offsets; the load
    read /brokers/topics' children as its TopicRecords show (t-rf3 and __consumer_offsets
    share a bucket of the HashSet, so their creation order decides)."""
    zk = SimZooKeeper()
    zk.multi([CreateOp("/t", b"")] + [CreateOp(f"/t/{name}", b"") for name in
                                        ("t-rf3", "t-compact", "t-plain", "__consumer_offsets")], 1)
    assert zk.children("/t") == ["t-plain", "t-compact", "t-rf3", "__consumer_offsets"]


@pytest.mark.parametrize("name", sorted(p.name for p in CAPTURED.glob("znodes-*.json")))
def test_a_captured_dump_loads_and_dumps_back(name: str) -> None:
    dump = znode_dump(name)
    zk = SimZooKeeper.from_dump(dump)
    assert zk.dump() == {path: {key: node[key] for key in ("raw", "version", "cversion",
                                                           "ephemeral")}
                         for path, node in sorted(dump.items())}
    ephemeral = [path for path, node in dump.items() if node["ephemeral"]]
    zk.expire(LOADED_SESSION)
    assert all(zk.get(path) is None for path in ephemeral)


def test_a_dump_without_a_parent_is_refused() -> None:
    with pytest.raises(ValueError, match="without its parent"):
        SimZooKeeper.from_dump({"/a/b": {"raw": None, "version": 0, "cversion": 0,
                                         "ephemeral": False}})
