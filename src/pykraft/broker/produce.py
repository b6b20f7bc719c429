"""Produce (API 0, v3-v13) on the leader: Kafka's ``KafkaApis.handleProduceRequest`` with
``ReplicaManager.appendRecords`` and the delayed produce of acks=all.

Interface::

    handler = ProduceHandler(replicas, clock_ms, listener_name)
    response = await handler.handle(request_body, api_version=v, client_id=...)
    # request_body: the generated ProduceRequest as version v came (v13 names topics by id,
    # KIP-516) -> the ProduceResponse to encode at v, or None for acks=0 (no response); an
    # acks=0 request with a failed partition raises AcksZeroFailedError: close the
    # connection, as Kafka does

Order of checks, as Kafka: transactional records (a partition's first batch has the
transactional bit) without a transactional id the session may WRITE are refused for every
partition (TRANSACTIONAL_ID_AUTHORIZATION_FAILED), then per partition: a topic id unknown
to the image (v13+: UNKNOWN_TOPIC_ID), a topic or partition unknown to the image,
``acks`` not in {-1, 0, 1} (INVALID_REQUIRED_ACKS), not the leader (with the current leader and,
from v10, its endpoint: KIP-951), validation (record_errors and error_message from v8), the
producer state (duplicates answered with their original offsets), the append. Before any
of that, each led partition whose first batch is transactional has its transaction
verified with the transaction's coordinator, unless its producer has it ongoing there
(KIP-890, ``transaction.partition.verification.enable``; from v12 the coordinator adds the
partition): a refused partition is not appended, and an append whose transaction a marker
ended meanwhile is INVALID_TXN_STATE.

acks=all waits for each appended partition's high watermark to pass its batch
(:mod:`pykraft.broker.acks_all`): a delayed operation in the broker's Produce purgatory,
checked on each change of its partitions (appends, follower fetches that move the high
watermark, ISR changes, leadership moves) ahead of the parked fetches; with ISR == {leader}
that is at once. When the ISR shrank under
min.insync.replicas meanwhile the answer is NOT_ENOUGH_REPLICAS_AFTER_APPEND; when followers
do not keep up it is REQUEST_TIMED_OUT after ``timeout_ms`` (the batch stays in the log).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass

from pykraft.broker.acks_all import await_acks_all
from pykraft.broker.replica_manager import HostedPartition, PartitionError, ReplicaManager
from pykraft.broker.txn_verification import Operation, TxnVerifier
from pykraft.errors import PyKraftError, StorageError
from pykraft.ids import TopicPartition
from pykraft.image.image import MetadataImage
from pykraft.log.producer_state import ProducerStateError, Verified
from pykraft.log.validator import ProduceValidationError
from pykraft.messages.kafka.produce_request import PartitionProduceData, ProduceRequest
from pykraft.messages.kafka.produce_response import (
    BatchIndexAndErrorMessage,
    LeaderIdAndEpoch,
    NodeEndpoint,
    PartitionProduceResponse,
    ProduceResponse,
    TopicProduceResponse,
)
from pykraft.protocol.errors import ErrorCode
from pykraft.records.batch import (
    BatchHeader,
    first_batch_is_transactional,
    records_field,
    unpack_header,
)
from pykraft.runtime.codec_thread import off_loop_if_large
from pykraft.runtime.turns import Turns
from pykraft.storage.partition_log import RecordBatchTooLargeError

VALID_ACKS = (-1, 0, 1)
log = logging.getLogger(__name__)
_FIRST_STORAGE_ERROR_VERSION = 4  # older clients get NOT_LEADER_OR_FOLLOWER instead
FIRST_TOPIC_ID_VERSION = 13  # KIP-516: topics by id (Kafka 4.1)
FIRST_LEADER_HINT_VERSION = 10  # KIP-951: current leader and its endpoint
#: Append refusals Kafka does not count as failed produce requests (its "known" exceptions;
#: FailedProduceRequestsPerSec is for a refused batch or an unexpected failure).
_EXPECTED_PRODUCE_ERRORS = frozenset({
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.NOT_LEADER_OR_FOLLOWER,
    ErrorCode.MESSAGE_TOO_LARGE, ErrorCode.RECORD_LIST_TOO_LARGE, ErrorCode.CORRUPT_MESSAGE,
    ErrorCode.KAFKA_STORAGE_ERROR, ErrorCode.INVALID_TOPIC_EXCEPTION})


@dataclass(slots=True)
class _Outcome:
    """One partition's answer while it is being built."""

    index: int
    error: ErrorCode = ErrorCode.NONE
    base_offset: int = -1
    log_append_time_ms: int = -1
    log_start_offset: int = -1
    message: str | None = None
    record_errors: tuple[BatchIndexAndErrorMessage, ...] = ()
    leader: tuple[int, int] | None = None  # (id, epoch) hint on NOT_LEADER_OR_FOLLOWER
    waiting: tuple[HostedPartition, int] | None = None  # acks=all: (partition, offset)
    appended: int = 0  # records (offsets) appended, a duplicate's too: Kafka's numMessages


