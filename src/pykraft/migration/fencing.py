"""The migrating controller's hold on ZooKeeper (migration-plan §5): the claim of
``/controller`` and ``/controller_epoch``, the fencing of every migration write, and
``/migration`` (Kafka's ``KafkaZkClient.tryRegisterKRaftControllerAsActiveController``,
``retryMigrationRequestsUntilConnected``, ``getOrCreateMigrationState`` and
``updateMigrationState``).

The operations are built and their results judged by pure functions; the ``*_with`` helpers
run them on a :class:`ZkClient` (blocking: the runtime calls them off its event loop). The
leadership state is an immutable :class:`ZkMigrationLeadershipState`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

from pykraft.errors import PyKraftError
from pykraft.migration.zk_ops import (
    CheckOp,
    CreateOp,
    DeleteOp,
    SetDataOp,
    ZkClient,
    ZkError,
    ZkOp,
    ZkOpResult,
)
from pykraft.migration.zk_tree import Versioned
from pykraft.migration.znodes import ControllerEpochZNode, ControllerZNode, MigrationZNode

CONTROLLER_PATH = "/controller"
CONTROLLER_EPOCH_PATH = "/controller_epoch"
MIGRATION_PATH = "/migration"
UNKNOWN_ZK_VERSION = -2
"""Kafka's sentinel for "no zkVersion known" (never -1, which matches any version)."""
PERSISTENT_ZK_PATHS = (
    "/consumers", "/brokers/ids", "/brokers/topics", "/config/changes", "/admin/delete_topics",
    "/brokers/seqid", "/isr_change_notification", "/latest_producer_id_block",
    "/log_dir_event_notification", "/config/topics", "/config/clients", "/config/users",
    "/config/brokers", "/config/ips")
"""``ZkData.PersistentZkPaths`` (with ``ConfigType.ALL``): created before ``/migration``."""


class MigrationClientError(PyKraftError):
    """A ZooKeeper write of the migration failed (Kafka's ``MigrationClientException``): the
    driver retries on its next poll."""


class ControllerMovedError(MigrationClientError):
    """``/controller_epoch`` is not at the claimed zkVersion, or ``/controller`` holds a KRaft
    epoch at least ours: another controller took over ZooKeeper."""


class MigrationFencedError(PyKraftError):
    """``/migration`` is not at our zkVersion: another KRaft controller is writing to
    ZooKeeper (fatal in Kafka: "This indicates that another KRaft controller is making writes
    to ZooKeeper.")."""


@dataclass(frozen=True, slots=True)
class ZkMigrationLeadershipState:
    """What the driver knows of its hold on ZooKeeper (Kafka's class of the same name): the
    ``/migration`` content and zkVersion, and the ZK controller epoch it claimed with the
    zkVersion of ``/controller_epoch`` that fences its writes."""

    kraft_controller_id: int = -1
    kraft_controller_epoch: int = -1
    kraft_metadata_offset: int = -1
    kraft_metadata_epoch: int = -1
    migration_zk_version: int = UNKNOWN_ZK_VERSION
    zk_controller_epoch: int = -1
    zk_controller_epoch_zk_version: int = UNKNOWN_ZK_VERSION

    @classmethod
    def from_znode(cls, found: Versioned[MigrationZNode]) -> ZkMigrationLeadershipState:
        znode = found.value
        return cls(znode.kraft_controller_id, znode.kraft_controller_epoch,
                   znode.kraft_metadata_offset, znode.kraft_metadata_epoch, found.zk_version)

    def znode(self) -> MigrationZNode:
        """``/migration`` as this state writes it."""
        return MigrationZNode(self.kraft_metadata_offset, self.kraft_controller_id,
                              self.kraft_metadata_epoch, self.kraft_controller_epoch)

    @property
    def initial_migration_complete(self) -> bool:
        """Kafka's ``initialZkMigrationComplete``: the load's offset is in ``/migration``."""
        return self.kraft_metadata_offset > 0

    @property
    def offset_and_epoch(self) -> tuple[int, int]:
        return self.kraft_metadata_offset, self.kraft_metadata_epoch

    def with_migration_zk_version(self, zk_version: int) -> ZkMigrationLeadershipState:
        return dataclasses.replace(self, migration_zk_version=zk_version)

    def with_zk_controller(self, epoch: int, zk_version: int) -> ZkMigrationLeadershipState:
        return dataclasses.replace(self, zk_controller_epoch=epoch,
                                   zk_controller_epoch_zk_version=zk_version)

    def with_unknown_zk_controller(self) -> ZkMigrationLeadershipState:
        return self.with_zk_controller(-1, UNKNOWN_ZK_VERSION)

    def with_new_kraft_controller(self, controller_id: int,
                                  epoch: int) -> ZkMigrationLeadershipState:
        return dataclasses.replace(self, kraft_controller_id=controller_id,
                                   kraft_controller_epoch=epoch)

    def with_kraft_metadata_offset_and_epoch(self, offset: int,
                                             epoch: int) -> ZkMigrationLeadershipState:
        return dataclasses.replace(self, kraft_metadata_offset=offset, kraft_metadata_epoch=epoch)


