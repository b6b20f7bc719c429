"""The legacy RPCs a migrating KRaft controller sends to the ZooKeeper-mode brokers
(migration-plan §8): Kafka 3.9's ``MigrationPropagator`` over its
``AbstractControllerBrokerRequestBatch`` with ``kraftController = true``, sans-I/O.

From a metadata image (a full propagation: KRAFT_CONTROLLER_TO_BROKER_COMM and snapshots) or
from the previous image and the next one (each dual-written delta), it returns the request
bodies to send, per broker and in Kafka's order: LeaderAndIsr v7, UpdateMetadata v8 and
StopReplica v4, the versions Kafka sends at metadata.version 3.4-IV0 and later (a migration
needs 3.4-IV0). Only brokers registered with ``isMigratingZkBroker`` and unfenced get
requests (Kafka's channel manager has no others); the runtime sends them on
``inter.broker.listener.name`` and only logs errors in the answers, as Kafka does.

Field values are Kafka's: ``controllerId`` this controller, ``controllerEpoch`` the ZooKeeper
controller epoch it claimed, ``brokerEpoch`` the target's registration epoch; per partition
the KRaft leader epoch of the image's last offset as ``controllerEpoch``, the partition epoch
as ``partitionEpoch``/``zkVersion``, ``isNew`` true. Orders follow Kafka's maps: partitions
of a request in the iteration order of the Scala ``mutable.HashMap`` that collects them
(the UpdateMetadata one lives as long as the propagator, and so does its table size),
topics as the builders' ``HashMap.computeIfAbsent`` groups them, StopReplica topics in a
Scala map's order. Brokers (requests, live brokers, live leaders) go by id: Kafka's order
for up to four brokers with ids below 16 (a Scala ``Set`` of at most four keeps the Java
map's order); beyond, Kafka's order hashes whole ``Broker`` values and is not reproduced.

The previous image and the next one stand for Kafka's ``MetadataDelta``: a broker changed
when its registration differs, a topic when it is new or a partition's registration
differs, a topic was deleted when only the previous image has its id.
"""

from __future__ import annotations

import enum
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

from pykraft.errors import PyKraftError
from pykraft.ids import ZERO_UUID
from pykraft.image.cluster_image import BrokerRegistration
from pykraft.image.image import MetadataImage
from pykraft.image.topics import PartitionRegistration, TopicImage
from pykraft.image.versions import MV_3_4_IV0
from pykraft.java import int32, java_compute_if_absent_order, java_hash_order, java_string_hash
from pykraft.messages.legacy.leader_and_isr_request import (
    LeaderAndIsrLiveLeader,
    LeaderAndIsrPartitionState,
    LeaderAndIsrRequest,
    LeaderAndIsrTopicState,
)
from pykraft.messages.legacy.stop_replica_request import (
    StopReplicaPartitionState,
    StopReplicaRequest,
    StopReplicaTopicState,
)
from pykraft.messages.legacy.update_metadata_request import (
    UpdateMetadataBroker,
    UpdateMetadataEndpoint,
    UpdateMetadataPartitionState,
    UpdateMetadataRequest,
    UpdateMetadataTopicState,
)
from pykraft.migration.map_order import ScalaMutableHashMap, mutable_map_order

__all__ = [
    "LEADER_AND_ISR_VERSION",
    "STOP_REPLICA_VERSION",
    "UPDATE_METADATA_VERSION",
    "LegacyRequest",
    "MigrationPropagator",
    "PropagationError",
    "UpdateType",
]

LEADER_AND_ISR_VERSION = 7
STOP_REPLICA_VERSION = 4
UPDATE_METADATA_VERSION = 8
LEADER_DURING_DELETE = -2  # kafka.api.LeaderAndIsr.LeaderDuringDelete
EPOCH_DURING_DELETE = -2  # LeaderAndIsr.EpochDuringDelete: StopReplica of a deleted topic
NO_EPOCH = -1

TopicPartition = tuple[str, int]
LegacyBody = LeaderAndIsrRequest | UpdateMetadataRequest | StopReplicaRequest
S = TypeVar("S", LeaderAndIsrPartitionState, UpdateMetadataPartitionState)
T = TypeVar("T")


