"""KRaft -> ZooKeeper writes while migrating (migration-plan §7; Kafka's
``KRaftMigrationZkWriter`` and the write halves of the ``Zk*MigrationClient``s).

:func:`sync` (``handleSnapshot``) compares an image with the ZooKeeper read model and
:func:`dual_write` (``handleDelta``) turns what a delta touched into writes; both give
:class:`ZkWrite`s, one per Kafka operation, named by Kafka's operation types, in Kafka's
order of the kinds (within a kind Kafka iterates hash sets; the writes are independent, so
only the numbers of the sequential change notifications can come out otherwise).

A :class:`ZkWrite` holds its requests, each run as its own fenced multi
(:mod:`pykraft.migration.fencing`), and how their results decide (:meth:`ZkWrite.verdict`):
written (the ``/migration`` zkVersion moves on, then the unfenced change notification),
unchanged (Kafka's "already done" results: the topic znode exists, the config to delete is
gone), failed (:class:`MigrationClientError`, retried by the driver), or **create instead**:
Kafka's set-then-create — a set answered NONODE is followed by :attr:`ZkWrite.create_instead`,
a write whose :attr:`ZkWrite.parents` are created first (unfenced, recursively) and whose
requests create the znode. :func:`apply_write` runs that on a :class:`ZkClient`; a runtime
with its own scheduling can do the same from :meth:`ZkWrite.verdict`.
"""

from __future__ import annotations

import base64
import enum
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from pykraft.errors import PyKraftError
from pykraft.ids import ZERO_UUID
from pykraft.image.acls import AclsImage, PatternType, ResourceType, StandardAcl
from pykraft.image.client_quotas import (
    CLIENT_ID,
    IP,
    IP_QUOTAS,
    USER,
    USER_CLIENT_QUOTAS,
    QuotaEntity,
    QuotaType,
    entity_hash,
)
from pykraft.image.configs import ConfigResource, ConfigResourceType
from pykraft.image.image import MetadataDelta, MetadataImage
from pykraft.image.producer_ids import NO_PRODUCER_IDS
from pykraft.image.scram import ScramImage, ScramMechanism
from pykraft.image.topics import PartitionRegistration, TopicImage, TopicsImage
from pykraft.java import java_double_text, java_hash_order, java_string_hash
from pykraft.migration.fencing import (
    MigrationClientError,
    ZkMigrationLeadershipState,
    create_recursive_with,
    fenced_with,
)
from pykraft.migration.load import DYNAMIC_PASSWORD_CONFIGS
from pykraft.migration.zk_ops import CreateOp, DeleteOp, SetDataOp, ZkClient, ZkError, ZkOp
from pykraft.migration.zk_tree import DEFAULT_ENTITY, ZkTopic, ZkTree, desanitize
from pykraft.migration.znodes import (
    AclResourceZNode,
    ConfigChangeZNode,
    ConfigEntityZNode,
    DelegationTokenZNode,
    ExtendedAclChangeZNode,
    LiteralAclChangeZNode,
    PartitionStateZNode,
    ProducerIdBlockZNode,
    TopicZNode,
    ZkAclEntry,
)
from pykraft.records.metadata import DelegationTokenRecord

CREATE_TOPIC = "CreateTopic"
UPDATE_TOPIC = "UpdateTopic"
DELETE_TOPIC = "DeleteTopic"
DELETE_PENDING_TOPIC_DELETION = "DeletePendingTopicDeletion"
UPDATE_PARTITION = "UpdatePartition"
DELETE_PARTITION = "DeletePartition"
UPDATE_CONFIG = "UpdateConfig"
DELETE_CONFIG = "DeleteConfig"
UPDATE_BROKER_CONFIG = "UpdateBrokerConfig"
DELETE_BROKER_CONFIG = "DeleteBrokerConfig"
UPDATE_TOPIC_CONFIG = "UpdateTopicConfig"
DELETE_TOPIC_CONFIG = "DeleteTopicConfig"
UPDATE_CLIENT_QUOTA = "UpdateClientQuota"
UPDATE_PRODUCER_ID = "UpdateProducerId"
UPDATE_ACL = "UpdateAcl"
DELETE_ACL = "DeleteAcl"
UPDATE_DELEGATION_TOKEN = "UpdateDelegationToken"
DELETE_DELEGATION_TOKEN = "DeleteDelegationToken"

PRODUCER_ID_BLOCK_SIZE = 1000
"""``ProducerIdsBlock.PRODUCER_ID_BLOCK_SIZE``: dual write stores the block after KRaft's."""
CONFIG_CHANGES = "/config/changes"
_CONFIG_CHANGE = f"{CONFIG_CHANGES}/config_change_"
_LITERAL_ACL_CHANGE = "/kafka-acl-changes/acl_changes_"
_EXTENDED_ACL_CHANGE = "/kafka-acl-extended-changes/acl_changes_"
_QUOTA_EPSILON = 1e-6
_OK = frozenset({ZkError.OK})
_ANY = frozenset(ZkError)
_SCRAM_KEYS = frozenset(m.mechanism_name for m in ScramMechanism if m is not ScramMechanism.UNKNOWN)
_WRITABLE_CONFIGS = {ConfigResourceType.BROKER: "brokers", ConfigResourceType.TOPIC: "topics"}


