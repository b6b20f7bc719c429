"""The transaction coordinator's runtime on a broker (Kafka's ``TransactionCoordinator`` and
``TransactionStateManager`` around the pure shards of :mod:`pykraft.txn.shard`).

Interface::

    service = TxnCoordinatorService(replicas, clock_ms, config, producer_ids=..., connect=...,
                                    request_timeout_ms=...)
    # it follows replicas.leadership: loads and unloads its shards
    reply = await service.handle(request)      # InitTxnProducer, AddPartitions, EndTxn, ...
    listed = await service.list(request)       # ListTransactions over every led partition
    await service.close()

One shard per ``__transaction_state`` partition this broker leads, in the partition's leader
epoch (the coordinator epoch its markers carry). A partition led here is loaded by replaying
its log (requests for its ids meanwhile: COORDINATOR_LOAD_IN_PROGRESS); once loaded, the
transactions it finds preparing get their markers again. Leadership moving away unloads it:
requests waiting for a write are answered NOT_COORDINATOR, and so is every later one.

A request goes to its id's shard, which answers at once or asks for a write. Each write is
one batch appended as the coordinator's (acks=all); its fate goes back to the shard once the
high watermark passes it, or with the append's error (``request.timeout.ms`` bounds the
wait, as Kafka's append), and the shard's new outcome is carried out in turn. Markers go to
the :class:`~pykraft.broker.txn_marker_sender.MarkerSender`; each one written goes back to
the shard, which completes the transaction after the last.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from pykraft.broker.acks_all import await_acks_all
from pykraft.broker.coordinator_log import append_error, replay_log
from pykraft.broker.coordinator_topics import TransactionTopic
from pykraft.broker.replica_manager import HostedPartition, ReplicaManager
from pykraft.broker.txn_marker_sender import Connector, MarkerSender
from pykraft.errors import PyKraftError
from pykraft.features import TRANSACTION_VERSION_FEATURE
from pykraft.ids import TRANSACTION_STATE_TOPIC_NAME, TopicPartition
from pykraft.protocol.errors import ErrorCode
from pykraft.records.batch import RecordBatch, encode_batch
from pykraft.runtime.metrics import WindowedStat
from pykraft.runtime.request_metrics import parked
from pykraft.txn.config import TxnConfig
from pykraft.txn.records import TxnRecord
from pykraft.txn.requests import (
    AddPartitions,
    DescribedTxn,
    DescribeTxn,
    EndTxn,
    ErrorReply,
    InitTxnProducer,
    ListedTxns,
    ListTxns,
    MarkerOrder,
    ProducerReply,
    ReplyToken,
    TxnContext,
    TxnOutcome,
    TxnReply,
    VerifyReply,
    Write,
)
from pykraft.txn.shard import TxnShard, write_error

log = logging.getLogger(__name__)

#: The requests one transactional id names.
IdRequest = InitTxnProducer | AddPartitions | EndTxn | DescribeTxn


@dataclass(slots=True)
class _WriteWait:
    """One write waiting for acks=all (see :mod:`pykraft.broker.acks_all`)."""

    waiting: tuple[HostedPartition, int] | None
    error: ErrorCode = ErrorCode.NONE
    leader: tuple[int, int] | None = None


@dataclass(slots=True)
class _Partition:
    """One led ``__transaction_state`` partition: its shard once loaded, its waiters."""

    hosted: HostedPartition
    epoch: int
    shard: TxnShard | None = None
    loading: asyncio.Task[None] | None = None
    tick_timer: asyncio.TimerHandle | None = None
    waiters: dict[ReplyToken, asyncio.Future[TxnReply]] = field(default_factory=dict)

    @property
    def index(self) -> int:
        return self.hosted.index

    def current(self) -> bool:
        """Still this broker's partition in the epoch it was loaded for."""
        hosted = self.hosted
        return hosted.is_leader and hosted.leader_epoch == self.epoch


