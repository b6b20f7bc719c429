"""One ``__transaction_state`` partition's transaction coordinator (Kafka's
``TransactionCoordinator`` over its ``TransactionStateManager`` shard), sans-I/O.

The runtime loads a shard by :meth:`TxnShard.replay` of every record, then calls
:meth:`TxnShard.loaded` (transactions left preparing get their markers again), hands it
requests (:meth:`handle`), ticks (:meth:`tick` at :meth:`next_deadline_ms`), the fate of its
writes (:meth:`written`) and each marker written (:meth:`marker_written`). Every input
returns a :class:`~pykraft.txn.requests.TxnOutcome`: records to append as one batch each
(a write's transition applies only once the runtime reports it committed, as Kafka completes
a transition after the append), replies to send, markers to write.

What it decides, as Kafka 4.x does: InitProducerId for a transactional id (a new producer
id, an epoch bump, KIP-360's recovery with the producer's own id and epoch, an open
transaction fenced and aborted first with CONCURRENT_TRANSACTIONS answered), adding
partitions (and their verification, KIP-890), EndTxn at transaction versions 0 to 2 (version
2 bumps the epoch at each end and answers the new one), timed-out transactions aborted,
idle ids expired with a tombstone, DescribeTransactions and ListTransactions.
"""

from __future__ import annotations

import itertools
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass

from pykraft.ids import TopicPartition
from pykraft.protocol.errors import ErrorCode
from pykraft.txn.config import TxnConfig
from pykraft.txn.metadata import (
    MAX_EPOCH,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    TV_2,
    IllegalTransitionError,
    TxnMetadata,
    TxnRefusedError,
    TxnTransit,
    epoch_exhausted,
)
from pykraft.txn.records import TxnRecord, read_txn_record, txn_record
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
    TxnRequest,
    VerifyReply,
    Write,
)
from pykraft.txn.state import TxnState

log = logging.getLogger(__name__)

#: A write's fate: None once committed, else the error (see :func:`write_error`).
Written = Callable[[ErrorCode | None, TxnContext], TxnOutcome]

_RETRY_COMPLETION = ErrorCode.COORDINATOR_NOT_AVAILABLE


def write_error(append_error: ErrorCode) -> ErrorCode:
    """Kafka's answer for a ``__transaction_state`` append that failed
    (``TransactionStateManager.appendTransactionToLog``)."""
    if append_error in (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.NOT_ENOUGH_REPLICAS,
                        ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
                        ErrorCode.REQUEST_TIMED_OUT):
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
    if append_error in (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.KAFKA_STORAGE_ERROR):
        return ErrorCode.NOT_COORDINATOR
    if append_error in (ErrorCode.MESSAGE_TOO_LARGE, ErrorCode.RECORD_LIST_TOO_LARGE):
        return ErrorCode.UNKNOWN_SERVER_ERROR
    return append_error


@dataclass(slots=True)
class _Pending:
    """A write in flight: who waits for it and what its fate does."""

    token: ReplyToken | None
    on_done: Written


