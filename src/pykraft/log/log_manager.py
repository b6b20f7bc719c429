"""The broker's log directories (``log.dirs``, else ``log.dir``): Kafka's ``LogManager``.

Interface (time always comes in as ``now_ms``; the periodic calls are the driver's, see
:class:`pykraft.broker.broker_server.BrokerServer`)::

    logs = LogManager(log_dirs, default_config, jitter=None,   # segment.jitter.ms source
                      failures=None,   # LogDirFailures: what a failed directory does
                      remove_dirs=None,  # runs remove_renamed_dirs(paths), e.g. on a thread
                      dir_ids=None)    # each directory's directory.id (KIP-858)
    logs.directory_id(path)           # the id of the log directory ``path`` (None: none)
    logs.is_online_dir_id(dir_id)     # that id names one of our online directories
    logs.startup(now_ms)              # open and recover every <topic>-<partition> directory
    log = logs.get_or_create(tp, topic_id, config, now_ms)   # writes partition.metadata
    # ... or in steps, the file work on a worker thread (create_log touches nothing here):
    log = logs.existing(tp, topic_id, config, now_ms)        # None: to be created
    planned = logs.plan([(tp, topic_id, config)], targets)  # directories chosen
    created = create_log(planned[0], now_ms)                 # segment, partition.metadata
    logs.adopt(tp, created)
    logs.delete_many([(tp, delay_ms), ...], now_ms)          # delete, one fsync per directory
    logs.get(tp)                      # the open PartitionLog, or None
    logs.checkpoint()                 # flush + recovery-point and log-start-offset checkpoints
                                      # (every log.flush.offset.checkpoint.interval.ms, 60 s;
                                      # a directory that cannot be written fails)
    await logs.checkpoint_off_loop(compute)  # ... its fsyncs and writes run by compute
    logs.close_dir(path)              # a failed directory: its logs closed and forgotten
    # AlterReplicaLogDirs (the copy itself: pykraft.broker.log_dir_mover)
    logs.prefer(tp, path)             # a replica not created yet: create it in ``path``
    future = logs.create_future(tp, topic_id, config, path, now_ms)  # <dir>.<uuid>-future
    logs.future(tp); logs.futures     # the future logs (loaded at start-up too)
    logs.delete_future(tp, now_ms)    # a move cancelled
    log = logs.replace_current_with_future(tp, now_ms, delay_ms)  # the move's swap
    logs.delete(tp, now_ms, delay_ms) # topic deleted: close, rename <dir>.<uuid>-delete
    logs.remove_deleted(now_ms)       # ... and remove it after file.delete.delay.ms, and
                                      # deleted segments' *.deleted files likewise
    logs.shutdown(broker_epoch)       # flush, checkpoints, close, .kafka_cleanshutdown
    await logs.compact(tp, high_watermark, now_ms, producer_last_offsets)  # cleanup.policy=compact
    logs.dirtiness(tp, high_watermark, now_ms)  # dirty ratio, compaction delay (metrics)
    logs.cleaning_paused(tp)          # a partition being moved (it has a future log) is not
                                      # cleaned until the swap or the cancel

A partition being moved between directories has a future log besides its current one
(Kafka's ``futureLogs``), in ``<topic>-<partition>.<uuid>-future``; start-up loads those
too, so a restart resumes the copy. The checkpoints cover future logs as current ones
(each directory holds at most one log of a partition).
Start-up reads each directory's ``recovery-point-offset-checkpoint`` and
``log-start-offset-checkpoint`` and the ``.kafka_cleanshutdown`` marker (deleted once the
logs are loaded, so a later crash is seen as one), and removes directories an earlier
deletion renamed but did not remove. A new partition goes to the directory the metadata
image assigned its replica to, if that is one of ours and online; else to the online
directory holding the fewest partitions, the first in ``log.dirs`` order on a tie (Kafka's
``getOrCreateLog`` and ``nextLogDirs``); a directory AlterReplicaLogDirs named for the
replica before it existed (:meth:`prefer`) comes before the image's. A partition whose
``partition.metadata`` names another topic id than the image is a recreated topic's stale
replica: :meth:`get_or_create` deletes it first.
Retention runs in the replica manager, which knows the high watermarks; it calls
:meth:`LogManager.compact` for each partition. Each directory's
``cleaner-offset-checkpoint`` holds the first dirty offset of its compacted partitions,
written after each cleaning and read at start-up, as Kafka's cleaner manager does.
"""