class TxnCoordinatorService:
    """The transaction shards of the ``__transaction_state`` partitions this broker leads."""

    def __init__(self, replicas: ReplicaManager, clock_ms: Callable[[], int],
                 config: TxnConfig, *, producer_ids: Callable[[], int | None],
                 connect: Connector, request_timeout_ms: int) -> None:
        self._replicas = replicas
        self._clock_ms = clock_ms
        self.config = config
        self.topic = TransactionTopic(config)
        self._producer_ids = producer_ids
        self._request_timeout_ms = request_timeout_ms
        self._partitions: dict[int, _Partition] = {}
        self._tokens = itertools.count(1)
        self._commits: set[asyncio.Task[None]] = set()
        self._closed = False
        self.load_times_ms = WindowedStat()
        """How long each partition's load took (Kafka's partition-load-time-max/avg)."""
        replicas.leadership.append(self.leadership_changed)
        self.markers = MarkerSender(replicas.broker_id, replicas, connect,
                                    written=self._marker_written, current=self._current_order,
                                    clock_ms=clock_ms, timeout_ms=request_timeout_ms)

    # ------------------------------------------------------------------ leadership

    def partition_of(self, transactional_id: str) -> int:
        """The id's ``__transaction_state`` partition (Kafka's ``partitionFor``)."""
        return self.topic.partition_of(transactional_id, self._replicas.image)

    def leadership_changed(self, hosted: HostedPartition) -> None:
        """Load the shard of a partition led here in a new epoch; unload one no longer
        led in its epoch."""
        if hosted.topic != TRANSACTION_STATE_TOPIC_NAME or self._closed:
            return
        part = self._partitions.get(hosted.index)
        if part is not None and part.hosted is hosted and part.current():
            return
        if hosted.is_leader:
            if part is not None:
                self._unload(part)
            part = self._partitions[hosted.index] = _Partition(hosted, hosted.leader_epoch)
            part.loading = asyncio.get_running_loop().create_task(self._load(part))
            part.loading.add_done_callback(lambda task: self._load_done(part, task))
        elif part is not None and part.hosted is hosted:
            self._unload(part)

    async def _load(self, part: _Partition) -> None:
        shard = TxnShard(part.index, part.epoch, self.config)
        count = 0
        started = time.monotonic()

        def replay(batch: RecordBatch) -> None:
            nonlocal count
            if batch.is_control:  # no transaction writes this topic: nothing to end
                return
            for record in batch.records():
                if record.key is None:
                    continue
                try:
                    shard.replay(TxnRecord(record.key, record.value))
                except PyKraftError as exc:  # skipped, as Kafka's loader skips it
                    log.warning("%s-%d: skipping record at offset %d: %s",
                                TRANSACTION_STATE_TOPIC_NAME, part.index, record.offset, exc)
                    continue
                count += 1

        end = await replay_log(part.hosted, part.current, replay,
                               buffer_bytes=self.config.log_load_buffer_bytes)
        if not part.current() or self._partitions.get(part.index) is not part:
            return
        part.shard = shard
        part.loading = None
        self.load_times_ms.record((time.monotonic() - started) * 1000)
        log.info("%s-%d: loaded %d records up to offset %d in epoch %d",
                 TRANSACTION_STATE_TOPIC_NAME, part.index, count, end, part.epoch)
        self._apply(part, shard.loaded(self._context(part)))

    def _load_done(self, part: _Partition, task: asyncio.Task[None]) -> None:
        """A load that failed leaves the partition unloaded (NOT_COORDINATOR), logged."""
        if task.cancelled() or task.exception() is None:
            return
        log.error("%s-%d: load failed", TRANSACTION_STATE_TOPIC_NAME, part.index,
                  exc_info=task.exception())
        part.loading = None
        self._unload(part)

    def _unload(self, part: _Partition) -> None:
        if self._partitions.get(part.index) is part:
            del self._partitions[part.index]
        if part.tick_timer is not None:
            part.tick_timer.cancel()
        if part.loading is not None:
            part.loading.cancel()
        if part.shard is not None:
            part.shard.unload()
            part.shard = None
        for future in part.waiters.values():
            if not future.done():
                future.set_exception(_NotCoordinatorError())
        part.waiters.clear()
        log.info("%s-%d: unloaded (epoch %d)", TRANSACTION_STATE_TOPIC_NAME, part.index,
                 part.epoch)

    # ------------------------------------------------------------------ requests

    async def handle(self, request: IdRequest) -> TxnReply:
        """The shard's answer to a request naming one transactional id (an empty one is
        INVALID_REQUEST before any partition is looked for, as Kafka)."""
        if not request.transactional_id:
            return refused(request, ErrorCode.INVALID_REQUEST)
        part = self._partitions.get(self.partition_of(request.transactional_id))
        refusal = _refusal(part)
        if refusal is not None:
            return refused(request, refusal)
        assert part is not None and part.shard is not None
        token = next(self._tokens)
        future: asyncio.Future[TxnReply] = asyncio.get_running_loop().create_future()
        part.waiters[token] = future
        self._apply(part, part.shard.handle(token, request, self._context(part)))
        try:
            with parked():  # out of the request queue until the shard answers, as Kafka's
                return await future
        except _NotCoordinatorError:
            return refused(request, ErrorCode.NOT_COORDINATOR)
        finally:
            part.waiters.pop(token, None)

    async def list(self, request: ListTxns) -> tuple[ErrorCode, list[ListedTxns]]:
        """ListTransactions over every partition led here: COORDINATOR_LOAD_IN_PROGRESS
        while one is loading (Kafka's ``listTransactionStates``)."""
        parts = list(self._partitions.values())
        if any(p.shard is None for p in parts):
            return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, []
        listed = []
        for part in parts:
            assert part.shard is not None
            token = next(self._tokens)
            for _, reply in part.shard.handle(token, request, self._context(part)).replies:
                assert isinstance(reply, ListedTxns)
                listed.append(reply)
        return ErrorCode.NONE, listed

    def _context(self, part: _Partition) -> TxnContext:
        finalized = self._replicas.image.features.finalized
        return TxnContext(now_ms=self._clock_ms(),
                          transaction_version=finalized.get(TRANSACTION_VERSION_FEATURE, 0),
                          new_producer_id=self._producer_ids)

    # ------------------------------------------------------------------ outcomes

    def _apply(self, part: _Partition, outcome: TxnOutcome) -> None:
        """Answer the replies, append the writes, send the markers; then re-arm the
        shard's timer."""
        for token, reply in outcome.replies:
            future = part.waiters.pop(token, None)
            if future is not None and not future.done():
                future.set_result(reply)
        for write in outcome.writes:
            self._append(part, write)
        for order in outcome.markers:
            self.markers.send(order)
        self._schedule_tick(part)

    def _append(self, part: _Partition, write: Write) -> None:
        batch = encode_batch(0, [(r.key, r.value) for r in write.records],
                             partition_leader_epoch=part.epoch, timestamp=self._clock_ms())
        try:
            result = self._replicas.append_as_coordinator(part.hosted, batch,
                                                          now_ms=self._clock_ms())
        except PyKraftError as exc:
            log.error("%s-%d: writing %d records failed: %s", TRANSACTION_STATE_TOPIC_NAME,
                      part.index, len(write.records), exc)
            self._written(part, write.write_id, write_error(append_error(exc)))
            return
        wait = _WriteWait((part.hosted, result.last_offset + 1))
        task = asyncio.get_running_loop().create_task(self._commit(part, write, wait))
        self._commits.add(task)
        task.add_done_callback(self._commits.discard)

    async def _commit(self, part: _Partition, write: Write, wait: _WriteWait) -> None:
        await await_acks_all(self._replicas, [wait], self._request_timeout_ms)
        self._written(part, write.write_id,
                      None if wait.error == ErrorCode.NONE else write_error(wait.error))

    def _written(self, part: _Partition, write_id: int, error: ErrorCode | None) -> None:
        if part.shard is not None and self._partitions.get(part.index) is part:
            self._apply(part, part.shard.written(write_id, error, self._context(part)))

    def _marker_written(self, order: MarkerOrder, partition: TopicPartition) -> None:
        part = self._partitions.get(self.partition_of(order.transactional_id))
        if part is None or part.shard is None or part.epoch != order.coordinator_epoch:
            return
        self._apply(part, part.shard.marker_written(
            order.transactional_id, order.producer_id, order.producer_epoch, partition,
            self._context(part)))

    def _current_order(self, order: MarkerOrder) -> bool:
        """Whether the coordinator that ordered these markers still leads."""
        part = self._partitions.get(self.partition_of(order.transactional_id))
        return part is not None and part.current() and part.epoch == order.coordinator_epoch

    # ------------------------------------------------------------------ timers

    def _schedule_tick(self, part: _Partition) -> None:
        if part.tick_timer is not None:
            part.tick_timer.cancel()
            part.tick_timer = None
        deadline = None if part.shard is None else part.shard.next_deadline_ms()
        if deadline is None or self._closed:
            return
        delay = max(0, deadline - self._clock_ms()) / 1000
        part.tick_timer = asyncio.get_running_loop().call_later(delay, self._tick, part)

    def _tick(self, part: _Partition) -> None:
        part.tick_timer = None
        if part.shard is None or self._partitions.get(part.index) is not part:
            return
        self._apply(part, part.shard.tick(self._context(part)))

    # ------------------------------------------------------------------ stop

    async def close(self) -> None:
        """Unload every shard, stop the markers and the writes' waits."""
        self._closed = True
        loading = [p.loading for p in self._partitions.values() if p.loading is not None]
        for part in list(self._partitions.values()):
            self._unload(part)
        await self.markers.close()
        for task in list(self._commits):
            task.cancel()
        await asyncio.gather(*loading, *self._commits, return_exceptions=True)

    @property
    def partition_states(self) -> dict[int, str]:
        """Each led partition: "loading" or "loaded" (for tests and tools)."""
        return {i: "loading" if p.shard is None else "loaded"
                for i, p in sorted(self._partitions.items())}


class _NotCoordinatorError(Exception):
    """A waiting request's partition was unloaded."""


def _refusal(part: _Partition | None) -> ErrorCode | None:
    if part is None or not part.current():
        return ErrorCode.NOT_COORDINATOR
    if part.shard is None:
        return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
    return None


def refused(request: IdRequest, error: ErrorCode) -> TxnReply:
    """The shard-shaped answer refusing ``request`` with ``error``."""
    if isinstance(request, InitTxnProducer | EndTxn):
        return ProducerReply(error)
    if isinstance(request, AddPartitions):
        return (VerifyReply(dict.fromkeys(request.partitions, error)) if request.verify_only
                else ErrorReply(error))
    return DescribedTxn(request.transactional_id, error)
