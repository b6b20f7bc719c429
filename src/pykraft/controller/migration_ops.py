"""The ZooKeeper migration's writes to the metadata log, as the driver submits them (Kafka
3.9's ``QuorumController.MigrationRecordConsumer``), and the controllers' readiness for it.

The runtime hands :class:`BeginMigration`, :class:`MigrationBatch` and
:class:`CompleteMigration` to :meth:`QuorumController.submit`, in that order; each is
answered once its records commit with :class:`MigrationWritten` (the offset of the last
record written, and the leader epoch: Kafka's ``OffsetAndEpoch`` the driver writes to
``/migration``), or with :class:`MigrationRefused`. The load runs in one metadata
transaction ("ZK Migration", from metadata.version 3.6-IV1): readers see none of it until
``CompleteMigration`` ends it with the MIGRATION state, and a controller failover in between
aborts all of it (migration-plan §6).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from pykraft.features import metadata_version_for_level
from pykraft.image.cluster_image import ControllerRegistration
from pykraft.image.image import MetadataImage
from pykraft.image.versions import MV_3_4_IV0, MV_3_7_IV0
from pykraft.protocol.errors import ErrorCode
from pykraft.records.metadata import MetadataRecord

#: The name of the load's metadata transaction (Kafka's beginMigration).
TRANSACTION_NAME = "ZK Migration"
#: Kafka's warning when metadata.version has no transactions: the load is then written bare.
NO_TRANSACTION_WARNING = (
    "Starting ZK Migration without metadata transactions enabled. This is not safe since "
    "a controller failover or processing error may lead to partially migrated metadata.")


@dataclass(frozen=True, slots=True)
class BeginMigration:
    """Open the load's transaction: ``BeginTransactionRecord("ZK Migration")``, alone."""


@dataclass(frozen=True, slots=True)
class MigrationBatch:
    """Records the load read from ZooKeeper, written as given (each at its own version,
    not the metadata.version's), in as many raft batches as Kafka would split them into."""

    records: tuple[MetadataRecord, ...]


@dataclass(frozen=True, slots=True)
class CompleteMigration:
    """End the load: ``ZkMigrationStateRecord(MIGRATION)`` and ``EndTransactionRecord`` in
    one batch."""


MigrationRequest = BeginMigration | MigrationBatch | CompleteMigration


@dataclass(frozen=True, slots=True)
class MigrationWritten:
    """The write committed: ``offset`` of its last record (for a Begin without transactions,
    the last offset written before it) in leader ``epoch``."""

    offset: int
    epoch: int
    warning: str | None = None
    """A warning for the runtime to log (Kafka's :data:`NO_TRANSACTION_WARNING`)."""


@dataclass(frozen=True, slots=True)
class MigrationRefused:
    """Nothing (more) was written: NOT_CONTROLLER when this controller is not, or stopped
    being, the active one (another controller's driver takes over); INVALID_REQUEST when the
    log's migration state does not allow the write (a driver bug: Kafka's driver then
    raises a fatal fault)."""

    error_code: ErrorCode
    message: str


def zk_migration_not_ready_reason(image: MetadataImage, voter_ids: Iterable[int]) -> str | None:
    """Why the controller quorum is not ready to migrate, in Kafka's words (QuorumFeatures.
    reasonAllControllersZkMigrationNotReady), or None: every voter registered with
    ``zkMigrationReady``. Below metadata.version 3.7-IV0 controllers do not register, and
    nothing is checked."""
    mv = image.metadata_version
    if mv < MV_3_4_IV0:
        return f"The metadata.version too low at {metadata_version_for_level(mv).name}"
    if mv < MV_3_7_IV0:
        return None
    controllers: Mapping[int, ControllerRegistration] = image.cluster.controllers
    for voter_id in voter_ids:
        registration = controllers.get(voter_id)
        if registration is None:
            return f"No registration found for controller {voter_id}"
        if not registration.zk_migration_ready:
            return (f"Controller {voter_id} has not enabled "
                    "zookeeper.metadata.migration.enable")
    return None