class ZkWriteError(PyKraftError, ValueError):
    """Metadata the writer cannot put in ZooKeeper as Kafka would (a password config without
    ``password.encoder.secret``, a quota key ZooKeeper does not know, a topic without id)."""


class Verdict(enum.Enum):
    WRITTEN = "written"
    UNCHANGED = "unchanged"
    CREATE_INSTEAD = "create instead"
    FAILED = "failed"


@dataclass(frozen=True, slots=True)
class Notification:
    """An unfenced sequential change node written once a write succeeded. Config changes
    make sure ``/config/changes`` exists and fail on an error; ACL changes do neither."""

    op: CreateOp
    ensure_parent: bool


@dataclass(frozen=True, slots=True)
class ZkWrite:
    """One of Kafka's migration operations (see the module's docstring)."""

    kind: str
    description: str
    requests: tuple[ZkOp, ...]
    ok: frozenset[ZkError] = _OK
    """The results (of every request, or of the last with ``last_decides``) that count as
    written."""
    already_done: frozenset[ZkError] = frozenset()
    """The first request's results meaning there is nothing to write (state unchanged)."""
    last_decides: bool = False
    create_instead: ZkWrite | None = None
    """Run instead when the first request answered NONODE."""
    parents: tuple[str, ...] = ()
    notification: Notification | None = None

    def verdict(self, results: Sequence[ZkError]) -> Verdict:
        """How the requests' results decide, in Kafka's order of checks."""
        if results and self.create_instead is not None and results[0] is ZkError.NO_NODE:
            return Verdict.CREATE_INSTEAD
        if results and results[0] in self.already_done:
            return Verdict.UNCHANGED
        judged = results[-1:] if self.last_decides else results
        return Verdict.WRITTEN if all(r in self.ok for r in judged) else Verdict.FAILED


PasswordEncoder = Callable[[str], str]
PasswordDecoder = Callable[[str], str]


@dataclass(frozen=True, slots=True)
class Passwords:
    """``password.encoder.secret``'s codec for password broker configs (stored encoded)."""

    encode: PasswordEncoder
    decode: PasswordDecoder


# --- running writes -------------------------------------------------------------------------

def apply_write(client: ZkClient, state: ZkMigrationLeadershipState,
                write: ZkWrite) -> ZkMigrationLeadershipState:
    """Run ``write`` fenced by ``state``; the state with the new ``/migration`` zkVersion."""
    for parent in write.parents:
        create_recursive_with(client, parent)
    results, version = fenced_with(client, write.requests, state)
    verdict = write.verdict([r.error for r in results])
    if verdict is Verdict.CREATE_INSTEAD:
        assert write.create_instead is not None
        return apply_write(client, state, write.create_instead)
    if verdict is Verdict.UNCHANGED:
        return state
    if verdict is Verdict.FAILED:
        codes = {op.path: r.error.value for op, r in zip(write.requests, results, strict=True)}
        raise MigrationClientError(f"{write.description} failed. ZK operations had results "
                                   f"{codes}")
    if write.notification is not None:
        _notify(client, write.notification)
    return state.with_migration_zk_version(version)


def apply_writes(client: ZkClient, state: ZkMigrationLeadershipState,
                 writes: Iterable[ZkWrite]) -> ZkMigrationLeadershipState:
    for write in writes:
        state = apply_write(client, state, write)
    return state


def _notify(client: ZkClient, notification: Notification) -> None:
    if notification.ensure_parent:
        create_recursive_with(client, notification.op.path.rpartition("/")[0])
    result = client.multi([notification.op])[0]
    if notification.ensure_parent and not result.ok:
        raise MigrationClientError(f"could not create the change notification "
                                   f"{notification.op.path}: {result.error.value}")


def write_counts(writes: Iterable[ZkWrite]) -> dict[str, int]:
    """Operations per kind, by name (the driver's ``TreeMap``)."""
    return dict(sorted(Counter(write.kind for write in writes).items()))


def counts_text(counts: Mapping[str, int]) -> str:
    """Java's ``Map.toString`` of the counts: "Made the following ZK writes when handling
    KRaft delta: {UpdatePartition=2}"."""
    return "{" + ", ".join(f"{kind}={count}" for kind, count in counts.items()) + "}"


# --- topics and partitions ------------------------------------------------------------------

def topic_path(name: str) -> str:
    return f"/brokers/topics/{name}"


def _partition_path(name: str, partition: int) -> str:
    return f"{topic_path(name)}/partitions/{partition}"


def _topic_znode(topic_id: uuid.UUID,
                 partitions: Mapping[int, PartitionRegistration]) -> bytes:
    return TopicZNode.of(topic_id, {p: r.replicas for p, r in partitions.items()},
                         {p: r.adding_replicas for p, r in partitions.items()},
                         {p: r.removing_replicas for p, r in partitions.items()}).encode()


def _state_znode(partition: PartitionRegistration, controller_epoch: int) -> bytes:
    return PartitionStateZNode(partition.leader, partition.leader_epoch, controller_epoch,
                               partition.isr, partition.leader_recovery_state).encode()


