"""Reading a ZooKeeper-mode cluster's metadata through a :class:`ZkClient` into a
:class:`ZkTree`: the znodes the load reads (migration-plan §6), plus ``/controller``,
``/controller_epoch``, ``/migration``, ``/brokers/ids/*`` and ``/cluster/id``.

Sans-I/O: the client does the I/O (kazoo in ``runtime/zk_session.py``, an in-memory tree in
tests), and its calls block. Children are taken in the order ``children`` returns them, which
:meth:`ZkTree.from_reads` keeps. A znode listed by its parent but gone when read (a topic
deleted meanwhile, a broker's ephemeral registration) is left out, as Kafka's readers skip a
missing znode. As Kafka's load, topics pending deletion (children of
``/admin/delete_topics``) are not read: their names are the tree's ``pending_deletions``.
"""

from __future__ import annotations

from pykraft.migration.zk_ops import ZkClient
from pykraft.migration.zk_tree import ZkRead, ZkTree

__all__ = ["read_tree"]

#: the persistent container znodes Kafka's ZK brokers create with no data
_CONTAINER = ZkRead(None)
_ACL_STORES = ("/kafka-acl", "/kafka-acl-extended/prefixed")
_STATE_ZNODES = ("/cluster/id", "/controller", "/controller_epoch", "/migration")


def read_tree(client: ZkClient) -> ZkTree:
    """Every znode the migration reads, typed; :class:`ZkUnavailableError` from the client
    if ZooKeeper stops answering meanwhile (nothing is half-read: call again)."""
    return ZkTree.from_reads(_Reader(client).read())


class _Reader:
    """The reads in Kafka's order, gathered by path (insertion order = child order)."""

    def __init__(self, client: ZkClient) -> None:
        self._client = client
        self._reads: dict[str, ZkRead] = {}

    def read(self) -> dict[str, ZkRead]:
        deleting = self._children("/admin/delete_topics", register=True)
        for topic in self._children("/brokers/topics"):
            if topic not in deleting:
                self._topic(topic)
        self._entities("/config/brokers")
        users = self._entities("/config/users")
        self._entities("/config/clients")
        for user in users:
            self._entities(f"/config/users/{user}/clients")
        self._entities("/config/ips")
        self._get("/latest_producer_id_block")
        for store in _ACL_STORES:
            self._acl_store(store)
        self._entities("/delegation_token/tokens")
        self._entities("/brokers/ids")
        for path in _STATE_ZNODES:
            self._get(path)
        return self._reads

    def _children(self, path: str, *, register: bool = False) -> list[str]:
        """``path``'s children in ZooKeeper's order; ``register`` records each as a data-less
        znode (what the tree needs of a container it never reads)."""
        names = self._client.children(path) or []
        if register:
            if names:
                self._reads.setdefault(path, _CONTAINER)
            for name in names:
                self._reads.setdefault(f"{path}/{name}", _CONTAINER)
        return names

    def _get(self, path: str) -> bool:
        found = self._client.get(path)
        if found is not None:
            self._reads[path] = found
        return found is not None

    def _entities(self, parent: str) -> list[str]:
        """Read each child of ``parent``; the names listed."""
        names = self._children(parent)
        for name in names:
            self._get(f"{parent}/{name}")
        return names

    def _topic(self, topic: str) -> None:
        path = f"/brokers/topics/{topic}"
        if not self._get(path):
            return
        self._get(f"/config/topics/{topic}")
        for partition in self._children(f"{path}/partitions", register=True):
            self._get(f"{path}/partitions/{partition}/state")

    def _acl_store(self, store: str) -> None:
        for resource_type in self._children(store, register=True):
            self._entities(f"{store}/{resource_type}")
