"""Transactions left open on a running cluster (Kafka's or pykraft's), for the tests of
``pykraft transactions`` (kafka-transactions.sh) and of Kafka's own tool against pykraft.

Interface (``bootstrap`` is one broker's ``host:port``; every call is one short session)::

    opened = open_transaction(bootstrap, "txns", 0, "tx-open", timeout_ms=600_000)
    hanging = hanging_transaction(bootstrap, "txns", 1)
    # each an OpenTransaction: producer id and epoch, the offset of its first record

:func:`open_transaction` is a well-behaved transactional producer that stops before ending its
transaction: InitProducerId of its transactional id at the id's coordinator, AddPartitionsToTxn
(a client's v3), then one transactional batch to the partition's leader; the coordinator knows
it (``describe`` shows it Ongoing with the partition) and aborts it after ``timeout_ms``.

:func:`hanging_transaction` is what ``find-hanging`` looks for: a transactional batch from an
idempotent producer id (InitProducerId without a transactional id) that no coordinator knows,
so no coordinator will ever end it. A partition leader takes it only when it does not ask the
coordinator first: the cluster runs with ``transaction.partition.verification.enable=false``
(:data:`UNVERIFIED`) and the batch goes in Produce v11 (from v12, a transaction version 2
client's, the leader asks the coordinator whatever that setting says).
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Any

from pykraft.messages.kafka.add_partitions_to_txn_request import (
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnTopic,
)
from pykraft.messages.kafka.find_coordinator_request import FindCoordinatorRequest
from pykraft.messages.kafka.init_producer_id_request import InitProducerIdRequest
from pykraft.messages.kafka.metadata_request import MetadataRequest, MetadataRequestTopic
from pykraft.messages.kafka.produce_request import (
    PartitionProduceData,
    ProduceRequest,
    TopicProduceData,
)
from pykraft.protocol.api_versions import listener_ranges
from pykraft.protocol.apis import ApiKey, Listener
from pykraft.records.batch import encode_batch
from pykraft.runtime.kafka_client import ClientConnection, open_with_timeout

#: the broker setting under which a leader takes :func:`hanging_transaction`'s batch
UNVERIFIED = {"transaction.partition.verification.enable": "false"}
#: what a transactional client of transaction version 1 speaks: Produce before v12 (no
#: partition added by the leader), AddPartitionsToTxn before v4 (v4+ are the brokers')
_CLIENT_RANGES = {**listener_ranges(Listener.BROKER), ApiKey.PRODUCE: (3, 11),
                  ApiKey.ADD_PARTITIONS_TO_TXN: (0, 3)}
_TIMEOUT_S = 30.0
_RETRY_S = 0.2
_TRANSACTION_KEY = 1
#: the answers to wait out: the coordinator or the partition is still being set up
_RETRIABLE = {3, 5, 6, 14, 15, 16}  # UNKNOWN_TOPIC_OR_PARTITION, LEADER_NOT_AVAILABLE,
# NOT_LEADER_OR_FOLLOWER, COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE,
# NOT_COORDINATOR


@dataclass(frozen=True, slots=True)
class OpenTransaction:
    producer_id: int
    producer_epoch: int
    first_offset: int


def open_transaction(bootstrap: str, topic: str, partition: int, transactional_id: str, *,
                     timeout_ms: int) -> OpenTransaction:
    """An ongoing transaction of ``transactional_id`` with one record in the partition."""
    return asyncio.run(_open(bootstrap, topic, partition, transactional_id, timeout_ms))


def hanging_transaction(bootstrap: str, topic: str, partition: int,
                        transactional_id: str = "no-coordinator-knows") -> OpenTransaction:
    """A transactional record whose producer id no coordinator knows (see the module)."""
    return asyncio.run(_hanging(bootstrap, topic, partition, transactional_id))


async def _connect(address: str) -> ClientConnection:
    host, _, port = address.rpartition(":")
    return await open_with_timeout(host, int(port), client_id="open-transactions",
                                   ours=_CLIENT_RANGES, timeout_s=_TIMEOUT_S)


async def _until(attempt: Any, code_of: Any, what: str) -> Any:
    """``attempt()``'s answer once ``code_of`` it is not a retriable code (bounded)."""
    deadline = time.monotonic() + _TIMEOUT_S
    while True:
        answer = await attempt()
        code = code_of(answer)
        if code == 0:
            return answer
        if code not in _RETRIABLE or time.monotonic() > deadline:
            raise AssertionError(f"{what} failed with error code {code}: {answer}")
        await asyncio.sleep(_RETRY_S)