EMPTY_STATE = ZkMigrationLeadershipState()
"""Kafka's ``ZkMigrationLeadershipState.EMPTY``: what a new ``/migration`` holds."""


# --- the claim ------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class ControllerClaim:
    """The claim's multi and the ZK controller epoch it writes."""

    ops: tuple[ZkOp, ...]
    zk_controller_epoch: int


def claim_ops(controller: Versioned[ControllerZNode] | None,
              controller_epoch: Versioned[ControllerEpochZNode] | None,
              state: ZkMigrationLeadershipState, timestamp_ms: int) -> ControllerClaim:
    """The multi making ``state``'s KRaft controller the ZK controller, from ``/controller``
    and ``/controller_epoch`` as read: set the epoch + 1 at the read zkVersion, replace
    ``/controller`` (delete at its zkVersion, if any) with a persistent one."""
    if controller is not None and controller.value.kraft_controller_epoch >= \
            state.kraft_controller_epoch:
        raise ControllerMovedError(
            f"Cannot register KRaft controller {state.kraft_controller_id} with epoch "
            f"{state.kraft_controller_epoch} as the current controller register in ZK has the "
            f"same or newer epoch {controller.value.kraft_controller_epoch}.")
    if controller_epoch is None:
        raise MigrationClientError(
            f"Cannot register KRaft controller {state.kraft_controller_id} as the active "
            "controller since there is no ZK controller epoch present.")
    epoch = controller_epoch.value.epoch + 1
    znode = ControllerZNode(state.kraft_controller_id, timestamp_ms, state.kraft_controller_epoch)
    ops: list[ZkOp] = [SetDataOp(CONTROLLER_EPOCH_PATH, ControllerEpochZNode(epoch).encode(),
                                 controller_epoch.zk_version)]
    if controller is not None:
        ops.append(DeleteOp(CONTROLLER_PATH, controller.zk_version))
    ops.append(CreateOp(CONTROLLER_PATH, znode.encode()))
    return ControllerClaim(tuple(ops), epoch)


_NOT_CLAIMED = frozenset({ZkError.BAD_VERSION, ZkError.NO_NODE, ZkError.NODE_EXISTS})


def claim_outcome(claim: ControllerClaim, results: Sequence[ZkOpResult],
                  state: ZkMigrationLeadershipState) -> ZkMigrationLeadershipState:
    """The state after the claim's multi: the new ZK controller epoch and the zkVersion the
    set of ``/controller_epoch`` returned, or an unknown ZK controller when another writer
    got there first (BADVERSION, NONODE, NODEEXISTS: retry on the next poll)."""
    failed = next((r.error for r in results if not r.ok and r.error is not ZkError.ROLLED_BACK),
                  None)
    if failed is None:
        version = results[0].version
        if version is None:
            raise MigrationClientError("the claim's set of /controller_epoch gave no zkVersion")
        return state.with_zk_controller(claim.zk_controller_epoch, version)
    if failed in _NOT_CLAIMED:
        return state.with_unknown_zk_controller()
    raise MigrationClientError(f"ZooKeeper had an error {failed.value} while trying to "
                               f"register KRaft controller {state.kraft_controller_id}")


def claim_with(client: ZkClient, state: ZkMigrationLeadershipState,
               timestamp_ms: int) -> ZkMigrationLeadershipState:
    """Read ``/controller_epoch`` and ``/controller``, then claim (Kafka's
    ``claimControllerLeadership``); check :attr:`zk_controller_epoch_zk_version` of the
    result (:data:`UNKNOWN_ZK_VERSION`: not claimed)."""
    epoch_read = client.get(CONTROLLER_EPOCH_PATH)
    controller_read = client.get(CONTROLLER_PATH)
    epoch = None if epoch_read is None or epoch_read.raw is None else Versioned(
        ControllerEpochZNode.decode(epoch_read.raw), epoch_read.version)
    controller = None if controller_read is None or controller_read.raw is None else Versioned(
        ControllerZNode.decode(controller_read.raw), controller_read.version)
    claim = claim_ops(controller, epoch, state, timestamp_ms)
    return claim_outcome(claim, client.multi(claim.ops), state)


# --- fenced writes --------------------------------------------------------------------------

def fenced_multis(requests: Sequence[ZkOp],
                  state: ZkMigrationLeadershipState) -> list[list[ZkOp]]:
    """One multi per request: check ``/controller_epoch`` at the claimed zkVersion, check
    ``/migration`` at ours (the last request instead sets it to ``state``'s JSON), then the
    request."""
    if state.zk_controller_epoch_zk_version < 0:
        raise MigrationClientError("a migration write needs a claimed /controller_epoch "
                                   f"zkVersion, not {state.zk_controller_epoch_zk_version}")
    epoch_check = CheckOp(CONTROLLER_EPOCH_PATH, state.zk_controller_epoch_zk_version)
    last = len(requests) - 1
    return [[epoch_check,
             SetDataOp(MIGRATION_PATH, state.znode().encode(), state.migration_zk_version)
             if i == last else CheckOp(MIGRATION_PATH, state.migration_zk_version),
             request] for i, request in enumerate(requests)]


