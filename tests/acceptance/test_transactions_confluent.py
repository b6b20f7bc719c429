"""Transactions through librdkafka (confluent-kafka) on a 1-controller + 2-broker cluster:
commit and abort as read_committed and read_uncommitted consumers see them, a zombie fenced
by a new producer with its transactional id, the coordinator's view through
DescribeTransactions and ListTransactions, and a consume-transform-produce loop whose
consumed offsets commit with its transaction (``send_offsets_to_transaction``)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from broker_harness import PROPERTIES, broker_call, create_topic, running_cluster
from txn_clients import TIMEOUT_S, TOPIC, consumed, group_stable_offsets, producer

from pykraft.messages.kafka.describe_transactions_request import DescribeTransactionsRequest
from pykraft.messages.kafka.find_coordinator_request import FindCoordinatorRequest
from pykraft.messages.kafka.list_transactions_request import ListTransactionsRequest
from pykraft.tools.local_cluster import LocalCluster

SOURCE, SINK = "ctp-in", "ctp-out"
PROPS = {**PROPERTIES, "transaction.state.log.num.partitions": "3",
         "offsets.topic.replication.factor": "1", "offsets.topic.num.partitions": "3",
         # the coordinator looks for transactions past their timeout every 200 ms
         "transaction.abort.timed.out.transaction.cleanup.interval.ms": "200"}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with running_cluster(tmp_path_factory.mktemp("txn") / "cluster", PROPS,
                         brokers=2) as made:
        create_topic(made.bootstrap_servers, TOPIC, 4, replication=2)
        create_topic(made.bootstrap_servers, SOURCE, 2, replication=2)
        create_topic(made.bootstrap_servers, SINK, 2, replication=2)
        yield made


def test_committed_records_are_read_and_aborted_ones_are_not(cluster: LocalCluster) -> None:
    made = producer(cluster, "writer")
    made.begin_transaction()
    for i in range(10):
        made.produce(TOPIC, f"committed-{i}".encode(), partition=i % 4)
    made.commit_transaction(TIMEOUT_S)
    made.begin_transaction()
    for i in range(5):
        made.produce(TOPIC, f"aborted-{i}".encode(), partition=i % 4)
    made.flush(TIMEOUT_S)  # in the log, then aborted
    made.abort_transaction(TIMEOUT_S)
    committed = consumed(cluster, "read_committed", 10)
    assert sorted(committed) == sorted(f"committed-{i}".encode() for i in range(10))
    everything = consumed(cluster, "read_uncommitted", 15)
    assert sorted(v for v in everything if v.startswith(b"aborted")) == sorted(
        f"aborted-{i}".encode() for i in range(5))


def test_a_new_producer_fences_the_old_one(cluster: LocalCluster) -> None:
    import confluent_kafka

    zombie = producer(cluster, "fenced")
    zombie.begin_transaction()
    zombie.produce(TOPIC, b"zombie", partition=0)
    zombie.flush(TIMEOUT_S)
    successor = producer(cluster, "fenced")  # aborts the zombie's open transaction
    with pytest.raises(confluent_kafka.KafkaException) as raised:
        zombie.commit_transaction(TIMEOUT_S)
    assert raised.value.args[0].fatal()
    successor.begin_transaction()
    successor.produce(TOPIC, b"successor", partition=0)
    successor.commit_transaction(TIMEOUT_S)
    committed = consumed(cluster, "read_committed", 1)
    assert b"successor" in committed and b"zombie" not in committed


def test_the_coordinator_describes_and_lists_its_transactions(cluster: LocalCluster) -> None:
    made = producer(cluster, "described")
    made.begin_transaction()
    made.produce(TOPIC, b"open", partition=1)
    made.flush(TIMEOUT_S)
    try:
        listed = {}
        for broker_id in cluster.brokers:  # each broker lists the ids it coordinates
            answer = broker_call(cluster, broker_id, ListTransactionsRequest(
                state_filters=("Ongoing",), producer_id_filters=()))
            assert answer.error_code == 0
            listed.update({t.transactional_id: broker_id for t in answer.transaction_states})
        assert "described" in listed
        (state,) = broker_call(cluster, listed["described"], DescribeTransactionsRequest(
            transactional_ids=("described",))).transaction_states
        assert (state.error_code, state.transaction_state) == (0, "Ongoing")
        assert [(t.topic, tuple(t.partitions)) for t in state.topics] == [(TOPIC, (1,))]
    finally:
        made.abort_transaction(TIMEOUT_S)


def stable_offsets(cluster: LocalCluster, group: str) -> dict[int, tuple[str, int]]:
    found: dict[int, tuple[str, int]] = group_stable_offsets(cluster, group, SOURCE, 2)
    return found


def test_consumed_offsets_commit_with_the_transaction_and_only_then(
        cluster: LocalCluster) -> None:
    """A group member reads SOURCE, writes each value upper-cased to SINK and sends its
    position in the same transaction: aborted, nothing is committed and the group reads
    again from the start; while the second transaction is open its offsets are unstable;
    committed, the offsets and the output appear together, exactly once."""
    import confluent_kafka

    source = confluent_kafka.Producer({"bootstrap.servers": cluster.bootstrap_servers,
                                       "log_level": 0})
    for i in range(20):
        source.produce(SOURCE, f"value-{i}".encode(), partition=i % 2)
    assert source.flush(TIMEOUT_S) == 0
    writer = producer(cluster, "transformer")
    group = "transformers"

    def transform() -> Any:
        """Join the group, read all 20 values and write them inside a new transaction
        with the consumer's position; returns the consumer (the transaction still open)."""
        consumer = confluent_kafka.Consumer({
            "bootstrap.servers": cluster.bootstrap_servers, "group.id": group,
            "auto.offset.reset": "earliest", "enable.auto.commit": False,
            "isolation.level": "read_committed", "log_level": 0})
        consumer.subscribe([SOURCE])
        writer.begin_transaction()
        read = 0
        for _ in range(600):  # bounded: each poll waits at most 0.1 s
            message = consumer.poll(0.1)
            if message is None or message.error() is not None:
                continue
            value = message.value()
            assert value is not None
            writer.produce(SINK, value.upper(), partition=message.partition())
            read += 1
            if read == 20:
                break
        assert read == 20
        writer.send_offsets_to_transaction(
            consumer.position(consumer.assignment()), consumer.consumer_group_metadata(),
            TIMEOUT_S)
        return consumer

    first = transform()
    writer.abort_transaction(TIMEOUT_S)
    first.close()
    assert stable_offsets(cluster, group) == {0: ("NONE", -1), 1: ("NONE", -1)}

    second = transform()  # starts from the beginning again: nothing was committed
    assert stable_offsets(cluster, group) == {
        0: ("UNSTABLE_OFFSET_COMMIT", -1), 1: ("UNSTABLE_OFFSET_COMMIT", -1)}
    writer.commit_transaction(TIMEOUT_S)
    second.close()
    assert stable_offsets(cluster, group) == {0: ("NONE", 10), 1: ("NONE", 10)}
    output = consumed(cluster, "read_committed", 20, topic=SINK, partitions=2)
    assert sorted(output) == sorted(f"VALUE-{i}".encode() for i in range(20))