from __future__ import annotations

import concurrent.futures
import functools
import json
import logging
import os
import random
import uuid
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from pykraft.errors import StorageError, StorageIOError
from pykraft.ids import METADATA_TOPIC_NAME, ZERO_UUID, TopicPartition
from pykraft.log.cleaner import CleanerStats, Compute, clean_log, inline, unthrottled
from pykraft.log.cleaner_config import KAFKA_DEFAULTS, CleanerConfig
from pykraft.log.compaction import Dirtiness, assess_dirtiness
from pykraft.log.log_dir_failure import LogDirFailures
from pykraft.storage.file_error import StateFileError
from pykraft.storage.fsutil import atomic_write, fsync_dir
from pykraft.storage.log_config import JitterSource, LogConfig
from pykraft.storage.offset_checkpoints import (
    LOG_START_OFFSET_CHECKPOINT,
    RECOVERY_POINT_CHECKPOINT,
    read_offset_checkpoint,
    write_offset_checkpoint,
)
from pykraft.storage.partition_log import (
    DELETE_DIR_SUFFIX,
    FUTURE_DIR_SUFFIX,
    LogFlush,
    PartitionLog,
    future_dir_name,
    parse_partition_dir_name,
    partition_dir_name,
    remove_deleted_dir,
    rename_for_delete,
    run_log_flush,
)
from pykraft.storage.partition_metadata import (
    PARTITION_METADATA,
    read_partition_metadata,
    write_partition_metadata,
)

CLEAN_SHUTDOWN_FILE = ".kafka_cleanshutdown"
CLEANER_OFFSET_CHECKPOINT = "cleaner-offset-checkpoint"

log = logging.getLogger(__name__)


