"""The transaction admin calls of ``pykraft transactions`` (Kafka's ``Admin`` methods
``listTransactions``, ``describeTransactions``, ``describeProducers``, ``abortTransaction``,
``forceTerminateTransaction``, with ``listTopics`` and ``describeTopics``)::

    async with BrokerClients(admin_settings(bootstrap)) as brokers:
        admin = TxnAdmin(brokers, timeout_s=60)
        by_broker = await admin.list_transactions(duration_ms=0)    # {broker: [TxnListing]}
        described = await admin.describe_transactions(["tx"])        # {id: TxnDescription}
        producers = await admin.describe_producers([("t", 0)])      # {tp: (ProducerInfo, ...)}
        await admin.abort(AbortSpec(("t", 0), producer_id=7, producer_epoch=0,
                                    coordinator_epoch=0))
        await admin.force_terminate("tx")

Each call is sent where Kafka's admin client sends it, and retried as it retries it:
ListTransactions to every broker (a loading coordinator is asked again);
DescribeTransactions and InitProducerId (``force_terminate``, as ``fenceProducers``: no
producer id, the transaction timeout being ``request.timeout.ms``) to the id's coordinator,
found with FindCoordinator (key type 1); DescribeProducers to each partition's leader (or to
the broker asked: a replica that is not the leader answers for its copy) and WriteTxnMarkers
(``abort``: an ABORT marker of the producer's epoch, transaction version 0) to the leader,
the leader looked up again while the answer says it moved. A call that is still retrying
after ``timeout_s`` (``default.api.timeout.ms``) fails as Kafka's does.

Failures are :class:`~pykraft.tools.admin_client.AdminError` whose message is that of the
exception Kafka's admin client completes the call with (the tool prints it after its own
context); DescribeTransactions' per-id errors are returned, not raised, as ``find-hanging``
reads an id the coordinator does not know as a hanging transaction's.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, TypeVar

from pykraft.ids import TopicPartition
from pykraft.java import java_hash_order
from pykraft.messages.kafka.describe_producers_request import (
    DescribeProducersRequest,
    TopicRequest,
)
from pykraft.messages.kafka.describe_transactions_request import DescribeTransactionsRequest
from pykraft.messages.kafka.init_producer_id_request import InitProducerIdRequest
from pykraft.messages.kafka.list_transactions_request import ListTransactionsRequest
from pykraft.messages.kafka.write_txn_markers_request import (
    WritableTxnMarker,
    WritableTxnMarkerTopic,
    WriteTxnMarkersRequest,
)
from pykraft.protocol.errors import ErrorCode
from pykraft.tools.admin_client import AdminError, ApiError, ClusterMetadata
from pykraft.tools.broker_clients import Brokers, tp_name
from pykraft.tools.group_admin import COORDINATOR_ERRORS, TRANSACTION_KEY, GroupClient
from pykraft.tools.log_dirs_tool import partition_hash

DEFAULT_API_TIMEOUT_S = 60.0
_BACKOFF_S = (0.1, 1.0)  # Kafka's retry.backoff.ms and retry.backoff.max.ms
T = TypeVar("T")
#: Kafka's messages (``Errors``) for the codes these calls may end with
_MESSAGES = {
    ErrorCode.UNKNOWN_SERVER_ERROR:
        "The server experienced an unexpected error when processing the request.",
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: "This server does not host this topic-partition.",
    ErrorCode.NOT_LEADER_OR_FOLLOWER: "For requests intended only for the leader, this error "
                                      "indicates that the broker is not the current leader. "
                                      "For requests intended for any replica, this error "
                                      "indicates that the broker is not a replica of the "
                                      "topic partition.",
    ErrorCode.REQUEST_TIMED_OUT: "The request timed out.",
    ErrorCode.NOT_ENOUGH_REPLICAS:
        "Messages are rejected since there are fewer in-sync replicas than required.",
    ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND:
        "Messages are written to the log, but to fewer in-sync replicas than required.",
    ErrorCode.KAFKA_STORAGE_ERROR: "Disk error when trying to access log file on the disk.",
    ErrorCode.INVALID_REQUEST: "This most likely occurs because of a request being malformed "
                               "by the client library or the message was sent to an "
                               "incompatible broker. See the broker logs for more details.",
    ErrorCode.CLUSTER_AUTHORIZATION_FAILED: "Cluster authorization failed.",
    ErrorCode.TOPIC_AUTHORIZATION_FAILED: "Topic authorization failed.",
    ErrorCode.INVALID_PRODUCER_EPOCH: "Producer attempted to produce with an old epoch.",
    ErrorCode.TRANSACTION_COORDINATOR_FENCED:
        "Indicates that the transaction coordinator sending a WriteTxnMarker is no longer "
        "the current coordinator for a given producer",
    ErrorCode.INVALID_TRANSACTION_TIMEOUT: "The transaction timeout is larger than the maximum "
                                           "value allowed by the broker (as configured by "
                                           "transaction.max.timeout.ms).",
}


def _message(code: int) -> str:
    error = ErrorCode(code)
    return _MESSAGES.get(error, error.name)


@dataclass(frozen=True, slots=True)
class TxnListing:
    """One transaction as ListTransactions lists it."""

    transactional_id: str
    producer_id: int
    state: str


@dataclass(frozen=True, slots=True)
class TxnDescription:
    """DescribeTransactions' answer for one transactional id (Kafka's
    ``TransactionDescription``); ``partitions`` in the order of Kafka's ``HashSet``."""

    coordinator_id: int
    state: str
    producer_id: int
    producer_epoch: int
    timeout_ms: int
    start_ms: int | None  # none (-1 on the wire) when no transaction is open
    partitions: tuple[TopicPartition, ...]


