"""The group coordinator's runtime on a broker: Kafka's GroupCoordinatorService and
CoordinatorRuntime around the pure group shards (:mod:`pykraft.group.shard`).

One shard per ``__consumer_offsets`` partition this broker leads. When the broker starts
leading a partition its shard is loaded by replaying the partition from the log start to the
log end (requests for its groups meanwhile: COORDINATOR_LOAD_IN_PROGRESS); when leadership
moves (or its leader epoch changes) the shard is unloaded: its parked requests, and those
waiting for a commit, are answered NOT_COORDINATOR, and so is every later request.

A request gets a token and goes to its shard, which changes its state at once and returns
records and replies (:class:`~pykraft.group.outcome.Outcome`). The records are appended as
one batch through the leader's coordinator append path (acks=all); the replies wait until
the high watermark passes that batch and every earlier one, so no client sees a state the
log might lose (replies of an outcome without records wait for the earlier batches too).
``offsets.commit.timeout.ms`` bounds that wait: past it the replies get
COORDINATOR_NOT_AVAILABLE and, as in Kafka, the state stays (the batch is in the log and a
reload would replay it anyway). The waiting replies are delayed operations of the broker's
group purgatory (:mod:`pykraft.broker.purgatory`), keyed by the partition and checked on
each of its changes after the produces and fetches. An append that fails (a record over the
partition's ``max.message.bytes``, too few in-sync replicas) answers the replies with
Kafka's error for it (``CoordinatorOperationExceptionHelper``: UNKNOWN_SERVER_ERROR for a
record too large, COORDINATOR_NOT_AVAILABLE for too few replicas, NOT_COORDINATOR when
leadership moved) and reverts that write alone, as Kafka's runtime reverts the failed batch:
each key it wrote goes back to its last record in the log (the runtime keeps every key's
last offset), and every other group of the partition goes on untouched. Before, the whole
shard was reloaded: every group hashed there saw NOT_COORDINATOR and a reload, and a client
retrying its oversized commit on COORDINATOR_NOT_AVAILABLE did so for ever. Each shard's
timers fire through one timer handle set to :meth:`next_deadline_ms`; the shard loads and
unloads on the replica manager's ``leadership`` news (Kafka's onElection / onResignation).
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from collections import Counter, deque
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from pykraft.broker.coordinator_log import append_error, replay_log, whole_batches
from pykraft.broker.coordinator_topics import OffsetsTopicConfig
from pykraft.broker.group_versions import distinct_filters, error_response, merge, pieces
from pykraft.broker.purgatory import DelayedOperation
from pykraft.broker.replica_manager import (
    AppendResult,
    HostedPartition,
    PartitionError,
    ReplicaManager,
)
from pykraft.broker.txn_verification import Operation, TxnVerifier
from pykraft.errors import OffsetOutOfRangeError, PyKraftError
from pykraft.group.messages import ShardRequest, ShardResponse
from pykraft.group.metrics import GroupCensus, GroupCounters
from pykraft.group.outcome import OffsetsRecord, Outcome, ReplyToken, RequestContext, TopicInfo
from pykraft.group.records import offset_commit_floor
from pykraft.ids import OFFSETS_TOPIC_NAME as OFFSETS_TOPIC
from pykraft.ids import TopicPartition
from pykraft.log.producer_state import Verified
from pykraft.log.transactions import Marker, read_marker
from pykraft.messages.kafka.list_groups_request import ListGroupsRequest
from pykraft.messages.kafka.offset_commit_request import OffsetCommitRequest
from pykraft.messages.kafka.txn_offset_commit_request import TxnOffsetCommitRequest
from pykraft.protocol.apis import ApiKey
from pykraft.protocol.errors import ErrorCode
from pykraft.records.batch import (
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    Record,
    RecordBatch,
    encode_batch,
)
from pykraft.runtime.codec_thread import off_loop_if_large
from pykraft.runtime.metrics import WindowedStat
from pykraft.runtime.request_metrics import parked

log = logging.getLogger(__name__)
#: How many groups of a batched request a shard handles in one loop turn.
GROUPS_PER_TURN = 500
#: How much of the log one load step reads (Kafka's offsets.load.buffer.size).
LOAD_BUFFER_BYTES = 5 * 1024 * 1024
#: A failed write's error as the operation answers it (Kafka's coordinator runtime).
_OPERATION_ERRORS = {
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_ENOUGH_REPLICAS: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.REQUEST_TIMED_OUT: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_LEADER_OR_FOLLOWER: ErrorCode.NOT_COORDINATOR,
    ErrorCode.KAFKA_STORAGE_ERROR: ErrorCode.NOT_COORDINATOR,
    ErrorCode.MESSAGE_TOO_LARGE: ErrorCode.UNKNOWN_SERVER_ERROR,
    ErrorCode.RECORD_LIST_TOO_LARGE: ErrorCode.UNKNOWN_SERVER_ERROR,
    ErrorCode.INVALID_FETCH_SIZE: ErrorCode.UNKNOWN_SERVER_ERROR,
}


class Shard(Protocol):
    """What the runtime needs of a group shard (:class:`pykraft.group.shard.GroupShard`)."""

    def replay(self, offset: int, record: OffsetsRecord, producer_id: int = -1) -> None: ...

    def end_transaction(self, producer_id: int, committed: bool) -> None: ...

    def has_open_transactions(self) -> bool: ...

    def handle(self, token: ReplyToken, api_key: int, api_version: int,
               request: ShardRequest, context: RequestContext) -> Outcome: ...

    def tick(self, now_ms: int) -> Outcome: ...

    def census(self) -> GroupCensus: ...

    def next_deadline_ms(self) -> int | None: ...

    def unload(self) -> Outcome: ...

    def revert(self, records: list[tuple[int, OffsetsRecord]], error: int) -> Outcome: ...


ShardFactory = Callable[[int], Shard]


class _DelayedReplies(DelayedOperation):
    """Replies waiting for the high watermark to reach ``required`` (their batch and every
    earlier one), COORDINATOR_NOT_AVAILABLE past ``offsets.commit.timeout.ms``."""

    def __init__(self, service: GroupCoordinatorService, coordinator: _Coordinator,
                 required: int, replies: list[tuple[ReplyToken, ShardResponse]],
                 deadline_ms: int
                 ) -> None:
        super().__init__(deadline_ms)
        self._service = service
        self._coordinator = coordinator
        self.required = required
        self.replies = replies

    def try_complete(self) -> bool:
        coordinator = self._coordinator  # a lost partition's replies: its unload answers
        if coordinator.current() and self.required <= coordinator.hosted.high_watermark:
            return self.force_complete()
        return False

    def on_complete(self, expired: bool) -> None:
        if expired:
            self._service.fail(self.replies, ErrorCode.COORDINATOR_NOT_AVAILABLE)
        else:
            self._service.deliver(self.replies)


@dataclass(slots=True)
class KeyIndex:
    """Each live key's last committed record in the log: what a failed write's keys go
    back to. A transaction's records count once its COMMIT marker is written (a later
    record of the key keeps its place), and not at all once aborted; a tombstone drops the
    key, from the transactions' records too."""

    last: dict[bytes, int] = field(default_factory=dict)
    pending: dict[int, dict[bytes, int]] = field(default_factory=dict)

    def written(self, records: Iterable[tuple[int, bytes | None, bytes | None]],
                producer_id: int = NO_PRODUCER_ID) -> None:
        """Records (offset, key, value) appended, by ``producer_id``'s transaction when
        it is one."""
        for offset, key, value in records:
            if key is None:
                continue
            if value is None:
                self.last.pop(key, None)
                for keys in self.pending.values():
                    keys.pop(key, None)
            elif producer_id == NO_PRODUCER_ID:
                self.last[key] = offset
            else:
                self.pending.setdefault(producer_id, {})[key] = offset

    def ended(self, producer_id: int, committed: bool) -> None:
        """The producer's transaction marker."""
        keys = self.pending.pop(producer_id, {})
        if committed:
            for key, offset in keys.items():
                if offset > self.last.get(key, -1):
                    self.last[key] = offset