class LogManager:
    """Every user partition log of this broker; not thread-safe (one event loop)."""

    def __init__(self, log_dirs: Sequence[Path], default_config: LogConfig,
                 jitter: JitterSource | None = None,
                 failures: LogDirFailures | None = None,
                 remove_dirs: Callable[[list[Path]], object] | None = None,
                 dir_ids: Mapping[Path, uuid.UUID] | None = None) -> None:
        if not log_dirs:
            raise StorageError("no log directory: set log.dirs (or log.dir)")
        self.log_dirs = tuple(log_dirs)
        self._dir_ids = dict(dir_ids or {})
        self._dirs_by_id = {dir_id: path for path, dir_id in self._dir_ids.items()}
        self.failures = failures or LogDirFailures(self.log_dirs, None)
        self.default_config = default_config
        #: segment.jitter.ms's randomness: a private generator, never the global one
        self._jitter = jitter or random.Random().randrange
        self._logs: dict[TopicPartition, PartitionLog] = {}
        self._futures: dict[TopicPartition, PartitionLog] = {}
        self._preferred: dict[TopicPartition, Path] = {}
        self._pending_removal: list[tuple[int, Path]] = []
        self._first_dirty: dict[TopicPartition, int] = {}
        #: runs remove_renamed_dirs (the broker's on its disk worker thread)
        self._remove_dirs = remove_dirs or remove_renamed_dirs
        #: the broker epoch every log directory's clean shutdown marker named at start-up,
        #: -1 if one had none (KIP-966: an unclean shutdown may have lost unflushed records)
        self.previous_broker_epoch = -1

    # ------------------------------------------------------------------ start-up

    def startup(self, now_ms: int, recovery_threads: int = 1) -> None:
        """Open and recover every partition directory of every log directory, each
        directory's with ``recovery_threads`` threads (Kafka's
        ``num.recovery.threads.per.data.dir``: the CRC checks and reads of a recovery
        release the GIL, so a second core helps). A directory already offline (it failed
        the start-up checks) is skipped; one that fails with an I/O error while loading
        goes offline, its logs closed (Kafka's ``loadLogs``); none left is fatal."""
        if recovery_threads < 1:
            raise StorageError(f"num.recovery.threads.per.data.dir must be at least 1, not "
                               f"{recovery_threads}")
        epochs: set[int | None] = set()
        for directory in self.log_dirs:
            if directory in self.failures.offline:  # failed the start-up checks
                continue
            try:
                epochs.add(self._load_dir(directory, now_ms, recovery_threads))
            except (OSError, StorageIOError) as exc:  # Kafka's loadLogs: offline, not fatal
                self.close_dir(directory)
                self.failures.fail_at_startup(
                    directory, f"Error while loading log dir {directory}", exc)
        (epoch,) = epochs if len(epochs) == 1 else (None,)
        self.previous_broker_epoch = -1 if epoch is None else epoch

    def _load_dir(self, directory: Path, now_ms: int, recovery_threads: int) -> int | None:
        """Open and recover one log directory's partitions; the broker epoch its clean
        shutdown marker names (None: it has none)."""
        directory.mkdir(parents=True, exist_ok=True)
        marker = directory / CLEAN_SHUTDOWN_FILE
        clean = marker.exists()
        epoch = _marked_epoch(marker) if clean else None
        recovery = read_offset_checkpoint(directory / RECOVERY_POINT_CHECKPOINT)
        starts = read_offset_checkpoint(directory / LOG_START_OFFSET_CHECKPOINT)
        cleaned = read_offset_checkpoint(directory / CLEANER_OFFSET_CHECKPOINT)
        found = list(_partition_dirs(directory))
        for child, tp in found:
            _check_unique(self._futures if _is_future(child) else self._logs, tp, child)

        def load(child: Path, tp: TopicPartition) -> PartitionLog:
            return PartitionLog.open(
                child, self.default_config, now_ms=now_ms,
                recovery_point=recovery.get(tp, 0), log_start_offset=starts.get(tp, 0),
                clean_shutdown=clean, jitter=self._jitter)

        for (child, tp), loaded in zip(found, _load_all(load, found, recovery_threads),
                                       strict=True):
            if _is_future(child):
                self._futures[tp] = loaded
                continue
            self._logs[tp] = loaded
            if tp in cleaned:
                self._first_dirty[tp] = cleaned[tp]
        marker.unlink(missing_ok=True)
        for leftover in directory.glob(f"*{DELETE_DIR_SUFFIX}"):
            remove_deleted_dir(leftover)
        return epoch

    # ------------------------------------------------------------------ partitions

    def get(self, tp: TopicPartition) -> PartitionLog | None:
        return self._logs.get(tp)

    @property
    def logs(self) -> dict[TopicPartition, PartitionLog]:
        return self._logs

    def future(self, tp: TopicPartition) -> PartitionLog | None:
        """The partition's future log (AlterReplicaLogDirs copying it), or None."""
        return self._futures.get(tp)

    @property
    def futures(self) -> Mapping[TopicPartition, PartitionLog]:
        return self._futures

    def prefer(self, tp: TopicPartition, directory: Path) -> None:
        """Kafka's ``maybeUpdatePreferredLogDir``: create the partition's log in
        ``directory`` when it comes (unless its current or future log is there already)."""
        if directory not in (_parent(self._logs.get(tp)), _parent(self._futures.get(tp))):
            self._preferred[tp] = directory

    def create_future(self, tp: TopicPartition, topic_id: uuid.UUID, config: LogConfig,
                      directory: Path, now_ms: int) -> PartitionLog:
        """A new, empty future log of the partition in log directory ``directory``."""
        self._preferred.pop(tp, None)
        created = create_log(PlannedLog(tp, topic_id, config,
                                        directory / future_dir_name(tp), self._jitter), now_ms)
        self._futures[tp] = created
        return created

    def delete_future(self, tp: TopicPartition, now_ms: int) -> None:
        """Close the partition's future log and delete it (a cancelled move)."""
        future = self._futures.pop(tp, None)
        if future is not None:
            future.close()
            self._pending_removal.append((now_ms, rename_for_delete(future.directory)))
            self._remove_deleted_dirs(now_ms)

    def replace_current_with_future(self, tp: TopicPartition, now_ms: int,
                                    delay_ms: int) -> PartitionLog:
        """Kafka's ``replaceCurrentWithFutureLog``, once the future log holds all the
        current one does: the future is flushed and renamed ``<topic>-<partition>`` (and
        reopened there: a log knows its files by path), then the current log is closed,
        renamed for deletion and removed after ``delay_ms``. The renames go in Kafka's
        order: a crash between them leaves two live copies, which start-up refuses,
        rather than none."""
        current, future = self._logs[tp], self._futures.pop(tp)
        future.flush()
        future.close()
        target = future.directory.parent / partition_dir_name(tp)
        os.rename(future.directory, target)
        fsync_dir(target.parent)
        moved = PartitionLog.open(target, future.config, now_ms=now_ms,
                                  recovery_point=future.log_end_offset,
                                  log_start_offset=future.log_start_offset,
                                  clean_shutdown=True, jitter=self._jitter)
        self._logs[tp] = moved
        current.close()
        self._pending_removal.append((now_ms + delay_ms, rename_for_delete(current.directory)))
        self._remove_deleted_dirs(now_ms)
        if tp in self._first_dirty:  # Kafka's alterCheckpointDir: the entry moves along
            for directory in (current.directory.parent, moved.directory.parent):
                self._write_cleaner_checkpoint(directory)
        return moved

    def get_or_create(self, tp: TopicPartition, topic_id: uuid.UUID, config: LogConfig,
                      now_ms: int) -> PartitionLog:
        """The partition's log with ``config``, created in the least used directory if
        absent (:meth:`existing`, then :meth:`plan`, :func:`create_log` and :meth:`adopt`
        at once)."""
        found = self.existing(tp, topic_id, config, now_ms)
        if found is not None:
            return found
        (planned,) = self.plan([(tp, topic_id, config)])
        created = create_log(planned, now_ms)
        self.adopt(tp, created)
        return created

    def existing(self, tp: TopicPartition, topic_id: uuid.UUID, config: LogConfig,
                 now_ms: int) -> PartitionLog | None:
        """The partition's open log with ``config``, or None when it has to be created;
        ``partition.metadata`` holds ``topic_id`` (a stale one's log is deleted, since the
        topic was deleted and recreated)."""
        existing = self._logs.get(tp)
        if existing is None:
            return None
        stored = _stored_topic_id(existing.directory)
        if stored is None or stored == topic_id:
            existing.config = config
            if stored is None:
                write_partition_metadata(existing.directory / PARTITION_METADATA, topic_id)
            return existing
        log.warning("%s belongs to topic id %s, not %s: deleting it", existing.directory,
                    stored, topic_id)
        self.delete(tp, now_ms, 0)
        return None

    def directory_id(self, directory: Path) -> uuid.UUID | None:
        """The ``directory.id`` of log directory ``directory`` (None if it has none)."""
        return self._dir_ids.get(directory)

    def is_online_dir_id(self, directory_id: uuid.UUID) -> bool:
        """Kafka's ``onlineLogDirId``: ``directory_id`` names one of our online directories."""
        path = self._dirs_by_id.get(directory_id)
        return path is not None and path not in self.failures.offline

    @property
    def online_dirs(self) -> tuple[Path, ...]:
        """The log directories that have not failed, in ``log.dirs`` order."""
        return tuple(d for d in self.log_dirs if d not in self.failures.offline)

    def plan(self, logs: Sequence[tuple[TopicPartition, uuid.UUID, LogConfig]],
             targets: Mapping[TopicPartition, uuid.UUID] | None = None) -> list[PlannedLog]:
        """Where each new ``(partition, topic id, config)`` log goes: the online directory
        ``targets`` names for it (the image's assignment), else the online directory holding
        the fewest partitions, counting the ones planned before it (Kafka's
        ``nextLogDirs``)."""
        counts = self._partition_counts()
        candidates = self.online_dirs or self.log_dirs
        planned = []
        for tp, topic_id, config in logs:
            target = self._preferred.pop(tp, None) or self._dirs_by_id.get(
                (targets or {}).get(tp, ZERO_UUID))
            directory = (target if target in candidates
                         else min(candidates, key=lambda candidate: counts[candidate]))
            counts[directory] += 1
            planned.append(PlannedLog(tp, topic_id, config, directory / partition_dir_name(tp),
                                      self._jitter))
        return planned

    def close_dir(self, directory: Path) -> list[TopicPartition]:
        """Kafka's ``LogManager.handleLogDirFailure``: forget and close the logs of a failed
        directory (their files are left as they are); returns their partitions."""
        gone = [tp for tp, plog in self._logs.items() if plog.directory.parent == directory]
        for tp in [tp for tp, plog in self._futures.items()
                   if plog.directory.parent == directory or tp in gone]:
            self._futures.pop(tp).close()
        for tp in gone:
            self._first_dirty.pop(tp, None)
            try:
                self._logs.pop(tp).close()
            except OSError:
                log.warning("cannot close %s-%d in failed dir %s", tp.topic, tp.partition,
                            directory)
        return gone

    def adopt(self, tp: TopicPartition, created: PartitionLog) -> None:
        """A log :func:`create_log` made for a planned partition joins the open ones."""
        self._logs[tp] = created

    def _first_dirty_offset(self, tp: TopicPartition, partition_log: PartitionLog) -> int:
        first_dirty = self._first_dirty.get(tp, 0)
        if not partition_log.log_start_offset <= first_dirty <= partition_log.log_end_offset:
            first_dirty = partition_log.log_start_offset  # Kafka resets an invalid checkpoint
        return first_dirty

    def dirtiness(self, tp: TopicPartition, high_watermark: int,
                  now_ms: int) -> Dirtiness | None:
        """The partition's dirty ratio and compaction delay (None: no open compacted log)."""
        partition_log = self._logs.get(tp)
        if partition_log is None or not partition_log.config.compact:
            return None  # no compacted log: no segments to look at
        return assess_dirtiness(partition_log.segment_stats(), partition_log.config,
                                now_ms=now_ms,
                                first_dirty_offset=self._first_dirty_offset(tp, partition_log),
                                high_watermark=high_watermark)

    async def compact(self, tp: TopicPartition, high_watermark: int, now_ms: int,
                      producer_last_offsets: Mapping[int, int], *,
                      compute: Compute = inline, config: CleanerConfig = KAFKA_DEFAULTS,
                      throttle: Callable[[int], Awaitable[None]] = unthrottled,
                      ) -> CleanerStats | None:
        """One log-cleaner pass over the partition (a no-op unless its ``cleanup.policy``
        has ``compact`` and its dirty ratio or lag calls for it); its stats if it ran.
        ``producer_last_offsets`` (active producer id -> last data offset) keeps their
        last batches, emptied if need be; ``compute`` walks the records, ``config`` bounds
        the offset map and reads, ``throttle`` spends the I/O budget (see
        :func:`clean_log`)."""
        partition_log = self._logs.get(tp)
        if partition_log is None or self.cleaning_paused(tp):
            return None
        stats = await clean_log(partition_log, now_ms=now_ms, high_watermark=high_watermark,
                                first_dirty_offset=self._first_dirty_offset(tp, partition_log),
                                producer_last_offsets=producer_last_offsets, compute=compute,
                                config=config, throttle=throttle,
                                aborted=lambda: self.cleaning_paused(tp))
        if stats is None or self._logs.get(tp) is not partition_log:
            return None
        self._first_dirty[tp] = stats.end_offset
        self._write_cleaner_checkpoint(partition_log.directory.parent)
        return stats

    def cleaning_paused(self, tp: TopicPartition) -> bool:
        """Whether the partition's cleaning is paused: while it moves between log
        directories, from its future log's creation (or loading at start-up) to the swap
        or the cancel, as Kafka's ``abortAndPauseCleaning`` / ``resumeCleaning`` around
        AlterReplicaLogDirs (a pass in progress stops at its next step)."""
        return tp in self._futures

    def _write_cleaner_checkpoint(self, directory: Path) -> None:
        """``directory``'s cleaner-offset-checkpoint: the first dirty offset of each
        compacted partition whose log is there."""
        write_offset_checkpoint(directory / CLEANER_OFFSET_CHECKPOINT, {
            other: offset for other, offset in sorted(self._first_dirty.items())
            if other in self._logs and self._logs[other].directory.parent == directory})

    def _partition_counts(self) -> dict[Path, int]:
        """Open partitions per log directory (none counted with only one directory:
        counting every log for each new partition made creating many of them
        quadratic)."""
        counts = {directory: 0 for directory in self.log_dirs}
        if len(self.log_dirs) > 1:
            for partition_log in self._logs.values():
                parent = partition_log.directory.parent
                counts[parent] = counts.get(parent, 0) + 1
        return counts

    def delete(self, tp: TopicPartition, now_ms: int, delay_ms: int) -> None:
        """Close the log and rename it ``<dir>.<uuid>-delete``; its files go after
        ``delay_ms`` (Kafka's ``file.delete.delay.ms``) by :meth:`remove_deleted`."""
        self.delete_many([(tp, delay_ms)], now_ms)

    def delete_many(self, doomed: Sequence[tuple[TopicPartition, int]], now_ms: int) -> None:
        """:meth:`delete` of each ``(partition, delay_ms)``, with one fsync per log
        directory for all the renames (one each held the loop 3 ms per partition)."""
        renamed_in: set[Path] = set()
        for tp, delay_ms in doomed:
            self._first_dirty.pop(tp, None)
            self._preferred.pop(tp, None)
            for partition_log in (self._logs.pop(tp, None), self._futures.pop(tp, None)):
                if partition_log is None:
                    continue
                partition_log.close()
                renamed = rename_for_delete(partition_log.directory, sync=False)
                renamed_in.add(renamed.parent)
                self._pending_removal.append((now_ms + delay_ms, renamed))
        for directory in renamed_in:
            fsync_dir(directory)
        # the directories due only: walking every log's segments here made deleting a
        # topic's partitions one by one quadratic in the broker's partitions
        self._remove_deleted_dirs(now_ms)

    def remove_deleted(self, now_ms: int) -> None:
        """Remove what waited ``file.delete.delay.ms``: deleted segments' files and
        partition directories renamed for deletion."""
        for partition_log in self._logs.values():
            partition_log.remove_deleted_segments(now_ms)
        self._remove_deleted_dirs(now_ms)

    def _remove_deleted_dirs(self, now_ms: int) -> None:
        due = [path for when, path in self._pending_removal if when <= now_ms]
        self._pending_removal = [(when, path) for when, path in self._pending_removal
                                 if when > now_ms]
        if due:
            self._remove_dirs(due)

    # ------------------------------------------------------------------ checkpoints

    def checkpoint(self) -> None:
        """Flush every log and write each directory's recovery point and log start offset
        checkpoints (the latter only where it moved past the first segment, as Kafka)."""
        for directory in self.online_dirs:
            job = self._plan_checkpoint(directory)
            with self._checkpointing(directory):
                write_directory_checkpoint(job)
            self._checkpointed(job)

    async def checkpoint_off_loop(self, compute: Compute) -> None:
        """:meth:`checkpoint` with the fsyncs and writes run by ``compute`` (the broker's
        disk worker: Kafka's scheduler thread runs them, never a request thread)."""
        for directory in self.online_dirs:
            job = self._plan_checkpoint(directory)
            with self._checkpointing(directory):
                await compute(functools.partial(write_directory_checkpoint, job))
            self._checkpointed(job)

    def _plan_checkpoint(self, directory: Path) -> DirectoryCheckpoint:
        here = sorted(((tp, plog) for logs in (self._logs, self._futures)
                       for tp, plog in logs.items() if plog.directory.parent == directory),
                      key=lambda item: item[0])
        flushes = tuple(plog.plan_flush() for _, plog in here)
        return DirectoryCheckpoint(
            directory, flushes,
            recovery_points={tp: flush.recovery_point
                             for (tp, _), flush in zip(here, flushes, strict=True)},
            log_start_offsets={tp: plog.log_start_offset for tp, plog in here
                               if plog.log_start_offset > plog.segment_stats()[0].base_offset},
            logs=tuple(plog for _, plog in here))

    def _checkpointed(self, job: DirectoryCheckpoint) -> None:
        for plog, flush in zip(job.logs, job.flushes, strict=True):
            plog.flushed(flush)

    @contextmanager
    def _checkpointing(self, directory: Path) -> Iterator[None]:
        try:
            yield
        except OSError as exc:
            self.failures.fail(directory, "Disk error while writing recovery offsets "
                                          f"checkpoint in directory {directory}", exc)
            raise

    def shutdown(self, broker_epoch: int = -1) -> None:
        """Flush and checkpoint, close every log and mark each online directory cleanly
        shut down (``{"version":0,"brokerEpoch":N}``, KIP-966)."""
        self.checkpoint()
        for partition_log in (*self._logs.values(), *self._futures.values()):
            partition_log.close()
        self._logs.clear()
        self._futures.clear()
        marker = json.dumps({"version": 0, "brokerEpoch": broker_epoch}, separators=(",", ":"))
        for directory in self.online_dirs:
            atomic_write(directory / CLEAN_SHUTDOWN_FILE, marker.encode("ascii"))


