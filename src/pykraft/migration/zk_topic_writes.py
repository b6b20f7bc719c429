"""The topic and partition writes of the migration (Kafka's ``handleTopicsSnapshot``,
``handleTopicsDelta`` and ``ZkTopicMigrationClient``): topic znodes with their assignment,
partition state znodes with the KRaft leader epoch as ``controller_epoch``."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

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


def topics_sync(topics: TopicsImage, tree: ZkTree, controller_epoch: int) -> TopicsSync:
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
    return TopicsSync(writes, [topics.by_id[t].name for t in new_topics],
                       [t.name for t in deleted.values()])


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