@dataclass(slots=True)
class _Coordinator:
    """One led partition: its shard once loaded, its uncommitted replies, its timers."""

    hosted: HostedPartition
    epoch: int
    shard: Shard | None = None
    keys: KeyIndex = field(default_factory=KeyIndex)
    pending: deque[_DelayedReplies] = field(default_factory=deque)
    """The replies in the group purgatory, oldest first (ended ones until pruned)."""
    loading: asyncio.Task[None] | None = None
    tick_timer: asyncio.TimerHandle | None = None

    @property
    def partition(self) -> int:
        return self.hosted.index

    def current(self) -> bool:
        """Still this broker's partition in the epoch it was loaded for."""
        hosted = self.hosted
        return hosted.is_leader and hosted.leader_epoch == self.epoch


@dataclass(slots=True)
class _Waiter:
    future: asyncio.Future[ShardResponse]
    api_key: int
    request: ShardRequest


class GroupCoordinatorService:
    """The group shards of the ``__consumer_offsets`` partitions this broker leads."""

    def __init__(self, replicas: ReplicaManager, clock_ms: Callable[[], int],
                 new_shard: ShardFactory, config: OffsetsTopicConfig,
                 counters: GroupCounters | None = None) -> None:
        self.counters = GroupCounters() if counters is None else counters
        """The sensors the shards ``new_shard`` makes count into (Kafka's
        GroupCoordinatorMetrics: one a broker)."""
        self.load_times_ms = WindowedStat()
        """How long each partition's load took (Kafka's partition-load-time-max/avg)."""
        self._replicas = replicas
        self._clock_ms = clock_ms
        self._new_shard = new_shard
        self.config = config
        self._coordinators: dict[int, _Coordinator] = {}
        self._waiters: dict[ReplyToken, _Waiter] = {}
        self._tokens = itertools.count(1)
        self._closed = False
        self._topic_infos: tuple[object, Mapping[str, TopicInfo]] = (None, {})
        replicas.leadership.append(self.leadership_changed)
        replicas.marker_writers[OFFSETS_TOPIC] = self.write_marker
        self.verifier: TxnVerifier | None = None
        """Asks transactions' coordinators before TxnOffsetCommit holds offsets (set once
        the broker's transaction coordinator runs)."""

    # ------------------------------------------------------------------ leadership

    def leadership_changed(self, hosted: HostedPartition) -> None:
        """The replica manager's news of a hosted partition: load the shard of an offsets
        partition led here in a new epoch, unload the one no longer led in its epoch."""
        if hosted.topic != OFFSETS_TOPIC or self._closed:
            return
        coordinator = self._coordinators.get(hosted.index)
        if coordinator is not None and coordinator.hosted is hosted and coordinator.current():
            return
        if hosted.is_leader:
            self._start(hosted)
        elif coordinator is not None and coordinator.hosted is hosted:
            self._unload(coordinator)

    def _start(self, hosted: HostedPartition) -> None:
        """Load the partition's shard (any previous one unloaded)."""
        previous = self._coordinators.get(hosted.index)
        if previous is not None:
            self._unload(previous)
        coordinator = _Coordinator(hosted, hosted.leader_epoch)
        self._coordinators[hosted.index] = coordinator
        self._load(coordinator)

    def _load(self, coordinator: _Coordinator) -> None:
        coordinator.loading = asyncio.get_running_loop().create_task(self._replay(coordinator))
        coordinator.loading.add_done_callback(lambda task: self._load_done(coordinator, task))

    def _load_done(self, coordinator: _Coordinator, task: asyncio.Task[None]) -> None:
        """A load that failed leaves the partition unloaded (NOT_COORDINATOR), logged,
        rather than loading forever."""
        if task.cancelled() or task.exception() is None:
            return
        log.error("%s-%d: load failed", OFFSETS_TOPIC, coordinator.partition,
                  exc_info=task.exception())
        coordinator.loading = None
        self._unload(coordinator)

    async def _replay(self, coordinator: _Coordinator) -> None:
        """Replay the log from its start to its end as of now, yielding between reads."""
        shard = self._new_shard(coordinator.partition)
        keys = KeyIndex()
        count = 0
        started = time.monotonic()

        def replay(batch: RecordBatch) -> None:
            nonlocal count
            header = batch.header
            if header.is_control:
                marker = _marker(batch)
                if marker is not None:
                    shard.end_transaction(header.producer_id, not marker.aborted)
                    keys.ended(header.producer_id, not marker.aborted)
                return
            producer_id = header.producer_id if header.is_transactional else NO_PRODUCER_ID
            records = batch.records()
            count += _replay_batch(shard, records, producer_id)
            keys.written(((r.offset, r.key, r.value) for r in records), producer_id)

        end = await replay_log(coordinator.hosted, coordinator.current, replay,
                               buffer_bytes=LOAD_BUFFER_BYTES)
        if not coordinator.current() or self._coordinators.get(coordinator.partition) is not \
                coordinator:
            return
        coordinator.shard = shard
        coordinator.keys = keys
        coordinator.loading = None
        self.load_times_ms.record((time.monotonic() - started) * 1000)
        log.info("%s-%d: loaded %d records up to offset %d in epoch %d", OFFSETS_TOPIC,
                 coordinator.partition, count, end, coordinator.epoch)
        self._schedule_tick(coordinator)

    def _unload(self, coordinator: _Coordinator) -> None:
        """Answer everything the shard owes NOT_COORDINATOR and forget it."""
        if self._coordinators.get(coordinator.partition) is coordinator:
            del self._coordinators[coordinator.partition]
        if coordinator.tick_timer is not None:
            coordinator.tick_timer.cancel()
        if coordinator.loading is not None:
            coordinator.loading.cancel()
        self._fail_pending(coordinator, ErrorCode.NOT_COORDINATOR)
        if coordinator.shard is not None:
            self.deliver(coordinator.shard.unload().replies)
            coordinator.shard = None
        log.info("%s-%d: unloaded (epoch %d)", OFFSETS_TOPIC, coordinator.partition,
                 coordinator.epoch)

    # ------------------------------------------------------------------ requests

    async def handle(self, api_key: int, api_version: int, request: ShardRequest, *,
                     client_id: str, client_host: str) -> ShardResponse:
        """The latest-version answer to a latest-version request of a shard API. A batched
        request's groups go to their shards :data:`GROUPS_PER_TURN` at a time, the loop
        running between (a million group ids held it for seconds); its split and merge,
        pure, run off the loop when it is large."""
        parts: list[tuple[int, ShardRequest]]
        if isinstance(request, ListGroupsRequest):
            listed = await off_loop_if_large(lambda: distinct_filters(request))
            parts = [(p, listed) for p in sorted(self._coordinators)]
        else:
            image = self._replicas.image
            parts = await off_loop_if_large(lambda: pieces(
                api_key, request, lambda group: self.config.partition_of(group, image),
                GROUPS_PER_TURN))
        verified: Verified | None = None
        if isinstance(request, TxnOffsetCommitRequest):
            ((partition, _),) = parts
            outcome = await self._verify(partition, api_version, request)
            if isinstance(outcome, ErrorCode):
                return error_response(api_key, request, outcome)
            verified = outcome
        context = RequestContext(now_ms=self._clock_ms(), client_id=client_id,
                                 client_host=client_host, topics=self._topics())
        answers: list[Awaitable[ShardResponse]] = []
        for index, (partition, part) in enumerate(parts):
            if index:
                await asyncio.sleep(0)
            answers.append(self._submit(partition, api_key, api_version, part, context,
                                        verified))
        with parked():  # out of the request queue, as Kafka's coordinator runtime answers
            answered = dict(enumerate(await asyncio.gather(*answers)))
        return await off_loop_if_large(lambda: merge(api_key, request, answered))

    def _topics(self) -> Mapping[str, TopicInfo]:
        """The image's topics for the shards, built once per image (every heartbeat
        carries them)."""
        topics = self._replicas.image.topics
        if self._topic_infos[0] is not topics:
            self._topic_infos = (topics, {
                name: TopicInfo(topic.topic_id, len(topic.partitions))
                for name, topic in topics.by_name.items()})
        return self._topic_infos[1]

    async def _verify(self, partition: int, version: int,
                      request: TxnOffsetCommitRequest) -> Verified | ErrorCode:
        """Before a transaction's offsets are held: the partition's checks, then its
        coordinator asked whether this ``__consumer_offsets`` partition is in the
        transaction (KIP-890; v5+: added to it), unless the producer has a transaction
        ongoing here already. Kafka's ``scheduleTransactionalWriteOperation``: a refusal is
        the write's error as the operation answers it."""
        coordinator = self._coordinators.get(partition)
        refusal = self._refusal(coordinator, ApiKey.TXN_OFFSET_COMMIT, request)
        if refusal is not None:
            return refusal
        assert coordinator is not None
        operation = Operation.of_txn_offset_commit(version)
        verifier = self.verifier
        if verifier is None or not verifier.applies(operation):
            return Verified(None, checked=False)
        state = coordinator.hosted.producer_state
        producer_id, epoch = request.producer_id, request.producer_epoch
        guard = state.start_verification(producer_id, epoch)
        if guard is not None:
            errors = await verifier.verify(
                request.transactional_id, producer_id, epoch,
                [TopicPartition(OFFSETS_TOPIC, partition)], operation)
            if errors:
                state.end_verification(guard)
                code = next(iter(errors.values()))
                return _OPERATION_ERRORS.get(code, code)
        return Verified(guard, checked=True)

    def _submit(self, partition: int, api_key: int, api_version: int, request: ShardRequest,
                context: RequestContext, verified: Verified | None = None,
                ) -> Awaitable[ShardResponse]:
        """Hand ``request`` to its partition's shard now; its answer once the shard's
        records are committed (a refusal's, pure, built off the loop when large)."""
        coordinator = self._coordinators.get(partition)
        refusal = self._refusal(coordinator, api_key, request, verified)
        if refusal is not None:
            return off_loop_if_large(lambda: error_response(api_key, request, refusal))
        assert coordinator is not None and coordinator.shard is not None
        future: asyncio.Future[ShardResponse] = asyncio.get_running_loop().create_future()
        token = next(self._tokens)
        self._waiters[token] = _Waiter(future, api_key, request)
        try:
            outcome = coordinator.shard.handle(token, api_key, api_version, request, context)
        except BaseException:
            del self._waiters[token]
            raise
        future.add_done_callback(lambda _: self._waiters.pop(token, None))
        self._apply(coordinator, outcome)
        return future

    def _refusal(self, coordinator: _Coordinator | None, api_key: int,
                 request: ShardRequest, verified: Verified | None = None) -> ErrorCode | None:
        """Why the partition's shard cannot take ``request`` now (None: it can)."""
        if isinstance(request, TxnOffsetCommitRequest) and not request.group_id:
            return ErrorCode.INVALID_GROUP_ID  # Kafka's service, before any shard
        if coordinator is None or not coordinator.current():
            return ErrorCode.NOT_COORDINATOR
        if coordinator.shard is None:
            return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        if isinstance(request, OffsetCommitRequest | TxnOffsetCommitRequest) and (
                self._oversized_commit(coordinator, request)):
            return ErrorCode.UNKNOWN_SERVER_ERROR
        if isinstance(request, TxnOffsetCommitRequest):
            return self._unwritable_transaction(coordinator, request, verified)
        return None

    @staticmethod
    def _unwritable_transaction(coordinator: _Coordinator, request: TxnOffsetCommitRequest,
                                verified: Verified | None) -> ErrorCode | None:
        """Why the partition would refuse this producer's transactional batch, checked
        before the shard holds its offsets as pending (undoing them costs a reload): a
        producer epoch older than the partition's producer state has (a fenced producer:
        INVALID_PRODUCER_EPOCH, Kafka's append error), too few in-sync replicas
        (COORDINATOR_NOT_AVAILABLE, Kafka's answer to NOT_ENOUGH_REPLICAS), or a
        transaction a marker ended since its coordinator confirmed it (INVALID_TXN_STATE,
        the append's refusal of a write missing its verification)."""
        hosted = coordinator.hosted
        state = hosted.producer_state
        entry = state.last_entry(request.producer_id)
        if entry is not None and request.producer_epoch < entry.producer_epoch:
            return ErrorCode.INVALID_PRODUCER_EPOCH
        if len(hosted.isr) < hosted.min_isr:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        if verified is not None and not verified.holds(state, request.producer_id,
                                                       request.producer_epoch):
            return ErrorCode.INVALID_TXN_STATE
        return None

    @staticmethod
    def _oversized_commit(coordinator: _Coordinator,
                          request: OffsetCommitRequest | TxnOffsetCommitRequest) -> bool:
        """Whether the records of this OffsetCommit cannot fit one batch of the partition
        (``max.message.bytes``), logged as Kafka's RecordTooLargeException; its coordinator
        answers UNKNOWN_SERVER_ERROR without building them (100,000 partitions held the
        broker's loop for seconds, then failed the append)."""
        limit = coordinator.hosted.settings.append.max_message_bytes
        floor = offset_commit_floor(str(request.group_id), (
            (str(topic.name), len(topic.partitions)) for topic in request.topics))
        if floor <= limit:
            return False
        log.warning("%s-%d: Message batch size is at least %d bytes in append to partition "
                    "%s-%d which exceeds the maximum configured size of %d.", OFFSETS_TOPIC,
                    coordinator.partition, floor, OFFSETS_TOPIC, coordinator.partition, limit)
        return True

    def _apply(self, coordinator: _Coordinator, outcome: Outcome) -> None:
        """Append the outcome's records, then queue its replies behind that batch."""
        hosted = coordinator.hosted
        pending = coordinator.pending
        while pending and pending[0].completed:
            pending.popleft()
        required = pending[-1].required if pending else 0
        transactional = outcome.transactional
        writes = [(outcome.records, NO_PRODUCER_ID, NO_PRODUCER_EPOCH)]
        if transactional is not None:
            writes.append((transactional.records, transactional.producer_id,
                           transactional.producer_epoch))
        for records, producer_id, producer_epoch in writes:
            if not records:
                continue
            batch = encode_batch(0, [(r.key, r.value) for r in records],
                                 partition_leader_epoch=coordinator.epoch,
                                 timestamp=self._clock_ms(), base_sequence=0,
                                 producer_id=producer_id, producer_epoch=producer_epoch,
                                 transactional=producer_id != NO_PRODUCER_ID)
            try:
                result = self._replicas.append_as_coordinator(hosted, batch,
                                                              now_ms=self._clock_ms())
            except PyKraftError as exc:
                self._append_failed(coordinator, outcome, exc)
                return
            coordinator.keys.written((
                (result.base_offset + i, r.key, r.value) for i, r in enumerate(records)),
                producer_id)
            required = result.last_offset + 1
        self._wait_commit(coordinator, required, outcome.replies)
        self._schedule_tick(coordinator)

    def _wait_commit(self, coordinator: _Coordinator, required: int,
                     replies: list[tuple[ReplyToken, ShardResponse]]) -> None:
        """Send ``replies`` once the high watermark reaches ``required``; later replies
        wait for it too."""
        delayed = self._replicas.delayed
        waiting = _DelayedReplies(self, coordinator, required, replies,
                                  delayed.deadline_ms(self.config.commit_timeout_ms))
        if not delayed.watch(delayed.purgatories.group, waiting, (coordinator.hosted.tp,)):
            coordinator.pending.append(waiting)

    def _append_failed(self, coordinator: _Coordinator, outcome: Outcome,
                       exc: Exception) -> None:
        """Kafka's answer to a failed write, and the write reverted alone: its keys go
        back to their last records in the log (a reload if one cannot be read, or when a
        transaction's offsets are pending: a revert restores committed offsets only)."""
        code = _operation_error(exc) if coordinator.current() else ErrorCode.NOT_COORDINATOR
        log.error("%s-%d: writing %d records failed (%s): %s", OFFSETS_TOPIC,
                  coordinator.partition, len(outcome.records), code.name, exc)
        self.fail(outcome.replies, code)
        shard = coordinator.shard
        if coordinator.current() and shard is not None and not shard.has_open_transactions():
            try:
                reverted = shard.revert([
                    self._last_record(coordinator, key)
                    for key in dict.fromkeys(r.key for r in outcome.records)], code)
            except PyKraftError as unreadable:
                log.error("%s-%d: cannot revert the failed write, reloading: %s",
                          OFFSETS_TOPIC, coordinator.partition, unreadable)
            else:
                self.deliver(reverted.replies)
                self._schedule_tick(coordinator)
                return
        hosted = coordinator.hosted
        self._unload(coordinator)
        if hosted.is_leader and not self._closed:
            self._start(hosted)

    def _last_record(self, coordinator: _Coordinator, key: bytes) -> tuple[int, OffsetsRecord]:
        """``key``'s last record in the log, or (-1, a tombstone) when it has none."""
        offset = coordinator.keys.last.get(key)
        if offset is None:
            return -1, OffsetsRecord(key, None)
        data = coordinator.hosted.log.read(offset, 0)  # the batch holding it, whole
        for batch in whole_batches(data):
            for record in batch.records():
                if record.offset == offset and record.key == key:
                    return offset, OffsetsRecord(key, record.value)
        raise OffsetOutOfRangeError(f"{OFFSETS_TOPIC}-{coordinator.partition}: no record of "
                                    f"the key at offset {offset}")

    def write_marker(self, partition: int, *, producer_id: int, producer_epoch: int,
                     committed: bool, coordinator_epoch: int, transaction_version: int,
                     now_ms: int) -> AppendResult:
        """A transaction marker for a partition of ``__consumer_offsets`` (WriteTxnMarkers):
        written through its loaded shard, which commits or drops the producer's pending
        offsets at once, in log order with its own writes (Kafka 4's
        ``completeTransaction``); the replies of later requests wait for the marker to
        be committed. A partition not led, or not loaded yet, is refused
        NOT_LEADER_OR_FOLLOWER, which the transaction coordinator retries (Kafka's
        translation of NOT_COORDINATOR and COORDINATOR_LOAD_IN_PROGRESS); the producer
        state's refusals are :meth:`ReplicaManager.append_marker`'s."""
        coordinator = self._coordinators.get(partition)
        if coordinator is None or not coordinator.current() or coordinator.shard is None:
            raise PartitionError(ErrorCode.NOT_LEADER_OR_FOLLOWER,
                                 f"The coordinator of {OFFSETS_TOPIC}-{partition} is not "
                                 f"loaded here")
        result = self._replicas.append_marker(
            coordinator.hosted, producer_id=producer_id, producer_epoch=producer_epoch,
            aborted=not committed, coordinator_epoch=coordinator_epoch,
            transaction_version=transaction_version, now_ms=now_ms)
        coordinator.shard.end_transaction(producer_id, committed)
        coordinator.keys.ended(producer_id, committed)
        self._wait_commit(coordinator, result.last_offset + 1, [])
        return result

    def _fail_pending(self, coordinator: _Coordinator, code: ErrorCode) -> None:
        """Answer the replies still in the purgatory ``code`` (taken out of it)."""
        while coordinator.pending:
            replies = coordinator.pending.popleft()
            if replies.cancel():
                self.fail(replies.replies, code)

    def deliver(self, replies: Iterable[tuple[ReplyToken, ShardResponse]]) -> None:
        """Answer the requests waiting for ``replies``."""
        for token, response in replies:
            waiter = self._waiters.pop(token, None)
            if waiter is not None and not waiter.future.done():
                waiter.future.set_result(response)

    def fail(self, replies: Iterable[tuple[ReplyToken, ShardResponse]],
             code: ErrorCode) -> None:
        """Answer the requests waiting for ``replies`` with the error ``code``."""
        for token, _ in replies:
            waiter = self._waiters.get(token)
            if waiter is not None:
                self.deliver([(token, error_response(waiter.api_key, waiter.request, code))])

    # ------------------------------------------------------------------ timers

    def _schedule_tick(self, coordinator: _Coordinator) -> None:
        if coordinator.tick_timer is not None:
            coordinator.tick_timer.cancel()
            coordinator.tick_timer = None
        shard = coordinator.shard
        deadline = None if shard is None else shard.next_deadline_ms()
        if deadline is None:
            return
        delay = max(0, deadline - self._clock_ms()) / 1000
        coordinator.tick_timer = asyncio.get_running_loop().call_later(
            delay, self._tick, coordinator)

    def _tick(self, coordinator: _Coordinator) -> None:
        coordinator.tick_timer = None
        if coordinator.shard is None or self._coordinators.get(coordinator.partition) is not \
                coordinator:
            return
        try:
            outcome = coordinator.shard.tick(self._clock_ms())
        except Exception:
            log.exception("%s-%d: timer failed", OFFSETS_TOPIC, coordinator.partition)
            return
        self._apply(coordinator, outcome)

    # ------------------------------------------------------------------ stop

    async def close(self) -> None:
        """Unload every shard (their waiting requests answered NOT_COORDINATOR)."""
        self._closed = True
        loading = [c.loading for c in self._coordinators.values() if c.loading is not None]
        for coordinator in list(self._coordinators.values()):
            self._unload(coordinator)
        await asyncio.gather(*loading, return_exceptions=True)

    def census(self) -> GroupCensus:
        """The groups and committed offsets of every loaded shard (Kafka's gauges sum its
        shards')."""
        groups: Counter[tuple[str, str]] = Counter()
        offsets = 0
        for coordinator in self._coordinators.values():
            if coordinator.shard is not None:
                census = coordinator.shard.census()
                groups.update(census.groups)
                offsets += census.offsets
        return GroupCensus(groups, offsets)

    @property
    def partition_states(self) -> dict[int, str]:
        """Each led partition: "loading" or "loaded" (for tests and tools)."""
        return {p: "loading" if c.shard is None else "loaded"
                for p, c in sorted(self._coordinators.items())}