@dataclass(frozen=True, slots=True)
class DirectoryCheckpoint:
    """One log directory's checkpoint, planned on the loop: each log's flush, then the
    recovery points they make true and the log start offsets. ``logs`` (each flush's log)
    is for the loop's side only: :func:`write_directory_checkpoint` never touches them."""

    directory: Path
    flushes: tuple[LogFlush, ...]
    recovery_points: Mapping[TopicPartition, int]
    log_start_offsets: Mapping[TopicPartition, int]
    logs: tuple[PartitionLog, ...]


def write_directory_checkpoint(job: DirectoryCheckpoint) -> None:
    """The blocking part of :meth:`LogManager.checkpoint`, safe on another thread."""
    for flush in job.flushes:
        run_log_flush(flush)
    write_offset_checkpoint(job.directory / RECOVERY_POINT_CHECKPOINT, job.recovery_points)
    write_offset_checkpoint(job.directory / LOG_START_OFFSET_CHECKPOINT, job.log_start_offsets)


@dataclass(frozen=True, slots=True)
class PlannedLog:
    """A new log of a partition (``tp``, ``topic_id``, ``config``) and where it goes,
    chosen by :meth:`LogManager.plan`."""

    tp: TopicPartition
    topic_id: uuid.UUID
    config: LogConfig
    directory: Path
    jitter: JitterSource


