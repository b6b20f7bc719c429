"""A partition leader asks a transaction's coordinator whether its partition is in the
transaction before the transaction's first write there (KIP-890 part 1; Kafka's
``AddPartitionsToTxnManager``), so a late write of an ended transaction cannot open a
hanging one. From TxnOffsetCommit v5 and Produce v12 (a transaction version 2 client) the
coordinator adds the partition instead (``verify_only`` false).

Interface::

    verifier = TxnVerifier(broker_id, image=..., partition_of=..., local=..., connect=...,
                           enabled=transaction.partition.verification.enable)
    errors = await verifier.verify(transactional_id, producer_id, epoch, partitions, operation)
    # {} when every partition is in the transaction, else each refused one's error

The coordinator is the leader of the id's ``__transaction_state`` partition in this
broker's image (none: COORDINATOR_NOT_AVAILABLE). On this broker it is asked in place
(``local``), else with AddPartitionsToTxn v4+ over the inter-broker listener, one
connection per broker. Its answer maps as Kafka maps it: a top-level
CLUSTER_AUTHORIZATION_FAILED is INVALID_TXN_STATE (the client must not see it),
PRODUCER_FENCED is INVALID_PRODUCER_EPOCH, TRANSACTION_ABORTABLE is INVALID_TXN_STATE for
a client that predates it (Kafka 4.4's rule), a lost connection or no answer within
``request.timeout.ms`` NETWORK_EXCEPTION, and a coordinator that speaks no broker version
of the API verifies nothing.
"""

from __future__ import annotations

import asyncio
import enum
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence

from pykraft.broker.txn_marker_sender import Connector
from pykraft.errors import NetworkError, UnsupportedVersionError
from pykraft.ids import TRANSACTION_STATE_TOPIC_NAME, TopicPartition
from pykraft.image.image import MetadataImage
from pykraft.image.topics import NO_LEADER
from pykraft.messages.kafka.add_partitions_to_txn_request import (
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnTopic,
    AddPartitionsToTxnTransaction,
)
from pykraft.messages.kafka.add_partitions_to_txn_response import AddPartitionsToTxnResponse
from pykraft.protocol.apis import ApiKey
from pykraft.protocol.errors import ErrorCode
from pykraft.runtime.kafka_client import CONNECTION_ERRORS, ClientConnection
from pykraft.runtime.request_metrics import parked

log = logging.getLogger(__name__)

#: What the verifier speaks to another broker: the brokers' versions of AddPartitionsToTxn.
VERIFIER_VERSIONS: Mapping[int, tuple[int, int]] = {ApiKey.ADD_PARTITIONS_TO_TXN: (4, 5)}
#: Asks this broker's own coordinator (a broker's AddPartitionsToTxn of one transaction).
LocalCoordinator = Callable[[AddPartitionsToTxnTransaction],
                            Awaitable[Mapping[TopicPartition, ErrorCode]]]


class Operation(enum.Enum):
    """What the writing client understands (Kafka's ``TransactionSupportedOperation``)."""

    DEFAULT_ERROR = enum.auto()  # TRANSACTION_ABORTABLE unknown: INVALID_TXN_STATE instead
    GENERIC_ERROR = enum.auto()  # TRANSACTION_ABORTABLE understood
    ADD_PARTITION = enum.auto()  # transaction version 2: the coordinator adds the partition

    @classmethod
    def of_txn_offset_commit(cls, version: int) -> Operation:
        return cls._of(version, generic_from=4, add_from=5)

    @classmethod
    def of_produce(cls, version: int) -> Operation:
        return cls._of(version, generic_from=11, add_from=12)

    @classmethod
    def _of(cls, version: int, *, generic_from: int, add_from: int) -> Operation:
        if version >= add_from:
            return cls.ADD_PARTITION
        return cls.GENERIC_ERROR if version >= generic_from else cls.DEFAULT_ERROR