@dataclass(frozen=True, slots=True)
class ProducerInfo:
    """One active producer of a partition (Kafka's ``ProducerState``)."""

    producer_id: int
    producer_epoch: int
    last_sequence: int
    last_timestamp: int
    coordinator_epoch: int | None  # none (-1) before its first marker
    txn_start_offset: int | None  # none (-1) when it has no open transaction


@dataclass(frozen=True, slots=True)
class AbortSpec:
    """Kafka's ``AbortTransactionSpec``: the marker ``abort`` writes."""

    partition: TopicPartition
    producer_id: int
    producer_epoch: int
    coordinator_epoch: int

    def __str__(self) -> str:
        return (f"AbortTransactionSpec(topicPartition={tp_name(self.partition)}, "
                f"producerId={self.producer_id}, producerEpoch={self.producer_epoch}, "
                f"coordinatorEpoch={self.coordinator_epoch})")


class _RetryError(Exception):
    """This attempt found nothing final: try again after a backoff. ``no_node``: the
    broker to ask is not in the cluster's metadata (yet)."""

    def __init__(self, no_node: bool = False) -> None:
        super().__init__()
        self.no_node = no_node


class TxnAdmin:
    """Transaction admin calls over :class:`~pykraft.tools.broker_clients.Brokers`."""

    def __init__(self, brokers: Brokers, timeout_s: float = DEFAULT_API_TIMEOUT_S,
                 request_timeout_ms: int = 30_000) -> None:
        self.brokers = brokers
        self.timeout_s = timeout_s
        self.request_timeout_ms = request_timeout_ms
        self.coordinators = GroupClient(brokers, timeout_s)

    async def _until(self, call: str, api: str, attempt: Callable[[], Awaitable[T]]) -> T:
        """``attempt()``'s result once it does not raise :class:`_RetryError`; Kafka's timeout
        message once ``timeout_s`` has passed."""
        started = time.time()
        deadline = time.monotonic() + self.timeout_s
        tries, backoff = 0, _BACKOFF_S[0]
        while True:
            tries += 1
            try:
                return await attempt()
            except _RetryError as retry:
                if time.monotonic() + backoff > deadline:
                    if retry.no_node:
                        raise AdminError(f"Timed out waiting for a node assignment. Call: "
                                         f"{call}(api={api})") from None
                    break
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, _BACKOFF_S[1])
        deadline_ms = int((started + self.timeout_s) * 1000)
        now_ms = int(time.time() * 1000)
        raise AdminError(f"Call(callName={call}(api={api}), deadlineMs={deadline_ms}, "
                         f"tries={tries}, nextAllowedTryMs={now_ms + int(backoff * 1000)}) "
                         f"timed out at {now_ms} after {tries} attempt(s)")

    # -- ListTransactions --------------------------------------------------------------------

    async def list_transactions(self, *, duration_ms: int | None = None,
                                pattern: str | None = None,
                                producer_ids: Iterable[int] = ()) -> dict[int, list[TxnListing]]:
        """Every broker's transactions matching the filters, by broker id (in the order of
        Kafka's ``HashMap`` of broker ids)."""
        cluster = await self.brokers.metadata([])
        body = ListTransactionsRequest(
            state_filters=(), producer_id_filters=tuple(producer_ids),
            duration_filter=-1 if duration_ms is None else duration_ms,
            transactional_id_pattern=pattern or None)
        results = {}
        for broker in java_hash_order(sorted(cluster.brokers), lambda b: b):
            results[broker] = await self._until("listTransactions", "LIST_TRANSACTIONS",
                                                partial(self._list_at, broker, body))
        return results

    async def _list_at(self, broker: int, body: ListTransactionsRequest) -> list[TxnListing]:
        answer = await self.brokers.request_to(broker, body)
        error = answer.error_code
        if error == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS:
            raise _RetryError
        if error == ErrorCode.COORDINATOR_NOT_AVAILABLE:
            raise AdminError(f"ListTransactions request sent to broker {broker} failed because "
                             "the coordinator is shutting down")
        if error != ErrorCode.NONE:
            raise ApiError(ErrorCode(error), f"ListTransactions request sent to broker "
                                             f"{broker} failed with an unexpected exception")
        return [TxnListing(t.transactional_id, int(t.producer_id), t.transaction_state)
                for t in answer.transaction_states]

    # -- DescribeTransactions ----------------------------------------------------------------

    async def describe_transactions(self, transactional_ids: Iterable[str]
                                    ) -> dict[str, TxnDescription | AdminError]:
        """Each id's description, or the error its coordinator answered (as Kafka's
        admin client completes that id's future)."""
        results: dict[str, TxnDescription | AdminError] = {}
        for transactional_id in dict.fromkeys(transactional_ids):
            results[transactional_id] = await self._describe_one(transactional_id)
        return results

    async def _describe_one(self, transactional_id: str) -> TxnDescription | AdminError:
        def code_of(answer: Any) -> int:
            code = int(answer.transaction_states[0].error_code)
            return code if code in COORDINATOR_ERRORS else ErrorCode.NONE

        coordinator, answer = await self.coordinators.to_coordinator(
            transactional_id, DescribeTransactionsRequest(transactional_ids=(transactional_id,)),
            code_of, key_type=TRANSACTION_KEY)
        state = answer.transaction_states[0]
        error = ErrorCode(state.error_code)
        about = f"DescribeTransactions request for transactionalId `{transactional_id}` "
        if error == ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED:
            return ApiError(error, about + "failed due to authorization failure")
        if error == ErrorCode.TRANSACTIONAL_ID_NOT_FOUND:
            return ApiError(error, about + "failed because the ID could not be found")
        if error != ErrorCode.NONE:
            return ApiError(error, about + "failed due to unexpected error")
        partitions = [TopicPartition(t.topic, p) for t in state.topics for p in t.partitions]
        return TxnDescription(
            coordinator_id=coordinator.node_id, state=state.transaction_state,
            producer_id=int(state.producer_id), producer_epoch=int(state.producer_epoch),
            timeout_ms=int(state.transaction_timeout_ms),
            start_ms=None if state.transaction_start_time_ms < 0
            else int(state.transaction_start_time_ms),
            partitions=tuple(java_hash_order(list(dict.fromkeys(partitions)), partition_hash)))

    # -- DescribeProducers -------------------------------------------------------------------

    async def describe_producers(self, partitions: Sequence[TopicPartition],
                                 broker_id: int | None = None,
                                 ) -> dict[TopicPartition, tuple[ProducerInfo, ...]]:
        """The active producers of each partition, from its leader (or from ``broker_id``),
        in the order of Kafka's ``HashMap`` of the results; the first failed partition's
        error is raised."""
        wanted = list(dict.fromkeys(partitions))
        found: dict[TopicPartition, tuple[ProducerInfo, ...]] = {}

        async def attempt() -> None:
            left = [tp for tp in wanted if tp not in found]
            if broker_id is not None:
                targets = {broker_id: left}
                if broker_id not in (await self.brokers.metadata([])).brokers:
                    raise _RetryError(no_node=True)
            else:
                targets, _ = await self._leaders(left)
            for broker, owned in sorted(targets.items()):
                found.update(await self._producers_at(broker, owned, broker_id))
            if len(found) < len(wanted):
                raise _RetryError

        await self._until("describeProducers",
                          "METADATA" if broker_id is None else "DESCRIBE_PRODUCERS", attempt)
        ordered = java_hash_order(java_hash_order(wanted, partition_hash), partition_hash,
                                  initial_capacity=len(wanted))
        return {tp: found[tp] for tp in ordered}

    async def _leaders(self, partitions: Sequence[TopicPartition]
                       ) -> tuple[dict[int, list[TopicPartition]], list[TopicPartition]]:
        """Partitions by leader, as Kafka's ``PartitionLeaderStrategy`` finds them: an
        unknown topic, a missing partition or one with no leader is looked up again; a
        topic Metadata refuses fails its partitions."""
        leaders: dict[int, list[TopicPartition]] = {}
        unmapped: list[TopicPartition] = []
        if not partitions:
            return leaders, unmapped
        topics = sorted({tp.topic for tp in partitions})
        try:
            cluster = await self.brokers.metadata(topics)
        except ApiError as exc:
            tp = partitions[0]
            raise _metadata_error(exc.error, tp) from None
        for tp in partitions:
            leader = _leader_of(cluster, tp)
            if leader is None:
                unmapped.append(tp)
            else:
                leaders.setdefault(leader, []).append(tp)
        return leaders, unmapped

    async def _producers_at(self, broker: int, partitions: Sequence[TopicPartition],
                            asked_broker: int | None,
                            ) -> dict[TopicPartition, tuple[ProducerInfo, ...]]:
        by_topic: dict[str, list[int]] = {}
        for topic, index in partitions:
            by_topic.setdefault(topic, []).append(index)
        answer = await self.brokers.request_to(broker, DescribeProducersRequest(topics=tuple(
            TopicRequest(name=topic, partition_indexes=tuple(indexes))
            for topic, indexes in by_topic.items())))
        found = {}
        for topic in answer.topics:
            for part in topic.partitions:
                tp = TopicPartition(topic.name, part.partition_index)
                if part.error_code == ErrorCode.NONE:
                    found[tp] = tuple(_producer(p) for p in part.active_producers)
                else:
                    _producer_error(tp, ErrorCode(part.error_code), part.error_message,
                                    asked_broker)
        return found

    # -- WriteTxnMarkers ---------------------------------------------------------------------

    async def abort(self, spec: AbortSpec) -> None:
        """An ABORT marker for ``spec`` written by the partition's leader."""
        body = WriteTxnMarkersRequest(markers=(WritableTxnMarker(
            producer_id=spec.producer_id, producer_epoch=spec.producer_epoch,
            transaction_result=False, coordinator_epoch=spec.coordinator_epoch,
            transaction_version=0, topics=(WritableTxnMarkerTopic(
                name=spec.partition.topic, partition_indexes=(spec.partition.partition,)),)),))

        async def attempt() -> None:
            leaders, _ = await self._leaders([spec.partition])
            if not leaders:
                raise _RetryError
            (leader,) = leaders
            answer = await self.brokers.request_to(leader, body)
            _abort_result(spec, answer)

        await self._until("abortTransaction", "METADATA", attempt)

    # -- InitProducerId ----------------------------------------------------------------------

    async def force_terminate(self, transactional_id: str) -> None:
        """Kafka's ``forceTerminateTransaction`` (``fenceProducers`` of one id): InitProducerId
        of the id with no producer id, which bumps its epoch and aborts its open transaction;
        asked again while the coordinator answers CONCURRENT_TRANSACTIONS."""
        body = InitProducerIdRequest(
            transactional_id=transactional_id, transaction_timeout_ms=self.request_timeout_ms,
            producer_id=-1, producer_epoch=-1)
        about = f"InitProducerId request for transactionalId `{transactional_id}` "

        async def attempt() -> None:
            _, answer = await self.coordinators.to_coordinator(
                transactional_id, body,
                lambda a: a.error_code if a.error_code in COORDINATOR_ERRORS else 0,
                key_type=TRANSACTION_KEY)
            error = ErrorCode(answer.error_code)
            if error == ErrorCode.CONCURRENT_TRANSACTIONS:
                raise _RetryError
            if error == ErrorCode.CLUSTER_AUTHORIZATION_FAILED:
                raise ApiError(error, about + "failed due to cluster authorization failure")
            if error == ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED:
                raise ApiError(error, about + "failed due to transactional ID authorization "
                                              "failure")
            if error != ErrorCode.NONE:
                raise ApiError(error, about + "failed due to unexpected error")

        await self._until("fenceProducer", "INIT_PRODUCER_ID", attempt)

    # -- topics ------------------------------------------------------------------------------

    async def topic_names(self) -> list[str]:
        """Every topic, internal ones included (``listTopics`` with ``listInternal``)."""
        return list((await self.brokers.metadata(None)).topics)

    async def replicas(self, topics: Sequence[str]) -> dict[str, dict[int, tuple[int, ...]]]:
        """Each topic's partitions and their replicas (``describeTopics``); a topic that does
        not exist is an error."""
        cluster = await self.brokers.metadata(list(topics))
        if any(t not in cluster.topics for t in topics):
            raise ApiError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None)
        return {t: {p.partition: p.replicas for p in cluster.topics[t].partitions}
                for t in topics}


