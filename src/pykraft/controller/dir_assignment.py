"""AssignReplicasToDirs (API 73, KIP-858): a broker with several log directories says in
which one it placed each of its replicas (Kafka's
ReplicationControlManager.handleAssignReplicasToDirs).

The controller created those replicas with the directory UNASSIGNED (see
``ControllerContext.default_dir``); the broker's answer becomes a PartitionChangeRecord setting
its entry of the partition's ``directories``. As in Kafka: refused whole below
metadata.version 3.7-IV2 (UNSUPPORTED_VERSION) or for a broker epoch that is not the
registered one (STALE_BROKER_EPOCH); per partition UNKNOWN_TOPIC_ID, UNKNOWN_TOPIC_OR_PARTITION,
or NOT_LEADER_OR_FOLLOWER for a partition the broker holds no replica of. A replica assigned
to a directory the broker's registration does not list as online is then taken out of the
ISR and leadership, as a replica on an offline directory.

A broker's heartbeat naming failed directories (``OfflineLogDirs``) does the same for every
replica it holds in them, and the registration keeps only the other directories (Kafka's
``handleDirectoriesOffline``, from metadata.version 3.7-IV2: below, they are ignored).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import replace

from pykraft.controller.cluster_control import election
from pykraft.controller.context import ControllerContext, ControllerResult
from pykraft.controller.directories import dir_is_online, replica_directory
from pykraft.controller.partition_change import partition_change
from pykraft.controller.responses import error_response
from pykraft.image.cluster_image import BrokerRegistration
from pykraft.image.topics import TopicImage
from pykraft.image.versions import MV_3_7_IV2
from pykraft.messages.kafka import assign_replicas_to_dirs_request as req_
from pykraft.messages.kafka import assign_replicas_to_dirs_response as resp_
from pykraft.protocol.errors import ErrorCode
from pykraft.records.metadata import BrokerRegistrationChangeRecord, PartitionChangeRecord


def assign_replicas_to_dirs(ctx: ControllerContext,
                            req: req_.AssignReplicasToDirsRequest) -> ControllerResult:
    """The records moving the broker's replicas to the directories it names."""
    if ctx.metadata_version < MV_3_7_IV2:
        return ControllerResult((), error_response(req, ErrorCode.UNSUPPORTED_VERSION))
    broker = ctx.image.cluster.brokers.get(req.broker_id)
    if broker is None or broker.epoch != req.broker_epoch:
        return ControllerResult((), error_response(req, ErrorCode.STALE_BROKER_EPOCH))
    records: list[object] = []
    offline: list[tuple[TopicImage, int]] = []
    directories: list[resp_.DirectoryData] = []
    for directory in req.directories:
        dir_id = directory.id
        topics: list[resp_.TopicData] = []
        for data in directory.topics:
            topic = ctx.image.topics.by_id.get(data.topic_id)
            answers: list[resp_.PartitionData] = []
            for part in data.partitions:
                code = (ErrorCode.UNKNOWN_TOPIC_ID if topic is None
                        else _assign(ctx, broker, topic, part.partition_index, dir_id, records))
                if (topic is not None and code == ErrorCode.NONE
                        and not dir_is_online(dir_id, broker.log_dirs)):
                    offline.append((topic, part.partition_index))
                answers.append(resp_.PartitionData(partition_index=part.partition_index,
                                                   error_code=code))
            topics.append(resp_.TopicData(topic_id=data.topic_id, partitions=tuple(answers)))
        directories.append(resp_.DirectoryData(id=directory.id, topics=tuple(topics)))
    records += _leave_offline(ctx, broker.broker_id, offline)
    return ControllerResult(tuple(records), resp_.AssignReplicasToDirsResponse(
        error_code=ErrorCode.NONE, directories=tuple(directories)))


def directories_offline(ctx: ControllerContext, broker: BrokerRegistration,
                        offline: Sequence[uuid.UUID]) -> list[object]:
    """The records of a heartbeat's ``OfflineLogDirs``: the broker's replicas in the
    directories newly offline leave their ISR and leadership, then the registration keeps
    the remaining directories (nothing for directories already gone or not the broker's)."""
    newly = frozenset(offline) & frozenset(broker.log_dirs)
    if ctx.metadata_version < MV_3_7_IV2 or not newly:
        return []
    held = [(topic, partition_id) for topic in ctx.image.topics.by_id.values()
            for partition_id, partition in sorted(topic.partitions.items())
            if broker.broker_id in partition.replicas
            and replica_directory(partition, broker.broker_id) in newly]
    return [*_leave_offline(ctx, broker.broker_id, held), BrokerRegistrationChangeRecord(
        broker_id=broker.broker_id, broker_epoch=broker.epoch,
        log_dirs=tuple(d for d in broker.log_dirs if d not in newly))]


def _never(_topic: str) -> bool:
    """Kafka's directory assignment elects from the ISR only, whatever the topic allows."""
    return False


def _assign(ctx: ControllerContext, broker: BrokerRegistration, topic: TopicImage,
            partition_id: int, dir_id: uuid.UUID, records: list[object]) -> ErrorCode:
    """Append the change putting the broker's replica of the partition in ``dir_id``: as
    Kafka's PartitionChangeBuilder, it also elects a leader if the current one may no longer
    lead (an active broker whose replica's directory is online, Kafka's LeaderAcceptor)."""
    partition = topic.partitions.get(partition_id)
    if partition is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    if broker.broker_id not in partition.replicas:
        return ErrorCode.NOT_LEADER_OR_FOLLOWER
    directories = tuple(dir_id if replica == broker.broker_id
                        else replica_directory(partition, replica)
                        for replica in partition.replicas)

    elected = partition_change(topic, partition_id, partition, isr=partition.isr,
                               election=replace(election(ctx), unclean=_never,
                                                leader_recovery=True))
    if directories != partition.directories:
        records.append(replace(elected, directories=directories) if elected is not None
                       else PartitionChangeRecord(partition_id=partition_id,
                                                  topic_id=topic.topic_id,
                                                  directories=directories))
    elif elected is not None:
        records.append(elected)
    return ErrorCode.NONE


def _leave_offline(ctx: ControllerContext, broker_id: int,
                   partitions: list[tuple[TopicImage, int]]) -> list[object]:
    """Kafka's "offline-dir-assignment" updates: the broker leaves the ISR and leadership of
    replicas it placed in a directory that is not online."""
    without = election(ctx, lambda b: b != broker_id and ctx.usable(b))
    records: list[object] = []
    for topic, partition_id in partitions:
        partition = topic.partitions[partition_id]
        isr = tuple(r for r in partition.isr if r != broker_id)
        change = partition_change(topic, partition_id, partition, isr=isr, election=without)
        if change is not None:
            records.append(change)
    return records
