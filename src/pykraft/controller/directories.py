"""Where a partition's replicas live (KIP-858): each replica's log directory in the
partition's ``directories``, and whether its broker's registration has that directory
online (Kafka's ``PartitionRegistration.directory`` and ``DirectoryId.isOnline``)."""

from __future__ import annotations

import uuid

from pykraft.controller.context import UNASSIGNED_DIR
from pykraft.ids import ZERO_UUID
from pykraft.image.cluster_image import BrokerRegistration
from pykraft.image.topics import PartitionRegistration

#: Kafka's DirectoryId.LOST: a replica whose directory is known to be gone.
LOST_DIR = uuid.UUID(int=2)


def dir_is_online(dir_id: uuid.UUID, online: tuple[uuid.UUID, ...]) -> bool:
    """Kafka's DirectoryId.isOnline: UNASSIGNED and MIGRATING count as online, LOST never;
    a broker registered with no directories (before 3.7-IV2) has them all online."""
    if dir_id in (UNASSIGNED_DIR, ZERO_UUID):
        return True
    return dir_id != LOST_DIR and (not online or dir_id in online)


def replica_directory(partition: PartitionRegistration, broker_id: int) -> uuid.UUID:
    """The directory of ``broker_id``'s replica (Kafka's ``PartitionRegistration.directory``)."""
    if not partition.directories:
        return ZERO_UUID  # a partition from before 3.7-IV2: Kafka reads MIGRATING
    return partition.directories[partition.replicas.index(broker_id)]


def has_online_dir(broker: BrokerRegistration | None, partition: PartitionRegistration) -> bool:
    """Kafka's ``ClusterControlManager.hasOnlineDir`` for the broker's replica of
    ``partition``: the broker is registered and that replica's directory is online."""
    return broker is not None and dir_is_online(replica_directory(partition, broker.broker_id),
                                                broker.log_dirs)
