"""The migration driver: the state machine that takes a ZooKeeper cluster over (migration-plan
§4; Kafka's ``KRaftMigrationDriver``).

One driver per controller with ``zookeeper.metadata.migration.enable``. The runtime calls its
methods one at a time from a single worker (Kafka's driver has its own event thread): the
leader changes and committed images the controller publishes, and :meth:`poll`, re-armed by
the runtime after Kafka's backoff (100 ms doubling to 60 s, 2 % jitter) and at once whenever
:meth:`poll` or an input reports a transition. Every effect goes through an injected port —
ZooKeeper (:class:`MigrationZk`), the controller's records (:class:`MigrationRecords`), the
legacy RPCs (:class:`LegacyPropagator`), the readiness of the controller quorum, the ZooKeeper
write metrics (:class:`ZkWriteRecorder`) — so the driver is deterministic and runs against a
simulated ZooKeeper and controller in tests.
Ports block (a ZooKeeper write waits for the connection, a batch for its commit), as Kafka's
do; a :class:`~pykraft.migration.zk_ops.ZkUnavailableError` from ZooKeeper leaves the state as
it was, to be retried by the next poll ("Will retry").
"""

from __future__ import annotations

import enum
import logging
import random
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from pykraft.errors import PyKraftError
from pykraft.image.features import ZkMigrationState
from pykraft.image.image import MetadataDelta, MetadataImage
from pykraft.migration.fencing import (
    EMPTY_STATE,
    UNKNOWN_ZK_VERSION,
    MigrationClientError,
    MigrationFencedError,
    ZkMigrationLeadershipState,
)
from pykraft.migration.load import (
    MigrationLoadError,
    PasswordDecoder,
    completion_message,
    migration_load,
)
from pykraft.migration.zk_ops import ANY_VERSION, ZkUnavailableError
from pykraft.migration.zk_tree import ZkTree
from pykraft.migration.zk_write import ZkWrite, counts_text, write_counts
from pykraft.migration.zk_writer import touches_zookeeper
from pykraft.migration.znodes import ZNodeDecodeError
from pykraft.records.metadata import MetadataRecord

log = logging.getLogger(__name__)

class MigrationDriverState(enum.Enum):
    UNINITIALIZED = "UNINITIALIZED"
    INACTIVE = "INACTIVE"
    WAIT_FOR_CONTROLLER_QUORUM = "WAIT_FOR_CONTROLLER_QUORUM"
    WAIT_FOR_BROKERS = "WAIT_FOR_BROKERS"
    BECOME_CONTROLLER = "BECOME_CONTROLLER"
    ZK_MIGRATION = "ZK_MIGRATION"
    SYNC_KRAFT_TO_ZK = "SYNC_KRAFT_TO_ZK"
    KRAFT_CONTROLLER_TO_BROKER_COMM = "KRAFT_CONTROLLER_TO_BROKER_COMM"
    DUAL_WRITE = "DUAL_WRITE"

    @property
    def allows_dual_write(self) -> bool:
        return self in (MigrationDriverState.KRAFT_CONTROLLER_TO_BROKER_COMM,
                        MigrationDriverState.DUAL_WRITE)


_S = MigrationDriverState
_TRANSITIONS: Mapping[MigrationDriverState, frozenset[MigrationDriverState]] = {
    _S.UNINITIALIZED: frozenset({_S.INACTIVE}),
    _S.DUAL_WRITE: frozenset({_S.INACTIVE}),
    _S.INACTIVE: frozenset({_S.WAIT_FOR_CONTROLLER_QUORUM}),
    _S.WAIT_FOR_CONTROLLER_QUORUM: frozenset({_S.INACTIVE, _S.BECOME_CONTROLLER,
                                              _S.WAIT_FOR_BROKERS}),
    _S.WAIT_FOR_BROKERS: frozenset({_S.INACTIVE, _S.BECOME_CONTROLLER}),
    _S.BECOME_CONTROLLER: frozenset({_S.INACTIVE, _S.ZK_MIGRATION, _S.SYNC_KRAFT_TO_ZK}),
    _S.ZK_MIGRATION: frozenset({_S.INACTIVE, _S.SYNC_KRAFT_TO_ZK}),
    _S.SYNC_KRAFT_TO_ZK: frozenset({_S.INACTIVE, _S.KRAFT_CONTROLLER_TO_BROKER_COMM}),
    _S.KRAFT_CONTROLLER_TO_BROKER_COMM: frozenset({_S.INACTIVE, _S.DUAL_WRITE}),
}
"""Kafka's ``isValidStateChange``; anything else is a bug (IllegalStateException there)."""