class AcksZeroFailedError(PyKraftError):
    """An acks=0 produce had a failed partition: Kafka closes the connection, the only
    way the client can notice."""


class ProduceHandler:
    """Answers Produce requests against a :class:`ReplicaManager`."""

    def __init__(self, replicas: ReplicaManager, clock_ms: Callable[[], int],
                 listener_name: str, verifier: TxnVerifier | None = None) -> None:
        self._replicas = replicas
        self._clock_ms = clock_ms
        self._listener = listener_name
        self._verifier = verifier

    async def handle(self, request: ProduceRequest, *, api_version: int,
                     client_id: str | None = None,
                     denied: frozenset[object] = frozenset(),
                     transactional_id_allowed: bool = True) -> ProduceResponse | None:
        """The answer (None for acks=0); TOPIC_AUTHORIZATION_FAILED for ``denied`` topics
        (names, or ids from v13); ``transactional_id_allowed``: the session may WRITE on the
        request's transactional id."""
        by_id = api_version >= FIRST_TOPIC_ID_VERSION
        acks = request.acks
        transactional = has_transactional_records(request) and (
            request.transactional_id is None or not transactional_id_allowed)
        verifications = {} if transactional else await self._verify(request, api_version)
        topics: list[tuple[str | uuid.UUID, list[_Outcome]]] = []
        # The loop runs between partitions once a turn has lasted its budget: five 100 MB
        # requests at once, or one naming 13,000 partitions, held it for seconds, and
        # heartbeats and followers' fetches waited behind them.
        turns = Turns()
        for topic in request.topic_data:
            key: str | uuid.UUID = topic.topic_id if by_id else topic.name
            name = self._name_of(topic.topic_id) if by_id else topic.name
            outcomes = []
            for part in topic.partition_data:
                await turns.pause()
                if name is None:
                    outcomes.append(_Outcome(part.index, ErrorCode.UNKNOWN_TOPIC_ID))
                elif key in denied:
                    outcomes.append(_Outcome(part.index, ErrorCode.TOPIC_AUTHORIZATION_FAILED))
                else:
                    outcomes.append(await self._partition(
                        name, part, acks, api_version, client_id, transactional,
                        verifications.get((name, part.index))))
            topics.append((key, outcomes))
        if acks == 0:
            failed = [f"{name}-{o.index}: {o.error.name}" for name, outs in topics
                      for o in outs if o.error != ErrorCode.NONE]
            if failed:
                raise AcksZeroFailedError(f"acks=0 produce failed: {', '.join(failed)}")
            return None
        if acks == -1:
            await await_acks_all(self._replicas, [o for _, outs in topics for o in outs],
                                 request.timeout_ms)
        image = self._replicas.image  # all the answer reads besides the outcomes
        return await off_loop_if_large(lambda: self._response(topics, image, api_version))

    def refused(self, request: ProduceRequest, *, api_version: int,
                code: ErrorCode) -> ProduceResponse | None:
        """Kafka's ``ProduceRequest.getErrorResponse``, for a request whose handling failed:
        every partition answered with ``code``, so the client settles each one (an answer
        naming none settles none); None for acks=0, which Kafka answers by closing."""
        if request.acks == 0:
            return None
        by_id = api_version >= FIRST_TOPIC_ID_VERSION
        return self._response([(
            topic.topic_id if by_id else topic.name,
            [_Outcome(part.index, code) for part in topic.partition_data])
            for topic in request.topic_data], self._replicas.image, api_version)

    def _name_of(self, topic_id: uuid.UUID) -> str | None:
        """The image's name for a v13+ topic id (None: unknown, UNKNOWN_TOPIC_ID)."""
        found = self._replicas.image.topics.by_id.get(topic_id)
        return None if found is None else found.name

    async def _verify(self, request: ProduceRequest, api_version: int
                      ) -> dict[tuple[str, int], Verified | _Refusal]:
        """Each partition this broker leads whose first batch is transactional, verified
        with the transaction's coordinator (KIP-890; from v12 added to the transaction),
        unless its producer has the transaction ongoing there: what its append must hold,
        or why it is refused (Kafka's ``handleProduceAppend``)."""
        verifier = self._verifier
        transactional_id = request.transactional_id
        operation = Operation.of_produce(api_version)
        if verifier is None or transactional_id is None or not verifier.applies(operation):
            return {}
        by_id = api_version >= FIRST_TOPIC_ID_VERSION
        batches: dict[tuple[str, int], tuple[HostedPartition, BatchHeader]] = {}
        for topic in request.topic_data:
            name = self._name_of(topic.topic_id) if by_id else topic.name
            for part in topic.partition_data:
                records = records_field(part.records)
                if name is None or not first_batch_is_transactional(records):
                    continue
                try:
                    hosted = self._replicas.partition_for(name, part.index)
                except PartitionError:
                    continue  # the append answers it
                batches[(name, part.index)] = (hosted, unpack_header(records))
        producers = {(h.producer_id, h.producer_epoch) for _, h in batches.values()}
        if len(producers) > 1:  # Kafka's InvalidPidMappingException
            return dict.fromkeys(batches, _Refusal(
                ErrorCode.INVALID_PRODUCER_ID_MAPPING,
                "Transactional records contained more than one producer ID"))
        if not batches:
            return {}
        ((producer_id, epoch),) = producers
        guards = {key: hosted.producer_state.start_verification(producer_id, epoch)
                  for key, (hosted, _) in batches.items()}
        asked = [TopicPartition(*key) for key, guard in guards.items() if guard is not None]
        errors = await verifier.verify(transactional_id, producer_id, epoch, asked,
                                       operation) if asked else {}
        found: dict[tuple[str, int], Verified | _Refusal] = {}
        for key, guard in guards.items():
            error = errors.get(TopicPartition(*key))
            if error is None:
                found[key] = Verified(guard, checked=True)
                continue
            if guard is not None:
                batches[key][0].producer_state.end_verification(guard)
            found[key] = _produce_refusal(error, operation)
        return found

    async def _partition(self, topic: str, part: PartitionProduceData, acks: int,
                         api_version: int, client_id: str | None, refused: bool,
                         verification: Verified | _Refusal | None) -> _Outcome:
        outcome = _Outcome(part.index)
        if refused:
            outcome.error = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
            return outcome
        if isinstance(verification, _Refusal):
            outcome.error, outcome.message = verification.error, verification.message
            return outcome
        stats = self._replicas.topic_stats
        if self._replicas.registration(topic, outcome.index) is None:
            outcome.error = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            stats.produce_failed(topic, unexpected=False)
            return outcome
        if acks not in VALID_ACKS:  # refused before any append, as Kafka's (no metrics)
            outcome.error = ErrorCode.INVALID_REQUIRED_ACKS
            return outcome
        records = records_field(part.records)
        outcome = await self._append(topic, outcome, records, acks, api_version, client_id,
                                     verification)
        if outcome.error == ErrorCode.NONE:
            stats.produced(topic, len(records), outcome.appended)
        else:  # Kafka's failed produce: a refused batch or an unexpected error only
            stats.produce_failed(
                topic, unexpected=outcome.error not in _EXPECTED_PRODUCE_ERRORS,
                rejected_bytes=len(records) if outcome.error == ErrorCode.MESSAGE_TOO_LARGE
                else 0)
        return outcome

    async def _append(self, topic: str, outcome: _Outcome, records: bytes, acks: int,
                      api_version: int, client_id: str | None,
                      verification: Verified | None) -> _Outcome:
        """The append of a partition's records this broker hosts, as ``outcome``."""
        try:
            hosted = self._replicas.partition_for(topic, outcome.index)
            result = await self._replicas.produce_records(
                hosted, records, acks=acks, api_version=api_version,
                now_ms=self._clock_ms(), client_id=client_id, verified=verification)
        except PartitionError as exc:
            outcome.error = exc.error_code
            if exc.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER:
                outcome.leader = (exc.leader_id, exc.leader_epoch)
            return outcome
        except ProduceValidationError as exc:
            log.debug("%s-%d: produce refused: %s", topic, outcome.index, exc.message)
            outcome.error = exc.error_code
            if exc.record_errors:
                outcome.message = exc.message
                outcome.record_errors = tuple(
                    BatchIndexAndErrorMessage(batch_index=e.batch_index,
                                              batch_index_error_message=e.message)
                    for e in exc.record_errors)
            return outcome
        except ProducerStateError as exc:
            outcome.error = exc.error_code
            return outcome
        except RecordBatchTooLargeError:
            outcome.error = ErrorCode.RECORD_LIST_TOO_LARGE
            return outcome
        except StorageError:
            outcome.error = (ErrorCode.KAFKA_STORAGE_ERROR
                             if api_version >= _FIRST_STORAGE_ERROR_VERSION
                             else ErrorCode.NOT_LEADER_OR_FOLLOWER)
            return outcome
        outcome.base_offset = result.base_offset
        outcome.appended = result.last_offset - result.base_offset + 1
        outcome.log_append_time_ms = result.log_append_time_ms
        outcome.log_start_offset = result.log_start_offset
        if acks == -1:
            outcome.waiting = (hosted, result.last_offset + 1)
        return outcome

    def _response(self, topics: list[tuple[str | uuid.UUID, list[_Outcome]]],
                  image: MetadataImage, version: int) -> ProduceResponse:
        """The answer at ``version``, its topics named as the request named them (by id
        from v13), with the leader hints from v10 only (older versions lack the fields, as
        Kafka's handler fills them); pure (a large one is built off the loop: 13,000
        partitions' answers took 0.2 s)."""
        hints = version >= FIRST_LEADER_HINT_VERSION
        leaders = sorted({o.leader[0] for _, outs in topics for o in outs
                          if hints and o.leader is not None and o.leader[0] >= 0})
        return ProduceResponse(
            responses=tuple(_topic_response(key, outs, hints) for key, outs in topics),
            node_endpoints=self._endpoints(leaders, image))

    def _endpoints(self, leaders: list[int], image: MetadataImage
                   ) -> tuple[NodeEndpoint, ...]:
        if not leaders:
            return ()
        brokers = image.cluster.brokers
        found = []
        for leader in leaders:
            broker = brokers.get(leader)
            if broker is None:
                continue
            endpoint = next((e for e in broker.listeners if e.name == self._listener), None)
            if endpoint is not None:
                found.append(NodeEndpoint(node_id=leader, host=endpoint.host,
                                          port=endpoint.port, rack=broker.rack))
        return tuple(found)


