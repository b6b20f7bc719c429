"""The transaction APIs on a broker's client listener, as Kafka's ``KafkaApis`` handles them:
authorization, each version's shape, then the coordinator
(:class:`~pykraft.broker.txn_coordinator.TxnCoordinatorService`).

Interface (each answer is the generated response class, written at the request's version)::

    apis = TxnApis(service, image=lambda: ..., offsets_partition=lambda group: ...)
    await apis.init_producer_id(body, version)      # a transactional id's (the caller
                                                    # authorized WRITE on it)
    await apis.add_partitions(body, version, access)
    await apis.add_offsets(body, version, access)
    await apis.end_txn(body, version, access)
    await apis.describe(body, access)
    await apis.list(body, access)

What Kafka checks before the coordinator: WRITE on the transactional id (Describe and List:
DESCRIBE, List dropping the ids the session may not see); AddPartitionsToTxn v4+ (the
brokers' verification, KIP-890) needs CLUSTER_ACTION; a client's AddPartitionsToTxn needs
WRITE on each topic (never granted for an internal topic), a partition the metadata lacks is
UNKNOWN_TOPIC_OR_PARTITION, and either fails the whole transaction, its other partitions
answered OPERATION_NOT_ATTEMPTED; AddOffsetsToTxn needs READ on the group. ListTransactions'
pattern that is no regular expression is INVALID_REGULAR_EXPRESSION. Clients of
versions before PRODUCER_FENCED existed get INVALID_PRODUCER_EPOCH instead.
"""

from __future__ import annotations

import asyncio
import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping

from pykraft.broker.txn_coordinator import TxnCoordinatorService
from pykraft.ids import INTERNAL_TOPICS, OFFSETS_TOPIC_NAME, TopicPartition
from pykraft.image.acls import AclOperation, ResourceType
from pykraft.image.image import MetadataImage
from pykraft.messages.kafka import add_partitions_to_txn_response as apr
from pykraft.messages.kafka import describe_transactions_response as dtr
from pykraft.messages.kafka import list_transactions_response as ltr
from pykraft.messages.kafka.add_offsets_to_txn_request import AddOffsetsToTxnRequest
from pykraft.messages.kafka.add_offsets_to_txn_response import AddOffsetsToTxnResponse
from pykraft.messages.kafka.add_partitions_to_txn_request import (
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnTopic,
    AddPartitionsToTxnTransaction,
)
from pykraft.messages.kafka.describe_transactions_request import DescribeTransactionsRequest
from pykraft.messages.kafka.end_txn_request import EndTxnRequest
from pykraft.messages.kafka.end_txn_response import EndTxnResponse
from pykraft.messages.kafka.init_producer_id_request import InitProducerIdRequest
from pykraft.messages.kafka.init_producer_id_response import InitProducerIdResponse
from pykraft.messages.kafka.list_transactions_request import ListTransactionsRequest
from pykraft.protocol.errors import ErrorCode
from pykraft.runtime.codec_thread import off_loop_if_large
from pykraft.runtime.turns import Turns
from pykraft.security.api_rules import Access
from pykraft.txn.metadata import TV_2
from pykraft.txn.requests import (
    AddPartitions,
    DescribedTxn,
    DescribeTxn,
    EndTxn,
    ErrorReply,
    InitTxnProducer,
    ListTxns,
    ProducerReply,
    VerifyReply,
)
from pykraft.txn.state import TxnState

_O, _R = AclOperation, ResourceType
#: The first version of each API whose clients know PRODUCER_FENCED.
_FENCED_SINCE = {"init": 4, "end": 2, "add_partitions": 2, "add_offsets": 2}
#: AddPartitionsToTxn from this version batches transactions and comes from brokers.
FIRST_BROKER_VERSION = 4
#: EndTxn from this version is a transaction version 2 client's (KIP-890).
FIRST_TV2_END_VERSION = 5


def _for_version(error: ErrorCode, version: int, api: str) -> ErrorCode:
    if error is ErrorCode.PRODUCER_FENCED and version < _FENCED_SINCE[api]:
        return ErrorCode.INVALID_PRODUCER_EPOCH
    return error