def _partition_creates(name: str, partitions: Mapping[int, PartitionRegistration],
                       controller_epoch: int) -> tuple[ZkOp, ...]:
    """``createTopicPartitionZNodesRequests``: ``partitions`` (no data), then per partition
    its znode and its state."""
    ops: list[ZkOp] = [CreateOp(f"{topic_path(name)}/partitions", b"")]
    for partition, registration in partitions.items():
        path = _partition_path(name, partition)
        ops += [CreateOp(path, b""),
                CreateOp(f"{path}/state", _state_znode(registration, controller_epoch))]
    return tuple(ops)


def create_topic(name: str, topic_id: uuid.UUID, partitions: Mapping[int, PartitionRegistration],
                 controller_epoch: int) -> ZkWrite:
    """The topic znode, an empty config znode, the partitions; NODEEXISTS on the topic znode
    means it was created already."""
    return ZkWrite(CREATE_TOPIC, f"Created Topic {name}", (
        CreateOp(topic_path(name), _topic_znode(topic_id, partitions)),
        CreateOp(_config_path("topics", name), ConfigEntityZNode(()).encode()),
        *_partition_creates(name, partitions, controller_epoch)),
        already_done=frozenset({ZkError.NODE_EXISTS}))


def update_topic(name: str, topic_id: uuid.UUID,
                 partitions: Mapping[int, PartitionRegistration]) -> ZkWrite:
    return ZkWrite(UPDATE_TOPIC, f"Updated Topic {name}",
                   (SetDataOp(topic_path(name), _topic_znode(topic_id, partitions)),))


def delete_topic(name: str, partitions: Iterable[int]) -> ZkWrite:
    """Kafka lists the topic znode's children and deletes them depth first, then the config
    and the topic znode; the last delete decides. Here the children are those of
    ``partitions``, what the migration wrote (the image's, or ZooKeeper's in a sync)."""
    ops: list[ZkOp] = []
    for partition in partitions:
        path = _partition_path(name, partition)
        ops += [DeleteOp(f"{path}/state"), DeleteOp(path)]
    ops += [DeleteOp(f"{topic_path(name)}/partitions"), DeleteOp(_config_path("topics", name)),
            DeleteOp(topic_path(name))]
    return ZkWrite(DELETE_TOPIC, f"Deleted topic {name}", tuple(ops), last_decides=True)


def create_partitions(name: str, partitions: Mapping[int, PartitionRegistration],
                      controller_epoch: int) -> ZkWrite:
    """New partitions of an existing topic (NODEEXISTS is fine)."""
    return ZkWrite(UPDATE_PARTITION, f"Created new partitions for Topic {name}",
                   _partition_creates(name, partitions, controller_epoch),
                   ok=frozenset({ZkError.OK, ZkError.NODE_EXISTS}))


def update_partitions(name: str, partitions: Mapping[int, PartitionRegistration],
                      controller_epoch: int) -> ZkWrite:
    """Set each partition's state znode (any version)."""
    return ZkWrite(UPDATE_PARTITION, f"Updated Partitions for Topic {name}", tuple(
        SetDataOp(f"{_partition_path(name, p)}/state", _state_znode(r, controller_epoch))
        for p, r in partitions.items()))


def delete_partitions(name: str, partitions: Iterable[int]) -> ZkWrite:
    """Partitions ZooKeeper has and the image not: each state znode, then the partition
    znode (NONODE is fine). Kafka deletes only the partition znode, which fails NOTEMPTY
    while its state is there, on every sync: pykraft does not keep that."""
    ops: list[ZkOp] = []
    for partition in partitions:
        path = _partition_path(name, partition)
        ops += [DeleteOp(f"{path}/state"), DeleteOp(path)]
    return ZkWrite(DELETE_PARTITION, f"Deleted extraneous Partitions for Topic {name}",
                   tuple(ops), ok=frozenset({ZkError.OK, ZkError.NO_NODE}))


def _directories(partition: PartitionRegistration) -> tuple[uuid.UUID, ...]:
    """Kafka reads a partition without directories as MIGRATING (the zero id) for each."""
    return partition.directories or (ZERO_UUID,) * len(partition.replicas)


def _assignment(partition: PartitionRegistration) -> tuple[object, ...]:
    """``PartitionRegistration.hasSameAssignment``'s fields."""
    return (partition.replicas, _directories(partition), partition.adding_replicas,
            partition.removing_replicas)


def _registration(partition: PartitionRegistration) -> tuple[object, ...]:
    """``PartitionRegistration.equals``' fields (no ELR reads as empty)."""
    return (*_assignment(partition), partition.isr, partition.leader,
            partition.leader_recovery_state, partition.leader_epoch, partition.partition_epoch,
            partition.eligible_leader_replicas or (), partition.last_known_elr or ())


def _zk_partitions(topic: ZkTopic) -> dict[int, PartitionRegistration]:
    """The partitions as the sync reads them back (``iterateTopics``): the state znode's
    zkVersion is the partition epoch; without one, ISR = replicas and epochs 0."""
    adding = dict(topic.assignment.adding_replicas)
    removing = dict(topic.assignment.removing_replicas)
    found = {}
    for partition, replicas in topic.assignment.partitions:
        state = topic.states.get(partition)
        value = state.value if state is not None else PartitionStateZNode(
            replicas[0] if replicas else -1, 0, 0, replicas)
        found[partition] = PartitionRegistration(
            replicas, value.isr, value.leader, value.leader_epoch,
            0 if state is None else state.zk_version, removing.get(partition, ()),
            adding.get(partition, ()), value.leader_recovery_state)
    return found


