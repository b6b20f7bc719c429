"""Which version of each metadata record a given ``metadata.version`` lets a writer use.

Kafka's ``MetadataVersion`` gates record versions so that every node of a cluster at that
level can read what the controller writes (reference §4.2). Levels are feature levels of
:data:`pykraft.features.METADATA_VERSIONS`.
"""

from __future__ import annotations

from pykraft.records.metadata import (
    BrokerRegistrationChangeRecord,
    PartitionChangeRecord,
    PartitionRecord,
    RegisterBrokerRecord,
)

MV_3_2_IV0 = 3  # leader recovery state in partitions (KIP-704)
MV_3_3_IV1 = 5  # NoOpRecord
MV_3_3_IV2 = 6  # BrokerRegistrationChangeRecord replaces Fence/UnfenceBrokerRecord
MV_3_3_IV3 = 7  # in-controlled-shutdown state in broker registrations
MV_3_4_IV0 = 8  # RegisterBrokerRecord.IsMigratingZkBroker
MV_3_6_IV1 = 13  # metadata transactions (Begin/End/AbortTransactionRecord)
MV_3_7_IV0 = 15  # controller registrations (RegisterControllerRecord)
MV_3_7_IV2 = 17  # JBOD directory assignment: log dirs and partition directories
MV_4_0_IV1 = 23  # eligible leader replicas
MV_4_3_IV0 = 30  # cordoned log directories (KIP-1066)


def record_version(record_class: type, metadata_version: int) -> int:
    """The version of ``record_class`` to write at ``metadata_version``; 0 when not gated."""
    if record_class is RegisterBrokerRecord:
        return _first_at(
            metadata_version,
            ((MV_4_3_IV0, 4), (MV_3_7_IV2, 3), (MV_3_4_IV0, 2), (MV_3_3_IV3, 1)),
        )
    if record_class in (PartitionRecord, PartitionChangeRecord):
        return _first_at(metadata_version, ((MV_4_0_IV1, 2), (MV_3_7_IV2, 1)))
    if record_class is BrokerRegistrationChangeRecord:
        return _first_at(metadata_version, ((MV_3_7_IV2, 2), (MV_3_3_IV3, 1)))
    return 0


def _first_at(metadata_version: int, gates: tuple[tuple[int, int], ...]) -> int:
    for level, version in gates:
        if metadata_version >= level:
            return version
    return 0
