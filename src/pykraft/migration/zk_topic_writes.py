"""The topic and partition writes of the migration (Kafka's ``handleTopicsSnapshot``,
``handleTopicsDelta`` and ``ZkTopicMigrationClient``): topic znodes with their assignment,
partition state znodes with the KRaft leader epoch as ``controller_epoch``."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from pykraft.ids import ZERO_UUID
from pykraft.image.topics import PartitionRegistration, TopicImage, TopicsImage
from pykraft.migration.zk_ops import CreateOp, DeleteOp, SetDataOp, ZkError, ZkOp
from pykraft.migration.zk_tree import ZkTopic, ZkTree
from pykraft.migration.zk_write import (
    CREATE_TOPIC,
    DELETE_PARTITION,
    DELETE_PENDING_TOPIC_DELETION,
    DELETE_TOPIC,
    UPDATE_PARTITION,
    UPDATE_TOPIC,
    ZkWrite,
    ZkWriteError,
    config_path,
)
from pykraft.migration.znodes import ConfigEntityZNode, PartitionStateZNode, TopicZNode


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
        CreateOp(config_path("topics", name), ConfigEntityZNode(()).encode()),
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
    ops += [DeleteOp(f"{topic_path(name)}/partitions"), DeleteOp(config_path("topics", name)),
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
class TopicsSync:
    """The topic writes of a sync, and the topics they create and delete (their config
    znodes with them)."""

    writes: list[ZkWrite]
    created: list[str]
    deleted: list[str]


@dataclass(slots=True)
class _TopicsScan:
    """What ``handleTopicsSnapshot`` finds comparing ZooKeeper's topics with the image's."""

    new_topics: dict[uuid.UUID, None]
    deleted: dict[uuid.UUID, ZkTopic] = field(default_factory=dict)
    changed_topics: dict[uuid.UUID, None] = field(default_factory=dict)
    new_partitions: dict[uuid.UUID, dict[int, PartitionRegistration]] = field(
        default_factory=dict)
    changed_partitions: dict[uuid.UUID, dict[int, PartitionRegistration]] = field(
        default_factory=dict)
    extraneous: dict[str, list[int]] = field(default_factory=dict)


def _scan(topics: TopicsImage, tree: ZkTree) -> _TopicsScan:
    scan = _TopicsScan(dict.fromkeys(topics.by_id))
    pending = set(tree.pending_deletions)
    in_zk: dict[uuid.UUID, set[int]] = {}
    for zk_topic in tree.topics:
        if zk_topic.name in pending:  # Kafka's iterateTopics skips them
            continue
        topic_id = zk_topic.assignment.topic_id
        if topic_id is None:
            raise ZkWriteError(f"topic {zk_topic.name!r} has no topic id in ZooKeeper")
        topic = topics.by_id.get(topic_id)
        if topic is None:
            scan.deleted[topic_id] = zk_topic
            continue
        partitions = in_zk.setdefault(topic_id, set())
        scan.new_topics.pop(topic_id, None)
        for partition, registration in _zk_partitions(zk_topic).items():
            partitions.add(partition)
            kraft = topic.partitions.get(partition)
            if kraft is None:
                continue
            if _registration(kraft) != _registration(registration):
                scan.changed_partitions.setdefault(topic_id, {})[partition] = kraft
            if _assignment(kraft) != _assignment(registration):
                scan.changed_topics[topic_id] = None
    for topic_id, partitions in in_zk.items():
        topic = topics.by_id[topic_id]
        if partitions != set(topic.partitions):
            scan.new_partitions[topic_id] = {p: r for p, r in topic.partitions.items()
                                             if p not in partitions}
            extra = sorted(partitions - set(topic.partitions))
            if extra:
                scan.extraneous[topic.name] = extra
            scan.changed_topics[topic_id] = None
    return scan


def _delete_zk_topic(topic: ZkTopic) -> ZkWrite:
    return delete_topic(topic.name, sorted({p for p, _ in topic.assignment.partitions}
                                           | set(topic.states)))


def topics_sync(topics: TopicsImage, tree: ZkTree, controller_epoch: int) -> TopicsSync:
    """``handleTopicsSnapshot``: pending deletions cleared, then topics created, updated and
    deleted, then partitions created, updated and deleted.

    Two of Kafka's writes fail on every sync, so the driver never leaves SYNC_KRAFT_TO_ZK:
    it *sets* the state znodes of partitions ZooKeeper lacks (NONODE) and deletes extraneous
    partition znodes with their state in them (NOTEMPTY); pykraft creates the former and
    deletes the state first. And a topic KRaft recreated under a name ZooKeeper has with
    another id is deleted before the creates: Kafka creates first (NODEEXISTS: "already
    done"), then deletes, and ZooKeeper has no such topic until the next sync."""
    scan = _scan(topics, tree)
    writes: list[ZkWrite] = []
    if tree.pending_deletions:
        writes.append(ZkWrite(DELETE_PENDING_TOPIC_DELETION, "Deleted pending topic deletions",
                              tuple(DeleteOp(f"/admin/delete_topics/{name}")
                                    for name in tree.pending_deletions)))
    recreated = [t for t in scan.deleted.values() if t.name in topics.by_name]
    writes += [_delete_zk_topic(topic) for topic in recreated]
    for topic_id in scan.new_topics:
        topic = topics.by_id[topic_id]
        writes.append(create_topic(topic.name, topic_id, topic.partitions, controller_epoch))
    for topic_id in scan.changed_topics:
        topic = topics.by_id[topic_id]
        writes.append(update_topic(topic.name, topic_id, topic.partitions))
    writes += [_delete_zk_topic(t) for t in scan.deleted.values() if t not in recreated]
    for topic_id, partitions in scan.new_partitions.items():
        writes.append(create_partitions(topics.by_id[topic_id].name, partitions,
                                        controller_epoch))
    for topic_id, partitions in scan.changed_partitions.items():
        writes.append(update_partitions(topics.by_id[topic_id].name, partitions,
                                        controller_epoch))
    writes += [delete_partitions(name, extra) for name, extra in scan.extraneous.items()]
    return TopicsSync(writes, [topics.by_id[t].name for t in scan.new_topics],
                      [t.name for t in scan.deleted.values()])


def topics_delta(previous: TopicsImage, topics: TopicsImage,
                 controller_epoch: int) -> list[ZkWrite]:
    """``handleTopicsDelta``, from the two images (a touched partition always has a new
    partition epoch, so the images show every partition Kafka's delta holds)."""
    writes = [delete_topic(topic.name, topic.partitions)
              for topic in deleted_topics(previous, topics)]
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


def deleted_topics(previous: TopicsImage, topics: TopicsImage) -> list[TopicImage]:
    return [topic for topic_id, topic in previous.by_id.items() if topic_id not in topics.by_id]