def create_log(planned: PlannedLog, now_ms: int) -> PartitionLog:
    """Create a planned log's files: its first segment and ``partition.metadata``, three
    fsyncs. It touches nothing the log manager holds, so it may run on a worker thread
    while the event loop serves (Kafka creates logs on its metadata publisher thread)."""
    created = PartitionLog.open(planned.directory, planned.config, now_ms=now_ms,
                                jitter=planned.jitter)
    try:
        write_partition_metadata(planned.directory / PARTITION_METADATA, planned.topic_id)
    except BaseException:
        created.close()
        raise
    return created


def remove_renamed_dirs(paths: Sequence[Path]) -> None:
    """Remove partition directories renamed for deletion, then sync each log directory
    once; a failure is logged (start-up removes what is left). It touches nothing the log
    manager holds, so it may run on a worker thread: removing 1,000 at once held the event
    loop for seconds."""
    for path in paths:
        try:
            remove_deleted_dir(path, sync=False)
        except OSError:
            log.exception("cannot remove %s", path)
    for directory in {path.parent for path in paths}:
        try:
            fsync_dir(directory)
        except OSError:
            log.exception("cannot sync %s after removing deleted partitions", directory)


def create_logs(planned: Sequence[PlannedLog], now_ms: int
                ) -> list[tuple[PlannedLog, PartitionLog | Exception]]:
    """:func:`create_log` for each planned log, a failure (a full disk) told per log."""
    created: list[tuple[PlannedLog, PartitionLog | Exception]] = []
    for job in planned:
        try:
            created.append((job, create_log(job, now_ms)))
        except (StorageError, OSError) as exc:
            created.append((job, exc))
    return created


