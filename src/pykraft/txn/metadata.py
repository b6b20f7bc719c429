"""One transactional id's metadata at its coordinator, and its transitions (Kafka's
``TransactionMetadata`` and ``TxnTransitMetadata``).

A change is two steps, because the coordinator may only act on what the log holds: a
``prepare_*`` method builds the target as a :class:`TxnTransit` and records the pending state
(later requests see CONCURRENT_TRANSACTIONS), the transit is written to
``__transaction_state``, and once that record is committed :meth:`TxnMetadata.complete`
applies it (after checking it is the transition that was prepared); a failed write calls
:meth:`TxnMetadata.abandon`. Transaction version 2 (KIP-890) bumps the producer epoch when
each transaction ends; at the last epoch below 32767 the next producer id takes over.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from pykraft.errors import PyKraftError
from pykraft.ids import MAX_PRODUCER_EPOCH, TopicPartition
from pykraft.protocol.errors import ErrorCode
from pykraft.txn.state import TxnState

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
MAX_EPOCH = MAX_PRODUCER_EPOCH
TV_2 = 2  # the first transaction.version that bumps the epoch at each end


def epoch_exhausted(epoch: int) -> bool:
    """No epoch may reach 32767 from a client, so the coordinator can always fence."""
    return epoch >= MAX_EPOCH - 1


class TxnRefusedError(PyKraftError):
    """A request the metadata refuses, with Kafka's error code."""

    def __init__(self, error_code: ErrorCode, message: str = "") -> None:
        super().__init__(message or error_code.name)
        self.error_code = error_code


class IllegalTransitionError(PyKraftError):
    """A transition the state machine forbids: a bug (Kafka's IllegalStateException)."""


@dataclass(frozen=True, slots=True)
class TxnTransit:
    """A transactional id's metadata as a prepared transition would leave it: what
    ``__transaction_state`` records (but ``last_producer_epoch``, which the log omits)."""

    producer_id: int
    prev_producer_id: int
    next_producer_id: int
    producer_epoch: int
    last_producer_epoch: int
    timeout_ms: int
    state: TxnState
    partitions: frozenset[TopicPartition]
    start_ms: int
    last_update_ms: int
    client_version: int