@dataclass(frozen=True, slots=True)
class _TopicsSync:
    writes: list[ZkWrite]
    created: list[str]
    deleted: list[str]


def _topics_sync(topics: TopicsImage, tree: ZkTree, controller_epoch: int) -> _TopicsSync:
    """``handleTopicsSnapshot``."""
    writes: list[ZkWrite] = []
    if tree.pending_deletions:
        writes.append(ZkWrite(DELETE_PENDING_TOPIC_DELETION, "Deleted pending topic deletions",
                              tuple(DeleteOp(f"/admin/delete_topics/{name}")
                                    for name in tree.pending_deletions)))
    pending = set(tree.pending_deletions)
    new_topics = dict.fromkeys(topics.by_id)
    deleted: dict[uuid.UUID, ZkTopic] = {}
    in_zk: list[uuid.UUID] = []
    changed_topics: dict[uuid.UUID, None] = {}
    zk_partitions: dict[uuid.UUID, set[int]] = {}
    changed_partitions: dict[uuid.UUID, dict[int, PartitionRegistration]] = {}
    for zk_topic in tree.topics:
        if zk_topic.name in pending:  # Kafka's iterateTopics skips them
            continue
        topic_id = zk_topic.assignment.topic_id
        if topic_id is None:
            raise ZkWriteError(f"topic {zk_topic.name!r} has no topic id in ZooKeeper")
        topic = topics.by_id.get(topic_id)
        if topic is None:
            deleted[topic_id] = zk_topic
            continue
        if topic_id in new_topics:
            del new_topics[topic_id]
            in_zk.append(topic_id)
        for partition, registration in _zk_partitions(zk_topic).items():
            zk_partitions.setdefault(topic_id, set()).add(partition)
            kraft = topic.partitions.get(partition)
            if kraft is None:
                continue
            if _registration(kraft) != _registration(registration):
                changed_partitions.setdefault(topic_id, {})[partition] = kraft
            if _assignment(kraft) != _assignment(registration):
                changed_topics[topic_id] = None
    new_partitions: dict[uuid.UUID, dict[int, PartitionRegistration]] = {}
    extraneous: dict[str, list[int]] = {}
    for topic_id in in_zk:
        topic = topics.by_id[topic_id]
        in_zk_partitions = zk_partitions.get(topic_id, set())
        if in_zk_partitions != set(topic.partitions):
            new_partitions[topic_id] = {p: r for p, r in topic.partitions.items()
                                        if p not in in_zk_partitions}
            extra = sorted(in_zk_partitions - set(topic.partitions))
            if extra:
                extraneous[topic.name] = extra
            changed_topics[topic_id] = None
    for topic_id in new_topics:
        topic = topics.by_id[topic_id]
        writes.append(create_topic(topic.name, topic_id, topic.partitions, controller_epoch))
    for topic_id in changed_topics:
        topic = topics.by_id[topic_id]
        writes.append(update_topic(topic.name, topic_id, topic.partitions))
    for zk_topic in deleted.values():
        writes.append(delete_topic(zk_topic.name, sorted(
            {p for p, _ in zk_topic.assignment.partitions} | set(zk_topic.states))))
    # Kafka *sets* the state znodes of partitions ZooKeeper lacks, which fails NONODE on
    # every sync (the driver never leaves SYNC_KRAFT_TO_ZK): pykraft creates them.
    for topic_id, partitions in new_partitions.items():
        writes.append(create_partitions(topics.by_id[topic_id].name, partitions,
                                        controller_epoch))
    for topic_id, partitions in changed_partitions.items():
        writes.append(update_partitions(topics.by_id[topic_id].name, partitions,
                                        controller_epoch))
    for name, extra in extraneous.items():
        writes.append(delete_partitions(name, extra))
    return _TopicsSync(writes, [topics.by_id[t].name for t in new_topics],
                       [t.name for t in deleted.values()])


def _topics_delta(previous: TopicsImage, topics: TopicsImage,
                  controller_epoch: int) -> list[ZkWrite]:
    """``handleTopicsDelta``, from the two images (a touched partition always has a new
    partition epoch, so the images show every partition Kafka's delta holds)."""
    writes = [delete_topic(topic.name, topic.partitions)
              for topic in _deleted_topics(previous, topics)]
    for topic_id, topic in topics.by_id.items():
        before = previous.by_id.get(topic_id)
        if before is topic:
            continue
        if before is None:
            writes.append(create_topic(topic.name, topic_id, topic.partitions, controller_epoch))
            continue
        new = {p: r for p, r in topic.partitions.items() if p not in before.partitions}
        changed = {p: r for p, r in topic.partitions.items()
                   if p in before.partitions and before.partitions[p] != r}
        if new or any(_assignment(before.partitions[p]) != _assignment(r)
                      for p, r in changed.items()):
            writes.append(update_topic(topic.name, topic_id, topic.partitions))
        if new:
            writes.append(create_partitions(topic.name, new, controller_epoch))
        if changed:
            writes.append(update_partitions(topic.name, changed, controller_epoch))
    return writes