class UpdateType(enum.IntEnum):
    """``AbstractControlRequest.Type``: LeaderAndIsr's ``Type`` and UpdateMetadata's tagged
    ``Type`` (KIP-866)."""

    UNKNOWN = 0
    INCREMENTAL = 1
    FULL = 2


class PropagationError(PyKraftError, ValueError):
    """The image cannot be propagated as Kafka would (a metadata.version without migration,
    a leader without the inter-broker listener)."""


@dataclass(frozen=True, slots=True)
class LegacyRequest:
    """One request for the runtime to send to a ZooKeeper-mode broker."""

    broker_id: int
    body: LegacyBody

    @property
    def api_key(self) -> int:
        return _API_KEYS[type(self.body)]

    @property
    def api_version(self) -> int:
        return _VERSIONS[type(self.body)]


_API_KEYS: dict[type, int] = {LeaderAndIsrRequest: 4, StopReplicaRequest: 5,
                              UpdateMetadataRequest: 6}
_VERSIONS: dict[type, int] = {LeaderAndIsrRequest: LEADER_AND_ISR_VERSION,
                              StopReplicaRequest: STOP_REPLICA_VERSION,
                              UpdateMetadataRequest: UPDATE_METADATA_VERSION}


def _partition_hash(tp: TopicPartition) -> int:
    """``TopicPartition.hashCode``."""
    return int32(31 * (31 + tp[1]) + java_string_hash(tp[0]))


class MigrationPropagator:
    """Kafka's propagator for one controller process: keep one for the process's life, so
    the UpdateMetadata partition map keeps the table size Kafka's would have."""

    def __init__(self, controller_id: int, inter_broker_listener: str) -> None:
        self.controller_id = controller_id
        self.inter_broker_listener = inter_broker_listener
        self._update_metadata_partitions: ScalaMutableHashMap[
            TopicPartition, UpdateMetadataPartitionState] = ScalaMutableHashMap(_partition_hash)

    def image_requests(self, image: MetadataImage, zk_controller_epoch: int
                       ) -> list[LegacyRequest]:
        """``sendRPCsToBrokersFromMetadataImage``: UpdateMetadata with every partition to every
        ZK broker, then FULL LeaderAndIsr to each replica and the FULL UpdateMetadata that
        follows. No StopReplica: an image says nothing of replicas a broker should drop."""
        batch = self._batch(image, zk_controller_epoch)
        partitions = _partitions(image)
        zk_brokers = [b.broker_id for b in image.cluster.brokers.values()
                      if b.is_migrating_zk_broker]
        batch.add_update_metadata(zk_brokers, [tp for tp, _ in partitions])
        requests = batch.send(UpdateType.UNKNOWN)
        for tp, partition in partitions:
            batch.add_leader_and_isr(partition.replicas, tp, partition)
        return requests + batch.send(UpdateType.FULL)

    def delta_requests(self, previous: MetadataImage, image: MetadataImage,
                       zk_controller_epoch: int) -> list[LegacyRequest]:
        """``sendRPCsToBrokersFromMetadataDelta`` for the change from ``previous`` to
        ``image``: the new or unfenced ZK brokers learn everything, the others the brokers'
        change; then, INCREMENTAL, LeaderAndIsr for the new brokers' replicas and for each
        changed partition, StopReplica (delete) for deleted topics and removed replicas, and
        UpdateMetadata of the changes (deleted partitions with leader -2)."""
        before, after = previous.cluster.brokers, image.cluster.brokers
        changed_brokers = {broker_id for broker_id in {*before, *after}
                           if before.get(broker_id) != after.get(broker_id)}
        changed_zk = {broker_id for broker_id in changed_brokers
                      if broker_id in after and _in_channel(after[broker_id])}
        old_zk = [b.broker_id for b in after.values()
                  if b.is_migrating_zk_broker and b.broker_id not in changed_zk]
        partitions = _partitions(image)
        batch = self._batch(image, zk_controller_epoch)
        if changed_zk:
            batch.add_update_metadata(sorted(changed_zk), [tp for tp, _ in partitions])
        if changed_brokers:
            batch.add_update_metadata(old_zk)
        requests = batch.send(UpdateType.UNKNOWN)
        if changed_zk:
            for tp, partition in partitions:
                new_replicas = [b for b in partition.replicas if b in changed_zk]
                if new_replicas:
                    batch.add_leader_and_isr(new_replicas, tp, partition)
        deleted = [topic for topic_id, topic in previous.topics.by_id.items()
                   if topic_id not in image.topics.by_id]
        changed_topics = _changed_topics(previous, image)
        if deleted or changed_topics:
            batch.add_update_metadata(old_zk)
        for topic in deleted:
            for index, partition in topic.partitions.items():
                tp = (topic.name, index)
                batch.add_stop_replica(partition.replicas, tp)
                batch.add_deleted_update_metadata(old_zk, tp, partition)
        for topic, indexes in changed_topics:
            old = previous.topics.by_id.get(topic.topic_id)
            for index in indexes:
                tp, partition = (topic.name, index), topic.partitions[index]
                batch.add_leader_and_isr(partition.replicas, tp, partition)
                was = None if old is None else old.partitions.get(index)
                removed = [] if was is None else [
                    b for b in was.replicas if b not in partition.replicas]
                if removed:
                    batch.add_stop_replica(removed, tp)
        return requests + batch.send(UpdateType.INCREMENTAL)

    def _batch(self, image: MetadataImage, zk_controller_epoch: int) -> _Batch:
        if image.metadata_version < MV_3_4_IV0:
            raise PropagationError(
                f"metadata.version level {image.metadata_version} has no ZooKeeper migration "
                f"(3.4-IV0, level {MV_3_4_IV0}, and later)"
            )
        if image.provenance.last_epoch < 0:
            raise PropagationError("an image without its last offset's epoch (the partitions' "
                                   "controllerEpoch) cannot be propagated")
        return _Batch(self, image, zk_controller_epoch)