class TxnApis:
    """Answers the transaction APIs of one broker."""

    def __init__(self, service: TxnCoordinatorService, *, image: Callable[[], MetadataImage],
                 offsets_partition: Callable[[str], int]) -> None:
        self._service = service
        self._image = image
        self._offsets_partition = offsets_partition

    async def init_producer_id(self, body: InitProducerIdRequest,
                               version: int) -> InitProducerIdResponse:
        assert body.transactional_id is not None, "idempotent producers are answered apart"
        reply = await self._service.handle(InitTxnProducer(
            body.transactional_id, body.transaction_timeout_ms, body.producer_id,
            body.producer_epoch))
        assert isinstance(reply, ProducerReply)
        return InitProducerIdResponse(
            error_code=_for_version(reply.error, version, "init"),
            producer_id=reply.producer_id, producer_epoch=reply.producer_epoch)

    async def end_txn(self, body: EndTxnRequest, version: int,
                      access: Access) -> EndTxnResponse:
        if not access.allows(_O.WRITE, _R.TRANSACTIONAL_ID, body.transactional_id):
            return EndTxnResponse(error_code=ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
        reply = await self._service.handle(EndTxn(
            body.transactional_id, body.producer_id, body.producer_epoch, body.committed,
            TV_2 if version >= FIRST_TV2_END_VERSION else 0))
        assert isinstance(reply, ProducerReply)
        return EndTxnResponse(error_code=_for_version(reply.error, version, "end"),
                              producer_id=reply.producer_id,
                              producer_epoch=reply.producer_epoch)

    async def add_offsets(self, body: AddOffsetsToTxnRequest, version: int,
                          access: Access) -> AddOffsetsToTxnResponse:
        if not access.allows(_O.WRITE, _R.TRANSACTIONAL_ID, body.transactional_id):
            return AddOffsetsToTxnResponse(
                error_code=ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
        if not access.allows(_O.READ, _R.GROUP, body.group_id):
            return AddOffsetsToTxnResponse(error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED)
        partition = TopicPartition(OFFSETS_TOPIC_NAME, self._offsets_partition(body.group_id))
        reply = await self._service.handle(AddPartitions(
            body.transactional_id, body.producer_id, body.producer_epoch,
            frozenset({partition})))
        assert isinstance(reply, ErrorReply)
        return AddOffsetsToTxnResponse(
            error_code=_for_version(reply.error, version, "add_offsets"))

    async def add_partitions(self, body: AddPartitionsToTxnRequest, version: int,
                             access: Access) -> apr.AddPartitionsToTxnResponse:
        if version >= FIRST_BROKER_VERSION and not access.allows(_O.CLUSTER_ACTION,
                                                                 _R.CLUSTER):
            return apr.AddPartitionsToTxnResponse(
                error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
        transactions = body.transactions if version >= FIRST_BROKER_VERSION else (
            AddPartitionsToTxnTransaction(
                transactional_id=body.v3_and_below_transactional_id,
                producer_id=body.v3_and_below_producer_id,
                producer_epoch=body.v3_and_below_producer_epoch,
                topics=body.v3_and_below_topics),)
        results = await asyncio.gather(*(self._add_one(t, version, access)
                                         for t in transactions))
        if version >= FIRST_BROKER_VERSION:
            return apr.AddPartitionsToTxnResponse(results_by_transaction=tuple(
                apr.AddPartitionsToTxnResult(transactional_id=t.transactional_id,
                                             topic_results=_topic_results(errors))
                for t, errors in zip(transactions, results, strict=True)))
        return apr.AddPartitionsToTxnResponse(results_by_topic_v3_and_below=_topic_results(
            results[0]))

    async def add_for_broker(self, transaction: AddPartitionsToTxnTransaction
                             ) -> dict[TopicPartition, ErrorCode]:
        """A partition leader of this broker verifying (or adding) its partition: answered
        as another broker's AddPartitionsToTxn v4+ is."""
        return await self._add_one(transaction, FIRST_BROKER_VERSION, None)

    async def _add_one(self, transaction: AddPartitionsToTxnTransaction, version: int,
                       access: Access | None) -> dict[TopicPartition, ErrorCode]:
        """One transaction's partitions; a client's (v0-3) checked against ``access``."""
        partitions = list(dict.fromkeys(_partitions(transaction.topics)))
        transactional_id = transaction.transactional_id
        writable = {tp.topic for tp in partitions}
        client = version < FIRST_BROKER_VERSION
        if client:
            assert access is not None, "a client's request is authorized"
            if not access.allows(_O.WRITE, _R.TRANSACTIONAL_ID, transactional_id):
                return dict.fromkeys(partitions, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
            writable = set(access.allowed(_O.WRITE, _R.TOPIC, (
                tp.topic for tp in partitions if tp.topic not in INTERNAL_TOPICS)))
        image = self._image()
        refused: dict[TopicPartition, ErrorCode] = {}
        for tp in partitions:
            topic = image.topics.by_name.get(tp.topic)
            if tp.topic not in writable:
                refused[tp] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            elif topic is None or tp.partition not in topic.partitions:
                refused[tp] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        if refused:
            return {tp: refused.get(tp, ErrorCode.OPERATION_NOT_ATTEMPTED) for tp in partitions}
        reply = await self._service.handle(AddPartitions(
            transactional_id, transaction.producer_id, transaction.producer_epoch,
            frozenset(partitions), verify_only=transaction.verify_only,
            client_version=TV_2 if not client else 1))
        if isinstance(reply, VerifyReply):
            return {tp: reply.errors.get(tp, ErrorCode.NONE) for tp in partitions}
        assert isinstance(reply, ErrorReply)
        return dict.fromkeys(partitions, _for_version(reply.error, version, "add_partitions"))

    async def describe(self, body: DescribeTransactionsRequest,
                       access: Access) -> dtr.DescribeTransactionsResponse:
        """Each id asked is answered once, in the order first named, the loop running
        between ids. Kafka answers an id named twice twice; once bounds the answer to a frame
        of one id repeated (a million repeats of an empty id made a 29 MB answer to a 1 MiB
        request), as ListOffsets answers a repeated partition once, and clients key the
        answer by id."""
        ids = await off_loop_if_large(lambda: list(dict.fromkeys(body.transactional_ids)))
        turns = Turns()
        answers: dict[str, dtr.TransactionState] = {}
        for transactional_id in ids:
            await turns.pause()
            if not access.allows(_O.DESCRIBE, _R.TRANSACTIONAL_ID, transactional_id):
                answers[transactional_id] = dtr.TransactionState(
                    transactional_id=transactional_id,
                    error_code=ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
                continue
            reply = await self._service.handle(DescribeTxn(transactional_id))
            assert isinstance(reply, DescribedTxn)
            answers[transactional_id] = _described(reply, access)
        return dtr.DescribeTransactionsResponse(transaction_states=tuple(answers.values()))

    async def list(self, body: ListTransactionsRequest,
                   access: Access) -> ltr.ListTransactionsResponse:
        if body.transactional_id_pattern:
            try:
                re.compile(body.transactional_id_pattern)
            except re.error:  # Kafka: PatternSyntaxException, answered as this
                return ltr.ListTransactionsResponse(
                    error_code=ErrorCode.INVALID_REGULAR_EXPRESSION)
        error, listed = await self._service.list(ListTxns(
            states=body.state_filters, producer_ids=frozenset(body.producer_id_filters),
            duration_ms=body.duration_filter, pattern=body.transactional_id_pattern))
        # Kafka names the unknown states whatever partitions this broker leads (none yet,
        # before __transaction_state exists), unless it answers an error
        unknown = () if error else tuple(dict.fromkeys(
            s for s in body.state_filters if TxnState.from_name(s) is None))
        return ltr.ListTransactionsResponse(
            error_code=error, unknown_state_filters=unknown, transaction_states=tuple(
                ltr.TransactionState(transactional_id=t, producer_id=p, transaction_state=s)
                for part in listed for t, p, s in part.transactions
                if access.allows(_O.DESCRIBE, _R.TRANSACTIONAL_ID, t)))


def _partitions(topics: Iterable[AddPartitionsToTxnTopic]) -> Iterable[TopicPartition]:
    return (TopicPartition(t.name, index) for t in topics for index in t.partitions)


def _topic_results(errors: Mapping[TopicPartition, ErrorCode]
                   ) -> tuple[apr.AddPartitionsToTxnTopicResult, ...]:
    by_topic: defaultdict[str, list[apr.AddPartitionsToTxnPartitionResult]] = defaultdict(list)
    for tp, error in errors.items():
        by_topic[tp.topic].append(apr.AddPartitionsToTxnPartitionResult(
            partition_index=tp.partition, partition_error_code=error))
    return tuple(apr.AddPartitionsToTxnTopicResult(name=name, results_by_partition=tuple(parts))
                 for name, parts in by_topic.items())


def _described(reply: DescribedTxn, access: Access) -> dtr.TransactionState:
    """A described transaction, its topics limited to those the session may describe."""
    if reply.error is not ErrorCode.NONE:
        return dtr.TransactionState(transactional_id=reply.transactional_id,
                                    error_code=reply.error)
    topics: defaultdict[str, list[int]] = defaultdict(list)
    for tp in sorted(reply.partitions):
        topics[tp.topic].append(tp.partition)
    return dtr.TransactionState(
        error_code=ErrorCode.NONE, transactional_id=reply.transactional_id,
        transaction_state=reply.state, transaction_timeout_ms=reply.timeout_ms,
        transaction_start_time_ms=reply.start_ms, producer_id=reply.producer_id,
        producer_epoch=reply.producer_epoch, topics=tuple(
            dtr.TopicData(topic=name, partitions=tuple(indexes))
            for name, indexes in topics.items()
            if access.allows(_O.DESCRIBE, _R.TOPIC, name)))