def _deleted_topics(previous: TopicsImage, topics: TopicsImage) -> list[TopicImage]:
    return [topic for topic_id, topic in previous.by_id.items() if topic_id not in topics.by_id]


# --- configs --------------------------------------------------------------------------------

def _config_path(entity_type: str, name: str) -> str:
    return f"/config/{entity_type}/{name}"


def _config_change(entity_path: str) -> Notification:
    return Notification(CreateOp(_CONFIG_CHANGE, ConfigChangeZNode(entity_path).encode(),
                                 sequential=True), ensure_parent=True)


def _entity_write(kind: str, description: str, entity_type: str, name: str,
                  config: ConfigEntityZNode, parent: str) -> ZkWrite:
    """``tryWriteEntityConfig``: set, or on NONODE create ``parent`` then the znode; a
    config change notification after either."""
    path = _config_path(entity_type, name)
    notification = _config_change(f"{entity_type}/{name}")
    create = ZkWrite(kind, description, (CreateOp(path, config.encode()),),
                     parents=(parent,), notification=notification)
    return ZkWrite(kind, description, (SetDataOp(path, config.encode()),),
                   create_instead=create, notification=notification)


def _is_password(key: str) -> bool:
    """``DynamicBrokerConfig.isPasswordConfig``."""
    return any(key.endswith(name) for name in DYNAMIC_PASSWORD_CONFIGS)


def _password_codec(passwords: Passwords | None, key: str) -> Passwords:
    if passwords is None:
        raise ZkWriteError(f"config {key} is a password: ZooKeeper keeps it encoded with "
                           "password.encoder.secret, which is not set")
    return passwords


def write_configs(kind: str, resource: ConfigResource, configs: Mapping[str, str],
                  passwords: Passwords | None = None) -> ZkWrite:
    """``writeConfigs``: the resource's whole config (passwords encoded); only BROKER and
    TOPIC resources live in ZooKeeper (Kafka logs the others and writes nothing)."""
    resource_type, name = resource
    entity_type = _WRITABLE_CONFIGS.get(ConfigResourceType(resource_type))
    description = f"Updated configs for {resource}"
    if entity_type is None:
        return ZkWrite(kind, description, ())
    plain = {key: _password_codec(passwords, key).encode(value) if _is_password(key) else value
             for key, value in configs.items()}
    return _entity_write(kind, description, entity_type, name or DEFAULT_ENTITY,
                         ConfigEntityZNode.of(plain), f"/config/{entity_type}")


def delete_configs(kind: str, resource: ConfigResource) -> ZkWrite:
    """``deleteConfigs``: NONODE is fine (the topic's deletion took it), else a notification."""
    resource_type, name = resource
    entity_type = _WRITABLE_CONFIGS.get(ConfigResourceType(resource_type))
    description = f"Deleted configs for {resource}"
    if entity_type is None:
        return ZkWrite(kind, description, ())
    zk_name = name or DEFAULT_ENTITY
    return ZkWrite(kind, description, (DeleteOp(_config_path(entity_type, zk_name)),),
                   already_done=frozenset({ZkError.NO_NODE}),
                   notification=_config_change(f"{entity_type}/{zk_name}"))


def _configs_sync(configs: Mapping[ConfigResource, Mapping[str, str]], tree: ZkTree,
                  topics: _TopicsSync, passwords: Passwords | None) -> list[ZkWrite]:
    """``handleConfigsSnapshot``; ZooKeeper's topic configs as the topic writes left them
    (Kafka reads them after running those)."""
    for resource_type, _ in configs:
        if resource_type not in _WRITABLE_CONFIGS:
            raise ZkWriteError(f"Unknown config resource type {resource_type}")
    in_zk: dict[ConfigResource, Mapping[str, str]] = {}
    for entity in tree.broker_configs:
        name = "" if entity.name == DEFAULT_ENTITY else entity.name
        in_zk[ConfigResourceType.BROKER, name] = _decoded(entity.config, passwords)
    gone = set(topics.deleted)
    for zk_topic in tree.topics:
        if zk_topic.config is not None and zk_topic.name not in gone:
            in_zk[ConfigResourceType.TOPIC, zk_topic.name] = _decoded(zk_topic.config, passwords)
    for name in topics.created:
        in_zk[ConfigResourceType.TOPIC, name] = {}
    writes = []
    for resource in configs:
        if resource not in in_zk and configs[resource]:
            writes.append(write_configs(_snapshot_kind(resource, UPDATE_BROKER_CONFIG,
                                                       UPDATE_TOPIC_CONFIG),
                                        resource, configs[resource], passwords))
    for resource, zk_configs in in_zk.items():
        kraft = configs.get(resource, {})
        if dict(kraft) == dict(zk_configs):
            continue
        if kraft:
            writes.append(write_configs(_snapshot_kind(resource, UPDATE_BROKER_CONFIG,
                                                       UPDATE_TOPIC_CONFIG),
                                        resource, kraft, passwords))
        else:
            writes.append(delete_configs(_snapshot_kind(resource, DELETE_BROKER_CONFIG,
                                                        DELETE_TOPIC_CONFIG), resource))
    return writes