WriteCounts = dict[str, int]
"""ZooKeeper writes by Kafka's operation type name (``UpdateTopic`` ...), for the log."""


class MigrationZk(Protocol):
    """The driver's view of ZooKeeper (Kafka's ``MigrationClient``): each method blocks and
    raises ZkUnavailableError when ZooKeeper cannot answer."""

    def get_or_create_migration_state(
            self, initial: ZkMigrationLeadershipState) -> ZkMigrationLeadershipState:
        """``/migration`` read (its content and zkVersion), created from ``initial`` if absent."""

    def set_migration_state(self, state: ZkMigrationLeadershipState) -> ZkMigrationLeadershipState:
        """Write ``/migration`` at ``state.migration_zk_version`` (-1: unconditionally)."""

    def claim_controller_leadership(
            self, state: ZkMigrationLeadershipState) -> ZkMigrationLeadershipState:
        """Claim ``/controller`` and ``/controller_epoch`` (§5); the state unchanged when
        the claim failed."""

    def read_broker_ids(self) -> set[int]:
        """The children of ``/brokers/ids``."""

    def read_tree(self) -> ZkTree:
        """Everything the load and the sync read (§6)."""

    def sync_writes(self, image: MetadataImage,
                    state: ZkMigrationLeadershipState) -> list[ZkWrite]:
        """What reconciles ZooKeeper with ``image`` (Kafka's ``handleSnapshot``): reads it."""

    def delta_writes(self, previous: MetadataImage, image: MetadataImage,
                     delta: MetadataDelta, state: ZkMigrationLeadershipState) -> list[ZkWrite]:
        """What writes ``delta``'s changes (Kafka's ``handleDelta``); reads nothing."""

    def apply(self, write: ZkWrite,
              state: ZkMigrationLeadershipState) -> ZkMigrationLeadershipState:
        """Make one write, fenced by ``state``; the state with ``/migration``'s new zkVersion."""


class MigrationRecords(Protocol):
    """The controller's side of the load (Kafka's ``ZkRecordConsumer``): each call returns
    once the records committed, and raises :class:`MigrationCommitError` if they did not."""

    def begin(self) -> None: ...

    def accept_batch(self, records: tuple[MetadataRecord, ...]) -> None: ...

    def complete(self) -> tuple[int, int]:
        """MIGRATION + EndTransaction; their offset and leader epoch."""

    def abort(self) -> None:
        """The load failed: abort the open transaction (AbortTransactionRecord); never
        raises (if this controller is no longer active, its successor aborts it)."""


class LegacyPropagator(Protocol):
    """The legacy RPCs to the ZooKeeper-mode brokers (§8); sends are queued, not awaited."""

    def send_full(self, image: MetadataImage, zk_controller_epoch: int) -> None: ...

    def send_delta(self, previous: MetadataImage, image: MetadataImage,
                   zk_controller_epoch: int) -> None: ...


class ZkWriteRecorder(Protocol):
    """Kafka's ``QuorumControllerMetrics`` as its driver feeds them (``ZkWriteBehindLag``,
    ``ZkWriteSnapshotTimeMs``, ``ZkWriteDeltaTimeMs``): durations in ms of the clock port."""

    def zk_write_snapshot_time(self, duration_ms: int) -> None:
        """A full sync of an image to ZooKeeper took ``duration_ms``."""

    def zk_write_delta_time(self, duration_ms: int) -> None:
        """A delta touching what ZooKeeper holds was written in ``duration_ms``."""

    def dual_write_offset(self, offset: int) -> None:
        """ZooKeeper holds the image up to ``offset`` (Kafka's ``updateDualWriteOffset``)."""


class MigrationCommitError(PyKraftError):
    """The controller could not commit a migration write (not active any more, timed out)."""


QuorumReadiness = Callable[[MetadataImage], str | None]
"""Why the controller quorum is not ready to migrate (Kafka's
``reasonAllControllersZkMigrationNotReady``), None when it is."""
Clock = Callable[[], int]
"""Milliseconds, for the load's timings in its log line and the ZooKeeper write times
(never for decisions)."""