def channel_brokers(image: MetadataImage) -> list[BrokerRegistration]:
    """The brokers the requests go to (Kafka's channel manager after ``publishMetadata``)."""
    return [b for b in image.cluster.brokers.values() if _in_channel(b)]


def _in_channel(broker: BrokerRegistration) -> bool:
    """Kafka's channel manager holds the unfenced migrating ZK brokers (and only them)."""
    return broker.is_migrating_zk_broker and not broker.fenced


def _partitions(image: MetadataImage) -> list[tuple[TopicPartition, PartitionRegistration]]:
    """``materializePartitions``: every partition of the image."""
    return [((topic.name, index), partition) for topic in image.topics.by_id.values()
            for index, partition in topic.partitions.items()]


def _changed_topics(previous: MetadataImage, image: MetadataImage
                    ) -> list[tuple[TopicImage, list[int]]]:
    """Topics new in ``image`` or with a partition whose registration changed, and those
    partitions (a new topic's are all new)."""
    changed = []
    for topic_id, topic in image.topics.by_id.items():
        old = previous.topics.by_id.get(topic_id)
        if old is None:
            changed.append((topic, list(topic.partitions)))
            continue
        indexes = [index for index, partition in topic.partitions.items()
                   if old.partitions.get(index) != partition]
        if indexes:
            changed.append((topic, indexes))
    return changed


