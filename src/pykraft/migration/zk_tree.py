"""The typed read model of a ZooKeeper-mode cluster's metadata: what the load turns into
records and the sync compares with the image (migration-plan §13).

The runtime reads the znodes (data and zkVersion per path) and calls
:meth:`ZkTree.from_reads`; tests build it from a captured dump. Children keep the order of
the reads, which is ZooKeeper's child order when the runtime reads them that way.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from pykraft.image.acls import PatternType, ResourceType
from pykraft.migration.znodes import (
    AclResourceZNode,
    ClusterIdZNode,
    ConfigEntityZNode,
    ControllerEpochZNode,
    ControllerZNode,
    DelegationTokenZNode,
    MigrationZNode,
    PartitionStateZNode,
    ProducerIdBlockZNode,
    TopicZNode,
    ZNode,
    ZNodeDecodeError,
    decode_znode,
    zk_enum_name,
)

T = TypeVar("T", bound=ZNode)

DEFAULT_ENTITY = "<default>"
"""ZooKeeper's name of a default config or quota entity (``ZooKeeperInternals``)."""


@dataclass(frozen=True, slots=True)
class ZkRead:
    """One znode as read: its data (None for a container) and its zkVersion."""

    raw: bytes | None
    version: int = 0


@dataclass(frozen=True, slots=True)
class Versioned(Generic[T]):
    """A decoded znode and the zkVersion it was read at (the fencing and epoch input)."""

    value: T
    zk_version: int


@dataclass(frozen=True, slots=True)
class ZkTopic:
    """A topic: its assignment znode, its config znode, and its partitions' state znodes
    (a partition state's zkVersion is the KRaft partition epoch)."""

    name: str
    assignment: TopicZNode
    config: ConfigEntityZNode | None
    states: Mapping[int, Versioned[PartitionStateZNode]] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ConfigEntity:
    """One ``/config/<type>/<name>`` znode; ``name`` as stored (sanitized, ``<default>``;
    for a user's client ``<user>/clients/<client>``)."""

    name: str
    config: ConfigEntityZNode


@dataclass(frozen=True, slots=True)
class AclResource:
    """The ACLs of one resource pattern, from ``/kafka-acl`` or ``/kafka-acl-extended``."""

    resource_type: ResourceType
    pattern_type: PatternType
    name: str
    acls: Versioned[AclResourceZNode]


@dataclass(frozen=True, slots=True)
class ZkTree:
    """Every znode the migration reads, typed."""

    topics: tuple[ZkTopic, ...] = ()
    pending_deletions: tuple[str, ...] = ()
    broker_configs: tuple[ConfigEntity, ...] = ()
    user_configs: tuple[ConfigEntity, ...] = ()
    client_configs: tuple[ConfigEntity, ...] = ()
    user_client_configs: tuple[ConfigEntity, ...] = ()
    ip_configs: tuple[ConfigEntity, ...] = ()
    producer_id_block: ProducerIdBlockZNode | None = None
    acls: tuple[AclResource, ...] = ()
    delegation_tokens: tuple[DelegationTokenZNode, ...] = ()
    broker_ids: tuple[int, ...] = ()
    cluster_id: str | None = None
    controller: Versioned[ControllerZNode] | None = None
    controller_epoch: Versioned[ControllerEpochZNode] | None = None
    migration: Versioned[MigrationZNode] | None = None

    @classmethod
    def from_reads(cls, reads: Mapping[str, ZkRead]) -> ZkTree:
        """Build the tree from znodes read by path; a znode with bad data raises
        :class:`ZNodeDecodeError` naming its path."""
        return _Builder(reads).tree()


def desanitize(name: str) -> str:
    """Kafka's ``Sanitizer.desanitize`` of a znode name (``URLDecoder.decode``)."""
    return urllib.parse.unquote_plus(name, errors="strict")


