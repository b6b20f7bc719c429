"""The partitions this broker hosts, from the metadata image it replays: Kafka's
``ReplicaManager`` for the leader's side of the data path and of replication.

Interface (stable; Fetch, ListOffsets, OffsetForLeaderEpoch, DescribeLogDirs and
DeleteRecords build on it)::

    replicas = ReplicaManager(broker_id, log_manager, static_properties, clock_ms=clock)
    replicas.apply_image(image, now_ms)      # each new image (BrokerMetadataListener)
    replicas.defer_logs = wake               # new partitions' logs made by a driver
                                             # (LogCreator) instead of inside apply_image,
    replicas.inline_logs = n                 # but for n of them (renewed each loop turn):
    planned = replicas.logs_to_create(limit) # ... claims up to limit awaiting partitions
    replicas.logs_created(create_logs(planned, now_ms), now_ms)  # ... and hosts them
    part = replicas.partition_for(topic_name_or_id, index, current_leader_epoch=-1,
                                  require_leader=True)
    # -> HostedPartition, or raises PartitionError(error_code, message, leader_id,
    #    leader_epoch): UNKNOWN_TOPIC_OR_PARTITION (name), UNKNOWN_TOPIC_ID (id),
    #    FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH (current_leader_epoch older / newer
    #    than a hosted replica's, leader or not: Partition.getLocalLog checks it first),
    #    NOT_LEADER_OR_FOLLOWER (not hosted here, or a follower with require_leader)
    part.log (PartitionLog) .topic .index .topic_id .leader_id .leader_epoch .is_leader
    part.high_watermark .log_start_offset .log_end_offset .isr .maximal_isr .replicas
    part.settings .producer_state (ProducerStateManager)
    part.replication (LeaderReplication while this broker leads, else None)
    part.notify()                     # after each append, high watermark or log start
                                      # move, leadership change or deletion: checks the
                                      # delayed operations watching it (replicas.purgatories:
                                      # acks=all produces, then fetches, then group replies)
    replicas.delayed                  # DelayedOperations: their expiry on the loop's clock
    replicas.replica_selector         # replica.selector.class (None: consumers read leaders)
    replicas.leadership.append(hook)  # hook(part) on each registration change of a
                                      # hosted partition, its deletion, and once hosted
                                      # when led here (the coordinators load and unload)
    result = replicas.append_records(part, records, acks=-1, api_version=v, now_ms=...)
    result = await replicas.produce_records(...)  # the same; a costly batch validated on
                                      # the validation thread, the loop serving meanwhile
    result = replicas.append_as_coordinator(part, records, now_ms=...)  # __consumer_offsets
    result = replicas.append_marker(part, producer_id=..., producer_epoch=..., aborted=...,
                                    coordinator_epoch=..., transaction_version=..., now_ms=...)
    # -> AppendResult(base_offset, last_offset, log_append_time_ms, log_start_offset), or
    #    raises PartitionError (NOT_ENOUGH_REPLICAS, INVALID_TOPIC_EXCEPTION) or the
    #    validator's / producer state's errors (ProduceValidationError, ProducerStateError)
    replicas.isr_changes = submit            # submit(part, IsrProposal): AlterPartition
    replicas.throttles                       # ReplicationThrottles (leader and follower)
    code = replicas.check_follower(part, replica_id, current_leader_epoch)
    code = replicas.record_follower_fetch(part, replica_id, broker_epoch=..., fetch_offset=...,
                                          log_start_offset=..., leader_end_offset=..., now_ms=...)
    replicas.shrink_isrs(now_ms)             # every replica.lag.time.max.ms / 2
    retry = replicas.complete_isr_change(part, proposal, AlterResult | ErrorCode, now_ms)
    replicas.run_retention(now_ms)           # log.retention.check.interval.ms
    await replicas.run_cleaner(now_ms)       # log.cleaner.backoff.ms (compacted topics)
    replicas.checkpoint(now_ms)              # recovery points, log start offsets, HWMs
    replicas.checkpoint_high_watermarks()    # replication-offset-checkpoint alone
    await replicas.checkpoint_off_loop(now_ms, compute)  # ... their file work run by compute
    replicas.shutdown(broker_epoch)          # producer snapshots, checkpoints, close
    with replicas.on_disk(part.log, "appending records to"): ...
    # an I/O error inside takes the log directory offline (logs.failures: reported, or
    # the broker halts) and is raised as a StorageIOError; one caught elsewhere is told with
    replicas.read_failed(part, error)        # or log_dir_failed(log, action, error)
    replicas.take_dir_offline(path)          # a failed directory's replicas stop: they
                                             # answer KAFKA_STORAGE_ERROR from then on
    replicas.assign_dir = assign             # assign(topic_id, partition, directory id)
                                             # when the image's directory is not the log's

High watermark and ISR: a leader keeps a
:class:`~pykraft.replica.leader.LeaderReplication` (Kafka's ``Partition`` leader
state): its followers' fetch positions move the high watermark (the smallest log end offset
over the maximal ISR, frozen under min.insync.replicas), a follower that caught up joins the
ISR and one lagging past ``replica.lag.time.max.ms`` leaves it, each change proposed through
``isr_changes`` (AlterPartition, :mod:`pykraft.broker.alter_partition`) and committed by the
answer or a newer image. With ISR == {leader} the high watermark is the log end after every
append. A new replica starts from ``replication-offset-checkpoint`` (capped at its log end).

A partition new to this broker without a log yet awaits it: with ``defer_logs`` set, past
the first ``inline_logs`` of a loop turn its files are created off the event loop (three
fsyncs each; Kafka creates logs on its metadata publisher thread) and it is hosted once
they exist. Meanwhile it is in the image but not hosted, so Produce and Fetch for it answer
NOT_LEADER_OR_FOLLOWER, as Kafka's do before the partition is made leader.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import random
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from pykraft.broker.cleaner_state import CleanerState
from pykraft.broker.fetch_session_cache import FetchSessionCache
from pykraft.broker.fetch_sessions import FetchManager
from pykraft.broker.purgatory import Purgatories
from pykraft.broker.purgatory_timer import DelayedOperations
from pykraft.broker.replica_state import LocalPartition, local_changes
from pykraft.broker.replication_throttles import ReplicationThrottles
from pykraft.broker.topic_metrics import BrokerTopicStats
from pykraft.broker.topic_settings import TopicSettings, topic_settings
from pykraft.config.broker_configs import BrokerConfigLayers
from pykraft.controller.context import UNASSIGNED_DIR
from pykraft.controller.directories import replica_directory
from pykraft.errors import ConfigError, PyKraftError, StorageError, StorageIOError
from pykraft.ids import INTERNAL_TOPICS, TopicPartition
from pykraft.image.configs import ConfigResourceType
from pykraft.image.image import MetadataImage
from pykraft.image.topics import PartitionRegistration, TopicImage
from pykraft.image.versions import MV_3_7_IV2
from pykraft.log.cleaner import Compute
from pykraft.log.cleaner_config import CleanerConfig
from pykraft.log.log_manager import LogManager, PlannedLog, create_logs
from pykraft.log.partition_reads import ReadablePartition
from pykraft.log.producer_snapshot_files import (
    delete_producer_snapshots,
    load_producer_state,
    write_producer_snapshot,
)
from pykraft.log.producer_state import (
    PRODUCER_ID_EXPIRATION_MS_DEFAULT,
    AppendOrigin,
    BatchMetadata,
    ProducerStateError,
    ProducerStateManager,
    Verified,
)
from pykraft.log.retention import segments_to_delete
from pykraft.log.transactions import end_transactions, marker_batch
from pykraft.log.validator import (
    ValidatedAppend,
    admit_produce,
    complete_produce,
    placed,
    validate_produce,
)
from pykraft.protocol.errors import ErrorCode
from pykraft.records.batch import unpack_header
from pykraft.replica.epochs import check_leader_epoch
from pykraft.replica.leader import (
    AlterResult,
    Brokers,
    IsrProposal,
    IsrState,
    LeaderReplication,
    PartitionAssignment,
    PendingExpand,
    PendingShrink,
    effective_min_isr,
)
from pykraft.replica.read_replica import replica_selector
from pykraft.runtime.codec_thread import VALIDATION, cleaner_workers
from pykraft.storage.log_config import LogConfig
from pykraft.storage.offset_checkpoints import (
    REPLICATION_OFFSET_CHECKPOINT,
    read_offset_checkpoint,
    write_offset_checkpoint,
)
from pykraft.storage.partition_log import PartitionLog

ADMIN_CLIENT_ID = "__admin_client"  # Kafka's AdminUtils.ADMIN_CLIENT_ID
REPLICA_LAG_TIME_MAX_MS = "replica.lag.time.max.ms"
REPLICA_LAG_TIME_MAX_MS_DEFAULT = 30_000
FETCH_MAX_BYTES = "fetch.max.bytes"
FETCH_MAX_BYTES_DEFAULT = 57_671_680  # 55 MiB
FETCH_SESSION_SLOTS = "max.incremental.fetch.session.cache.slots"
FETCH_SESSION_SLOTS_DEFAULT = 1000
COORDINATOR_APPEND_VERSION = 12  # the Produce version a coordinator's batch is validated as

log = logging.getLogger(__name__)


def _wall_clock_ms() -> int:
    return int(time.time() * 1000)


class PartitionError(PyKraftError):
    """A partition-level refusal with Kafka's error code; for NOT_LEADER_OR_FOLLOWER the
    current leader as the image knows it (-1 when unknown), for KIP-951's hints."""

    def __init__(self, error_code: ErrorCode, message: str, *, leader_id: int = -1,
                 leader_epoch: int = -1) -> None:
        super().__init__(message)
        self.error_code = error_code
        self.message = message
        self.leader_id = leader_id
        self.leader_epoch = leader_epoch