def _leader_of(cluster: ClusterMetadata, tp: TopicPartition) -> int | None:
    meta = cluster.topics.get(tp.topic)
    part = next((p for p in meta.partitions if p.partition == tp.partition), None) if meta else None
    return None if part is None else part.leader


def _metadata_error(error: ErrorCode, tp: TopicPartition) -> AdminError:
    """Kafka's ``PartitionLeaderStrategy`` failing a partition whose topic Metadata refused."""
    name = tp_name(tp)
    if error == ErrorCode.TOPIC_AUTHORIZATION_FAILED:
        return ApiError(error, f"Failed to fetch metadata for partition {name} due to topic "
                               "authorization failure")
    if error == ErrorCode.INVALID_TOPIC_EXCEPTION:
        return ApiError(error, f"Failed to fetch metadata for partition {name} due to invalid "
                               f"topic `{tp.topic}`")
    if error in (ErrorCode.LEADER_NOT_AVAILABLE, ErrorCode.BROKER_NOT_AVAILABLE):
        raise _RetryError
    return ApiError(error, f"Failed to fetch metadata for partition {name} due to unexpected "
                           f"error for topic `{tp.topic}`")


def _producer(state: Any) -> ProducerInfo:
    return ProducerInfo(
        producer_id=int(state.producer_id), producer_epoch=int(state.producer_epoch),
        last_sequence=int(state.last_sequence), last_timestamp=int(state.last_timestamp),
        coordinator_epoch=None if state.coordinator_epoch < 0 else int(state.coordinator_epoch),
        txn_start_offset=None if state.current_txn_start_offset < 0
        else int(state.current_txn_start_offset))