class TxnShard:
    """The coordinator of the transactional ids of one ``__transaction_state`` partition,
    led in ``coordinator_epoch``."""

    def __init__(self, partition: int, coordinator_epoch: int, config: TxnConfig) -> None:
        self.partition = partition
        self.coordinator_epoch = coordinator_epoch
        self.config = config
        self.transactions: dict[str, TxnMetadata] = {}
        self._writes: dict[int, _Pending] = {}
        self._write_ids = itertools.count(1)
        self._completing: dict[str, TxnTransit] = {}
        """Transactions whose markers are being written: the Complete transition prepared
        for when the last one is."""
        self._next_abort_check: int | None = None
        self._next_expiry: int | None = None

    # -- loading --------------------------------------------------------------------------

    def replay(self, record: TxnRecord) -> None:
        """Apply one record of the partition's log while loading."""
        read = read_txn_record(record)
        if read is None:
            return
        transactional_id, metadata = read
        if metadata is None:
            self.transactions.pop(transactional_id, None)
        else:
            self.transactions[transactional_id] = metadata

    def loaded(self, ctx: TxnContext) -> TxnOutcome:
        """The load is complete: resend the markers of every transaction still preparing
        (Kafka's ``loadTransactionsForTxnTopicPartition``) and start the timers."""
        self._next_abort_check = ctx.now_ms + self.config.abort_timed_out_interval_ms
        self._next_expiry = ctx.now_ms + self.config.remove_expired_interval_ms
        out = TxnOutcome()
        for metadata in self.transactions.values():
            if metadata.state.is_prepare and metadata.pending is None:
                out.extend(self._send_markers(metadata, ctx))
        return out

    def unload(self) -> list[ReplyToken]:
        """Leadership lost: the requests still waiting for a write, to be answered
        NOT_COORDINATOR by the runtime; nothing more happens here."""
        waiting = [p.token for p in self._writes.values() if p.token is not None]
        self._writes.clear()
        self._completing.clear()
        return waiting

    # -- inputs ---------------------------------------------------------------------------

    def handle(self, token: ReplyToken, request: TxnRequest, ctx: TxnContext) -> TxnOutcome:
        if isinstance(request, InitTxnProducer):
            return self._init(token, request, ctx)
        if isinstance(request, AddPartitions):
            if request.verify_only:
                return _reply(token, self._verify(request))
            return self._add(token, request, ctx)
        if isinstance(request, EndTxn):
            return self._end(token, request.transactional_id, request.producer_id,
                             request.producer_epoch, request.commit, True,
                             request.client_version, ctx, self._client_end_reply)
        if isinstance(request, DescribeTxn):
            return _reply(token, self._describe(request.transactional_id))
        return _reply(token, self._list(request, ctx.now_ms))

    def written(self, write_id: int, error: ErrorCode | None, ctx: TxnContext) -> TxnOutcome:
        """A write's fate: None once committed, else the append's error (the runtime
        maps it with :func:`write_error`)."""
        pending = self._writes.pop(write_id, None)
        if pending is None:
            return TxnOutcome()
        return pending.on_done(error, ctx)

    def marker_written(self, transactional_id: str, producer_id: int, producer_epoch: int,
                       partition: TopicPartition, ctx: TxnContext) -> TxnOutcome:
        """A partition has its marker (or no longer exists); after the last one the
        transaction completes (Kafka's ``TransactionMarkerRequestCompletionHandler``)."""
        metadata = self.transactions.get(transactional_id)
        transit = self._completing.get(transactional_id)
        if (metadata is None or transit is None or not metadata.state.is_prepare
                or metadata.producer_id != producer_id
                or metadata.producer_epoch != producer_epoch):
            return TxnOutcome()
        metadata.marker_written(partition)
        if metadata.partitions:
            return TxnOutcome()
        return self._write_completion(metadata, transit, ctx)

    def tick(self, ctx: TxnContext) -> TxnOutcome:
        """Abort timed-out transactions and expire idle ids, each at its interval."""
        out = TxnOutcome()
        now = ctx.now_ms
        if self._next_abort_check is not None and now >= self._next_abort_check:
            self._next_abort_check = now + self.config.abort_timed_out_interval_ms
            out.extend(self._abort_timed_out(ctx))
        if self._next_expiry is not None and now >= self._next_expiry:
            self._next_expiry = now + self.config.remove_expired_interval_ms
            out.extend(self._expire(ctx))
        return out

    def next_deadline_ms(self) -> int | None:
        deadlines = [d for d in (self._next_abort_check, self._next_expiry) if d is not None]
        return min(deadlines, default=None)

    # -- InitProducerId -------------------------------------------------------------------

    def _init(self, token: ReplyToken, request: InitTxnProducer,
              ctx: TxnContext) -> TxnOutcome:
        if not request.transactional_id:
            return _reply(token, ProducerReply(ErrorCode.INVALID_REQUEST))
        if not 0 < request.timeout_ms <= self.config.max_timeout_ms:
            return _reply(token, ProducerReply(ErrorCode.INVALID_TRANSACTION_TIMEOUT))
        metadata = self.transactions.get(request.transactional_id)
        if metadata is None:
            producer_id = ctx.new_producer_id()
            if producer_id is None:
                return _reply(token, ProducerReply(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS))
            metadata = TxnMetadata(request.transactional_id, producer_id,
                                   timeout_ms=request.timeout_ms, last_update_ms=ctx.now_ms)
            self.transactions[request.transactional_id] = metadata
        expected = (None if request.producer_id == NO_PRODUCER_ID
                    else (request.producer_id, request.producer_epoch))
        try:
            transit = self._init_transit(metadata, request.timeout_ms, expected, ctx)
        except TxnRefusedError as refusal:
            return _reply(token, ProducerReply(refusal.error_code))
        if transit.state is TxnState.PREPARE_EPOCH_FENCE:
            return self._end(token, metadata.transactional_id, transit.producer_id,
                             transit.producer_epoch, False, False, ctx.transaction_version,
                             ctx, _fenced_init_reply)
        return self._write(token, metadata, transit, ctx, lambda: ProducerReply(
            ErrorCode.NONE, transit.producer_id, transit.producer_epoch),
            ProducerReply)

    def _init_transit(self, metadata: TxnMetadata, timeout_ms: int,
                      expected: tuple[int, int] | None, ctx: TxnContext) -> TxnTransit:
        """Kafka's ``prepareInitProducerIdTransit``."""
        if metadata.transition_in_progress or metadata.state.is_prepare:
            raise TxnRefusedError(ErrorCode.CONCURRENT_TRANSACTIONS)
        if expected is not None and not (
                metadata.producer_epoch == NO_PRODUCER_EPOCH
                or expected[0] == metadata.producer_id
                or (expected[0] == metadata.prev_producer_id
                    and epoch_exhausted(expected[1]))):
            raise TxnRefusedError(ErrorCode.PRODUCER_FENCED)
        if metadata.state is TxnState.ONGOING:
            return metadata.prepare_fence_epoch()
        if metadata.state not in (TxnState.EMPTY, TxnState.COMPLETE_COMMIT,
                                  TxnState.COMPLETE_ABORT):
            raise IllegalTransitionError(f"Found transactionalId {metadata.transactional_id} "
                                         f"with state {metadata.state.display}")
        if metadata.epoch_exhausted and (expected is None
                                         or expected[1] == metadata.producer_epoch):
            producer_id = ctx.new_producer_id()
            if producer_id is None:
                raise TxnRefusedError(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)
            return metadata.prepare_rotation(producer_id, timeout_ms, ctx.now_ms,
                                             expected is not None)
        return metadata.prepare_increment_epoch(
            timeout_ms, None if expected is None else expected[1], ctx.now_ms)

    # -- AddPartitionsToTxn, AddOffsetsToTxn ----------------------------------------------

    def _add(self, token: ReplyToken, request: AddPartitions, ctx: TxnContext) -> TxnOutcome:
        metadata = self.transactions.get(request.transactional_id)
        error = _producer_refusal(request, metadata)
        if error is None and metadata is not None:
            if metadata.transition_in_progress or metadata.state.is_prepare:
                error = ErrorCode.CONCURRENT_TRANSACTIONS
            elif metadata.state is TxnState.ONGOING and request.partitions <= metadata.partitions:
                error = ErrorCode.NONE  # already in: answered without a write
        if error is not None or metadata is None:
            return _reply(token, ErrorReply(error or ErrorCode.NONE))
        transit = metadata.prepare_add_partitions(request.partitions, ctx.now_ms,
                                                  request.client_version)
        return self._write(token, metadata, transit, ctx, lambda: ErrorReply(ErrorCode.NONE),
                           ErrorReply)

    def _verify(self, request: AddPartitions) -> VerifyReply:
        """KIP-890 verification: is each partition in the transaction? (TRANSACTION_ABORTABLE
        for one that is not: the producer's write would be outside it.)"""
        metadata = self.transactions.get(request.transactional_id)
        error = _producer_refusal(request, metadata)
        if error is None and metadata is not None and metadata.state.is_prepare:
            error = ErrorCode.CONCURRENT_TRANSACTIONS
        if error is not None or metadata is None:
            return VerifyReply(dict.fromkeys(request.partitions, error or ErrorCode.NONE))
        return VerifyReply({tp: ErrorCode.NONE if tp in metadata.partitions
                            else ErrorCode.TRANSACTION_ABORTABLE for tp in request.partitions})

    # -- EndTxn ---------------------------------------------------------------------------

    def _end(self, token: ReplyToken | None, transactional_id: str, producer_id: int,
             producer_epoch: int, commit: bool, from_client: bool, client_version: int,
             ctx: TxnContext, answer: Callable[[ErrorCode, TxnMetadata | None], TxnReply]
             ) -> TxnOutcome:
        """Kafka's ``endTransaction`` (``endTransactionWithTV1`` below version 2): the
        checks, the Prepare write, then the markers. ``answer`` builds the reply from the
        error and, on success, the metadata after the Prepare."""
        metadata = self.transactions.get(transactional_id)
        if not transactional_id:
            return _maybe_reply(token, answer(ErrorCode.INVALID_REQUEST, None))
        if metadata is None:
            return _maybe_reply(token, answer(ErrorCode.INVALID_PRODUCER_ID_MAPPING, None))
        version_2 = client_version >= TV_2
        decision = (self._end_decision_v2 if version_2 else self._end_decision_v1)(
            metadata, producer_id, producer_epoch, commit, from_client)
        fence = metadata.pending is TxnState.PREPARE_EPOCH_FENCE
        if isinstance(decision, ErrorCode):
            if fence:
                metadata.abandon()  # the fence goes with the abort it could not start
            if decision is ErrorCode.NONE and version_2:
                return _maybe_reply(token, answer(decision, metadata))
            return _maybe_reply(token, answer(decision, None))
        next_state, no_partition_added = decision
        next_producer_id = NO_PRODUCER_ID
        if version_2 and not fence and metadata.epoch_exhausted:
            allocated = ctx.new_producer_id()
            if allocated is None:
                return _maybe_reply(token, answer(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, None))
            next_producer_id = allocated
        if next_state is TxnState.PREPARE_ABORT and fence:
            metadata.pending = None  # the fence's epoch goes into the abort record
            metadata.producer_epoch = producer_epoch
            metadata.last_producer_epoch = NO_PRODUCER_EPOCH
        transit = metadata.prepare_end(next_state, client_version if version_2 else 0,
                                       next_producer_id, ctx.now_ms, no_partition_added)

        def done(error: ErrorCode | None, now: TxnContext) -> TxnOutcome:
            if error is not None:
                metadata.abandon()
                if fence:
                    metadata.failed_epoch_fence = True
                return _maybe_reply(token, answer(error, None))
            metadata.complete(transit)
            bumped = version_2 and metadata.producer_epoch == producer_epoch + 1
            if metadata.producer_id != producer_id:
                return _maybe_reply(token, answer(ErrorCode.INVALID_PRODUCER_ID_MAPPING, None))
            if metadata.producer_epoch != producer_epoch and not bumped:
                return _maybe_reply(token, answer(ErrorCode.PRODUCER_FENCED, None))
            out = _maybe_reply(token, answer(ErrorCode.NONE, metadata))
            out.extend(self._send_markers(metadata, now))
            return out

        return self._append(token, metadata, transit, ctx, done)

    @staticmethod
    def _end_decision_v1(metadata: TxnMetadata, producer_id: int, producer_epoch: int,
                         commit: bool, from_client: bool
                         ) -> ErrorCode | tuple[TxnState, bool]:
        """Transaction versions 0 and 1: the client never bumps the epoch itself."""
        if metadata.producer_id != producer_id:
            return ErrorCode.INVALID_PRODUCER_ID_MAPPING
        if ((from_client and producer_epoch != metadata.producer_epoch)
                or producer_epoch < metadata.producer_epoch):
            return ErrorCode.PRODUCER_FENCED
        if metadata.pending not in (None, TxnState.PREPARE_EPOCH_FENCE):
            return ErrorCode.CONCURRENT_TRANSACTIONS
        return _end_by_state(metadata.state, commit, retry=False, version_2=False)

    @staticmethod
    def _end_decision_v2(metadata: TxnMetadata, producer_id: int, producer_epoch: int,
                         commit: bool, from_client: bool
                         ) -> ErrorCode | tuple[TxnState, bool]:
        """Transaction version 2: each end bumps the epoch, so a retry carries the epoch
        before the bump (or, after an overflow, the previous producer id at 32766)."""
        fence = metadata.pending is TxnState.PREPARE_EPOCH_FENCE
        retry_on_overflow = (not fence and metadata.prev_producer_id == producer_id
                             and producer_epoch == MAX_EPOCH - 1
                             and metadata.producer_epoch == 0)
        retry_on_bump = not fence and metadata.producer_epoch == producer_epoch + 1
        state = metadata.state
        if fence:
            valid = ((not from_client or producer_epoch == metadata.producer_epoch)
                     and producer_epoch >= metadata.producer_epoch)
        elif state.is_prepare:
            valid = retry_on_bump
        elif state.is_complete:
            valid = (retry_on_bump or retry_on_overflow
                     or producer_epoch == metadata.producer_epoch)
        else:
            valid = producer_epoch == metadata.producer_epoch
        if metadata.producer_id != producer_id and not retry_on_overflow:
            return ErrorCode.INVALID_PRODUCER_ID_MAPPING
        if not valid:
            return ErrorCode.PRODUCER_FENCED
        if metadata.pending not in (None, TxnState.PREPARE_EPOCH_FENCE):
            return ErrorCode.CONCURRENT_TRANSACTIONS
        return _end_by_state(state, commit, retry=retry_on_bump or retry_on_overflow,
                             version_2=True)

    def _client_end_reply(self, error: ErrorCode, metadata: TxnMetadata | None) -> TxnReply:
        """EndTxn's answer: the producer id and epoch once known (version 2's bumped one)."""
        if metadata is None:
            return ProducerReply(error)
        return ProducerReply(error, metadata.producer_id, metadata.producer_epoch)

    # -- markers and completion -----------------------------------------------------------

    def _send_markers(self, metadata: TxnMetadata, ctx: TxnContext) -> TxnOutcome:
        """After a Prepare record: prepare the completion and order the markers (none to
        write: complete at once)."""
        transit = metadata.prepare_complete(ctx.now_ms)
        self._completing[metadata.transactional_id] = transit
        if not metadata.partitions:
            return self._write_completion(metadata, transit, ctx)
        return TxnOutcome(markers=[MarkerOrder(
            metadata.transactional_id, metadata.producer_id, metadata.producer_epoch,
            metadata.state is TxnState.PREPARE_COMMIT, self.coordinator_epoch,
            metadata.client_version, metadata.partitions)])

    def _write_completion(self, metadata: TxnMetadata, transit: TxnTransit,
                          ctx: TxnContext) -> TxnOutcome:
        """Write CompleteCommit or CompleteAbort, again while the partition is briefly
        unavailable (Kafka's retry queue)."""

        def done(error: ErrorCode | None, now: TxnContext) -> TxnOutcome:
            if error is None:
                self._completing.pop(metadata.transactional_id, None)
                metadata.complete(transit)
                return TxnOutcome()
            if error is _RETRY_COMPLETION:
                return self._write_completion(metadata, transit, now)
            log.warning("%s: completing the transaction of %s failed: %s",
                        self.partition, metadata.transactional_id, error.name)
            self._completing.pop(metadata.transactional_id, None)
            metadata.abandon()
            return TxnOutcome()

        return self._append(None, metadata, transit, ctx, done)

    # -- timers ---------------------------------------------------------------------------

    def _abort_timed_out(self, ctx: TxnContext) -> TxnOutcome:
        """Transactions open past their timeout are fenced and aborted (Kafka's
        ``abortTimedOutTransactions``, at the cluster's transaction version)."""
        out = TxnOutcome()
        for metadata in list(self.transactions.values()):
            if (metadata.state is not TxnState.ONGOING or metadata.pending is not None
                    or metadata.start_ms + metadata.timeout_ms >= ctx.now_ms):
                continue
            fence = metadata.prepare_fence_epoch()
            log.info("%s: aborting transaction %s after its timeout of %d ms",
                     self.partition, metadata.transactional_id, metadata.timeout_ms)
            out.extend(self._end(None, metadata.transactional_id, fence.producer_id,
                                 fence.producer_epoch, False, False,
                                 ctx.transaction_version, ctx, _ignored_reply))
        return out

    def _expire(self, ctx: TxnContext) -> TxnOutcome:
        """Idle ids past ``transactional.id.expiration.ms`` get tombstones."""
        out = TxnOutcome()
        for metadata in list(self.transactions.values()):
            if (not metadata.state.expiration_allowed or metadata.pending is not None
                    or metadata.last_update_ms > ctx.now_ms - self.config.id_expiration_ms):
                continue
            transit = metadata.prepare_dead()

            def done(error: ErrorCode | None, now: TxnContext,
                     metadata: TxnMetadata = metadata) -> TxnOutcome:
                if error is None and metadata.pending is TxnState.DEAD:
                    self.transactions.pop(metadata.transactional_id, None)
                else:
                    metadata.abandon()
                return TxnOutcome()

            out.extend(self._append(None, metadata, transit, ctx, done))
        return out

    # -- DescribeTransactions, ListTransactions -------------------------------------------

    def _describe(self, transactional_id: str) -> DescribedTxn:
        if not transactional_id:
            return DescribedTxn(transactional_id, ErrorCode.INVALID_REQUEST)
        metadata = self.transactions.get(transactional_id)
        if metadata is None or metadata.state is TxnState.DEAD:
            return DescribedTxn(transactional_id, ErrorCode.TRANSACTIONAL_ID_NOT_FOUND)
        return DescribedTxn(transactional_id, ErrorCode.NONE, metadata.state.display,
                            metadata.timeout_ms, metadata.start_ms, metadata.producer_id,
                            metadata.producer_epoch, metadata.partitions)

    def _list(self, request: ListTxns, now_ms: int) -> ListedTxns:
        known = {TxnState.from_name(name) for name in request.states} - {None}
        unknown = tuple(name for name in request.states if TxnState.from_name(name) is None)
        pattern = None if request.pattern is None else re.compile(request.pattern)
        listed = []
        for metadata in self.transactions.values():
            if metadata.state is TxnState.DEAD:
                continue
            if request.producer_ids and metadata.producer_id not in request.producer_ids:
                continue
            if known and metadata.state not in known:  # only unknown names: no filter
                continue
            if request.duration_ms >= 0 and now_ms - metadata.start_ms <= request.duration_ms:
                continue
            if pattern is not None and not pattern.fullmatch(metadata.transactional_id):
                continue
            listed.append((metadata.transactional_id, metadata.producer_id,
                           metadata.state.display))
        return ListedTxns(tuple(listed), unknown)

    # -- writing --------------------------------------------------------------------------

    def _write(self, token: ReplyToken, metadata: TxnMetadata, transit: TxnTransit,
               ctx: TxnContext, ok: Callable[[], TxnReply],
               failed: Callable[[ErrorCode], TxnReply]) -> TxnOutcome:
        """Append a client's transition: applied and answered ``ok`` once committed,
        abandoned and answered ``failed`` otherwise."""

        def done(error: ErrorCode | None, _: TxnContext) -> TxnOutcome:
            if error is not None:
                metadata.abandon()
                return _reply(token, failed(error))
            metadata.complete(transit)
            return _reply(token, ok())

        return self._append(token, metadata, transit, ctx, done)

    def _append(self, token: ReplyToken | None, metadata: TxnMetadata, transit: TxnTransit,
                ctx: TxnContext, done: Written) -> TxnOutcome:
        write_id = next(self._write_ids)
        self._writes[write_id] = _Pending(token, done)
        record = txn_record(metadata.transactional_id,
                            None if transit.state is TxnState.DEAD else transit,
                            ctx.transaction_version)
        return TxnOutcome(writes=[Write(write_id, (record,))])


