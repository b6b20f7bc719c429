"""``read_tree`` reads what the load needs through a ``ZkClient``, in ZooKeeper's child order.

The client here is a small in-memory fake over a captured znode dump (the full simulated
ZooKeeper lives in ``pykraft.testing``); it records every call, so the test also pins which
znodes are read.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

import pytest
from migration_captures import reads, znode_dump

from pykraft.migration.load import migration_load
from pykraft.migration.zk_ops import ZkClient, ZkOp, ZkOpResult, ZkUnavailableError
from pykraft.migration.zk_reads import read_tree
from pykraft.migration.zk_tree import ZkRead, ZkTree

PHASE_A = "znodes-A-zk-cluster.json"


class DumpClient:
    """A read-only ZooKeeper over ``path -> ZkRead``: children in ``order``'s order (sorted
    by default; ZooKeeper's own order is a hash order), every call logged."""

    def __init__(self, nodes: dict[str, ZkRead], *, reverse: bool = False,
                 fail_on: str | None = None) -> None:
        self.nodes = nodes
        self.reverse = reverse
        self.fail_on = fail_on
        self.calls: list[tuple[str, str]] = []

    def _log(self, call: str, path: str) -> None:
        self.calls.append((call, path))
        if path == self.fail_on:
            raise ZkUnavailableError("connection lost")

    def get(self, path: str) -> ZkRead | None:
        self._log("get", path)
        return self.nodes.get(path)

    def children(self, path: str) -> list[str] | None:
        self._log("children", path)
        if path not in self.nodes and path != "/":
            return None
        prefix = path.rstrip("/") + "/"
        names = sorted({p[len(prefix):] for p in self.nodes
                        if p.startswith(prefix) and "/" not in p[len(prefix):]})
        return names[::-1] if self.reverse else names

    def multi(self, ops: Sequence[ZkOp]) -> list[ZkOpResult]:
        raise AssertionError("read_tree never writes")


def phase_a() -> dict[str, ZkRead]:
    nodes: dict[str, ZkRead] = reads(znode_dump(PHASE_A))
    return nodes


def test_it_is_a_zk_client() -> None:
    client: ZkClient = DumpClient({})
    assert read_tree(client) == ZkTree()


def test_the_tree_read_is_the_tree_of_every_znode() -> None:
    """Reading phase A's ZooKeeper gives the tree built from the whole dump, and the load
    of it gives the same records."""
    nodes = phase_a()
    tree = read_tree(DumpClient(nodes))
    assert tree == ZkTree.from_reads(nodes)
    assert [t.name for t in tree.topics] == ["__consumer_offsets", "t-compact", "t-plain",
                                             "t-rf3"]
    assert tree.broker_ids == (1, 2, 3)
    assert tree.cluster_id is not None and tree.controller is not None
    assert tree.controller_epoch is not None
    assert (migration_load(tree, random.Random(1)).records
            == migration_load(ZkTree.from_reads(nodes), random.Random(1)).records)


def test_children_keep_zookeepers_order() -> None:
    tree = read_tree(DumpClient(phase_a(), reverse=True))
    assert [t.name for t in tree.topics] == ["t-rf3", "t-plain", "t-compact",
                                             "__consumer_offsets"]
    assert [c.name for c in tree.broker_configs] == ["<default>", "1"]  # "1" sorts first


def test_it_reads_only_what_the_migration_reads() -> None:
    client = DumpClient(phase_a())
    read_tree(client)
    gets = {path for call, path in client.calls if call == "get"}
    listed = [path for call, path in client.calls if call == "children"]
    assert len(gets) == len([p for c, p in client.calls if c == "get"])  # each read once
    assert len(set(listed)) == len(listed)
    assert {p for p in gets if not p.startswith(("/brokers/topics/", "/config/topics/"))} == {
        "/config/brokers/<default>", "/config/brokers/1", "/config/users/alice",
        "/config/clients/app1", "/config/ips/127.0.0.2", "/latest_producer_id_block",
        "/kafka-acl/Topic/t-rf3", "/kafka-acl-extended/prefixed/Group/g-",
        "/brokers/ids/1", "/brokers/ids/2", "/brokers/ids/3",
        "/cluster/id", "/controller", "/controller_epoch", "/migration"}
    assert "/brokers/topics/t-rf3/partitions/2/state" in gets
    assert not any(p.startswith(("/consumers", "/isr_change", "/admin/reassign", "/feature",
                                 "/log_dir_event", "/config/changes")) for p in gets | set(listed))


def test_a_topic_pending_deletion_is_not_read() -> None:
    nodes = phase_a()
    nodes["/admin/delete_topics"] = ZkRead(None)
    nodes["/admin/delete_topics/t-plain"] = ZkRead(None)
    client = DumpClient(nodes)
    tree = read_tree(client)
    assert tree.pending_deletions == ("t-plain",)
    assert "t-plain" not in [t.name for t in tree.topics]
    assert not any("t-plain" in path for call, path in client.calls if call == "get")
    assert [r.message.name for r in migration_load(tree, random.Random(0)).records
            if r.type_name == "TOPIC_RECORD"] == ["__consumer_offsets", "t-compact", "t-rf3"]


def test_a_znode_gone_between_list_and_read_is_left_out() -> None:
    """A topic deleted (or a broker gone) after its parent was listed: the child list still
    names it, the read finds nothing."""
    nodes = phase_a()

    class Vanishing(DumpClient):
        def get(self, path: str) -> ZkRead | None:
            found = super().get(path)
            return None if path in ("/brokers/topics/t-plain", "/brokers/ids/2") else found

    tree = read_tree(Vanishing(nodes))
    assert [t.name for t in tree.topics] == ["__consumer_offsets", "t-compact", "t-rf3"]
    assert tree.broker_ids == (1, 3)


def test_a_lost_connection_fails_the_read() -> None:
    with pytest.raises(ZkUnavailableError):
        read_tree(DumpClient(phase_a(), fail_on="/config/users"))