class TxnVerifier:
    """Verifies (or adds) partitions with their transactions' coordinators."""

    def __init__(self, broker_id: int, *, image: Callable[[], MetadataImage],
                 partition_of: Callable[[str], int], local: LocalCoordinator,
                 connect: Connector, enabled: bool, timeout_ms: int = 30_000) -> None:
        self._broker_id = broker_id
        self._timeout_s = timeout_ms / 1000
        self._image = image
        self._partition_of = partition_of
        self._local = local
        self._connect = connect
        self.enabled = enabled
        self._connections: dict[int, ClientConnection] = {}
        self._opening: dict[int, asyncio.Lock] = {}

    def applies(self, operation: Operation) -> bool:
        """Whether a write of ``operation``'s client is verified (adding a partition
        happens whatever ``transaction.partition.verification.enable`` says)."""
        return self.enabled or operation is Operation.ADD_PARTITION

    async def verify(self, transactional_id: str, producer_id: int, producer_epoch: int,
                     partitions: Sequence[TopicPartition],
                     operation: Operation) -> dict[TopicPartition, ErrorCode]:
        """The partitions not in the transaction (or not added), each with its error."""
        transaction = AddPartitionsToTxnTransaction(
            transactional_id=transactional_id, producer_id=producer_id,
            producer_epoch=producer_epoch, verify_only=operation is not Operation.ADD_PARTITION,
            topics=tuple(AddPartitionsToTxnTopic(name=topic, partitions=tuple(
                tp.partition for tp in partitions if tp.topic == topic))
                for topic in dict.fromkeys(tp.topic for tp in partitions)))
        leader = self._coordinator(transactional_id)
        if leader is None:
            return dict.fromkeys(partitions, ErrorCode.COORDINATOR_NOT_AVAILABLE)
        with parked():  # out of the request queue meanwhile, as Kafka's callback
            if leader == self._broker_id:
                answers = await self._local(transaction)
            else:
                remote = await self._ask(leader, transaction, partitions)
                if isinstance(remote, ErrorCode):
                    return dict.fromkeys(partitions, remote)
                answers = remote
        return {tp: _for_client(code, operation) for tp, code in answers.items()
                if code != ErrorCode.NONE}

    def _coordinator(self, transactional_id: str) -> int | None:
        """The broker leading the id's ``__transaction_state`` partition, if any."""
        image = self._image()
        topic = image.topics.by_name.get(TRANSACTION_STATE_TOPIC_NAME)
        if topic is None:
            return None
        registration = topic.partitions.get(self._partition_of(transactional_id))
        if registration is None or registration.leader == NO_LEADER:
            return None
        leader = registration.leader
        return leader if leader in image.cluster.brokers else None

    async def _ask(self, broker_id: int, transaction: AddPartitionsToTxnTransaction,
                   partitions: Sequence[TopicPartition],
                   ) -> dict[TopicPartition, ErrorCode] | ErrorCode:
        """Another broker's answer: each partition's code, or one code for all."""
        try:
            connection = await self._connection(broker_id)
            if connection is None:
                return ErrorCode.COORDINATOR_NOT_AVAILABLE
            answer = await asyncio.wait_for(connection.request(AddPartitionsToTxnRequest(
                transactions=(transaction,))), self._timeout_s)
        except UnsupportedVersionError:
            log.warning("broker %d does not verify transactions (no AddPartitionsToTxn v4+): "
                        "writing unverified", broker_id)
            return {}
        except (NetworkError, TimeoutError, *CONNECTION_ERRORS) as exc:
            self._forget(broker_id)
            log.info("verifying %s with broker %d failed: %s", transaction.transactional_id,
                     broker_id, exc)
            return ErrorCode.NETWORK_EXCEPTION
        assert isinstance(answer, AddPartitionsToTxnResponse)
        if answer.error_code != ErrorCode.NONE:
            return (ErrorCode.INVALID_TXN_STATE
                    if answer.error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
                    else ErrorCode(answer.error_code))
        return {TopicPartition(topic.name, p.partition_index): ErrorCode(p.partition_error_code)
                for result in answer.results_by_transaction
                for topic in result.topic_results for p in topic.results_by_partition}

    async def _connection(self, broker_id: int) -> ClientConnection | None:
        """The connection to ``broker_id``, opened once however many ask at a time."""
        lock = self._opening.setdefault(broker_id, asyncio.Lock())
        async with lock:
            connection = self._connections.get(broker_id)
            if connection is None:
                connection = await self._connect(broker_id)
                if connection is not None:
                    self._connections[broker_id] = connection
            return connection

    def _forget(self, broker_id: int) -> None:
        connection = self._connections.pop(broker_id, None)
        if connection is not None:
            connection.close()

    def close(self) -> None:
        """Close every connection."""
        for broker_id in list(self._connections):
            self._forget(broker_id)


def _for_client(code: ErrorCode, operation: Operation) -> ErrorCode:
    """A partition's refusal as the writing client expects it (Kafka's
    ``AddPartitionsToTxnHandler``)."""
    if code == ErrorCode.PRODUCER_FENCED:
        return ErrorCode.INVALID_PRODUCER_EPOCH
    if code == ErrorCode.TRANSACTION_ABORTABLE and operation is Operation.DEFAULT_ERROR:
        return ErrorCode.INVALID_TXN_STATE
    return code