def _end_by_state(state: TxnState, commit: bool, *, retry: bool,
                  version_2: bool) -> ErrorCode | tuple[TxnState, bool]:
    """What EndTxn does from ``state``: a Prepare state to write (and whether it is an
    abort that added no partition), or the answer (NONE: already so, no write). At
    version 1 a completed transaction's repeat is NONE (``retry`` plays no part); at
    version 2 only a retry is, and an abort of an idle id writes an empty abort."""
    result = TxnState.PREPARE_COMMIT if commit else TxnState.PREPARE_ABORT
    if state is TxnState.ONGOING:
        return result, False
    if state.is_prepare:
        same = (state is TxnState.PREPARE_COMMIT) == commit
        return ErrorCode.CONCURRENT_TRANSACTIONS if same else ErrorCode.INVALID_TXN_STATE
    if state.is_complete:
        same = (state is TxnState.COMPLETE_COMMIT) == commit
        if not version_2:
            return ErrorCode.NONE if same else ErrorCode.INVALID_TXN_STATE
        if retry:
            return ErrorCode.NONE if same else ErrorCode.INVALID_TXN_STATE
        return (TxnState.PREPARE_ABORT, True) if not commit else ErrorCode.INVALID_TXN_STATE
    if state is TxnState.EMPTY:
        if version_2 and not commit:
            return TxnState.PREPARE_ABORT, True
        return ErrorCode.INVALID_TXN_STATE
    raise IllegalTransitionError(f"Found a transaction in state {state.display}: this "
                                 "state is never stored")