def _snapshot_kind(resource: ConfigResource, broker: str, topic: str) -> str:
    return broker if resource[0] == ConfigResourceType.BROKER else topic


def _decoded(config: ConfigEntityZNode, passwords: Passwords | None) -> dict[str, str]:
    return {key: _password_codec(passwords, key).decode(value) if _is_password(key) else value
            for key, value in config.config}


# --- client quotas and SCRAM ----------------------------------------------------------------

def sanitize(name: str) -> str:
    """Kafka's ``Sanitizer.sanitize``: ``URLEncoder`` (letters, digits and ``.-_*`` kept),
    with ``*`` as ``%2A`` and a space as ``%20``."""
    out = []
    for char in name:
        if char.isascii() and (char.isalnum() or char in ".-_"):
            out.append(char)
        else:
            out.extend(f"%{byte:02X}" for byte in char.encode("utf-8"))
    return "".join(out)


def _zk_entity_name(name: str | None) -> str:
    return DEFAULT_ENTITY if name is None else sanitize(name)


def _quota_text(key: str, value: float, keys: Mapping[str, QuotaType]) -> str:
    """ZooKeeper's form of a quota: LONG and INT keys as integers, DOUBLE as Java prints it."""
    kind = keys.get(key)
    if kind is None:
        raise ZkWriteError(f"Invalid configuration key {key}")
    if kind is QuotaType.DOUBLE:
        return java_double_text(value)
    whole = int(value + _QUOTA_EPSILON)
    if abs(whole - value) > _QUOTA_EPSILON:
        raise ZkWriteError(f"Configuration {key} must be {kind.value} value")
    return str(whole)


def credential_text(image: ScramImage, user: str) -> dict[str, str]:
    """``ScramCredentialUtils.credentialToString`` of each of the user's credentials, by
    mechanism name."""
    return {mechanism.mechanism_name:
            f"salt={base64.b64encode(c.salt).decode()},"
            f"stored_key={base64.b64encode(c.stored_key).decode()},"
            f"server_key={base64.b64encode(c.server_key).decode()},iterations={c.iterations}"
            for mechanism, c in image.credentials_of(user)}


def write_client_quotas(entity: QuotaEntity, quotas: Mapping[str, float],
                        scram: Mapping[str, str]) -> ZkWrite | None:
    """``writeClientQuotas``: the entity's znode with its quotas (and a user's SCRAM
    credentials), set or created; None for an entity ZooKeeper has no place for."""
    names = dict(entity)
    keys = USER_CLIENT_QUOTAS
    if USER in names and CLIENT_ID in names:
        user = _zk_entity_name(names[USER])
        entity_type, name = "users", f"{user}/clients/{_zk_entity_name(names[CLIENT_ID])}"
        parent = f"/config/users/{user}/clients"
    else:
        if USER in names:
            entity_type, name = "users", _zk_entity_name(names[USER])
        elif CLIENT_ID in names:
            entity_type, name = "clients", _zk_entity_name(names[CLIENT_ID])
        elif IP in names:
            entity_type, name, keys = "ips", _zk_entity_name(names[IP]), IP_QUOTAS
        else:
            return None
        parent = f"/config/{entity_type}"
    props = {key: _quota_text(key, value, keys) for key, value in sorted(quotas.items())}
    props.update(scram)
    return _entity_write(UPDATE_CLIENT_QUOTA, f"Updated client quotas for {entity}",
                         entity_type, name, ConfigEntityZNode.of(props), parent)


def _quota_writes(image: MetadataImage, entities: Iterable[QuotaEntity],
                  users: Iterable[str | None]) -> list[ZkWrite]:
    """The non-user entities' writes, then each user's (quotas and SCRAM together), each in
    the order of Kafka's ``HashSet`` (it decides the change notifications' numbers)."""
    quotas = image.client_quotas.entities
    found = [write_client_quotas(entity, quotas.get(entity, {}), {})
             for entity in java_hash_order(list(entities), entity_hash)]
    for user in java_hash_order(list(users), _user_hash):
        entity: QuotaEntity = ((USER, user),)
        scram = {} if user is None else credential_text(image.scram, user)
        found.append(write_client_quotas(entity, quotas.get(entity, {}), scram))
    return [write for write in found if write is not None]


def _user_hash(user: str | None) -> int:
    return 0 if user is None else java_string_hash(user)


def _user_of(entity: QuotaEntity) -> tuple[bool, str | None]:
    """(is a user-only entity, its user)."""
    names = dict(entity)
    return USER in names and CLIENT_ID not in names, names.get(USER)


