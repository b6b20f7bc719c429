"""The states of a transactional id at its coordinator (Kafka's ``TransactionState``): the
id byte stored in ``__transaction_state``, the name DescribeTransactions and
ListTransactions show, which states may precede each, and where an idle id may expire."""

from __future__ import annotations

import enum


class TxnState(enum.Enum):
    """(id, name); the order of declaration is Kafka's."""

    EMPTY = (0, "Empty")
    ONGOING = (1, "Ongoing")
    PREPARE_COMMIT = (2, "PrepareCommit")
    PREPARE_ABORT = (3, "PrepareAbort")
    COMPLETE_COMMIT = (4, "CompleteCommit")
    COMPLETE_ABORT = (5, "CompleteAbort")
    DEAD = (6, "Dead")
    PREPARE_EPOCH_FENCE = (7, "PrepareEpochFence")

    @property
    def id(self) -> int:
        return self.value[0]

    @property
    def display(self) -> str:
        """Kafka's name, as DescribeTransactions answers it."""
        return self.value[1]

    @property
    def expiration_allowed(self) -> bool:
        """An id idle in this state may expire (``transactional.id.expiration.ms``)."""
        return self in _EXPIRABLE

    @property
    def previous(self) -> frozenset[TxnState]:
        """The states a transition into this one may start from. PrepareAbort from Empty,
        CompleteCommit and CompleteAbort is transaction version 2's (a client unsure of
        the server's state may abort)."""
        return _PREVIOUS[self]

    @property
    def is_prepare(self) -> bool:
        return self in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT)

    @property
    def is_complete(self) -> bool:
        return self in (TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT)

    @classmethod
    def from_id(cls, state_id: int) -> TxnState:
        found = _BY_ID.get(state_id)
        if found is None:
            raise ValueError(f"Unknown transaction state id {state_id} from the transaction "
                             "status message")
        return found

    @classmethod
    def from_name(cls, name: str) -> TxnState | None:
        """The state Kafka names ``name`` (ListTransactions' filter), None if none."""
        return _BY_NAME.get(name)


_S = TxnState
_EXPIRABLE = frozenset({_S.EMPTY, _S.COMPLETE_COMMIT, _S.COMPLETE_ABORT})
_PREVIOUS: dict[TxnState, frozenset[TxnState]] = {
    _S.EMPTY: frozenset({_S.EMPTY, _S.COMPLETE_COMMIT, _S.COMPLETE_ABORT}),
    _S.ONGOING: frozenset({_S.ONGOING, _S.EMPTY, _S.COMPLETE_COMMIT, _S.COMPLETE_ABORT}),
    _S.PREPARE_COMMIT: frozenset({_S.ONGOING}),
    _S.PREPARE_ABORT: frozenset({_S.ONGOING, _S.PREPARE_EPOCH_FENCE, _S.EMPTY,
                                 _S.COMPLETE_COMMIT, _S.COMPLETE_ABORT}),
    _S.COMPLETE_COMMIT: frozenset({_S.PREPARE_COMMIT}),
    _S.COMPLETE_ABORT: frozenset({_S.PREPARE_ABORT}),
    _S.DEAD: frozenset({_S.EMPTY, _S.COMPLETE_ABORT, _S.COMPLETE_COMMIT}),
    _S.PREPARE_EPOCH_FENCE: frozenset({_S.ONGOING}),
}
_BY_ID = {state.id: state for state in TxnState}
_BY_NAME = {state.display: state for state in TxnState}