MAX_UNWRITTEN_CHANGES = 1000
"""Committed changes kept while ZooKeeper is unreachable; past them the queue becomes one
full sync of the latest image (bounded memory for a long outage)."""


@dataclass
class _Unwritten:
    """A committed change not yet all in ZooKeeper: what is left of its writes (None: a
    snapshot's, read from ZooKeeper when first tried), then ``/migration`` at its offset,
    then its RPCs."""

    previous: MetadataImage
    image: MetadataImage
    snapshot: bool
    rpcs: bool
    timed: bool
    """A delta touching what ZooKeeper holds: its write time is recorded."""
    writes: deque[ZkWrite] | None = None
    counts: WriteCounts = field(default_factory=dict)


def _offset_and_epoch(image: MetadataImage) -> tuple[int, int]:
    return image.provenance.last_offset, image.provenance.last_epoch


def _brokers_missing(image: MetadataImage, broker_ids: set[int]) -> set[int]:
    migrating = {b.broker_id for b in image.cluster.brokers.values() if b.is_migrating_zk_broker}
    return broker_ids - migrating


class MigrationDriver:
    """See the module docstring. ``leader``: this driver's view of the KRaft leader (id,
    epoch), from :meth:`on_leader_change`; writes are made only for the leader and epoch they
    were started under."""

    def __init__(self, node_id: int, *, zk: MigrationZk, records: MigrationRecords,
                 propagator: LegacyPropagator, quorum_readiness: QuorumReadiness,
                 metrics: ZkWriteRecorder, rng: random.Random, clock: Clock,
                 min_batch_size: int, password_decoder: PasswordDecoder | None = None) -> None:
        self.node_id = node_id
        self._zk = zk
        self._records = records
        self._propagator = propagator
        self._quorum_readiness = quorum_readiness
        self._metrics = metrics
        self._rng = rng
        self._clock = clock
        self._min_batch_size = min_batch_size
        self._password_decoder = password_decoder
        """``password.encoder.secret``'s decoder of password broker configs in ZooKeeper."""
        self.state = MigrationDriverState.UNINITIALIZED
        self.leadership = EMPTY_STATE
        self.image = MetadataImage()
        self._first_publish = False
        self._reread_migration = False
        """Active in a new epoch: ``/migration`` is read again before anything else."""
        self._unwritten: deque[_Unwritten] = deque()
        """Committed changes whose writes a ZooKeeper failure cut, and those after them."""
        self.leader: tuple[int | None, int] = (None, -1)
        self.wakeup = False
        """Set by a transition (and by broker changes before dual write): the runtime polls
        again at once and resets its backoff, then clears this."""

    # -- inputs ------------------------------------------------------------------------

    def on_leader_change(self, leader_id: int | None, epoch: int) -> None:
        """Kafka's onControllerChange: recover ``/migration`` first if never done, then
        follow the new leader. Becoming active re-reads ``/migration`` in the next step
        (never here: a ZooKeeper outage must not lose the leader change)."""
        self.leader = (leader_id, epoch)
        if self.state is MigrationDriverState.UNINITIALIZED:
            self._try(self._recover)
            return  # a recovery that succeeded followed the leader
        self._follow_leader()

    def _follow_leader(self) -> None:
        leader_id, epoch = self.leader
        self._unwritten.clear()  # a new claim syncs everything
        if leader_id != self.node_id:
            self.leadership = self.leadership.with_new_kraft_controller(
                -1 if leader_id is None else leader_id, epoch).with_unknown_zk_controller()
            self._transition(MigrationDriverState.INACTIVE)
            return
        self.leadership = self.leadership.with_new_kraft_controller(
            self.node_id, epoch).with_unknown_zk_controller()
        self._reread_migration = True
        log.info("Became active migration driver in epoch %d", epoch)
        self._transition(MigrationDriverState.INACTIVE)  # from an active state of an old epoch
        self._transition(MigrationDriverState.WAIT_FOR_CONTROLLER_QUORUM)

    def on_metadata(self, delta: MetadataDelta, image: MetadataImage, *,
                    is_snapshot: bool) -> None:
        """A committed image (Kafka's MetadataChangeEvent): kept for the states that wait
        on it; in dual write, its changes go to ZooKeeper and the brokers."""
        if not self._first_publish and image.is_empty:
            return
        self._first_publish = True
        previous, self.image = self.image, image
        if self.state in (MigrationDriverState.UNINITIALIZED, MigrationDriverState.INACTIVE):
            return
        if not self.state.allows_dual_write:
            if delta.cluster_delta is not None:
                self.wakeup = True
            return
        if self.leader != (self.node_id, self.leadership.kraft_controller_epoch):
            return
        if not self.leadership.initial_migration_complete:
            return
        if _offset_and_epoch(image) < self.leadership.offset_and_epoch:
            return
        change = _Unwritten(previous, image, is_snapshot,
                            delta.topics_delta is not None or delta.cluster_delta is not None,
                            touches_zookeeper(delta))
        if not is_snapshot:
            change.writes = deque(self._zk.delta_writes(previous, image, delta,
                                                        self.leadership))
            change.counts = write_counts(change.writes)
        self._unwritten.append(change)
        if len(self._unwritten) > MAX_UNWRITTEN_CHANGES:
            log.warning("%d committed changes wait for ZooKeeper: they will be written by a "
                        "full sync", len(self._unwritten))
            self._unwritten = deque([_Unwritten(image, image, snapshot=True, rpcs=True,
                                                timed=False)])
        self._try(self._write_unwritten)

    def _write_unwritten(self) -> None:
        """The waiting changes to ZooKeeper in order, each write once: for each, what is
        left of its writes, ``/migration`` at its offset, then its RPCs."""
        while self._unwritten:
            change = self._unwritten[0]
            start_ms = self._clock()
            if change.writes is None:
                change.writes = deque(self._zk.sync_writes(change.image, self.leadership))
                change.counts = write_counts(change.writes)
            self._apply(change.writes)  # a write cut among its requests runs whole again
            if change.snapshot:
                self._metrics.zk_write_snapshot_time(self._clock() - start_ms)
            elif change.timed:
                self._metrics.zk_write_delta_time(self._clock() - start_ms)
            if change.counts:
                kind = "snapshot" if change.snapshot else "delta"
                log.debug("Made the following ZK writes when handling KRaft %s: %s", kind,
                          counts_text(change.counts))
            offset, epoch = _offset_and_epoch(change.image)
            self._metrics.dual_write_offset(offset)
            self.leadership = self._zk.set_migration_state(
                self.leadership.with_kraft_metadata_offset_and_epoch(offset, epoch))
            self._unwritten.popleft()
            if change.snapshot:
                self._propagator.send_full(change.image, self.leadership.zk_controller_epoch)
            elif change.rpcs:
                self._propagator.send_delta(change.previous, change.image,
                                            self.leadership.zk_controller_epoch)

    def _apply(self, writes: deque[ZkWrite]) -> None:
        """Each write in turn, dropped once made, the claim's state following each."""
        while writes:
            self.leadership = self._zk.apply(writes[0], self.leadership)
            writes.popleft()

    def _dual_write(self) -> None:
        """Nothing to poll in dual write, unless ZooKeeper failed a write: then what is
        left of it and the changes after it."""
        if self._unwritten and self._leads():
            self._write_unwritten()

    def poll(self) -> None:
        """Kafka's PollEvent: run the current state's step."""
        step = self._steps.get(self.state)
        if step is not None:
            self._try(lambda: step(self))

    def _try(self, step: Callable[[], None]) -> bool:
        """Run ``step``; a ZooKeeper failure leaves the state as it was, to be retried by the
        next poll (Kafka: "Encountered ZooKeeper error during event ... Will retry.")."""
        try:
            step()
        except (ZkUnavailableError, MigrationClientError, MigrationFencedError) as e:
            log.info("Encountered ZooKeeper error during %s. Will retry. (%s)",
                     self.state.value, e)
            return False
        return True

    # -- steps -------------------------------------------------------------------------

    def _recover(self) -> None:
        self.leadership = self._zk.get_or_create_migration_state(self.leadership)
        done = "done" if self.leadership.initial_migration_complete else "not done"
        log.info("Initial migration of ZK metadata is %s.", done)
        self._transition(MigrationDriverState.INACTIVE)
        if self.leader != (None, -1):
            self._follow_leader()

    def _wait_for_controller_quorum(self) -> None:
        if self._reread_migration:
            leader_epoch = self.leadership.kraft_controller_epoch
            recovered = self._zk.get_or_create_migration_state(self.leadership)
            self.leadership = recovered.with_new_kraft_controller(
                self.node_id, leader_epoch).with_unknown_zk_controller()
            self._reread_migration = False
        if not self._first_publish:
            return
        state = self.image.features.zk_migration_state
        if state == ZkMigrationState.NONE:
            log.error("The controller's ZkMigrationState is NONE which means this cluster "
                      "should not be migrated from ZooKeeper. This controller should not be "
                      "configured with 'zookeeper.metadata.migration.enable' set to true. "
                      "Will not proceed with a migration.")
            self._transition(MigrationDriverState.INACTIVE)
        elif state == ZkMigrationState.PRE_MIGRATION:
            reason = self._quorum_readiness(self.image)
            if reason is not None:
                log.warning("Still waiting for all controller nodes ready to begin the "
                            "migration. Not ready due to:%s", reason)
                return
            log.info("Controller Quorum is ready for Zk to KRaft migration. Now waiting "
                     "for ZK brokers.")
            self._transition(MigrationDriverState.WAIT_FOR_BROKERS)
        elif state == ZkMigrationState.MIGRATION:
            if not self.leadership.initial_migration_complete:
                log.error("KRaft controller indicates an active migration, but the ZK state "
                          "does not.")
                self._transition(MigrationDriverState.INACTIVE)
            else:
                log.info("Migration is in already progress, not waiting on ZK brokers.")
                self._transition(MigrationDriverState.BECOME_CONTROLLER)
        else:
            log.error("KRaft controller indicates a completed migration, but the migration "
                      "driver is somehow active.")
            self._transition(MigrationDriverState.INACTIVE)

    def _wait_for_brokers(self) -> None:
        if self._zk_brokers_ready():
            log.info("Zk brokers are registered and ready for migration")
            self._transition(MigrationDriverState.BECOME_CONTROLLER)

    def _zk_brokers_ready(self) -> bool:
        """Kafka's areZkBrokersReadyForMigration (§3)."""
        if not self._first_publish:
            log.info("Waiting for initial metadata publish before checking if Zk brokers "
                     "are registered.")
            return False
        if not self.image.cluster.brokers:
            log.info("No brokers are known to KRaft, waiting for brokers to register.")
            return False
        registered = self._zk.read_broker_ids()
        if not registered:
            log.info("No brokers are registered in ZK, waiting for brokers to register.")
            return False
        if missing := _brokers_missing(self.image, registered):
            log.info("Still waiting for ZK brokers %s to register with KRaft.", sorted(missing))
            return False
        assigned = {replica for topic in self._zk.read_tree().topics
                    for _, replicas in topic.assignment.partitions for replica in replicas}
        if missing := _brokers_missing(self.image, assigned):
            log.info("Still waiting for ZK brokers %s found in metadata to register with "
                     "KRaft.", sorted(missing))
            return False
        return True

    def _become_controller(self) -> None:
        if not self._leads():
            return
        claimed = self._zk.claim_controller_leadership(self.leadership)
        self.leadership = claimed
        log.info("Claimed ZK controller leadership: %s", claimed)
        if claimed.zk_controller_epoch_zk_version == UNKNOWN_ZK_VERSION:
            log.info("Unable to claim leadership, will retry until we learn of a different "
                     "KRaft leader")
            return
        # The previous controller may have written /migration before our claim: an
        # unconditional write learns its latest zkVersion (Kafka's KAFKA-16171).
        self.leadership = self._zk.set_migration_state(
            self.leadership.with_migration_zk_version(ANY_VERSION))
        self._transition(MigrationDriverState.SYNC_KRAFT_TO_ZK
                         if self.leadership.initial_migration_complete
                         else MigrationDriverState.ZK_MIGRATION)

    def _migrate(self) -> None:
        """The load (§6): Begin, the batches (each waits for its commit), MIGRATION + End,
        then ``/migration`` names the offset. A failure after Begin aborts the transaction
        and the next poll loads again (Kafka's controller exits instead, and its successor
        aborts the transaction at activation)."""
        if not self._leads():
            return
        log.info("Starting ZK migration")
        start_ms = self._clock()
        try:
            self._records.begin()
        except MigrationCommitError as e:
            log.error("Could not start the migration: %s", e)
            return
        waited_ms = 0
        try:
            load = migration_load(self._zk.read_tree(), self._rng,
                                  min_batch_size=self._min_batch_size,
                                  password_decoder=self._password_decoder)
            for batch in load.batches:
                before_ms = self._clock()
                self._records.accept_batch(batch)
                waited_ms += self._clock() - before_ms
            offset, epoch = self._records.complete()
        except (MigrationCommitError, MigrationLoadError, ZkUnavailableError,
                ZNodeDecodeError) as e:
            log.error("Aborting the metadata migration from ZooKeeper to KRaft. %s", e)
            self._records.abort()
            return
        log.info("%s", completion_message(
            load, duration_ms=self._clock() - start_ms, batch_wait_ms=waited_ms,
            offset=offset, epoch=epoch))
        self.leadership = self._zk.set_migration_state(
            self.leadership.with_kraft_metadata_offset_and_epoch(offset, epoch))
        self._transition(MigrationDriverState.SYNC_KRAFT_TO_ZK)

    def _sync(self) -> None:
        if not self._leads():
            return
        if _offset_and_epoch(self.image) < self.leadership.offset_and_epoch:
            log.info("Ignoring image %s which does not contain a superset of the metadata in "
                     "ZK. Staying in SYNC_KRAFT_TO_ZK until a newer image is loaded",
                     _offset_and_epoch(self.image))
            return
        log.info("Performing a full metadata sync from KRaft to ZK.")
        start_ms = self._clock()
        writes = deque(self._zk.sync_writes(self.image, self.leadership))
        counts = write_counts(writes)
        self._apply(writes)  # cut short, the next poll reconciles what is left
        self._metrics.zk_write_snapshot_time(self._clock() - start_ms)
        if counts:
            log.info("Made the following ZK writes when reconciling with KRaft state: %s",
                     counts_text(counts))
        else:
            log.info("Did not make any ZK writes when reconciling with KRaft state.")
        self._transition(MigrationDriverState.KRAFT_CONTROLLER_TO_BROKER_COMM)

    def _send_rpcs(self) -> None:
        if not self._leads():
            return
        if _offset_and_epoch(self.image) < self.leadership.offset_and_epoch:
            return
        log.info("Sending RPCs to broker before moving to dual-write mode using at offset "
                 "and epoch %s", _offset_and_epoch(self.image))
        self._propagator.send_full(self.image, self.leadership.zk_controller_epoch)
        self._transition(MigrationDriverState.DUAL_WRITE)

    _steps: Mapping[MigrationDriverState, Callable[[MigrationDriver], None]] = {
        MigrationDriverState.UNINITIALIZED: _recover,
        MigrationDriverState.WAIT_FOR_CONTROLLER_QUORUM: _wait_for_controller_quorum,
        MigrationDriverState.WAIT_FOR_BROKERS: _wait_for_brokers,
        MigrationDriverState.BECOME_CONTROLLER: _become_controller,
        MigrationDriverState.ZK_MIGRATION: _migrate,
        MigrationDriverState.SYNC_KRAFT_TO_ZK: _sync,
        MigrationDriverState.KRAFT_CONTROLLER_TO_BROKER_COMM: _send_rpcs,
        MigrationDriverState.DUAL_WRITE: _dual_write,
    }

    # -- helpers -----------------------------------------------------------------------

    def _leads(self) -> bool:
        """Writes only under the leadership they started with (Kafka's MigrationWriteEvent
        check): the leader the driver last heard of is this node at the epoch it claimed."""
        return self.leader == (self.node_id, self.leadership.kraft_controller_epoch)

    def _transition(self, new: MigrationDriverState) -> None:
        if new is self.state:
            return
        if new not in _TRANSITIONS[self.state]:
            raise MigrationStateError(
                f"Invalid transition in migration driver from {self.state.value} to "
                f"{new.value}")
        log.info("%d transitioning from %s to %s state", self.node_id, self.state.value,
                 new.value)
        self.state = new
        self.wakeup = True


class MigrationStateError(PyKraftError):
    """A transition Kafka's driver forbids: a bug, not an input."""