def _quotas_sync(image: MetadataImage, tree: ZkTree) -> list[ZkWrite]:
    """``handleClientQuotasSnapshot``: every entity and SCRAM user of the image, plus those
    only ZooKeeper has (written with the image's, i.e. no, quotas)."""
    entities: dict[QuotaEntity, None] = {}
    users: dict[str | None, None] = {}
    for entity in image.client_quotas.entities:
        is_user, user = _user_of(entity)
        if is_user:
            users[user] = None
        else:
            entities[entity] = None
    users.update(dict.fromkeys(image.scram.users()))
    zk_entities = ([(USER, e) for e in tree.user_configs] + [(CLIENT_ID, e) for e in
                                                              tree.client_configs]
                   + [(IP, e) for e in tree.ip_configs])
    for entity_type, zk_entity in zk_entities:
        keys = {key for key, _ in zk_entity.config.config}
        if keys & _SCRAM_KEYS:  # Kafka looks for credentials in every entity type
            users[desanitize(zk_entity.name)] = None
        name = None if zk_entity.name == DEFAULT_ENTITY else desanitize(zk_entity.name)
        quota_entity: QuotaEntity = ((entity_type, name),)
        if keys - _SCRAM_KEYS and \
                quota_entity not in image.client_quotas.entities:
            if entity_type == USER:
                users[name] = None
            else:
                entities[quota_entity] = None
    for zk_entity in tree.user_client_configs:
        user, _, client = zk_entity.name.partition("/clients/")
        pair: QuotaEntity = tuple(sorted(
            ((CLIENT_ID, None if client == DEFAULT_ENTITY else desanitize(client)),
             (USER, None if user == DEFAULT_ENTITY else desanitize(user)))))
        if zk_entity.config.config and pair not in image.client_quotas.entities:
            entities[pair] = None
    return _quota_writes(image, entities, users)


# --- producer ids ---------------------------------------------------------------------------

def write_producer_id(next_producer_id: int) -> ZkWrite:
    """``writeProducerId``: the block after KRaft's next id, broker -1; Kafka ignores the
    result."""
    block = ProducerIdBlockZNode(-1, next_producer_id,
                                 next_producer_id + PRODUCER_ID_BLOCK_SIZE - 1)
    return ZkWrite(UPDATE_PRODUCER_ID, "Set next producer ID",
                   (SetDataOp("/latest_producer_id_block", block.encode()),), ok=_ANY)


# --- ACLs -----------------------------------------------------------------------------------

AclPattern = tuple[ResourceType, str, PatternType]


def _camel(name: str) -> str:
    """AclAuthorizer's names in ZooKeeper: ``TRANSACTIONAL_ID`` -> ``TransactionalId``."""
    return "".join(part.capitalize() for part in name.split("_"))


def acl_path(pattern: AclPattern) -> str:
    resource_type, name, pattern_type = pattern
    store = "/kafka-acl" if pattern_type is PatternType.LITERAL else \
        f"/kafka-acl-extended/{pattern_type.name.lower()}"
    return f"{store}/{_camel(resource_type.name)}/{name}"


def _zk_entry(acl: StandardAcl) -> ZkAclEntry:
    return ZkAclEntry(acl.principal, _camel(acl.permission_type.name), acl.host,
                      _camel(acl.operation.name))


def _acl_change(pattern: AclPattern) -> Notification:
    resource_type, name, pattern_type = pattern
    if pattern_type is PatternType.LITERAL:
        op = CreateOp(_LITERAL_ACL_CHANGE, LiteralAclChangeZNode(resource_type.name,
                                                                 name).encode(), sequential=True)
    else:
        op = CreateOp(_EXTENDED_ACL_CHANGE, ExtendedAclChangeZNode(
            resource_type.name, name, pattern_type.name).encode(), sequential=True)
    return Notification(op, ensure_parent=False)


def write_acls(pattern: AclPattern, entries: Sequence[ZkAclEntry]) -> ZkWrite:
    """``writeResourceAcls``: set, or create on NONODE (no parents); Kafka counts any other
    result as written and notifies."""
    data = AclResourceZNode(tuple(dict.fromkeys(entries))).encode()
    description = f"Wrote {len(entries)} for resource {pattern}"
    notification = _acl_change(pattern)
    create = ZkWrite(UPDATE_ACL, description, (CreateOp(acl_path(pattern), data),),
                     ok=_ANY - {ZkError.NO_NODE}, notification=notification)
    return ZkWrite(UPDATE_ACL, description, (SetDataOp(acl_path(pattern), data),), ok=_ANY,
                   create_instead=create, notification=notification)


def delete_acls(pattern: AclPattern) -> ZkWrite:
    return ZkWrite(DELETE_ACL, f"Deleted resource {pattern}", (DeleteOp(acl_path(pattern)),),
                   ok=frozenset({ZkError.OK, ZkError.NO_NODE}), notification=_acl_change(pattern))


def _pattern(acl: StandardAcl) -> AclPattern:
    return acl.resource_type, acl.resource_name, acl.pattern_type


def _acls_by_pattern(acls: AclsImage) -> dict[AclPattern, list[ZkAclEntry]]:
    found: dict[AclPattern, list[ZkAclEntry]] = {}
    for acl in acls.acls.values():
        found.setdefault(_pattern(acl), []).append(_zk_entry(acl))
    return found


def _acls_sync(acls: AclsImage, tree: ZkTree) -> list[ZkWrite]:
    """``handleAclsSnapshot``: new patterns, then ZooKeeper's without ACLs in the image,
    then the changed ones (compared as sets)."""
    kraft = _acls_by_pattern(acls)
    in_zk = {(r.resource_type, r.name, r.pattern_type): r.acls.value.acls for r in tree.acls}
    writes = [write_acls(p, entries) for p, entries in kraft.items() if p not in in_zk]
    writes += [delete_acls(p) for p in in_zk if p not in kraft]
    writes += [write_acls(p, kraft[p]) for p, entries in in_zk.items()
               if p in kraft and set(kraft[p]) != set(entries)]
    return writes