def _producer_refusal(request: AddPartitions, metadata: TxnMetadata | None
                      ) -> ErrorCode | None:
    """The checks adding and verifying partitions share: the id, its producer, its epoch."""
    if not request.transactional_id:
        return ErrorCode.INVALID_REQUEST
    if metadata is None or metadata.producer_id != request.producer_id:
        return ErrorCode.INVALID_PRODUCER_ID_MAPPING
    if metadata.producer_epoch != request.producer_epoch:
        return ErrorCode.PRODUCER_FENCED
    return None


def _reply(token: ReplyToken, reply: TxnReply) -> TxnOutcome:
    return TxnOutcome(replies=[(token, reply)])


def _maybe_reply(token: ReplyToken | None, reply: TxnReply) -> TxnOutcome:
    return TxnOutcome() if token is None else _reply(token, reply)


def _fenced_init_reply(error: ErrorCode, metadata: TxnMetadata | None) -> TxnReply:
    """InitProducerId that fenced an open transaction: once its abort is written the
    producer is told to retry (CONCURRENT_TRANSACTIONS), as Kafka does."""
    return ProducerReply(ErrorCode.CONCURRENT_TRANSACTIONS if error is ErrorCode.NONE
                         else error)


def _ignored_reply(error: ErrorCode, metadata: TxnMetadata | None) -> TxnReply:
    """A timeout's abort answers nobody."""
    return ErrorReply(error)