def _operation_error(exc: Exception) -> ErrorCode:
    """Kafka's error for an operation whose write failed with ``exc``
    (``CoordinatorOperationExceptionHelper.handleOperationException``)."""
    code = append_error(exc)
    return _OPERATION_ERRORS.get(code, code)


def _marker(batch: RecordBatch) -> Marker | None:
    """The transaction marker of a control batch (None: another control record, or one
    that does not decode, logged and skipped as Kafka's loader skips it)."""
    try:
        return read_marker(batch.header, batch.data)
    except PyKraftError as exc:
        log.warning("%s: skipping control batch at offset %d: %s", OFFSETS_TOPIC,
                    batch.base_offset, exc)
        return None


def _replay_batch(shard: Shard, records: Iterable[Record], producer_id: int) -> int:
    """Replay a batch's keyed records (``producer_id``: a transaction's batch); a record
    the shard cannot read is logged and skipped, as Kafka's loader skips what it cannot
    deserialize."""
    count = 0
    for record in records:
        if record.key is None:
            continue
        try:
            shard.replay(record.offset, OffsetsRecord(record.key, record.value), producer_id)
        except PyKraftError as exc:
            log.warning("%s: skipping record at offset %d: %s", OFFSETS_TOPIC, record.offset,
                        exc)
            continue
        count += 1
    return count