def _acls_delta(previous: AclsImage, acls: AclsImage,
                touched: Iterable[uuid.UUID]) -> list[ZkWrite]:
    """``handleAclsDelta``: every pattern a touched ACL had (removed ones from the previous
    image) rewritten with the image's ACLs, or deleted when none are left."""
    patterns: dict[AclPattern, list[ZkAclEntry]] = {}
    for acl_id in touched:
        acl = acls.acls.get(acl_id) or previous.acls.get(acl_id)
        if acl is not None:  # Kafka logs "Cannot delete ACL ... missing from previous image"
            patterns[_pattern(acl)] = []
    for acl in acls.acls.values():
        entries = patterns.get(_pattern(acl))
        if entries is not None:
            entries.append(_zk_entry(acl))
    return [write_acls(p, entries) if entries else delete_acls(p)
            for p, entries in patterns.items()]


# --- delegation tokens ----------------------------------------------------------------------

def _token_path(token_id: str) -> str:
    return f"/delegation_token/tokens/{token_id}"


def write_token(token: DelegationTokenRecord) -> ZkWrite:
    """``writeDelegationToken``: set, or create on NONODE; principals sanitized."""
    data = DelegationTokenZNode(
        sanitize(token.owner), sanitize(token.requester),
        tuple(sanitize(r) for r in token.renewers), token.issue_timestamp,
        token.max_timestamp, token.expiration_timestamp, token.token_id).encode()
    description = f"Updated DelegationToken for {token.token_id}"
    path = _token_path(token.token_id)
    create = ZkWrite(UPDATE_DELEGATION_TOKEN, description, (CreateOp(path, data),))
    return ZkWrite(UPDATE_DELEGATION_TOKEN, description, (SetDataOp(path, data),),
                   create_instead=create)


def delete_token(token_id: str) -> ZkWrite:
    return ZkWrite(DELETE_DELEGATION_TOKEN, f"Deleted DelegationToken for {token_id}",
                   (DeleteOp(_token_path(token_id)),), already_done=frozenset({ZkError.NO_NODE}))


# --- the entry points -----------------------------------------------------------------------

def sync(image: MetadataImage, tree: ZkTree, controller_epoch: int,
         passwords: Passwords | None = None) -> list[ZkWrite]:
    """``handleSnapshot``: the writes making ZooKeeper (``tree``, read before) hold
    ``image``; ``controller_epoch`` is the KRaft leader epoch written into partition states."""
    topics = _topics_sync(image.topics, tree, controller_epoch)
    writes = [*topics.writes, *_configs_sync(image.configs.resources, tree, topics, passwords),
              *_quotas_sync(image, tree)]
    next_id = image.producer_ids.next_producer_id
    block = tree.producer_id_block
    if next_id != NO_PRODUCER_IDS and (block is None or block.block_end + 1 != next_id):
        writes.append(write_producer_id(next_id))
    writes += _acls_sync(image.acls, tree)
    writes += [write_token(token) for token in image.delegation_tokens.tokens.values()]
    writes += [delete_token(token.token_id) for token in tree.delegation_tokens
               if token.token_id not in image.delegation_tokens.tokens]
    return writes


def dual_write(previous: MetadataImage, image: MetadataImage, delta: MetadataDelta,
               controller_epoch: int, passwords: Passwords | None = None) -> list[ZkWrite]:
    """``handleDelta``: the writes of what ``delta`` (``previous`` -> ``image``) touched."""
    writes: list[ZkWrite] = []
    if delta.topics_delta is not None:
        writes += _topics_delta(previous.topics, image.topics, controller_epoch)
    if delta.configs_delta is not None:
        deleted = {t.name for t in _deleted_topics(previous.topics, image.topics)}
        for resource in delta.configs_delta.touched:
            if resource[0] == ConfigResourceType.TOPIC and resource[1] in deleted and \
                    resource not in previous.configs.resources:
                continue  # Kafka's RemoveTopicRecord touches only configs the topic had
            configs = image.configs.get(resource)
            writes.append(write_configs(UPDATE_CONFIG, resource, configs, passwords)
                          if configs else delete_configs(DELETE_CONFIG, resource))
    if delta.client_quotas_delta is not None or delta.scram_delta is not None:
        entities: dict[QuotaEntity, None] = {}
        users: dict[str | None, None] = {}
        if delta.scram_delta is not None:
            users.update((user, None) for _, user in delta.scram_delta.touched)
        for entity in delta.client_quotas_delta.touched if delta.client_quotas_delta else ():
            is_user, user = _user_of(entity)
            if is_user:
                users[user] = None
            else:
                entities[entity] = None
        writes += _quota_writes(image, entities, users)
    if delta.producer_ids_delta is not None:
        writes.append(write_producer_id(image.producer_ids.next_producer_id))
    if delta.acls_delta is not None:
        writes += _acls_delta(previous.acls, image.acls, delta.acls_delta.touched)
    if delta.delegation_tokens_delta is not None:
        for token_id in delta.delegation_tokens_delta.touched:
            token = image.delegation_tokens.tokens.get(token_id)
            writes.append(delete_token(token_id) if token is None else write_token(token))
    return writes