def fenced_results(results: Sequence[Sequence[ZkOpResult]],
                   state: ZkMigrationLeadershipState) -> tuple[list[ZkOpResult], int]:
    """The requests' own results and the new ``/migration`` zkVersion (the last multi's set,
    or ours when it did not apply); a failed fencing check raises."""
    found: list[ZkOpResult] = []
    version = state.migration_zk_version
    for epoch_result, migration_result, result in results:
        if epoch_result.error is ZkError.BAD_VERSION:
            raise ControllerMovedError("Controller epoch zkVersion check fails. Expected "
                                       f"zkVersion = {state.zk_controller_epoch_zk_version}")
        if epoch_result.error not in (ZkError.OK, ZkError.ROLLED_BACK):
            raise MigrationClientError(f"{CONTROLLER_EPOCH_PATH}: {epoch_result.error.value}")
        if migration_result.error is ZkError.BAD_VERSION:
            raise MigrationFencedError(
                f"Conditional update on KRaft Migration ZNode failed. Sent zkVersion = "
                f"{state.migration_zk_version}. This indicates that another KRaft controller "
                "is making writes to ZooKeeper.")
        if migration_result.error not in (ZkError.OK, ZkError.ROLLED_BACK):
            raise MigrationClientError(f"{MIGRATION_PATH}: {migration_result.error.value}")
        version = migration_result.version if migration_result.ok and \
            migration_result.version is not None else state.migration_zk_version
        found.append(result)
    return found, version


def fenced_with(client: ZkClient, requests: Sequence[ZkOp],
                state: ZkMigrationLeadershipState) -> tuple[list[ZkOpResult], int]:
    """Run ``requests`` fenced, one multi each, in order (Kafka pipelines them on one
    session, which ZooKeeper runs in order)."""
    if not requests:
        return [], state.migration_zk_version
    return fenced_results([client.multi(multi) for multi in fenced_multis(requests, state)],
                          state)


# --- /migration -----------------------------------------------------------------------------

def create_recursive_with(client: ZkClient, path: str, data: bytes | None = None) -> None:
    """Kafka's ``createRecursive(path, data, throwIfPathExists = false)``, unfenced: create,
    and on NONODE create the parents first and try again; NODEEXISTS is fine."""
    result = client.multi([CreateOp(path, data or b"")])[0]
    if result.error is ZkError.NO_NODE:
        parent = path.rpartition("/")[0]
        if parent:
            create_recursive_with(client, parent)
        result = client.multi([CreateOp(path, data or b"")])[0]
    if result.error not in (ZkError.OK, ZkError.NODE_EXISTS):
        raise MigrationClientError(f"could not create {path}: {result.error.value}")


def get_or_create_migration_with(client: ZkClient,
                                 initial: ZkMigrationLeadershipState = EMPTY_STATE
                                 ) -> ZkMigrationLeadershipState:
    """Kafka's ``getOrCreateMigrationRecoveryState``: the top-level paths, then ``/migration``
    as read, or created with ``initial`` (zkVersion 0)."""
    for path in PERSISTENT_ZK_PATHS:
        create_recursive_with(client, path)
    found = client.get(MIGRATION_PATH)
    if found is not None and found.raw is not None:
        return ZkMigrationLeadershipState.from_znode(
            Versioned(MigrationZNode.decode(found.raw), found.version))
    result = client.multi([CreateOp(MIGRATION_PATH, initial.znode().encode())])[0]
    if not result.ok:
        raise MigrationClientError(f"could not create {MIGRATION_PATH}: {result.error.value}")
    return initial.with_migration_zk_version(0)


def set_migration_with(client: ZkClient,
                       state: ZkMigrationLeadershipState) -> ZkMigrationLeadershipState:
    """Kafka's ``updateMigrationState``: set ``/migration`` to ``state`` at its zkVersion
    (not fenced by ``/controller_epoch``). The driver does it after each delta written, and
    right after its claim at version -1 (any), to learn the zkVersion a previous controller
    may have moved (KAFKA-16171)."""
    result = client.multi([SetDataOp(MIGRATION_PATH, state.znode().encode(),
                                     state.migration_zk_version)])[0]
    if result.error is ZkError.BAD_VERSION:
        raise MigrationFencedError(f"{MIGRATION_PATH} is not at zkVersion "
                                   f"{state.migration_zk_version}")
    if not result.ok or result.version is None:
        raise MigrationClientError(f"could not set {MIGRATION_PATH}: {result.error.value}")
    return state.with_migration_zk_version(result.version)