@dataclass(slots=True)
class TxnMetadata:
    """What the coordinator knows of one transactional id."""

    transactional_id: str
    producer_id: int
    prev_producer_id: int = NO_PRODUCER_ID
    next_producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH
    last_producer_epoch: int = NO_PRODUCER_EPOCH
    timeout_ms: int = 60_000
    state: TxnState = TxnState.EMPTY
    partitions: frozenset[TopicPartition] = frozenset()
    start_ms: int = -1
    last_update_ms: int = -1
    client_version: int = 0
    pending: TxnState | None = None
    """The state a prepared transition leads to, until it is completed or abandoned."""
    failed_epoch_fence: bool = False
    """A fence's bumped epoch may not have been written: the next fence does not bump."""

    # -- questions ------------------------------------------------------------------------

    @property
    def epoch_exhausted(self) -> bool:
        return epoch_exhausted(self.producer_epoch)

    @property
    def has_pending_transaction(self) -> bool:
        return self.state in (TxnState.ONGOING, TxnState.PREPARE_ABORT,
                              TxnState.PREPARE_COMMIT)

    @property
    def transition_in_progress(self) -> bool:
        return self.pending is not None

    def as_transit(self) -> TxnTransit:
        """The metadata as it stands (a record of the current state)."""
        return TxnTransit(self.producer_id, self.prev_producer_id, self.next_producer_id,
                          self.producer_epoch, self.last_producer_epoch, self.timeout_ms,
                          self.state, self.partitions, self.start_ms, self.last_update_ms,
                          self.client_version)

    # -- preparing transitions ------------------------------------------------------------

    def prepare_fence_epoch(self) -> TxnTransit:
        """InitProducerId or a timeout found a transaction open: bump the epoch to fence
        its producer (once only if the last fence may not have been written)."""
        if self.producer_epoch == MAX_EPOCH:
            raise IllegalTransitionError("Cannot fence producer with epoch equal to "
                                         "Short.MaxValue since this would overflow")
        epoch = self.producer_epoch if self.failed_epoch_fence else self.producer_epoch + 1
        return self._prepare(replace(self._base(TxnState.PREPARE_EPOCH_FENCE),
                                     producer_epoch=epoch))

    def prepare_increment_epoch(self, timeout_ms: int, expected_epoch: int | None,
                                now_ms: int) -> TxnTransit:
        """InitProducerId on an idle id: a new epoch, or (KIP-360) the same one for a retry
        of a call that succeeded; PRODUCER_FENCED when ``expected_epoch`` is stale."""
        if self.epoch_exhausted:
            raise IllegalTransitionError(f"Cannot allocate any more producer epochs for "
                                         f"producerId {self.producer_id}")
        bumped = self.producer_epoch + 1
        if expected_epoch is None:
            epoch, last = bumped, NO_PRODUCER_EPOCH
        elif self.producer_epoch in (NO_PRODUCER_EPOCH, expected_epoch):
            epoch, last = bumped, self.producer_epoch
        elif expected_epoch == self.last_producer_epoch:
            epoch, last = self.producer_epoch, self.last_producer_epoch
        else:
            raise TxnRefusedError(ErrorCode.PRODUCER_FENCED,
                                  f"Expected producer epoch {expected_epoch} does not match "
                                  f"current producer epoch {self.producer_epoch} or previous "
                                  f"producer epoch {self.last_producer_epoch}")
        return self._prepare(replace(
            self._base(TxnState.EMPTY), producer_epoch=epoch, last_producer_epoch=last,
            timeout_ms=timeout_ms, partitions=frozenset(), start_ms=-1, last_update_ms=now_ms))

    def prepare_rotation(self, new_producer_id: int, timeout_ms: int, now_ms: int,
                         record_last_epoch: bool) -> TxnTransit:
        """InitProducerId on an exhausted epoch: a new producer id at epoch 0."""
        if self.has_pending_transaction:
            raise IllegalTransitionError("Cannot rotate producer ids while a transaction is "
                                         "still pending")
        return self._prepare(replace(
            self._base(TxnState.EMPTY), producer_id=new_producer_id, producer_epoch=0,
            last_producer_epoch=self.producer_epoch if record_last_epoch
            else NO_PRODUCER_EPOCH,
            timeout_ms=timeout_ms, partitions=frozenset(), start_ms=-1, last_update_ms=now_ms))

    def prepare_add_partitions(self, added: frozenset[TopicPartition], now_ms: int,
                               client_version: int) -> TxnTransit:
        """AddPartitionsToTxn or AddOffsetsToTxn (or, at version 2, a produce): Ongoing with
        the partitions added; a transaction starting now starts its clock."""
        starting = self.state in (TxnState.EMPTY, TxnState.COMPLETE_ABORT,
                                  TxnState.COMPLETE_COMMIT)
        return self._prepare(replace(
            self._base(TxnState.ONGOING), partitions=self.partitions | added,
            start_ms=now_ms if starting else self.start_ms, last_update_ms=now_ms,
            client_version=client_version))

    def prepare_end(self, state: TxnState, client_version: int, next_producer_id: int,
                    now_ms: int, no_partition_added: bool) -> TxnTransit:
        """EndTxn (or a timeout's abort): PrepareCommit or PrepareAbort; at version 2 the
        epoch is bumped now (a transaction aborted without partitions starts now)."""
        epoch, last = self.producer_epoch, self.last_producer_epoch
        if client_version >= TV_2:
            epoch, last = self.producer_epoch + 1, self.producer_epoch
        return self._prepare(replace(
            self._base(state), producer_epoch=epoch, last_producer_epoch=last,
            start_ms=now_ms if no_partition_added else self.start_ms,
            next_producer_id=next_producer_id, last_update_ms=now_ms,
            client_version=client_version))

    def prepare_complete(self, now_ms: int) -> TxnTransit:
        """Every marker is written: CompleteCommit or CompleteAbort; at version 2 an epoch
        that overflowed hands over to the next producer id at epoch 0."""
        self.failed_epoch_fence = False
        state = (TxnState.COMPLETE_COMMIT if self.state is TxnState.PREPARE_COMMIT
                 else TxnState.COMPLETE_ABORT)
        producer_id, epoch = self.producer_id, self.producer_epoch
        if self.client_version >= TV_2 and self.next_producer_id != NO_PRODUCER_ID:
            producer_id, epoch = self.next_producer_id, 0
        return self._prepare(replace(
            self._base(state), producer_id=producer_id, producer_epoch=epoch,
            next_producer_id=NO_PRODUCER_ID, partitions=frozenset(), last_update_ms=now_ms))

    def prepare_dead(self) -> TxnTransit:
        """Expiry of an idle id: its tombstone's transition (never completed)."""
        return self._prepare(replace(self._base(TxnState.DEAD), partitions=frozenset()))

    def _base(self, state: TxnState) -> TxnTransit:
        """The metadata as it stands, headed for ``state`` (what each transition changes
        is replaced on it)."""
        return replace(self.as_transit(), state=state, prev_producer_id=self.producer_id)

    def _prepare(self, transit: TxnTransit) -> TxnTransit:
        state = transit.state
        if self.pending is not None:
            raise IllegalTransitionError(f"Preparing transaction state transition to "
                                         f"{state.display} while it already a pending state "
                                         f"{self.pending.display}")
        if self.state not in state.previous:
            raise IllegalTransitionError(
                f"Preparing transaction state transition to {state.display} failed since the "
                f"target state {state.display} is not a valid previous state of the current "
                f"state {self.state.display}")
        if transit.producer_id < 0:
            raise IllegalTransitionError(f"Illegal new producer id {transit.producer_id}")
        if state is not TxnState.DEAD and transit.producer_epoch < 0:
            raise IllegalTransitionError(f"Illegal new producer epoch {transit.producer_epoch}")
        self.pending = state
        return transit

    # -- completing -----------------------------------------------------------------------

    def complete(self, transit: TxnTransit) -> None:
        """Apply a prepared transition whose record is committed."""
        if self.pending is None or self.pending is not transit.state:
            self._refuse(transit)
        target = transit.state
        if target is TxnState.EMPTY:
            if ((self.producer_epoch != transit.producer_epoch
                 and not self._valid_epoch_bump(transit))
                    or transit.partitions or transit.start_ms != -1):
                self._refuse(transit)
        elif target is TxnState.ONGOING:
            if (not self._valid_epoch(transit) or not self.partitions <= transit.partitions
                    or self.timeout_ms != transit.timeout_ms):
                self._refuse(transit)
        elif target.is_prepare:
            empty_abort = (target is TxnState.PREPARE_ABORT and transit.client_version >= TV_2
                           and self.state in (TxnState.EMPTY, TxnState.COMPLETE_COMMIT,
                                              TxnState.COMPLETE_ABORT))
            if (not self._valid_epoch(transit) or self.partitions != transit.partitions
                    or self.timeout_ms != transit.timeout_ms
                    or (self.start_ms != transit.start_ms and not empty_abort)):
                self._refuse(transit)
        elif target.is_complete:
            if (not self._valid_epoch(transit) or self.timeout_ms != transit.timeout_ms
                    or transit.start_ms == -1):
                self._refuse(transit)
        else:  # PrepareEpochFence and Dead are never completed
            self._refuse(transit)
        self.producer_id = transit.producer_id
        self.prev_producer_id = transit.prev_producer_id
        self.next_producer_id = transit.next_producer_id
        self.producer_epoch = transit.producer_epoch
        self.last_producer_epoch = transit.last_producer_epoch
        self.timeout_ms = transit.timeout_ms
        self.partitions = transit.partitions
        self.start_ms = transit.start_ms
        self.last_update_ms = transit.last_update_ms
        self.client_version = transit.client_version
        self.pending = None
        self.state = target

    def marker_written(self, partition: TopicPartition) -> None:
        """A partition has its marker: it leaves the transaction (while PrepareCommit or
        PrepareAbort; DescribeTransactions then shows the partitions still waiting)."""
        if not self.state.is_prepare:
            raise IllegalTransitionError(
                f"Transaction metadata's current state is {self.state.display}, and its "
                f"pending state is {self.pending} while trying to remove partitions whose "
                "txn marker has been sent, this is not expected")
        self.partitions = self.partitions - {partition}

    def abandon(self) -> None:
        """The prepared transition's write failed: nothing changes but the pending state."""
        self.pending = None

    def _valid_epoch(self, transit: TxnTransit) -> bool:
        """Kafka's ``validProducerEpoch``: version 2 completes an overflow under the next
        producer id (checked against the previous one) and bumps the epoch at prepare."""
        version_2 = transit.client_version >= TV_2
        if version_2 and transit.state.is_complete and transit.producer_epoch == 0:
            return (transit.last_producer_epoch == self.last_producer_epoch
                    and transit.prev_producer_id == self.producer_id)
        if version_2 and transit.state.is_prepare:
            return (transit.last_producer_epoch == self.producer_epoch
                    and transit.producer_id == self.producer_id)
        return (transit.producer_epoch == self.producer_epoch
                and transit.producer_id == self.producer_id)

    def _valid_epoch_bump(self, transit: TxnTransit) -> bool:
        return (transit.producer_epoch == self.producer_epoch + 1
                or (transit.producer_epoch == 0 and transit.producer_id != self.producer_id))

    def _refuse(self, transit: TxnTransit) -> None:
        raise IllegalTransitionError(f"TransactionalId {self.transactional_id} failed "
                                     f"transition to state {transit} due to unexpected "
                                     "metadata")