async def _broker(bootstrap: ClientConnection, node_id: int) -> str:
    answer = await bootstrap.request(MetadataRequest(topics=(), allow_auto_topic_creation=False))
    found = next(b for b in answer.brokers if b.node_id == node_id)
    return f"{found.host}:{found.port}"


async def _leader(bootstrap: ClientConnection, topic: str, partition: int) -> str:
    async def attempt() -> Any:
        return await bootstrap.request(MetadataRequest(
            topics=(MetadataRequestTopic(name=topic),), allow_auto_topic_creation=False))

    def code(answer: Any) -> int:
        found = answer.topics[0]
        if found.error_code:
            return int(found.error_code)
        part = next((p for p in found.partitions if p.partition_index == partition), None)
        return 3 if part is None else 5 if part.leader_id < 0 else int(part.error_code)

    answer = await _until(attempt, code, f"Metadata of {topic}")
    leader = next(p.leader_id for p in answer.topics[0].partitions
                  if p.partition_index == partition)
    return await _broker(bootstrap, leader)


async def _produce(leader: str, topic: str, partition: int, transactional_id: str,
                   producer_id: int, epoch: int) -> int:
    batch = encode_batch(0, [(b"key", b"left open")], partition_leader_epoch=-1,
                         timestamp=int(time.time() * 1000), base_sequence=0,
                         producer_id=producer_id, producer_epoch=epoch, transactional=True)
    connection = await _connect(leader)
    try:
        answer = await _until(lambda: connection.request(ProduceRequest(
            transactional_id=transactional_id, acks=-1, timeout_ms=30_000,
            topic_data=(TopicProduceData(name=topic, partition_data=(
                PartitionProduceData(index=partition, records=batch),)),))),
            lambda a: int(a.responses[0].partition_responses[0].error_code),
            f"Produce to {topic}-{partition}")
    finally:
        connection.close()
    return int(answer.responses[0].partition_responses[0].base_offset)


async def _open(bootstrap: str, topic: str, partition: int, transactional_id: str,
                timeout_ms: int) -> OpenTransaction:
    first = await _connect(bootstrap)
    try:
        found = await _until(lambda: first.request(FindCoordinatorRequest(
            key_type=_TRANSACTION_KEY, coordinator_keys=(transactional_id,))),
            lambda a: int(a.coordinators[0].error_code), "FindCoordinator")
        coordinator = await _broker(first, int(found.coordinators[0].node_id))
        leader = await _leader(first, topic, partition)
    finally:
        first.close()
    connection = await _connect(coordinator)
    try:
        init = await _until(lambda: connection.request(InitProducerIdRequest(
            transactional_id=transactional_id, transaction_timeout_ms=timeout_ms)),
            lambda a: int(a.error_code), "InitProducerId")
        producer_id, epoch = int(init.producer_id), int(init.producer_epoch)
        await _until(lambda: connection.request(AddPartitionsToTxnRequest(
            v3_and_below_transactional_id=transactional_id,
            v3_and_below_producer_id=producer_id, v3_and_below_producer_epoch=epoch,
            v3_and_below_topics=(AddPartitionsToTxnTopic(name=topic, partitions=(partition,)),))),
            lambda a: int(a.results_by_topic_v3_and_below[0].results_by_partition[0]
                          .partition_error_code), "AddPartitionsToTxn")
    finally:
        connection.close()
    offset = await _produce(leader, topic, partition, transactional_id, producer_id, epoch)
    return OpenTransaction(producer_id, epoch, offset)


async def _hanging(bootstrap: str, topic: str, partition: int,
                   transactional_id: str) -> OpenTransaction:
    first = await _connect(bootstrap)
    try:
        init = await _until(lambda: first.request(InitProducerIdRequest(
            transactional_id=None, transaction_timeout_ms=60_000)),
            lambda a: int(a.error_code), "InitProducerId")
        leader = await _leader(first, topic, partition)
    finally:
        first.close()
    producer_id, epoch = int(init.producer_id), int(init.producer_epoch)
    offset = await _produce(leader, topic, partition, transactional_id, producer_id, epoch)
    return OpenTransaction(producer_id, epoch, offset)