@dataclass(frozen=True, slots=True)
class AppendResult:
    """A leader append's answer: the batch's offsets (a duplicate's original ones), its
    LogAppendTime (-1 under CreateTime) and the log start offset."""

    base_offset: int
    last_offset: int
    log_append_time_ms: int
    log_start_offset: int


PartitionHook = Callable[["HostedPartition"], None]


class MarkerWriter(Protocol):
    """Writes a transaction marker to one partition of a coordinator's topic, in step with
    its coordinator (:attr:`ReplicaManager.marker_writers`); raises what
    :meth:`ReplicaManager.append_marker` raises."""

    def __call__(self, partition: int, *, producer_id: int, producer_epoch: int,
                 committed: bool, coordinator_epoch: int, transaction_version: int,
                 now_ms: int) -> AppendResult: ...


IsrChangeSink = Callable[["HostedPartition", IsrProposal], None]
CreatedLogs = Sequence[tuple[PlannedLog, PartitionLog | Exception]]


class HostedPartition:
    """One replica on this broker: its log, producer state and registration."""

    def __init__(self, local: LocalPartition, partition_log: PartitionLog,
                 producer_state: ProducerStateManager, settings: TopicSettings,
                 broker_id: int, high_watermark: int, changed: PartitionHook) -> None:
        self.tp = local.tp
        self.topic_id = local.topic_id
        self.registration = local.registration
        self.log = partition_log
        self.producer_state = producer_state
        self.settings = settings
        self.broker_id = broker_id
        self._high_watermark = min(high_watermark, partition_log.log_end_offset)
        producer_state.on_high_watermark_updated(self._high_watermark)
        self.deleted = False
        self._changed = changed
        self.replication: LeaderReplication | None = None  # while this broker leads

    @property
    def high_watermark(self) -> int:
        return self._high_watermark

    @high_watermark.setter
    def high_watermark(self, offset: int) -> None:
        """Every move tells the producer state: markers below it are replicated."""
        self._high_watermark = offset
        self.producer_state.on_high_watermark_updated(offset)

    @property
    def last_stable_offset(self) -> int:
        """Kafka's ``UnifiedLog.lastStableOffset``: the first unstable offset (no lower
        than the log start) when it is below the high watermark, else the high
        watermark."""
        first = self.producer_state.first_unstable_offset()
        if first is None:
            return self._high_watermark
        return min(max(first, self.log_start_offset), self._high_watermark)

    @property
    def topic(self) -> str:
        return self.tp.topic

    @property
    def index(self) -> int:
        return self.tp.partition

    @property
    def leader_id(self) -> int:
        return self.registration.leader

    @property
    def leader_epoch(self) -> int:
        return self.registration.leader_epoch

    @property
    def partition_epoch(self) -> int:
        return self.registration.partition_epoch

    @property
    def isr(self) -> tuple[int, ...]:
        """The committed ISR: the leader's own (an AlterPartition answer may be ahead of
        the image), the image's on a follower."""
        if self.replication is not None and self.is_leader:
            return self.replication.isr
        return self.registration.isr

    @property
    def maximal_isr(self) -> frozenset[int]:
        """The ISR with a pending expansion's member (acks=all counts it)."""
        if self.replication is not None and self.is_leader:
            return self.replication.maximal_isr
        return frozenset(self.registration.isr)

    @property
    def replicas(self) -> tuple[int, ...]:
        return self.registration.replicas

    @property
    def is_leader(self) -> bool:
        return not self.deleted and self.registration.leader == self.broker_id

    @property
    def log_start_offset(self) -> int:
        return self.log.log_start_offset

    @property
    def log_end_offset(self) -> int:
        return self.log.log_end_offset

    @property
    def min_isr(self) -> int:
        return effective_min_isr(self.settings.min_insync_replicas, len(self.replicas))

    def maybe_advance_high_watermark(self, now_ms: int, brokers: Brokers) -> bool:
        """Move the leader's high watermark by Kafka's rule; True if it moved."""
        if not self.is_leader or self.replication is None:
            return False
        new = self.replication.high_watermark(
            self.high_watermark, leader_end_offset=self.log_end_offset, now_ms=now_ms,
            min_insync_replicas=self.settings.min_insync_replicas, brokers=brokers)
        moved = new != self.high_watermark
        self.high_watermark = new
        return moved

    def assignment(self) -> PartitionAssignment:
        reg = self.registration
        return PartitionAssignment(reg.leader_epoch, reg.partition_epoch, reg.replicas, reg.isr,
                                   reg.leader_recovery_state)

    def notify(self) -> None:
        """Check the delayed operations that may wait for this change."""
        self._changed(self)