def test_a_hung_transaction_is_aborted_at_its_timeout(cluster: LocalCluster) -> None:
    """A producer that stops mid-transaction: its coordinator aborts the transaction once
    ``transaction.timeout.ms`` passes (bumping the epoch, which fences the producer), so the
    records never become visible and the partition's last stable offset moves on."""
    import confluent_kafka

    hung = producer(cluster, "hung", **{"transaction.timeout.ms": 1000})
    hung.begin_transaction()
    hung.produce(TOPIC, b"hung", partition=3)
    hung.flush(TIMEOUT_S)
    after = producer(cluster, "after-hung")  # its commit lands behind the hung records
    after.begin_transaction()
    after.produce(TOPIC, b"after-hung", partition=3)
    after.commit_transaction(TIMEOUT_S)
    deadline = time.monotonic() + TIMEOUT_S  # until the abort moves the LSO past "hung"
    while b"after-hung" not in (committed := consumed(cluster, "read_committed", 1)):
        assert time.monotonic() < deadline, "the hung transaction was never aborted"
    assert b"hung" not in committed
    (state,) = broker_call(cluster, _coordinator_of(cluster, "hung"),
                          DescribeTransactionsRequest(transactional_ids=("hung",))
                          ).transaction_states
    assert state.transaction_state == "CompleteAbort"
    with pytest.raises(confluent_kafka.KafkaException):
        hung.commit_transaction(TIMEOUT_S)


def _coordinator_of(cluster: LocalCluster, transactional_id: str) -> int:
    (found,) = broker_call(cluster, next(iter(cluster.brokers)), FindCoordinatorRequest(
        key_type=1, coordinator_keys=(transactional_id,))).coordinators
    return int(found.node_id)
