"""AlterReplicaLogDirs on the broker: moving a replica to another of its log directories
(Kafka's ``ReplicaManager.alterReplicaLogDirs``, ``ReplicaAlterLogDirsManager`` and
``ReplicaAlterLogDirsThread``) as one asyncio task of the broker's loop.

Interface (wired by :class:`pykraft.broker.broker_server.BrokerServer`)::

    mover = LogDirMover(replicas, clock_ms=now_ms, max_bytes=..., backoff_ms=...,
                        assign=assignments.assign)   # None: no AssignReplicasToDirs
    code = mover.alter(tp, "/abs/log/dir")   # one partition of a request (ErrorCode)
    mover.resume()                           # after each image: futures left by a restart
    mover.moving                             # the partitions being moved
    task = asyncio.create_task(mover.run())  # cancel to stop

Each partition answers as Kafka's: a future log name over 255 characters
INVALID_TOPIC_EXCEPTION; a path that is not one of ``log.dirs`` (absolute, as written)
LOG_DIR_NOT_FOUND; an offline directory, or an offline replica, KAFKA_STORAGE_ERROR; a
partition of the image not hosted here REPLICA_NOT_AVAILABLE, its log to be created in
that directory when it comes (Kafka's ``maybeUpdatePreferredLogDir``; for a partition the
image lacks Kafka records it too, pykraft does not: nothing would ever use it);
UNKNOWN_TOPIC_OR_PARTITION when the image lacks it. A move to another directory cancels
one in progress (its future log deleted); the current directory asks nothing more. No
future log is created while a directory is offline (KAFKA_STORAGE_ERROR), as Kafka.

The copy (:mod:`pykraft.broker.future_replica`, the move's states in
:mod:`pykraft.replica.log_dir_move`) goes one partition at a time, lowest topic and
partition first (Kafka's ``LocalLeaderEndPoint``), ``replica.fetch.max.bytes`` a step,
yielding to the loop between steps, under the ``replica.alter.log.dirs.io.max.bytes.per.
second`` quota (``replicas.throttles.alter_log_dirs``: while it is exceeded nothing is
copied for ``replica.fetch.backoff.ms``). Once caught up the controller is told the new
directory, then the logs swap; a replica deleted or taken offline meanwhile drops its move,
and a step that fails is logged and drops it too (its future log stays, resumed on a
restart, as Kafka leaves a failed partition's). While a partition has a future log its
cleaning is paused (:meth:`pykraft.log.log_manager.LogManager.cleaning_paused`: Kafka's
``abortAndPauseCleaning`` here, ``resumeCleaning`` after the swap or the cancel).
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from pykraft.broker.future_replica import FutureReplica, carry_epochs, copy_step, swap_in
from pykraft.broker.replica_manager import HostedPartition, PartitionError, ReplicaManager
from pykraft.errors import PyKraftError, StorageError
from pykraft.ids import TopicPartition
from pykraft.image.versions import MV_3_7_IV2
from pykraft.protocol.errors import ErrorCode
from pykraft.replica.log_dir_move import LogDirMove, Step
from pykraft.storage.partition_log import PartitionLog, future_dir_name

#: Kafka refuses a move whose future directory name would not fit a file name (KAFKA-4893).
MAX_DIR_NAME = 255

log = logging.getLogger(__name__)


class Assign(Protocol):
    """AssignReplicasToDirs (:meth:`pykraft.broker.dir_assignments.AssignmentsManager.
    assign`): ``on_done`` once the controller accepted it."""

    def __call__(self, topic_id: uuid.UUID, partition: int, directory_id: uuid.UUID,
                 on_done: Callable[[], None] | None = None) -> None: ...


@dataclass(slots=True)
class _Moving:
    move: LogDirMove
    future: FutureReplica
    topic_id: uuid.UUID


class LogDirMover:
    """This broker's replica moves between log directories; see the module docstring."""

    def __init__(self, replicas: ReplicaManager, *, clock_ms: Callable[[], int],
                 max_bytes: int, backoff_ms: int, assign: Assign | None = None) -> None:
        self._replicas = replicas
        self._logs = replicas.logs
        self._clock_ms = clock_ms
        self._max_bytes = max_bytes
        self._backoff_ms = backoff_ms
        self._assign = assign
        self._moves: dict[TopicPartition, _Moving] = {}
        self._wake = asyncio.Event()

    @property
    def moving(self) -> frozenset[TopicPartition]:
        return frozenset(self._moves)

    # ------------------------------------------------------------------ the request

    def alter(self, tp: TopicPartition, path: str) -> ErrorCode:
        """Move the partition's replica to log directory ``path``; Kafka's answer for it."""
        if len(future_dir_name(tp)) > MAX_DIR_NAME:
            return ErrorCode.INVALID_TOPIC_EXCEPTION
        directory = next((d for d in self._logs.log_dirs if str(d.absolute()) == path), None)
        if directory is None:
            return ErrorCode.LOG_DIR_NOT_FOUND
        if directory in self._logs.failures.offline:
            return ErrorCode.KAFKA_STORAGE_ERROR
        try:
            hosted = self._replicas.partition_for(tp.topic, tp.partition, require_leader=False)
        except PartitionError as exc:
            if exc.error_code != ErrorCode.NOT_LEADER_OR_FOLLOWER:
                return exc.error_code
            self._logs.prefer(tp, directory)
            return ErrorCode.REPLICA_NOT_AVAILABLE
        now_ms = self._clock_ms()
        future = self._logs.future(tp)
        if future is not None and future.directory.parent != directory:
            self._cancel(tp, now_ms)
        if hosted.log.directory.parent == directory or self._logs.future(tp) is not None:
            return ErrorCode.NONE
        if self._logs.failures.offline:  # Kafka's getOrCreateLog: not with a dir offline
            return ErrorCode.KAFKA_STORAGE_ERROR
        try:
            created = self._logs.create_future(tp, hosted.topic_id, hosted.settings.log,
                                               directory, now_ms)
        except (StorageError, OSError):
            log.exception("%s-%d: cannot create the future log in %s", tp.topic,
                          tp.partition, directory)
            return ErrorCode.KAFKA_STORAGE_ERROR
        self._start(hosted, created, now_ms)
        return ErrorCode.NONE

    def resume(self) -> None:
        """Move on the hosted partitions that have a future log and no move (a restart
        loaded them: Kafka's ``maybeAddLogDirFetchers``)."""
        now_ms = self._clock_ms()
        for tp, future_log in list(self._logs.futures.items()):
            hosted = self._replicas.partitions.get(tp)
            if tp not in self._moves and hosted is not None:
                self._start(hosted, future_log, now_ms)

    def _start(self, hosted: HostedPartition, future_log: PartitionLog, now_ms: int) -> None:
        state = hosted.producer_state
        future = FutureReplica.load(future_log, partition=state.partition, now_ms=now_ms,
                                    expiration_ms=state.producer_id_expiration_ms)
        original = self._logs.directory_id(hosted.log.directory.parent)
        target = self._logs.directory_id(future_log.directory.parent)
        assigns = (self._assign is not None and original is not None and target is not None
                   and self._replicas.image.metadata_version >= MV_3_7_IV2)
        self._moves[hosted.tp] = _Moving(LogDirMove(original, target, assigns), future,
                                         hosted.topic_id)
        log.info("%s-%d: copying from %s to %s", hosted.topic, hosted.index,
                 hosted.log.directory, future_log.directory)
        self._wake.set()

    def _cancel(self, tp: TopicPartition, now_ms: int) -> None:
        moving = self._moves.pop(tp, None)
        if moving is not None and (revert := moving.move.revert_to) is not None:
            assert self._assign is not None, "only a move that assigns has one to revert"
            self._assign(moving.topic_id, tp.partition, revert)
        self._logs.delete_future(tp, now_ms)

    # ------------------------------------------------------------------ the copy

    async def run(self) -> None:
        """Copy, a step at a time, until cancelled."""
        quota = self._replicas.throttles.alter_log_dirs
        while True:
            now_ms = self._clock_ms()
            if self._moves and quota.is_exceeded(now_ms):
                await asyncio.sleep(self._backoff_ms / 1000)  # Kafka's fetch backoff
            elif self.step(now_ms):
                await asyncio.sleep(0)  # the loop serves between steps
            else:
                self._wake.clear()
                await self._wake.wait()

    def step(self, now_ms: int) -> bool:
        """One copy step of the first move that has work; False when none has (each
        waits for the controller, or there is no move)."""
        for tp in sorted(self._moves):
            moving = self._moves[tp]
            hosted = self._replicas.partitions.get(tp)
            if hosted is None or self._logs.future(tp) is not moving.future.log:
                del self._moves[tp]  # deleted, or its directory failed
                continue
            try:
                if self._step(tp, hosted, moving, now_ms):
                    return True
            except (PyKraftError, OSError):
                log.exception("%s-%d: the move to %s failed", tp.topic, tp.partition,
                              moving.future.log.directory.parent)
                self._moves.pop(tp, None)
        return False

    def _step(self, tp: TopicPartition, hosted: HostedPartition, moving: _Moving,
              now_ms: int) -> bool:
        future = moving.future
        with self._replicas.on_disk(future.log, "copying to"):
            copied = copy_step(hosted, future, self._max_bytes, now_ms)
        self._replicas.throttles.alter_log_dirs.record(copied, now_ms)
        if future.log_end_offset != hosted.log_end_offset:
            return True
        step = moving.move.caught_up()
        if step is Step.ASSIGN:
            assert self._assign is not None and moving.move.target_dir is not None
            self._assign(moving.topic_id, tp.partition, moving.move.target_dir,
                         lambda: self._accepted(tp, moving))
        elif step is Step.SWAP:
            self._swap(hosted, moving, now_ms)
        return copied > 0 or step is not Step.WAIT

    def _accepted(self, tp: TopicPartition, moving: _Moving) -> None:
        if self._moves.get(tp) is moving:
            moving.move.accepted()
            self._wake.set()

    def _swap(self, hosted: HostedPartition, moving: _Moving, now_ms: int) -> None:
        """Kafka's ``maybeReplaceCurrentWithFutureReplica``, in one step of the loop."""
        future_log = moving.future.log
        source: Path = hosted.log.directory
        with self._replicas.on_disk(future_log, "replacing the current log with"):
            moved = self._logs.replace_current_with_future(
                hosted.tp, now_ms, hosted.settings.file_delete_delay_ms)
            carry_epochs(hosted.log, moved)  # after the reopen, which drops them
        del self._moves[hosted.tp]
        swap_in(hosted, moved)
        log.info("%s-%d: moved from %s to %s", hosted.topic, hosted.index, source.parent,
                 moved.directory.parent)