class _Builder:
    def __init__(self, reads: Mapping[str, ZkRead]) -> None:
        self._reads = reads
        self._children: dict[str, list[str]] = {}
        for path in reads:
            parent, _, child = path.rpartition("/")
            if child:
                self._children.setdefault(parent or "/", []).append(child)

    def children(self, path: str) -> list[str]:
        return self._children.get(path, [])

    def _read(self, path: str, cls: type[T]) -> Versioned[T] | None:
        read = self._reads.get(path)
        if read is None or read.raw is None:
            return None
        value = decode_znode(path, read.raw)
        if not isinstance(value, cls):  # the path table and the caller disagree: a bug
            raise ZNodeDecodeError(f"{path}: decoded as {type(value).__name__}, "
                                   f"expected {cls.__name__}")
        return Versioned(value, read.version)

    def _value(self, path: str, cls: type[T]) -> T | None:
        found = self._read(path, cls)
        return None if found is None else found.value

    def tree(self) -> ZkTree:
        cluster = self._value("/cluster/id", ClusterIdZNode)
        return ZkTree(
            topics=tuple(self._topic(name) for name in self.children("/brokers/topics")),
            pending_deletions=tuple(self.children("/admin/delete_topics")),
            broker_configs=self._configs("/config/brokers"),
            user_configs=self._configs("/config/users"),
            client_configs=self._configs("/config/clients"),
            user_client_configs=tuple(
                ConfigEntity(f"{user}/clients/{entity.name}", entity.config)
                for user in self.children("/config/users")
                for entity in self._configs(f"/config/users/{user}/clients")),
            ip_configs=self._configs("/config/ips"),
            producer_id_block=self._value("/latest_producer_id_block", ProducerIdBlockZNode),
            acls=self._acls(),
            delegation_tokens=tuple(
                token for token_id in self.children("/delegation_token/tokens")
                if (token := self._value(f"/delegation_token/tokens/{token_id}",
                                         DelegationTokenZNode)) is not None),
            broker_ids=tuple(sorted(int(b) for b in self.children("/brokers/ids")
                                    if b.isdigit())),
            cluster_id=None if cluster is None else cluster.id,
            controller=self._read("/controller", ControllerZNode),
            controller_epoch=self._read("/controller_epoch", ControllerEpochZNode),
            migration=self._read("/migration", MigrationZNode),
        )

    def _topic(self, name: str) -> ZkTopic:
        path = f"/brokers/topics/{name}"
        assignment = self._value(path, TopicZNode)
        if assignment is None:
            raise ZNodeDecodeError(f"{path}: a topic znode without data")
        states = {int(p): state for p in self.children(f"{path}/partitions") if p.isdigit()
                  if (state := self._read(f"{path}/partitions/{p}/state",
                                          PartitionStateZNode)) is not None}
        return ZkTopic(name, assignment, self._value(f"/config/topics/{name}",
                                                     ConfigEntityZNode), states)

    def _configs(self, parent: str) -> tuple[ConfigEntity, ...]:
        return tuple(ConfigEntity(name, config) for name in self.children(parent)
                     if (config := self._value(f"{parent}/{name}", ConfigEntityZNode))
                     is not None)

    def _acls(self) -> tuple[AclResource, ...]:
        stores = [("/kafka-acl", PatternType.LITERAL)] + [
            (f"/kafka-acl-extended/{pattern}", PatternType.parse(pattern))
            for pattern in self.children("/kafka-acl-extended")]
        found = []
        for store, pattern_type in stores:
            if pattern_type is PatternType.UNKNOWN:
                raise ZNodeDecodeError(f"{store}: unknown ACL pattern type")
            for type_name in self.children(store):
                resource_type = ResourceType.parse(zk_enum_name(type_name))
                if resource_type is ResourceType.UNKNOWN:
                    raise ZNodeDecodeError(f"{store}/{type_name}: unknown ACL resource type")
                for name in self.children(f"{store}/{type_name}"):
                    acls = self._read(f"{store}/{type_name}/{name}", AclResourceZNode)
                    if acls is not None:
                        found.append(AclResource(resource_type, pattern_type, name, acls))
        return tuple(found)