def _topic_response(key: str | uuid.UUID, outcomes: list[_Outcome],
                    hints: bool) -> TopicProduceResponse:
    """A topic's answer, named as the request named it (by id from v13)."""
    partitions = tuple(_partition_response(o, hints) for o in outcomes)
    if isinstance(key, uuid.UUID):
        return TopicProduceResponse(topic_id=key, partition_responses=partitions)
    return TopicProduceResponse(name=key, partition_responses=partitions)


def _partition_response(outcome: _Outcome, hints: bool) -> PartitionProduceResponse:
    leader = (outcome.leader if hints else None) or (-1, -1)
    return PartitionProduceResponse(
        index=outcome.index, error_code=outcome.error, base_offset=outcome.base_offset,
        log_append_time_ms=outcome.log_append_time_ms,
        log_start_offset=outcome.log_start_offset, record_errors=outcome.record_errors,
        error_message=outcome.message,
        current_leader=LeaderIdAndEpoch(leader_id=leader[0], leader_epoch=leader[1]))


@dataclass(frozen=True, slots=True)
class _Refusal:
    """A partition whose transaction could not be verified: its error and message."""

    error: ErrorCode
    message: str | None


#: Verification failures older clients would not retry: NOT_ENOUGH_REPLICAS instead, which
#: they retry without refreshing metadata (Kafka's ``handleProduceAppend``).
_RETRIED_AS_NOT_ENOUGH_REPLICAS = frozenset({
    ErrorCode.NETWORK_EXCEPTION, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
    ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.NOT_COORDINATOR})


def _produce_refusal(error: ErrorCode, operation: Operation) -> _Refusal:
    """A verification error as Produce answers it: INVALID_TXN_STATE with Kafka's message,
    the coordinator's transient errors (CONCURRENT_TRANSACTIONS too, before transaction
    version 2) as NOT_ENOUGH_REPLICAS naming the error, the rest as they are."""
    if error == ErrorCode.INVALID_TXN_STATE:
        return _Refusal(error, "Partition was not added to the transaction")
    if error in _RETRIED_AS_NOT_ENOUGH_REPLICAS or (
            error == ErrorCode.CONCURRENT_TRANSACTIONS
            and operation is not Operation.ADD_PARTITION):
        return _Refusal(ErrorCode.NOT_ENOUGH_REPLICAS,
                        "Unable to verify the partition has been added to the transaction. "
                        f"Underlying error: {error.name}")
    return _Refusal(error, None)


def has_transactional_records(request: ProduceRequest) -> bool:
    """Kafka's ``ProduceRequest.hasTransactionalRecords``: a partition whose first batch
    is transactional."""
    for topic in request.topic_data:
        for part in topic.partition_data:
            if first_batch_is_transactional(records_field(part.records)):
                return True
    return False
