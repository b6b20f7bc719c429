"""What a transaction shard is asked and answers, in one shape for every API version (the
broker's runtime converts the wire's versions to and from these), and what it hands back
to the runtime (:class:`TxnOutcome`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from pykraft.ids import TopicPartition
from pykraft.protocol.errors import ErrorCode
from pykraft.txn.records import TxnRecord

ReplyToken = int
"""The runtime's name for one request in flight to a shard."""


@dataclass(frozen=True, slots=True)
class TxnContext:
    """Everything a request or tick brings besides itself: time, the cluster's finalized
    ``transaction.version``, this shard's coordinator epoch (its partition's leader
    epoch) and the broker's producer ids (None when no block is at hand: the caller
    retries, COORDINATOR_LOAD_IN_PROGRESS, as Kafka's ``RPCProducerIdManager``)."""

    now_ms: int
    transaction_version: int
    new_producer_id: Callable[[], int | None]


@dataclass(frozen=True, slots=True)
class InitTxnProducer:
    """InitProducerId with a transactional id; ``producer_id``/``producer_epoch`` -1 or
    the producer's own (KIP-360, v3+)."""

    transactional_id: str
    timeout_ms: int
    producer_id: int = -1
    producer_epoch: int = -1


@dataclass(frozen=True, slots=True)
class AddPartitions:
    """AddPartitionsToTxn (one transaction of it) or AddOffsetsToTxn (the group's offsets
    partition). ``verify_only``: a partition leader asks whether they are in the
    transaction (KIP-890)."""

    transactional_id: str
    producer_id: int
    producer_epoch: int
    partitions: frozenset[TopicPartition]
    verify_only: bool = False
    client_version: int = 1


@dataclass(frozen=True, slots=True)
class EndTxn:
    """EndTxn: commit or abort; ``client_version`` 2 from EndTxn v5 (KIP-890)."""

    transactional_id: str
    producer_id: int
    producer_epoch: int
    commit: bool
    client_version: int = 0


@dataclass(frozen=True, slots=True)
class DescribeTxn:
    transactional_id: str


@dataclass(frozen=True, slots=True)
class ListTxns:
    """ListTransactions' filters: state names, producer ids, running longer than
    ``duration_ms`` (-1: any), transactional ids matching ``pattern`` (None: any)."""

    states: tuple[str, ...] = ()
    producer_ids: frozenset[int] = frozenset()
    duration_ms: int = -1
    pattern: str | None = None


TxnRequest = InitTxnProducer | AddPartitions | EndTxn | DescribeTxn | ListTxns


@dataclass(frozen=True, slots=True)
class ProducerReply:
    """InitProducerId's and EndTxn's answer (producer id and epoch -1 on error)."""

    error: ErrorCode
    producer_id: int = -1
    producer_epoch: int = -1


@dataclass(frozen=True, slots=True)
class ErrorReply:
    """AddPartitionsToTxn's (every partition) and AddOffsetsToTxn's answer."""

    error: ErrorCode


@dataclass(frozen=True, slots=True)
class VerifyReply:
    """A verification's answer: each partition's error (NONE: in the transaction)."""

    errors: dict[TopicPartition, ErrorCode]


@dataclass(frozen=True, slots=True)
class DescribedTxn:
    """DescribeTransactions for one id (the fields beyond ``error`` only on NONE)."""

    transactional_id: str
    error: ErrorCode
    state: str = ""
    timeout_ms: int = 0
    start_ms: int = -1
    producer_id: int = -1
    producer_epoch: int = -1
    partitions: frozenset[TopicPartition] = frozenset()


@dataclass(frozen=True, slots=True)
class ListedTxns:
    """This shard's transactions ListTransactions names, and the filters it did not
    know as states."""

    transactions: tuple[tuple[str, int, str], ...]
    unknown_states: tuple[str, ...] = ()


TxnReply = ProducerReply | ErrorReply | VerifyReply | DescribedTxn | ListedTxns


@dataclass(frozen=True, slots=True)
class Write:
    """Records to append as one batch; the runtime reports its fate with
    ``shard.written(write_id, error)`` (None once committed)."""

    write_id: int
    records: tuple[TxnRecord, ...]


@dataclass(frozen=True, slots=True)
class MarkerOrder:
    """Markers to write: ``partitions`` each get one for this producer and epoch; the
    runtime reports each one written with ``shard.marker_written``."""

    transactional_id: str
    producer_id: int
    producer_epoch: int
    commit: bool
    coordinator_epoch: int
    transaction_version: int
    partitions: frozenset[TopicPartition]


@dataclass(slots=True)
class TxnOutcome:
    """Writes to append, replies to send now, markers to write."""

    writes: list[Write] = field(default_factory=list)
    replies: list[tuple[ReplyToken, TxnReply]] = field(default_factory=list)
    markers: list[MarkerOrder] = field(default_factory=list)

    def extend(self, other: TxnOutcome) -> None:
        self.writes.extend(other.writes)
        self.replies.extend(other.replies)
        self.markers.extend(other.markers)
