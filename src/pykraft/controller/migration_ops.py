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
from pykraft.image.features import ZkMigrationState
from pykraft.image.image import MetadataImage
from pykraft.image.versions import MV_3_4_IV0, MV_3_6_IV1, MV_3_7_IV0
from pykraft.protocol.errors import ErrorCode
from pykraft.records.metadata import (
    AbortTransactionRecord,
    BeginTransactionRecord,
    EndTransactionRecord,
    MetadataRecord,
    ZkMigrationStateRecord,
)

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


@dataclass(frozen=True, slots=True)
class AbortMigration:
    """The driver's load failed (ZooKeeper lost, a znode it cannot read): an
    ``AbortTransactionRecord`` discards the load's records. Kafka's controller exits instead
    and its successor aborts the transaction at activation; pykraft's stays active and its
    driver loads again."""


#: The reason of the AbortTransactionRecord a failed load leaves.
ABORT_REASON = "Aborting the ZK migration"

MigrationRequest = BeginMigration | MigrationBatch | CompleteMigration | AbortMigration
_TRANSACTION_MARKERS = (BeginTransactionRecord, EndTransactionRecord, AbortTransactionRecord)


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


def migration_write_refusal(image: MetadataImage, request: MigrationRequest, *,
                            in_transaction: bool) -> str | None:
    """Why the current state (``image``, and whether a metadata transaction is open) does not
    allow this write, or None. Kafka's controller writes whatever its driver hands it; this
    refuses what would leave the log in a state its readers fail on (a second Begin, an End
    without a Begin) or that the migration never writes (a load after PRE_MIGRATION)."""
    state = image.features.zk_migration_state
    if state != ZkMigrationState.PRE_MIGRATION:
        return f"The ZK migration state is {state.name}, not PRE_MIGRATION"
    if isinstance(request, BeginMigration):
        return "A metadata transaction is already open" if in_transaction else None
    if image.metadata_version >= MV_3_6_IV1 and not in_transaction:
        return "No ZK migration transaction is open"
    if isinstance(request, MigrationBatch) and any(
            isinstance(r.message, _TRANSACTION_MARKERS) for r in request.records):
        return "A migration batch cannot hold transaction markers"
    return None


def migration_records(image: MetadataImage, request: MigrationRequest
                      ) -> tuple[tuple[object, ...], str | None]:
    """The records of a migration write and the warning to log (Kafka's
    MigrationRecordConsumer): without metadata transactions (before 3.6-IV1) Begin writes
    nothing and Complete no EndTransactionRecord."""
    transactions = image.metadata_version >= MV_3_6_IV1
    if isinstance(request, BeginMigration):
        if not transactions:
            return (), NO_TRANSACTION_WARNING
        return (BeginTransactionRecord(name=TRANSACTION_NAME),), None
    if isinstance(request, MigrationBatch):
        return request.records, None
    if isinstance(request, AbortMigration):
        if not transactions:
            return (), NO_TRANSACTION_WARNING
        return (AbortTransactionRecord(reason=ABORT_REASON),), None
    end = (EndTransactionRecord(),) if transactions else ()
    return (ZkMigrationStateRecord(zk_migration_state=ZkMigrationState.MIGRATION), *end), None


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