def _producer_error(tp: TopicPartition, error: ErrorCode, message: str | None,
                    asked_broker: int | None) -> None:
    """Kafka's ``DescribeProducersHandler.handlePartitionError``: retry (leave the partition
    for the next attempt) or raise."""
    name = tp_name(tp)
    if error == ErrorCode.NOT_LEADER_OR_FOLLOWER and asked_broker is not None:
        raise ApiError(error, f"Failed to describe active producers for partition {name} on "
                              f"brokerId {asked_broker}")
    if error in (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION):
        return
    if error == ErrorCode.INVALID_TOPIC_EXCEPTION:
        raise ApiError(error, f"Failed to fetch metadata for partition {name} due to invalid "
                              f"topic error: {message or _message(error)}")
    if error == ErrorCode.TOPIC_AUTHORIZATION_FAILED:
        raise ApiError(error, f"Failed to describe active producers for partition {name} due "
                              f"to authorization failure on topic `{tp.topic}`")
    raise ApiError(error, f"Failed to describe active producers for partition {name} due to "
                          "unexpected error")


def _abort_result(spec: AbortSpec, answer: Any) -> None:
    """Kafka's ``AbortTransactionHandler.handleResponse``: done, retry, or raise."""
    markers = answer.markers
    if len(markers) != 1 or markers[0].producer_id != spec.producer_id:
        raise AdminError(f"WriteTxnMarkers response included unexpected marker entries: "
                         f"{markers}(expected to find exactly one entry with producerId "
                         f"{spec.producer_id})")
    topics = markers[0].topics
    if len(topics) != 1 or topics[0].name != spec.partition.topic:
        raise AdminError(f"WriteTxnMarkers response included unexpected topic entries: "
                         f"{markers}(expected to find exactly one entry with topic partition "
                         f"{tp_name(spec.partition)})")
    parts = topics[0].partitions
    if len(parts) != 1 or parts[0].partition_index != spec.partition.partition:
        raise AdminError(f"WriteTxnMarkers response included unexpected partition entries for "
                         f"topic {spec.partition.topic}: {markers}(expected to find exactly "
                         f"one entry with partition {spec.partition.partition})")
    error = ErrorCode(parts[0].error_code)
    request = f"WriteTxnMarkers request with {spec}"
    if error == ErrorCode.NONE:
        return
    if error in (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.REPLICA_NOT_AVAILABLE,
                 ErrorCode.BROKER_NOT_AVAILABLE, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION):
        raise _RetryError
    if error == ErrorCode.CLUSTER_AUTHORIZATION_FAILED:
        raise ApiError(error, f"{request} failed due to cluster authorization error")
    if error == ErrorCode.INVALID_PRODUCER_EPOCH:
        raise ApiError(error, f"{request} failed due an invalid producer epoch")
    if error == ErrorCode.TRANSACTION_COORDINATOR_FENCED:
        raise ApiError(error, f"{request} failed since the provided coordinator epoch "
                              f"{spec.coordinator_epoch} has been fenced by the active "
                              "coordinator")
    raise ApiError(error, f"{request} failed due to unexpected error: {_message(error)}")


def as_mapping(described: Mapping[str, TxnDescription | AdminError]
               ) -> dict[str, TxnDescription | None]:
    """``find-hanging``'s view of descriptions: an id its coordinator does not know is None;
    any other error is raised."""
    out: dict[str, TxnDescription | None] = {}
    for transactional_id, result in described.items():
        if isinstance(result, ApiError) and result.error == ErrorCode.TRANSACTIONAL_ID_NOT_FOUND:
            out[transactional_id] = None
        elif isinstance(result, AdminError):
            raise result
        else:
            out[transactional_id] = result
    return out