class _Batch:
    """``AbstractControllerBrokerRequestBatch`` over one image: what is added, then sent
    (LeaderAndIsr, UpdateMetadata, StopReplica; each by broker id) and cleared."""

    def __init__(self, owner: MigrationPropagator, image: MetadataImage,
                 zk_controller_epoch: int) -> None:
        self._owner = owner
        self._image = image
        self._zk_epoch = zk_controller_epoch
        self._kraft_epoch = image.provenance.last_epoch
        self._brokers = image.cluster.brokers
        self._leader_and_isr: dict[int, ScalaMutableHashMap[
            TopicPartition, LeaderAndIsrPartitionState]] = {}
        self._stop_replica: dict[int, ScalaMutableHashMap[
            TopicPartition, StopReplicaPartitionState]] = {}
        self._update_metadata_brokers: set[int] = set()
        self._update_metadata = owner._update_metadata_partitions

    # --- adding -------------------------------------------------------------------------

    def add_leader_and_isr(self, broker_ids: Iterable[int], tp: TopicPartition,
                           partition: PartitionRegistration) -> None:
        """To each broker, then the partition's UpdateMetadata to every registered broker."""
        state = LeaderAndIsrPartitionState(
            partition_index=tp[1], controller_epoch=self._kraft_epoch,
            leader=partition.leader, leader_epoch=partition.leader_epoch, isr=partition.isr,
            partition_epoch=partition.partition_epoch, replicas=partition.replicas,
            adding_replicas=partition.adding_replicas,
            removing_replicas=partition.removing_replicas, is_new=True,
            leader_recovery_state=partition.leader_recovery_state, topic_name=tp[0],
        )
        for broker_id in broker_ids:
            if broker_id >= 0:
                self._leader_and_isr.setdefault(
                    broker_id, ScalaMutableHashMap(_partition_hash)).put(tp, state)
        self.add_update_metadata(list(self._brokers), [tp])

    def add_update_metadata(self, broker_ids: Iterable[int],
                            partitions: Sequence[TopicPartition] = ()) -> None:
        """The brokers get an UpdateMetadata carrying the batch's partitions; these join it
        with their state in the image (a partition the image lacks is skipped)."""
        self._update_metadata_brokers.update(b for b in broker_ids if b >= 0)
        for tp in partitions:
            topic = self._image.topics.by_name.get(tp[0])
            partition = None if topic is None else topic.partitions.get(tp[1])
            if partition is None:
                continue
            offline = tuple(b for b in partition.replicas if b not in self._brokers)
            self._update_metadata.put(tp, UpdateMetadataPartitionState(
                partition_index=tp[1], controller_epoch=self._kraft_epoch,
                leader=partition.leader, leader_epoch=partition.leader_epoch,
                isr=partition.isr, zk_version=partition.partition_epoch,
                replicas=partition.replicas, offline_replicas=offline, topic_name=tp[0],
            ))

    def add_deleted_update_metadata(self, broker_ids: Iterable[int], tp: TopicPartition,
                                    partition: PartitionRegistration) -> None:
        """A deleted topic's partition: ``LeaderAndIsr.duringDelete`` (leader -2, epochs 0)
        under the ZooKeeper controller epoch. Its ``offlineReplicas`` are the replicas that
        are *registered*: Kafka 3.9's propagator filters with ``isReplicaOnline`` where it
        means the opposite; the brokers drop the partition anyway (leader -2)."""
        self._update_metadata_brokers.update(b for b in broker_ids if b >= 0)
        self._update_metadata.put(tp, UpdateMetadataPartitionState(
            partition_index=tp[1], controller_epoch=self._zk_epoch,
            leader=LEADER_DURING_DELETE, leader_epoch=0, isr=partition.isr, zk_version=0,
            replicas=partition.replicas,
            offline_replicas=tuple(b for b in partition.replicas if b in self._brokers),
            topic_name=tp[0],
        ))

    def add_stop_replica(self, broker_ids: Iterable[int], tp: TopicPartition) -> None:
        """StopReplica with ``deletePartition`` (the only kind the propagator sends); the
        leader epoch is -2 for a topic the image no longer has."""
        topic = self._image.topics.by_name.get(tp[0])
        if topic is None:
            leader_epoch = EPOCH_DURING_DELETE
        else:
            partition = topic.partitions.get(tp[1])
            leader_epoch = NO_EPOCH if partition is None else partition.leader_epoch
        state = StopReplicaPartitionState(
            partition_index=tp[1], leader_epoch=leader_epoch, delete_partition=True)
        for broker_id in broker_ids:
            if broker_id >= 0:
                self._stop_replica.setdefault(
                    broker_id, ScalaMutableHashMap(_partition_hash)).put(tp, state)

    # --- sending ------------------------------------------------------------------------

    def send(self, update_type: UpdateType) -> list[LegacyRequest]:
        """``sendRequestsToBrokers``: the batch's requests to the brokers in the channel."""
        channel = {b for b, reg in self._brokers.items() if _in_channel(reg)}
        try:
            requests = [LegacyRequest(b, self._leader_and_isr_request(b, update_type))
                        for b in sorted(self._leader_and_isr) if b in channel]
            requests += [LegacyRequest(b, self._update_metadata_request(b, update_type))
                         for b in sorted(self._update_metadata_brokers) if b in channel]
            requests += [LegacyRequest(b, self._stop_replica_request(b))
                         for b in sorted(self._stop_replica) if b in channel]
        finally:  # a refused batch leaves nothing behind for the next one
            self._leader_and_isr.clear()
            self._stop_replica.clear()
            self._update_metadata_brokers.clear()
            self._update_metadata.clear()  # keeps its table size, as Kafka's
        return requests

    def _leader_and_isr_request(self, broker_id: int, update_type: UpdateType
                                ) -> LeaderAndIsrRequest:
        states = [state for _, state in self._leader_and_isr[broker_id].items()]
        leader_ids = {state.leader for state in states}
        live_leaders = tuple(self._live_leader(b) for b in sorted(self._brokers)
                             if b in leader_ids)
        return LeaderAndIsrRequest(
            controller_id=self._owner.controller_id, is_k_raft_controller=True,
            controller_epoch=self._zk_epoch, broker_epoch=self._brokers[broker_id].epoch,
            type=update_type, topic_states=self._topic_states(states, LeaderAndIsrTopicState),
            live_leaders=live_leaders,
        )

    def _live_leader(self, broker_id: int) -> LeaderAndIsrLiveLeader:
        listener = self._owner.inter_broker_listener
        for endpoint in self._brokers[broker_id].listeners:
            if endpoint.name == listener:
                return LeaderAndIsrLiveLeader(broker_id, endpoint.host, endpoint.port)
        raise PropagationError(
            f"leader {broker_id} has no endpoint for the inter-broker listener {listener}")

    def _update_metadata_request(self, broker_id: int, update_type: UpdateType
                                 ) -> UpdateMetadataRequest:
        states = [state for _, state in self._update_metadata.items()]
        return UpdateMetadataRequest(
            controller_id=self._owner.controller_id, is_k_raft_controller=True,
            type=update_type, controller_epoch=self._zk_epoch,
            broker_epoch=self._brokers[broker_id].epoch,
            topic_states=self._topic_states(states, UpdateMetadataTopicState),
            live_brokers=_live_brokers(self._brokers),
        )

    def _stop_replica_request(self, broker_id: int) -> StopReplicaRequest:
        by_topic: dict[str, list[StopReplicaPartitionState]] = {}
        for tp, state in self._stop_replica[broker_id].items():
            by_topic.setdefault(tp[0], []).append(state)
        topics = tuple(
            StopReplicaTopicState(topic_name=name, partition_states=tuple(by_topic[name]))
            for name in mutable_map_order(list(by_topic))
        )
        return StopReplicaRequest(
            controller_id=self._owner.controller_id, is_k_raft_controller=True,
            controller_epoch=self._zk_epoch, broker_epoch=self._brokers[broker_id].epoch,
            topic_states=topics,
        )

    def _topic_states(self, states: Sequence[S], topic_state: Callable[..., T]
                      ) -> tuple[T, ...]:
        """The builders' ``groupByTopic``: topics as ``computeIfAbsent`` leaves them in a Java
        ``HashMap``, each with its id (zero for a topic the image lacks) and its partitions
        in the order given."""
        by_topic: dict[str, list[S]] = {}
        for state in states:
            by_topic.setdefault(state.topic_name, []).append(state)
        order = java_compute_if_absent_order([s.topic_name for s in states], java_string_hash)
        return tuple(topic_state(topic_name=name, topic_id=self._topic_id(name),
                                 partition_states=tuple(by_topic[name])) for name in order)

    def _topic_id(self, name: str) -> uuid.UUID:
        topic = self._image.topics.by_name.get(name)
        return ZERO_UUID if topic is None else topic.topic_id


def _live_brokers(brokers: Mapping[int, BrokerRegistration]) -> tuple[UpdateMetadataBroker, ...]:
    """Every registered broker (fenced ones too, as Kafka's ``liveOrShuttingDownBrokers``),
    its endpoints in the order of the Java ``HashMap`` of listener names it is kept in."""
    return tuple(
        UpdateMetadataBroker(
            id=broker_id,
            endpoints=tuple(
                UpdateMetadataEndpoint(port=e.port, host=e.host, listener=e.name,
                                       security_protocol=e.security_protocol)
                for e in java_hash_order(brokers[broker_id].listeners,
                                         lambda e: java_string_hash(e.name))
            ),
            rack=brokers[broker_id].rack,
        )
        for broker_id in sorted(brokers)
    )
