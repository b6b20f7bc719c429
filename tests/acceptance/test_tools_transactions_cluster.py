"""``pykraft transactions`` (kafka-transactions.sh) on a 1-controller + 2-broker pykraft
cluster: a confluent-kafka producer's open transaction listed and described at its
coordinator, its producers described at the leader and at the follower replica, a hanging
transaction (a producer id no coordinator knows, tests/open_transactions.py) found by broker
and by topic, then aborted by its start offset, and the open transaction force-terminated,
which fences the producer."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from broker_harness import PROPERTIES, create_topic, partition_state, running_cluster
from process_harness import wait_for
from typer.testing import CliRunner

from open_transactions import UNVERIFIED, OpenTransaction, hanging_transaction
from pykraft.cli.main import app
from pykraft.tools.local_cluster import LocalCluster

TOPIC = "audited"
TRANSACTIONAL_ID = "auditor"
PROPS = {**PROPERTIES, **UNVERIFIED, "transaction.state.log.num.partitions": "3",
         "offsets.topic.num.partitions": "3"}
TIMEOUT_S = 30


class Cluster:
    """The running cluster, the open transaction's producer and the hanging transaction."""

    def __init__(self, cluster: LocalCluster, producer: Any, hanging: OpenTransaction) -> None:
        self.cluster = cluster
        self.producer = producer
        self.hanging = hanging


def transactions(cluster: LocalCluster, *args: str) -> tuple[int, str, str]:
    done = CliRunner().invoke(app, ["transactions", "--bootstrap-server",
                                    cluster.bootstrap_servers, *args])
    return done.exit_code, done.stdout, done.stderr


def as_json(cluster: LocalCluster, *args: str) -> Any:
    code, out, err = transactions(cluster, *args, "--json")
    assert code == 0, err
    return json.loads(out)


def rows(out: str) -> list[list[str]]:
    """A table's cells (Kafka's layout: each cell padded, then a tab), header first."""
    return [[cell.strip() for cell in line.split("\t")[:-1]] for line in out.splitlines()]


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    import confluent_kafka

    with running_cluster(tmp_path_factory.mktemp("txn-tool") / "cluster", PROPS,
                         brokers=2) as cluster:
        create_topic(cluster.bootstrap_servers, TOPIC, 2, replication=2)
        producer = confluent_kafka.Producer({
            "bootstrap.servers": cluster.bootstrap_servers, "log_level": 0,
            "transactional.id": TRANSACTIONAL_ID, "transaction.timeout.ms": 600_000})
        producer.init_transactions(TIMEOUT_S)
        producer.begin_transaction()
        for partition in (0, 1):
            producer.produce(TOPIC, b"pending", partition=partition)
        producer.flush(TIMEOUT_S)
        hanging = hanging_transaction(cluster.bootstrap_servers.split(",")[0], TOPIC, 1)
        yield Cluster(cluster, producer, hanging)


def test_list_and_describe_the_open_transaction_at_its_coordinator(made: Cluster) -> None:
    listed = as_json(made.cluster, "list")
    ours = [t for t in listed if t["transactionalId"] == TRANSACTIONAL_ID]
    assert [t["transactionState"] for t in ours] == ["Ongoing"], listed
    code, out, err = transactions(made.cluster, "describe", "--transactional-id",
                                  TRANSACTIONAL_ID)
    assert code == 0, err
    header, row = rows(out)
    assert header == ["CoordinatorId", "TransactionalId", "ProducerId", "ProducerEpoch",
                      "TransactionState", "TransactionTimeoutMs",
                      "CurrentTransactionStartTimeMs", "TransactionDurationMs",
                      "TopicPartitions"]
    assert row[0] == str(ours[0]["coordinator"])
    assert (row[1], row[2], row[4], row[5]) == (TRANSACTIONAL_ID, str(ours[0]["producerId"]),
                                                "Ongoing", "600000")
    assert sorted(row[8].split(",")) == [f"{TOPIC}-0", f"{TOPIC}-1"]
    assert as_json(made.cluster, "list", "--transactional-id-pattern", "audit.*") == ours
    assert as_json(made.cluster, "list", "--transactional-id-pattern", "nobody.*") == []


def test_producers_at_the_leader_and_at_the_follower(made: Cluster) -> None:
    state = partition_state(made.cluster, min(made.cluster.brokers), TOPIC, 1)
    assert state is not None and state.leader >= 0
    follower = next(b for b in state.replicas if b != state.leader)
    at_leader = as_json(made.cluster, "describe-producers", "--topic", TOPIC, "--partition", "1")

    def at_follower() -> list[Any] | None:  # the follower's state follows the leader's log
        found: list[Any] = as_json(made.cluster, "describe-producers", "--topic", TOPIC,
                                   "--partition", "1", "--broker-id", str(follower))
        return found if found == at_leader else None

    wait_for(f"broker {follower}'s producers to be the leader's {at_leader}", at_follower,
             TIMEOUT_S)
    starts = {p["producerId"]: p["currentTransactionStartOffset"] for p in at_leader}
    assert starts[made.hanging.producer_id] == made.hanging.first_offset
    assert len(starts) == 2 and all(start is not None for start in starts.values())


def test_find_hanging_finds_only_the_transaction_no_coordinator_knows(made: Cluster) -> None:
    state = partition_state(made.cluster, min(made.cluster.brokers), TOPIC, 1)
    assert state is not None
    by_topic = as_json(made.cluster, "find-hanging", "--topic", TOPIC,
                       "--max-transaction-timeout", "0")
    assert [(h["partition"], h["producerId"], h["currentTransactionStartOffset"])
            for h in by_topic] == [(1, made.hanging.producer_id, made.hanging.first_offset)]
    by_broker = as_json(made.cluster, "find-hanging", "--broker-id", str(state.leader),
                        "--max-transaction-timeout", "0")
    assert by_broker == by_topic
    code, out, _ = transactions(made.cluster, "find-hanging", "--topic", TOPIC)
    assert (code, len(out.splitlines())) == (0, 1)  # younger than 15 minutes: the header only


def test_abort_by_start_offset_ends_the_hanging_transaction(made: Cluster) -> None:
    code, out, err = transactions(made.cluster, "abort", "--topic", TOPIC, "--partition", "1",
                                  "--start-offset", str(made.hanging.first_offset))
    assert (code, out, err) == (0, "", "")
    assert as_json(made.cluster, "find-hanging", "--topic", TOPIC,
                   "--max-transaction-timeout", "0") == []
    code, _, err = transactions(made.cluster, "abort", "--topic", TOPIC, "--partition", "1",
                                "--start-offset", str(made.hanging.first_offset))
    assert (code, err) == (1, f"Could not find any open transactions starting at offset "
                              f"{made.hanging.first_offset} on partition {TOPIC}-1\n")


def test_force_terminate_fences_the_producer(made: Cluster) -> None:
    import confluent_kafka

    before = as_json(made.cluster, "describe", "--transactional-id", TRANSACTIONAL_ID)
    code, out, err = transactions(made.cluster, "forceTerminateTransaction",
                                  "--transactionalId", TRANSACTIONAL_ID)
    assert (code, out, err) == (0, "", "")
    after = as_json(made.cluster, "describe", "--transactional-id", TRANSACTIONAL_ID)
    assert after["producerEpoch"] > before["producerEpoch"]
    assert (after["transactionState"], after["topicPartitions"]) == ("Empty", [])
    with pytest.raises(confluent_kafka.KafkaException):
        made.producer.commit_transaction(TIMEOUT_S)
    assert as_json(made.cluster, "find-hanging", "--topic", TOPIC,
                   "--max-transaction-timeout", "0") == []
