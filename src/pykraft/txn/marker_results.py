"""What a transaction coordinator does with one partition's answer to a marker it sent
(Kafka's ``TransactionMarkerRequestCompletionHandler``), pure so the simulator and the
runtime share it.

Interface::

    action = marker_action(error_code)   # DONE, RETRY or STOP

DONE: the partition leaves the transaction (its marker is written, or it can never be:
the broker does not speak the marker's format). RETRY: the marker is sent again, to the
partition's leader of then. STOP: a newer producer epoch or coordinator took over, so no
marker of this transaction is sent any more; the coordinator that took over completes it.
"""

from __future__ import annotations

import enum

from pykraft.protocol.errors import ErrorCode


class MarkerAction(enum.Enum):
    DONE = "done"
    RETRY = "retry"
    STOP = "stop"


_RETRIED = frozenset({
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.NOT_LEADER_OR_FOLLOWER,
    ErrorCode.NOT_ENOUGH_REPLICAS, ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
    ErrorCode.REQUEST_TIMED_OUT, ErrorCode.KAFKA_STORAGE_ERROR,
    # not in Kafka's list, which would throw: a broker going away answers these
    ErrorCode.BROKER_NOT_AVAILABLE, ErrorCode.NETWORK_EXCEPTION,
})
_NEVER_WRITABLE = frozenset({ErrorCode.UNSUPPORTED_VERSION,
                             ErrorCode.UNSUPPORTED_FOR_MESSAGE_FORMAT})


def marker_action(error: ErrorCode) -> MarkerAction:
    """Kafka's decision for a partition's marker answer: INVALID_PRODUCER_EPOCH and
    TRANSACTION_COORDINATOR_FENCED stop. So do the errors Kafka treats as a bug (a corrupt
    or too large marker, bad acks; anything unknown): the transaction stays prepared until
    the next coordinator loads it and sends its markers again."""
    if error is ErrorCode.NONE or error in _NEVER_WRITABLE:
        return MarkerAction.DONE
    return MarkerAction.RETRY if error in _RETRIED else MarkerAction.STOP