class ReplicaManager:
    """Hosted partitions by topic partition; one event loop, no locks."""

    def __init__(self, broker_id: int, log_manager: LogManager,
                 static: Mapping[str, str] | None = None, *,
                 producer_id_expiration_ms: int = PRODUCER_ID_EXPIRATION_MS_DEFAULT,
                 clock_ms: Callable[[], int] = _wall_clock_ms) -> None:
        self.broker_id = broker_id
        self.clock_ms = clock_ms
        """The clock follower fetches are timed with (the node's, once bound)."""

        self.logs = log_manager
        self._static = dict(static or {})
        self._expiration_ms = producer_id_expiration_ms
        self.max_lag_ms = int(self._static.get(REPLICA_LAG_TIME_MAX_MS,
                                               REPLICA_LAG_TIME_MAX_MS_DEFAULT))
        self.fetch_max_bytes = int(self._static.get(FETCH_MAX_BYTES, FETCH_MAX_BYTES_DEFAULT))
        """The most one Fetch response carries (KIP-74's first batch excepted)."""
        self.replica_selector = replica_selector(self._static)
        """``replica.selector.class``: which replica a consumer is told to fetch from."""
        self.fetch_sessions = FetchManager(FetchSessionCache(
            int(self._static.get(FETCH_SESSION_SLOTS, FETCH_SESSION_SLOTS_DEFAULT)),
            random.Random()))
        """The broker's fetch sessions (KIP-227), for every listener's Fetch."""
        self.throttles = ReplicationThrottles(broker_id, self._static)
        """The replication throttles: the leader's for follower fetches answered here, the
        follower's for this broker's fetchers (both follow the image's configs)."""
        self.isr_changes: IsrChangeSink | None = None
        self.topic_stats = BrokerTopicStats()
        """Kafka's BrokerTopicMetrics, counted by the Produce and Fetch handlers."""
        self.cleaner = CleanerState(CleanerConfig.from_layers(self._static))
        """The log cleaner's settings, throttle, uncleanable partitions and metrics."""
        self.isr_shrinks = 0
        self.isr_expands = 0
        """ISR changes of led partitions the controller committed (IsrShrinksPerSec,
        IsrExpandsPerSec: counted when committed, as Kafka's Partition does)."""
        self.purgatories: Purgatories[TopicPartition] = Purgatories()
        """Acks=all produces, long-poll fetches and group replies waiting on partitions."""
        self.delayed = DelayedOperations(self.purgatories)
        self.leadership: list[PartitionHook] = []
        """Told of each registration change of a hosted partition (the coordinators)."""
        self.marker_writers: dict[str, MarkerWriter] = {}
        """Per topic whose coordinator writes its transaction markers itself (the group
        coordinator's ``__consumer_offsets``): how WriteTxnMarkers writes one there."""
        self.image = MetadataImage()
        self.brokers = Brokers({})
        self._partitions: dict[TopicPartition, HostedPartition] = {}
        self.defer_logs: Callable[[], None] | None = None
        """Told that partitions await their logs (:meth:`logs_to_create`); None creates them
        all inside :meth:`apply_image`."""
        self.inline_logs = 0
        """With ``defer_logs``, how many logs :meth:`apply_image` still creates itself until
        the driver renews it (once per loop turn): a small topic's partitions are hosted
        with the image that names them, the rest wait for the driver."""
        self.assign_dir: Callable[[uuid.UUID, int, uuid.UUID], None] | None = None
        """Told ``(topic id, partition, directory id)`` when the image places a hosted
        replica in another directory than its log's (AssignReplicasToDirs)."""
        self._awaiting: dict[TopicPartition, tuple[LocalPartition, LogConfig]] = {}
        self._creating: set[TopicPartition] = set()
        self._offline: dict[TopicPartition, uuid.UUID] = {}
        """Replicas in a failed log directory (by topic id): KAFKA_STORAGE_ERROR until
        their topic is deleted (Kafka's ``HostedPartition.Offline``)."""
        self._checkpointed_hw: dict[TopicPartition, int] = {}
        for directory in log_manager.online_dirs:  # not one failed at start-up
            self._checkpointed_hw.update(
                read_offset_checkpoint(directory / REPLICATION_OFFSET_CHECKPOINT))

    @property
    def partitions(self) -> Mapping[TopicPartition, HostedPartition]:
        return self._partitions

    @property
    def offline_count(self) -> int:
        """Replicas of a log directory that failed while the broker ran (Kafka's
        OfflineReplicaCount: its ``HostedPartition.Offline`` ones)."""
        return len(self._offline)

    # ------------------------------------------------------------------ metadata

    def apply_image(self, image: MetadataImage, now_ms: int) -> None:
        """Host, lead, follow or delete partitions as the new image says (Kafka's
        ``applyDelta``: deletes first, then leaders, then followers)."""
        previous, self.image = self.image, image
        if image.cluster is not previous.cluster:
            registered = image.cluster.brokers
            self.brokers = Brokers(
                {b: reg.epoch for b, reg in registered.items() if not reg.fenced},
                frozenset(b for b, reg in registered.items() if reg.in_controlled_shutdown))
        changes = local_changes(previous.topics, image.topics, self.broker_id)
        self.logs.delete_many([self._unhost(tp) for tp in changes.deleted], now_ms)
        for local in (*changes.leaders, *changes.followers):
            try:
                self._host(local, now_ms)
            except (StorageError, ConfigError, OSError):  # Kafka takes the log dir offline
                log.exception("%s: cannot host the partition", _name(local.tp))
        if self._awaiting:
            if self.defer_logs is None:
                planned = self.logs_to_create(len(self._awaiting))
            else:
                planned = self.logs_to_create(self.inline_logs)
                self.inline_logs -= len(planned)
                self.defer_logs()
            self.logs_created(create_logs(planned, now_ms), now_ms)
        if image.configs is not previous.configs:
            self.throttles.apply_configs(image.configs)
            for hosted in self._partitions.values():
                try:
                    hosted.settings = self._settings_of(hosted.topic)
                except ConfigError:
                    log.exception("%s: keeping the previous topic settings", _name(hosted.tp))
                hosted.log.config = hosted.settings.log
                if (future := self.logs.future(hosted.tp)) is not None:  # a log-dir move's
                    future.config = hosted.settings.log

    def _settings_of(self, topic: str) -> TopicSettings:
        """The topic's settings under this broker's properties and the dynamic broker configs
        it applies (re-read on every config change, as Kafka's DynamicLogConfig does)."""
        configs = self.image.configs
        layers = BrokerConfigLayers.of(configs.broker, self.broker_id, self._static)
        return topic_settings(configs.get((ConfigResourceType.TOPIC, topic)), layers.applied())

    def _host(self, local: LocalPartition, now_ms: int) -> None:
        if self._offline.get(local.tp) == local.topic_id:
            return  # Kafka: "located in an offline log dir"
        self._offline.pop(local.tp, None)  # a recreated topic's replica starts afresh
        hosted = self._partitions.get(local.tp)
        if hosted is not None and hosted.topic_id == local.topic_id:
            was_leader = hosted.is_leader
            hosted.registration = local.registration
            self._lead(hosted, now_ms)
            hosted.maybe_advance_high_watermark(now_ms, self.brokers)
            if was_leader != hosted.is_leader:
                log.info("%s: %s in leader epoch %d", _name(local.tp),
                         "leader" if hosted.is_leader else "follower", hosted.leader_epoch)
            hosted.notify()
            if hosted.is_leader and not was_leader:
                self.purgatories.started_leading(hosted.replicas)
            self._leadership_changed(hosted)
            self._check_directory(hosted)
            return
        settings = self._settings_of(local.tp.topic)
        partition_log = self.logs.existing(local.tp, local.topic_id, settings.log, now_ms)
        if partition_log is None and not self._may_create_log(local):
            # not hosted (NOT_LEADER_OR_FOLLOWER, as Kafka's "Log for partition ... is not
            # available"): the next image that places it elsewhere creates it
            log.warning("%s: skipping creation of log because there are potentially offline "
                        "log directories and log may already exist there (directory %s)",
                        _name(local.tp), replica_directory(local.registration, self.broker_id))
            return
        if partition_log is None:
            self._awaiting[local.tp] = (local, settings.log)
            return
        self._install(local, partition_log, settings, now_ms)

    def _may_create_log(self, local: LocalPartition) -> bool:
        """Kafka's ``Partition.createLogInAssignedDirectoryId``: a replica without a log
        gets one unless a log directory is offline and the image places the replica in
        none of our online ones (nor leaves it UNASSIGNED): its log may be in the failed
        one, and a second copy elsewhere would stop the next start-up. Nor while it has a
        future log (a move whose source directory failed: Kafka would promote the future
        log, recoverAbandonedFutureLogs; here it waits for the source to come back)."""
        target = replica_directory(local.registration, self.broker_id)
        if not self.logs.failures.offline:
            return True
        return self.logs.future(local.tp) is None and (
            target == UNASSIGNED_DIR or self.logs.is_online_dir_id(target))

    def logs_to_create(self, limit: int) -> list[PlannedLog]:
        """Up to ``limit`` partitions awaiting their logs, none already claimed, with the
        directory each goes to; claimed until :meth:`logs_created` hears of them."""
        wanted: list[tuple[TopicPartition, uuid.UUID, LogConfig]] = []
        targets: dict[TopicPartition, uuid.UUID] = {}
        for tp, (local, config) in self._awaiting.items():
            if len(wanted) == limit:
                break
            if tp not in self._creating:
                wanted.append((tp, local.topic_id, config))
                targets[tp] = replica_directory(local.registration, self.broker_id)
        self._creating.update(tp for tp, _, _ in wanted)
        return self.logs.plan(wanted, targets)

    def logs_created(self, created: CreatedLogs, now_ms: int) -> None:
        """Host the partitions whose logs :func:`create_logs` made, as the image now says;
        a log no longer wanted (its partition deleted, or its topic recreated, meanwhile)
        is deleted again."""
        for planned, outcome in created:
            tp = planned.tp
            self._creating.discard(tp)
            awaited = self._awaiting.get(tp)
            if awaited is not None and awaited[0].topic_id != planned.topic_id:
                awaited = None  # its topic was recreated meanwhile: the new one's log waits
            if isinstance(outcome, Exception):
                log.error("%s: cannot host the partition", _name(tp), exc_info=outcome)
                if awaited is not None:
                    del self._awaiting[tp]
                continue
            self.logs.adopt(tp, outcome)
            try:
                if awaited is None:
                    self.logs.delete(tp, now_ms, 0)
                    continue
                del self._awaiting[tp]
                self._install(awaited[0], outcome, self._settings_of(tp.topic), now_ms)
            except (StorageError, ConfigError, OSError):
                log.exception("%s: cannot host the partition", _name(tp))

    def _install(self, local: LocalPartition, partition_log: PartitionLog,
                 settings: TopicSettings, now_ms: int) -> None:
        partition_log.config = settings.log
        state = load_producer_state(partition_log, partition=_name(local.tp), now_ms=now_ms,
                                    expiration_ms=self._expiration_ms)
        hosted = HostedPartition(local, partition_log, state, settings, self.broker_id,
                                 self._checkpointed_hw.get(local.tp, 0),
                                 self._partition_changed)
        self._lead(hosted, now_ms)
        hosted.maybe_advance_high_watermark(now_ms, self.brokers)
        self._partitions[local.tp] = hosted
        if hosted.is_leader:
            self.purgatories.started_leading(hosted.replicas)
            self._leadership_changed(hosted)
        self._check_directory(hosted)

    def _check_directory(self, hosted: HostedPartition) -> None:
        """Kafka's ``maybeUpdateTopicAssignment``: from metadata.version 3.7-IV2, when the
        image places the replica in another directory than its log's, tell the controller
        where the log is; not while the replica moves to the image's directory (the move
        asked for it before swapping its logs: :mod:`pykraft.broker.log_dir_mover`)."""
        if self.assign_dir is None or self.image.metadata_version < MV_3_7_IV2:
            return
        actual = self.logs.directory_id(hosted.log.directory.parent)
        wanted = replica_directory(hosted.registration, self.broker_id)
        future = self.logs.future(hosted.tp)
        if future is not None and self.logs.directory_id(future.directory.parent) == wanted:
            return
        if actual is not None and actual != wanted:
            self.assign_dir(hosted.topic_id, hosted.index, actual)

    def _partition_changed(self, hosted: HostedPartition) -> None:
        self.purgatories.partition_changed(hosted.tp)

    def _leadership_changed(self, hosted: HostedPartition) -> None:
        for hook in self.leadership:
            hook(hosted)

    def _lead(self, hosted: HostedPartition, now_ms: int) -> None:
        """Kafka's ``makeLeader`` / ``makeFollower`` for the replication state: a new
        leader starts its epoch at its log end and forgets its followers' positions."""
        if not hosted.is_leader:
            hosted.replication = None
            return
        hosted.log.assign_epoch_start_offset(hosted.leader_epoch, hosted.log_end_offset)
        if hosted.replication is None:
            hosted.replication = LeaderReplication(
                self.broker_id, hosted.assignment(), epoch_start_offset=hosted.log_end_offset,
                now_ms=now_ms, max_lag_ms=self.max_lag_ms)
        else:
            pending = hosted.replication.state
            if hosted.replication.assign(hosted.assignment(),
                                         leader_end_offset=hosted.log_end_offset, now_ms=now_ms):
                self._count_isr_change(pending, hosted.replication)

    def _unhost(self, tp: TopicPartition) -> tuple[TopicPartition, int]:
        """Stop hosting a partition; its log is to be deleted after the delay returned
        (the topic's ``file.delete.delay.ms``)."""
        self._awaiting.pop(tp, None)
        self._offline.pop(tp, None)
        hosted = self._partitions.pop(tp, None)
        delay = 0
        if hosted is not None:
            hosted.deleted = True
            delay = hosted.settings.file_delete_delay_ms
            hosted.notify()
            self._leadership_changed(hosted)
        self._checkpointed_hw.pop(tp, None)
        return tp, delay

    # ------------------------------------------------------------------ lookups

    def partition_for(self, topic: str | uuid.UUID, index: int, *,
                      current_leader_epoch: int = -1,
                      require_leader: bool = True) -> HostedPartition:
        """The hosted replica of ``topic`` (name or id) partition ``index``; see the
        module docstring for the errors (Kafka's ``getPartitionOrException``)."""
        topic_image = self._topic(topic)
        registration = topic_image.partitions.get(index)
        if registration is None:
            raise PartitionError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                 "This server does not host this topic-partition.")
        tp = TopicPartition(topic_image.name, index)
        if self._offline.get(tp) == topic_image.topic_id:
            raise PartitionError(ErrorCode.KAFKA_STORAGE_ERROR,
                                 f"Partition {topic_image.name}-{index} is in an offline log "
                                 "directory")
        hosted = self._partitions.get(tp)
        code = (ErrorCode.NONE if hosted is None
                else check_leader_epoch(current_leader_epoch, hosted.leader_epoch))
        if hosted is not None and code != ErrorCode.NONE:
            relation = "older" if code == ErrorCode.FENCED_LEADER_EPOCH else "newer"
            raise PartitionError(
                code, f"The leader epoch in the request {current_leader_epoch} is {relation} "
                f"than the current leader epoch {hosted.leader_epoch} of partition "
                f"{hosted.topic}-{index}", leader_id=hosted.leader_id,
                leader_epoch=hosted.leader_epoch)
        if hosted is None or (require_leader and not hosted.is_leader):
            raise PartitionError(
                ErrorCode.NOT_LEADER_OR_FOLLOWER,
                f"Leader not local for partition {topic_image.name}-{index} on broker "
                f"{self.broker_id}", leader_id=registration.leader,
                leader_epoch=registration.leader_epoch)
        return hosted

    def _topic(self, topic: str | uuid.UUID) -> TopicImage:
        topics = self.image.topics
        if isinstance(topic, uuid.UUID):
            found = topics.by_id.get(topic)
            if found is None:
                raise PartitionError(ErrorCode.UNKNOWN_TOPIC_ID,
                                     "This server does not host this topic ID.")
            return found
        named = topics.by_name.get(topic)
        if named is None:
            raise PartitionError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                 "This server does not host this topic-partition.")
        return named

    def registration(self, topic: str, index: int) -> PartitionRegistration | None:
        """The image's registration of a partition, hosted here or not."""
        topic_image = self.image.topics.by_name.get(topic)
        return None if topic_image is None else topic_image.partitions.get(index)

    # ------------------------------------------------------------------ appends

    def append_records(self, hosted: HostedPartition, records: bytes, *, acks: int,
                       api_version: int, now_ms: int, client_id: str | None = None
                       ) -> AppendResult:
        """Validate and append a client's batch on the leader (Kafka's
        ``appendRecordsToLeader``); a retried idempotent batch is answered with its
        original offsets and nothing is written."""
        _check_internal(hosted, client_id)
        return self._append(hosted, records, acks=acks, api_version=api_version, now_ms=now_ms)

    async def produce_records(self, hosted: HostedPartition, records: bytes, *, acks: int,
                              api_version: int, now_ms: int, client_id: str | None = None,
                              verified: Verified | None = None) -> AppendResult:
        """:meth:`append_records` for a Produce request, whose batch may be costly to
        validate (a compression bomb, a record of a gigabyte: seconds of CPU, during which
        the loop would serve no heartbeat). Such a batch is validated on the validation
        thread, then appended on the loop where the log ends by then, if this broker still
        leads the partition; a cheap one, as :meth:`append_records`. Appends stay in order:
        a connection's requests are served one at a time, and the append itself, with the
        producer state's checks, is one step of the loop."""
        _check_internal(hosted, client_id)
        _check_min_isr(hosted, acks)
        settings = hosted.settings.append
        name = _name(hosted.tp)
        admitted = admit_produce(records, config=settings, api_version=api_version,
                                 partition=name)
        complete = functools.partial(
            complete_produce, admitted, log_end_offset=hosted.log.log_end_offset,
            leader_epoch=hosted.leader_epoch, now_ms=now_ms, config=settings, partition=name)
        if not admitted.costly:
            return self._append_validated(hosted, complete(), now_ms, verified=verified)
        validated = await VALIDATION.run(complete)
        current = self.partition_for(hosted.topic, hosted.index)  # still leading it?
        _check_min_isr(current, acks)
        return self._append_validated(current, placed(
            validated, log_end_offset=current.log.log_end_offset,
            leader_epoch=current.leader_epoch), now_ms, verified=verified)

    def append_as_coordinator(self, hosted: HostedPartition, records: bytes, *,
                              now_ms: int) -> AppendResult:
        """A coordinator's own batch to its internal topic (Kafka's AppendOrigin.COORDINATOR:
        no internal-topic refusal), acks=all, validated as a client's."""
        if not hosted.is_leader:
            raise PartitionError(ErrorCode.NOT_LEADER_OR_FOLLOWER,
                                 f"Leader not local for partition {_name(hosted.tp)}")
        return self._append(hosted, records, acks=-1, api_version=COORDINATOR_APPEND_VERSION,
                            now_ms=now_ms, origin=AppendOrigin.COORDINATOR)

    def append_marker(self, hosted: HostedPartition, *, producer_id: int, producer_epoch: int,
                      aborted: bool, coordinator_epoch: int, transaction_version: int,
                      now_ms: int) -> AppendResult:
        """A transaction coordinator's COMMIT or ABORT marker for one producer (Kafka's
        WriteTxnMarkers append: AppendOrigin.COORDINATOR, acks=all). The producer state
        refuses a stale producer epoch (INVALID_PRODUCER_EPOCH; at transaction version 2
        also the same one) or coordinator epoch (TRANSACTION_COORDINATOR_FENCED) before
        anything is written; an abort is indexed in the ``.txnindex``."""
        if not hosted.is_leader:
            raise PartitionError(ErrorCode.NOT_LEADER_OR_FOLLOWER,
                                 f"Leader not local for partition {_name(hosted.tp)}")
        _check_min_isr(hosted, -1)
        partition_log = hosted.log
        state = hosted.producer_state
        offset = partition_log.log_end_offset
        batch = marker_batch(base_offset=offset, leader_epoch=hosted.leader_epoch,
                             producer_id=producer_id, producer_epoch=producer_epoch,
                             aborted=aborted, coordinator_epoch=coordinator_epoch,
                             timestamp=now_ms)
        append = state.prepare_marker(
            unpack_header(batch), aborted=aborted, coordinator_epoch=coordinator_epoch,
            timestamp=now_ms, origin=AppendOrigin.COORDINATOR,
            transaction_version=transaction_version)
        active = partition_log.active.base_offset
        with self.on_disk(partition_log, "appending a transaction marker to"):
            partition_log.append(batch, now_ms)
            if partition_log.active.base_offset != active:
                state.update_map_end_offset(partition_log.active.base_offset)
                write_producer_snapshot(partition_log.directory, state)
            state.update(append.entry)
            if append.completed is not None:
                end_transactions(state, partition_log, (append.completed,))
        state.update_map_end_offset(partition_log.log_end_offset)
        hosted.maybe_advance_high_watermark(now_ms, self.brokers)
        hosted.notify()
        return AppendResult(offset, offset, -1, hosted.log_start_offset)

    def _append(self, hosted: HostedPartition, records: bytes, *, acks: int,
                api_version: int, now_ms: int,
                origin: AppendOrigin = AppendOrigin.CLIENT) -> AppendResult:
        _check_min_isr(hosted, acks)
        validated = validate_produce(
            records, log_end_offset=hosted.log.log_end_offset,
            leader_epoch=hosted.leader_epoch, now_ms=now_ms, config=hosted.settings.append,
            api_version=api_version, partition=_name(hosted.tp))
        return self._append_validated(hosted, validated, now_ms, origin)

    def _append_validated(self, hosted: HostedPartition, validated: ValidatedAppend,
                          now_ms: int, origin: AppendOrigin = AppendOrigin.CLIENT, *,
                          verified: Verified | None = None) -> AppendResult:
        """The producer state's checks, then the append (offsets from the log end). A
        coordinator's batch (``origin``) has its producer epoch checked, not its sequence:
        the group coordinator writes each transactional batch at sequence 0, as Kafka's.
        A transactional batch whose transaction was ``verified`` with its coordinator must
        still find it ongoing, or the verification's guard current (Kafka's
        ``batchMissingRequiredVerification``)."""
        partition_log = hosted.log
        state = hosted.producer_state
        header = unpack_header(validated.records)
        if verified is not None and header.is_transactional and not verified.holds(
                state, header.producer_id, header.producer_epoch):
            raise ProducerStateError(ErrorCode.INVALID_TXN_STATE,
                                     "Record was not part of an ongoing transaction")
        outcome = state.prepare(header, origin)
        if isinstance(outcome, BatchMetadata):
            return AppendResult(outcome.first_offset, outcome.last_offset,
                                validated.log_append_time_ms, hosted.log_start_offset)
        active = partition_log.active.base_offset
        with self.on_disk(partition_log, "appending records to"):
            partition_log.append(validated.records, now_ms)
            if partition_log.active.base_offset != active:
                # rolled: Kafka snapshots the state as of the new segment's base offset,
                # which is the state before this batch
                state.update_map_end_offset(partition_log.active.base_offset)
                write_producer_snapshot(partition_log.directory, state)
        if outcome is not None:
            state.update(outcome)
        state.update_map_end_offset(partition_log.log_end_offset)
        hosted.maybe_advance_high_watermark(now_ms, self.brokers)
        hosted.notify()
        return AppendResult(validated.first_offset, validated.last_offset,
                            validated.log_append_time_ms, hosted.log_start_offset)

    # ------------------------------------------------------------------ disk failures

    @contextmanager
    def on_disk(self, partition_log: PartitionLog, action: str) -> Iterator[None]:
        """Kafka's ``maybeHandleIOException`` around a log operation: an I/O error takes
        the log's directory offline and goes on as a :class:`StorageIOError` (what
        clients get as KAFKA_STORAGE_ERROR)."""
        try:
            yield
        except (StorageIOError, OSError) as exc:
            self.log_dir_failed(partition_log, action, exc)
            if isinstance(exc, StorageIOError):
                raise
            raise StorageIOError(f"{partition_log.directory}: {exc}") from exc

    def read_failed(self, part: ReadablePartition, error: Exception) -> None:
        """A read's I/O error (Fetch, ListOffsets): the partition's directory fails."""
        self.log_dir_failed(part.log, "reading", error)

    def take_dir_offline(self, directory: Path) -> list[TopicPartition]:
        """Kafka's ``handleLogDirFailure`` for the replicas: stop serving those whose log
        is in the failed ``directory`` (their waiting requests and coordinators told as for
        a deletion), close their logs; returns them."""
        gone = [hosted for hosted in self._partitions.values()
                if hosted.log.directory.parent == directory]
        for hosted in gone:
            del self._partitions[hosted.tp]
            self._offline[hosted.tp] = hosted.topic_id
            hosted.deleted = True
            hosted.notify()
            self._leadership_changed(hosted)
        self.logs.close_dir(directory)
        return [hosted.tp for hosted in gone]

    def log_dir_failed(self, partition_log: PartitionLog, action: str,
                       error: BaseException) -> None:
        """An I/O error ``action`` (e.g. "reading") ``partition_log``: its directory fails."""
        directory = partition_log.directory.parent
        self.logs.failures.fail(directory, f"Error while {action} "
                                           f"{partition_log.directory.name} in dir {directory}",
                                error)

    # ------------------------------------------------------------------ replication

    def check_follower(self, hosted: HostedPartition, replica_id: int,
                       current_leader_epoch: int) -> ErrorCode:
        """Whether ``replica_id`` may fetch this led partition as a follower."""
        if hosted.replication is None:
            return ErrorCode.NOT_LEADER_OR_FOLLOWER
        return hosted.replication.check_follower(replica_id, current_leader_epoch)

    def record_follower_fetch(self, hosted: HostedPartition, replica_id: int, *,
                              broker_epoch: int, fetch_offset: int, log_start_offset: int,
                              leader_end_offset: int, now_ms: int) -> ErrorCode:
        """Kafka's ``updateFollowerFetchState``: record the follower's position (the leader
        log end as of the read), propose it for the ISR when it caught up, then move the
        high watermark and wake waiting produces and fetches."""
        replication = hosted.replication
        if replication is None or not hosted.is_leader:
            return ErrorCode.NOT_LEADER_OR_FOLLOWER
        before = replication.followers.get(replica_id)
        code = replication.record_fetch(
            replica_id, fetch_offset=fetch_offset, log_start_offset=log_start_offset,
            broker_epoch=broker_epoch, now_ms=now_ms, leader_end_offset=leader_end_offset,
            brokers=self.brokers)
        if code != ErrorCode.NONE:
            return code
        proposal = replication.propose_expand(replica_id, high_watermark=hosted.high_watermark,
                                              brokers=self.brokers,
                                              local_epoch=self._local_epoch())
        if proposal is not None:
            log.info("%s: expanding ISR from %s to %s", _name(hosted.tp),
                     list(replication.isr), list(proposal.isr))
            self._submit(hosted, proposal)
        moved = (before is None or before.log_end_offset != fetch_offset) and \
            hosted.maybe_advance_high_watermark(now_ms, self.brokers)
        if moved:
            hosted.notify()
        return ErrorCode.NONE

    def shrink_isrs(self, now_ms: int) -> None:
        """Kafka's ``isr-expiration`` task: propose removing the followers that lagged
        past ``replica.lag.time.max.ms`` from each led partition's ISR."""
        for hosted in self._partitions.values():
            replication = hosted.replication
            if replication is None or not hosted.is_leader:
                continue
            proposal = replication.propose_shrink(now_ms=now_ms,
                                                  leader_end_offset=hosted.log_end_offset,
                                                  local_epoch=self._local_epoch())
            if proposal is not None:
                log.info("%s: shrinking ISR from %s to %s (high watermark %d, end offset %d)",
                         _name(hosted.tp), list(replication.isr), list(proposal.isr),
                         hosted.high_watermark, hosted.log_end_offset)
                self._submit(hosted, proposal)

    def complete_isr_change(self, hosted: HostedPartition, proposal: IsrProposal,
                            result: AlterResult | ErrorCode, now_ms: int) -> bool:
        """The controller's answer to an ISR change; True when it should be sent again
        (the caller resends ``proposal``). A committed change may move the high watermark."""
        replication = hosted.replication
        if replication is None or hosted.deleted:
            return False
        pending = replication.state
        retry = replication.complete(proposal, result)
        if isinstance(result, AlterResult) and not replication.in_flight:
            self._count_isr_change(pending, replication)
            log.info("%s: ISR updated to %s and partition epoch to %d", _name(hosted.tp),
                     list(replication.isr), replication.partition_epoch)
            hosted.maybe_advance_high_watermark(now_ms, self.brokers)
            hosted.notify()
        elif isinstance(result, ErrorCode):
            log.info("%s: ISR change to %s failed: %s%s", _name(hosted.tp), list(proposal.isr),
                     result.name, " (retrying)" if retry else "")
        return retry

    def _count_isr_change(self, pending: IsrState, replication: LeaderReplication) -> None:
        """IsrShrinksPerSec / IsrExpandsPerSec: this leader's change ``pending`` counted once
        committed, whether the controller's answer or the image holding it came first."""
        if (isinstance(pending, PendingShrink | PendingExpand)
                and set(replication.assignment.isr) == set(pending.proposal.isr)):
            self.isr_shrinks += isinstance(pending, PendingShrink)
            self.isr_expands += isinstance(pending, PendingExpand)

    def _submit(self, hosted: HostedPartition, proposal: IsrProposal) -> None:
        if self.isr_changes is not None:
            self.isr_changes(hosted, proposal)

    def _local_epoch(self) -> int:
        """This broker's epoch as the image registers it (-1 before it does)."""
        registration = self.image.cluster.brokers.get(self.broker_id)
        return -1 if registration is None else registration.epoch

    # ------------------------------------------------------------------ periodic work

    async def run_cleaner(self, now_ms: int, compute: Compute | None = None) -> int:
        """One pass of Kafka's log cleaner: compact every hosted log whose
        ``cleanup.policy`` has ``compact`` and whose dirty ratio or lag calls for it, the
        filthiest first, ``log.cleaner.threads`` logs at a time (their records walked by
        ``compute``, else each on its cleaner thread); returns how many were cleaned. The
        cleaner stops at the last stable offset, as Kafka's does: an open transaction's
        records are left alone. A log whose cleaning fails (not on I/O: that fails its
        directory and ends the pass) is uncleanable from then on, as in Kafka."""
        cleaner = self.cleaner
        assessed = {}
        for tp, hosted in self._partitions.items():
            dirtiness = self.logs.dirtiness(tp, hosted.last_stable_offset, now_ms)
            if dirtiness is not None:
                assessed[tp] = (dirtiness, hosted.log.directory.parent)
        cleaner.begin_pass(assessed)
        order = sorted(assessed, key=lambda tp: assessed[tp][0].ratio)  # filthiest last
        threads = max(cleaner.config.threads, 1)
        runs = ([compute] * threads if compute is not None
                else [worker.run for worker in cleaner_workers(threads)])
        cleaned = 0
        failures: list[StorageIOError] = []

        async def lane(run: Compute) -> None:
            nonlocal cleaned
            while order and not failures:
                try:
                    done = await self._clean_log(order.pop(), now_ms, run)
                except StorageIOError as exc:
                    failures.append(exc)
                    return
                cleaned += done  # after the await: the other lanes count meanwhile

        await asyncio.gather(*(lane(run) for run in runs))
        cleaner.end_pass(time.monotonic())
        if failures:
            raise failures[0]
        return cleaned

    async def _clean_log(self, tp: TopicPartition, now_ms: int, compute: Compute) -> bool:
        """One log of a cleaner pass; whether it was cleaned."""
        cleaner = self.cleaner
        current = self._partitions.get(tp)
        if current is None or tp in cleaner.uncleanable:
            return False  # deleted while an earlier log was cleaned, or given up on
        started = time.monotonic()
        try:
            with self.on_disk(current.log, "cleaning segments of"):
                stats = await self.logs.compact(
                    tp, current.last_stable_offset, now_ms,
                    {producer_id: entry.last_data_offset
                     for producer_id, entry in current.producer_state.producers.items()},
                    compute=compute, config=cleaner.config, throttle=cleaner.throttle)
        except StorageIOError:
            raise
        except PyKraftError as exc:
            log.warning("%s: cleaning failed, marking the partition uncleanable: %s",
                        _name(tp), exc)
            cleaner.mark_uncleanable(tp, current.log.directory.parent)
            return False
        if stats is None:
            return False
        cleaner.record(time.monotonic() - started, stats)
        return True

    def run_retention(self, now_ms: int) -> int:
        """Delete the segments retention allows on every hosted log; returns how many were
        deleted."""
        deleted = 0
        for hosted in self._partitions.values():
            partition_log = hosted.log
            with self.on_disk(partition_log, "deleting segments of"):
                doomed = segments_to_delete(
                    partition_log.segment_stats(), hosted.settings.log, now_ms=now_ms,
                    log_start_offset=partition_log.log_start_offset,
                    high_watermark=hosted.high_watermark)
                if doomed:
                    deleted += partition_log.delete_segments(doomed, now_ms)
                    delete_producer_snapshots(
                        partition_log.directory,
                        below=partition_log.segment_stats()[0].base_offset)
                    hosted.producer_state.remove_expired(now_ms)
                    hosted.notify()
        self.logs.remove_deleted(now_ms)
        return deleted

    def checkpoint(self, now_ms: int) -> None:
        """Recovery points and log start offsets (log manager), then the high watermarks."""
        self.logs.checkpoint()
        self.logs.remove_deleted(now_ms)
        self.checkpoint_high_watermarks()

    async def checkpoint_off_loop(self, now_ms: int, compute: Compute) -> None:
        """:meth:`checkpoint`, its fsyncs and writes run by ``compute`` (the broker's disk
        worker): for 1,000 partitions they held the loop 0.7 s, seconds on a busy disk."""
        await self.logs.checkpoint_off_loop(compute)
        self.logs.remove_deleted(now_ms)
        await self.checkpoint_high_watermarks_off_loop(compute)

    def checkpoint_high_watermarks(self) -> None:
        """Each log directory's ``replication-offset-checkpoint``
        (``replica.high.watermark.checkpoint.interval.ms``)."""
        for directory, offsets in self._high_watermarks_by_dir().items():
            with self._writing_high_watermarks(directory):
                write_offset_checkpoint(directory / REPLICATION_OFFSET_CHECKPOINT, offsets)

    async def checkpoint_high_watermarks_off_loop(self, compute: Compute) -> None:
        """:meth:`checkpoint_high_watermarks`, the files written by ``compute``."""
        for directory, offsets in self._high_watermarks_by_dir().items():
            with self._writing_high_watermarks(directory):
                await compute(functools.partial(
                    write_offset_checkpoint, directory / REPLICATION_OFFSET_CHECKPOINT, offsets))

    def _high_watermarks_by_dir(self) -> dict[Path, dict[TopicPartition, int]]:
        by_dir: dict[Path, dict[TopicPartition, int]] = {d: {} for d in self.logs.online_dirs}
        for tp, hosted in sorted(self._partitions.items()):
            by_dir.setdefault(hosted.log.directory.parent, {})[tp] = hosted.high_watermark
        return by_dir

    @contextmanager
    def _writing_high_watermarks(self, directory: Path) -> Iterator[None]:
        try:
            yield
        except OSError as exc:
            self.logs.failures.fail(directory, "Error while writing to high watermark "
                                               f"file in directory {directory}", exc)
            raise

    def shutdown(self, broker_epoch: int = -1, now_ms: int = 0) -> None:
        """Producer snapshots at each log end, checkpoints, then close every log."""
        for hosted in self._partitions.values():
            write_producer_snapshot(hosted.log.directory, hosted.producer_state)
        self.checkpoint(now_ms)
        for hosted in self._partitions.values():
            hosted.deleted = True
            hosted.notify()
            self._leadership_changed(hosted)
        self._partitions.clear()
        self._awaiting.clear()
        self.logs.shutdown(broker_epoch)


def _name(tp: TopicPartition) -> str:
    return f"{tp.topic}-{tp.partition}"


def _check_internal(hosted: HostedPartition, client_id: str | None) -> None:
    """Clients may not write to an internal topic (the admin client may)."""
    if hosted.topic in INTERNAL_TOPICS and client_id != ADMIN_CLIENT_ID:
        raise PartitionError(ErrorCode.INVALID_TOPIC_EXCEPTION,
                             f"Cannot append to internal topic {hosted.topic}")


def _check_min_isr(hosted: HostedPartition, acks: int) -> None:
    """acks=all needs min.insync.replicas in the ISR (checked before any validation)."""
    if acks == -1 and len(hosted.isr) < hosted.min_isr:
        raise PartitionError(
            ErrorCode.NOT_ENOUGH_REPLICAS,
            f"The size of the current ISR {set(hosted.isr)} is insufficient to satisfy "
            f"the min.isr requirement of {hosted.min_isr} for partition "
            f"{_name(hosted.tp)}")
