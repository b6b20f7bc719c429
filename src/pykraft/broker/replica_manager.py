"""The partitions this broker hosts, from the metadata image it replays: Kafka's
``ReplicaManager`` for the leader's side of the data path (followers fetch from issue 15).

Interface (stable; Fetch, ListOffsets, OffsetForLeaderEpoch, DescribeLogDirs and
DeleteRecords build on it)::

    replicas = ReplicaManager(broker_id, log_manager, static_properties)
    replicas.apply_image(image, now_ms)      # each new image (BrokerMetadataListener)
    part = replicas.partition_for(topic_name_or_id, index, current_leader_epoch=-1,
                                  require_leader=True)
    # -> HostedPartition, or raises PartitionError(error_code, message, leader_id,
    #    leader_epoch): UNKNOWN_TOPIC_OR_PARTITION (name), UNKNOWN_TOPIC_ID (id),
    #    NOT_LEADER_OR_FOLLOWER (not hosted here, or a follower with require_leader),
    #    FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH (current_leader_epoch older / newer)
    part.log (PartitionLog) .topic .index .topic_id .leader_id .leader_epoch .is_leader
    part.high_watermark .log_start_offset .log_end_offset .isr .replicas .settings
    part.producer_state (ProducerStateManager)
    part.listeners.append(callback)   # callback(part) after each append, high watermark
                                      # move, leadership change or deletion (no asyncio:
                                      # wake long-poll fetches / acks=all produces from it)
    result = replicas.append_records(part, records, acks=-1, api_version=v, now_ms=...)
    # -> AppendResult(base_offset, last_offset, log_append_time_ms, log_start_offset), or
    #    raises PartitionError (NOT_ENOUGH_REPLICAS, INVALID_TOPIC_EXCEPTION) or the
    #    validator's / producer state's errors (ProduceValidationError, ProducerStateError)
    replicas.run_retention(now_ms)           # log.retention.check.interval.ms
    replicas.checkpoint(now_ms)              # recovery points, log start offsets, HWMs
    replicas.checkpoint_high_watermarks()    # replication-offset-checkpoint alone
    replicas.shutdown(broker_epoch)          # producer snapshots, checkpoints, close

High watermark: the leader's is the smallest log end offset over the ISR
(:func:`~pykraft.broker.replica_state.leader_high_watermark`); with ISR == {leader} that is
its own log end offset after every append. A larger ISR holds it until followers report
their offsets (issue 15), so acks=all produces to such partitions wait, then time out as in
Kafka. A new replica starts from ``replication-offset-checkpoint`` (capped at its log end).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from pykraft.broker.log_manager import LogManager
from pykraft.broker.producer_snapshots import (
    delete_producer_snapshots,
    load_producer_state,
    write_producer_snapshot,
)
from pykraft.broker.replica_state import (
    LocalPartition,
    check_leader_epoch,
    effective_min_isr,
    leader_high_watermark,
    local_changes,
)
from pykraft.broker.topic_settings import TopicSettings, topic_settings
from pykraft.errors import ConfigError, PyKraftError, StorageError
from pykraft.image.configs import ConfigResourceType
from pykraft.image.image import MetadataImage
from pykraft.image.topics import PartitionRegistration, TopicImage
from pykraft.partition.producer_state import (
    PRODUCER_ID_EXPIRATION_MS_DEFAULT,
    BatchMetadata,
    ProducerStateManager,
)
from pykraft.partition.validator import validate_produce
from pykraft.protocol.errors import ErrorCode
from pykraft.records.batch import unpack_header
from pykraft.storage.offset_checkpoints import (
    REPLICATION_OFFSET_CHECKPOINT,
    TopicPartition,
    read_offset_checkpoint,
    write_offset_checkpoint,
)
from pykraft.storage.partition_log import PartitionLog
from pykraft.storage.retention import segments_to_delete

INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state", "__share_group_state"})
ADMIN_CLIENT_ID = "__admin_client"  # Kafka's AdminUtils.ADMIN_CLIENT_ID

log = logging.getLogger(__name__)


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


Listener = Callable[["HostedPartition"], None]


class HostedPartition:
    """One replica on this broker: its log, producer state and registration."""

    def __init__(self, local: LocalPartition, partition_log: PartitionLog,
                 producer_state: ProducerStateManager, settings: TopicSettings,
                 broker_id: int, high_watermark: int) -> None:
        self.tp = local.tp
        self.topic_id = local.topic_id
        self.registration = local.registration
        self.log = partition_log
        self.producer_state = producer_state
        self.settings = settings
        self.broker_id = broker_id
        self.high_watermark = min(high_watermark, partition_log.log_end_offset)
        self.deleted = False
        self.listeners: list[Listener] = []

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
        return self.registration.isr

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

    def maybe_advance_high_watermark(self) -> bool:
        """Move the leader's high watermark by Kafka's rule; True if it moved."""
        if not self.is_leader:
            return False
        new = leader_high_watermark(self.high_watermark, self.log_end_offset, self.isr,
                                    self.broker_id, self.settings.min_insync_replicas,
                                    len(self.replicas))
        moved = new != self.high_watermark
        self.high_watermark = new
        return moved

    def notify(self) -> None:
        for listener in list(self.listeners):
            listener(self)


class ReplicaManager:
    """Hosted partitions by topic partition; one event loop, no locks."""

    def __init__(self, broker_id: int, log_manager: LogManager,
                 static: Mapping[str, str] | None = None, *,
                 producer_id_expiration_ms: int = PRODUCER_ID_EXPIRATION_MS_DEFAULT) -> None:
        self.broker_id = broker_id
        self.logs = log_manager
        self._static = dict(static or {})
        self._expiration_ms = producer_id_expiration_ms
        self.image = MetadataImage()
        self._partitions: dict[TopicPartition, HostedPartition] = {}
        self._checkpointed_hw: dict[TopicPartition, int] = {}
        for directory in log_manager.log_dirs:
            self._checkpointed_hw.update(
                read_offset_checkpoint(directory / REPLICATION_OFFSET_CHECKPOINT))

    @property
    def partitions(self) -> Mapping[TopicPartition, HostedPartition]:
        return self._partitions

    # ------------------------------------------------------------------ metadata

    def apply_image(self, image: MetadataImage, now_ms: int) -> None:
        """Host, lead, follow or delete partitions as the new image says (Kafka's
        ``applyDelta``: deletes first, then leaders, then followers)."""
        previous, self.image = self.image, image
        changes = local_changes(previous.topics, image.topics, self.broker_id)
        for tp in changes.deleted:
            self._delete(tp, now_ms)
        for local in (*changes.leaders, *changes.followers):
            try:
                self._host(local, now_ms)
            except (StorageError, ConfigError, OSError):  # Kafka takes the log dir offline
                log.exception("%s: cannot host the partition", _name(local.tp))
        if image.configs is not previous.configs:
            for hosted in self._partitions.values():
                try:
                    hosted.settings = self._settings_of(hosted.topic)
                except ConfigError:
                    log.exception("%s: keeping the previous topic settings", _name(hosted.tp))
                hosted.log.config = hosted.settings.log

    def _settings_of(self, topic: str) -> TopicSettings:
        own = self.image.configs.get((ConfigResourceType.TOPIC, topic))
        return topic_settings(own, self._static)

    def _host(self, local: LocalPartition, now_ms: int) -> None:
        hosted = self._partitions.get(local.tp)
        if hosted is not None and hosted.topic_id == local.topic_id:
            was_leader = hosted.is_leader
            hosted.registration = local.registration
            _start_leader_epoch(hosted)
            hosted.maybe_advance_high_watermark()
            if was_leader != hosted.is_leader:
                log.info("%s: %s in leader epoch %d", _name(local.tp),
                         "leader" if hosted.is_leader else "follower", hosted.leader_epoch)
            hosted.notify()
            return
        settings = self._settings_of(local.tp.topic)
        partition_log = self.logs.get_or_create(local.tp, local.topic_id, settings.log, now_ms)
        state = load_producer_state(partition_log, partition=_name(local.tp), now_ms=now_ms,
                                    expiration_ms=self._expiration_ms)
        hosted = HostedPartition(local, partition_log, state, settings, self.broker_id,
                                 self._checkpointed_hw.get(local.tp, 0))
        _start_leader_epoch(hosted)
        hosted.maybe_advance_high_watermark()
        self._partitions[local.tp] = hosted

    def _delete(self, tp: TopicPartition, now_ms: int) -> None:
        hosted = self._partitions.pop(tp, None)
        delay = 0
        if hosted is not None:
            hosted.deleted = True
            delay = hosted.settings.file_delete_delay_ms
            hosted.notify()
        self._checkpointed_hw.pop(tp, None)
        self.logs.delete(tp, now_ms, delay)

    # ------------------------------------------------------------------ lookups

    def partition_for(self, topic: str | uuid.UUID, index: int, *,
                      current_leader_epoch: int = -1,
                      require_leader: bool = True) -> HostedPartition:
        """The hosted replica of ``topic`` (name or id) partition ``index``; see the
        module docstring for the errors (Kafka's ``getPartitionOrException``)."""
        topic_image = self._topic(topic)
        registration = topic_image.partitions.get(index)
        if registration is None:
            raise PartitionError(ErrorCode.unknown_topic_or_partition,
                                 "This server does not host this topic-partition.")
        hosted = self._partitions.get(TopicPartition(topic_image.name, index))
        if hosted is None or (require_leader and not hosted.is_leader):
            raise PartitionError(
                ErrorCode.not_leader_or_follower,
                f"Leader not local for partition {topic_image.name}-{index} on broker "
                f"{self.broker_id}", leader_id=registration.leader,
                leader_epoch=registration.leader_epoch)
        code = check_leader_epoch(current_leader_epoch, hosted.leader_epoch)
        if code != ErrorCode.none:
            relation = "older" if code == ErrorCode.fenced_leader_epoch else "newer"
            raise PartitionError(
                code, f"The leader epoch in the request {current_leader_epoch} is {relation} "
                f"than the current leader epoch {hosted.leader_epoch} of partition "
                f"{hosted.topic}-{index}", leader_id=hosted.leader_id,
                leader_epoch=hosted.leader_epoch)
        return hosted

    def _topic(self, topic: str | uuid.UUID) -> TopicImage:
        topics = self.image.topics
        if isinstance(topic, uuid.UUID):
            found = topics.by_id.get(topic)
            if found is None:
                raise PartitionError(ErrorCode.unknown_topic_id,
                                     "This server does not host this topic ID.")
            return found
        named = topics.by_name.get(topic)
        if named is None:
            raise PartitionError(ErrorCode.unknown_topic_or_partition,
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
        if hosted.topic in INTERNAL_TOPICS and client_id != ADMIN_CLIENT_ID:
            raise PartitionError(ErrorCode.invalid_topic_exception,
                                 f"Cannot append to internal topic {hosted.topic}")
        if acks == -1 and len(hosted.isr) < hosted.min_isr:
            raise PartitionError(
                ErrorCode.not_enough_replicas,
                f"The size of the current ISR {set(hosted.isr)} is insufficient to satisfy "
                f"the min.isr requirement of {hosted.min_isr} for partition "
                f"{_name(hosted.tp)}")
        partition_log = hosted.log
        validated = validate_produce(
            records, log_end_offset=partition_log.log_end_offset,
            leader_epoch=hosted.leader_epoch, now_ms=now_ms, config=hosted.settings.append,
            api_version=api_version, partition=_name(hosted.tp))
        state = hosted.producer_state
        outcome = state.prepare(unpack_header(validated.records))
        if isinstance(outcome, BatchMetadata):
            return AppendResult(outcome.first_offset, outcome.last_offset,
                                validated.log_append_time_ms, hosted.log_start_offset)
        active = partition_log.active.base_offset
        partition_log.append(validated.records, now_ms)
        if partition_log.active.base_offset != active:
            # rolled: Kafka snapshots the state as of the new segment's base offset, which
            # is the state before this batch
            state.update_map_end_offset(partition_log.active.base_offset)
            write_producer_snapshot(partition_log.directory, state)
        if outcome is not None:
            state.update(outcome)
        state.update_map_end_offset(partition_log.log_end_offset)
        hosted.maybe_advance_high_watermark()
        hosted.notify()
        return AppendResult(validated.first_offset, validated.last_offset,
                            validated.log_append_time_ms, hosted.log_start_offset)

    # ------------------------------------------------------------------ periodic work

    def run_retention(self, now_ms: int) -> int:
        """Compact the logs that ask for it, then delete the segments retention allows on
        every hosted log; returns how many were deleted."""
        deleted = 0
        for tp, hosted in self._partitions.items():
            partition_log = hosted.log
            self.logs.compact(tp, hosted.high_watermark, now_ms, {
                producer_id: entry.last_data_offset
                for producer_id, entry in hosted.producer_state.producers.items()})
            doomed = segments_to_delete(
                partition_log.segment_stats(), hosted.settings.log, now_ms=now_ms,
                log_start_offset=partition_log.log_start_offset,
                high_watermark=hosted.high_watermark)
            if doomed:
                deleted += partition_log.delete_segments(doomed, now_ms)
                delete_producer_snapshots(partition_log.directory,
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

    def checkpoint_high_watermarks(self) -> None:
        """Each log directory's ``replication-offset-checkpoint``
        (``replica.high.watermark.checkpoint.interval.ms``)."""
        for directory in self.logs.log_dirs:
            write_offset_checkpoint(directory / REPLICATION_OFFSET_CHECKPOINT, {
                tp: hosted.high_watermark for tp, hosted in sorted(self._partitions.items())
                if hosted.log.directory.parent == directory})

    def shutdown(self, broker_epoch: int = -1, now_ms: int = 0) -> None:
        """Producer snapshots at each log end, checkpoints, then close every log."""
        for hosted in self._partitions.values():
            write_producer_snapshot(hosted.log.directory, hosted.producer_state)
        self.checkpoint(now_ms)
        for hosted in self._partitions.values():
            hosted.deleted = True
            hosted.notify()
        self._partitions.clear()
        self.logs.shutdown(broker_epoch)


def _start_leader_epoch(hosted: HostedPartition) -> None:
    """A leader's epoch starts at its log end offset (OffsetForLeaderEpoch answers it, and
    ListOffsets refuses consumers while the high watermark is below it)."""
    if hosted.is_leader:
        hosted.log.assign_epoch_start_offset(hosted.leader_epoch, hosted.log_end_offset)


def _name(tp: TopicPartition) -> str:
    return f"{tp.topic}-{tp.partition}"