def _load_all(load: Callable[[Path, TopicPartition], PartitionLog],
              found: Sequence[tuple[Path, TopicPartition]], threads: int
              ) -> list[PartitionLog]:
    """``load`` of every ``(directory, partition)``, on ``threads`` threads (1: here, in
    order); if one fails, the others opened are closed and its error raised."""
    loaded: list[PartitionLog] = []
    try:
        if threads == 1 or len(found) < 2:
            for item in found:
                loaded.append(load(*item))
            return loaded
        with concurrent.futures.ThreadPoolExecutor(
                max_workers=threads, thread_name_prefix="log-recovery") as pool:
            futures = [pool.submit(load, *item) for item in found]
            concurrent.futures.wait(futures)
        loaded = [future.result() for future in futures if future.exception() is None]
        for future in futures:
            future.result()  # the first failure, if any
        return loaded
    except BaseException:
        for partition_log in loaded:
            partition_log.close()
        raise


def _partition_dirs(directory: Path) -> Iterator[tuple[Path, TopicPartition]]:
    """The live ``<topic>-<partition>`` directories and the ``-future`` ones (not the
    metadata log, nor renamed ``-delete``/``-stray`` ones)."""
    for child in sorted(directory.iterdir()):
        if not child.is_dir() or child.name.endswith((DELETE_DIR_SUFFIX, "-stray")):
            continue
        try:
            tp = parse_partition_dir_name(child.name)
        except StateFileError:
            continue
        if tp.topic != METADATA_TOPIC_NAME:
            yield child, tp


def _is_future(child: Path) -> bool:
    return child.name.endswith(FUTURE_DIR_SUFFIX)


def _parent(partition_log: PartitionLog | None) -> Path | None:
    return None if partition_log is None else partition_log.directory.parent


def _check_unique(loaded: Mapping[TopicPartition, PartitionLog], tp: TopicPartition,
                  child: Path) -> None:
    """Kafka refuses to start with two current (or two future) logs of a partition."""
    if tp in loaded:
        raise StorageError(f"Duplicate log directories for {tp.topic}-{tp.partition} are "
                           f"found in both {loaded[tp].directory} and {child}.")


def _stored_topic_id(directory: Path) -> uuid.UUID | None:
    path = directory / PARTITION_METADATA
    return read_partition_metadata(path) if path.exists() else None


def _marked_epoch(marker: Path) -> int | None:
    """The broker epoch a clean shutdown marker names (Kafka's CleanShutdownFileHandler:
    ``{"version":0,"brokerEpoch":N}``); None if it cannot be read."""
    try:
        epoch = json.loads(marker.read_bytes())["brokerEpoch"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return epoch if isinstance(epoch, int) else None
