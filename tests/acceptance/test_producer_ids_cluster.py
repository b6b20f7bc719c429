"""Idempotent producers get their producer id from a real 1-controller + 1-broker cluster:
kafka-python's KafkaProducer(enable_idempotence=True) initializes one on its own, ids stay
unique when the broker and the controller restart (every block the broker hands out from
was committed first), and a transactional producer's comes from its coordinator."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from broker_harness import broker_call, one_broker_cluster, wait_for, wait_for_brokers

from pykraft.messages.kafka.init_producer_id_request import InitProducerIdRequest
from pykraft.protocol.errors import ErrorCode
from pykraft.tools.local_cluster import LocalCluster


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[LocalCluster]:
    with one_broker_cluster(tmp_path / "cluster") as made:
        yield made


def init_producer_id(cluster: LocalCluster, transactional_id: str | None = None) -> Any:
    """The broker's answer, asked again while it waits for a block of ids."""
    request = InitProducerIdRequest(transactional_id=transactional_id,
                                    transaction_timeout_ms=60_000)

    def answered() -> Any | None:
        response = broker_call(cluster, cluster.brokers[0], request)
        retry = response.error_code == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        return None if retry else response
    return wait_for("an InitProducerId answer", answered)


def new_id(cluster: LocalCluster) -> int:
    response = init_producer_id(cluster)
    assert (response.error_code, response.producer_epoch) == (ErrorCode.NONE, 0)
    return int(response.producer_id)


def test_kafka_python_idempotent_producer_gets_a_producer_id(cluster: LocalCluster) -> None:
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap_servers,
                             enable_idempotence=True, client_id="idempotent")
    try:
        manager = producer._transaction_manager
        wait_for("kafka-python's producer id",
                 lambda: True if manager.has_producer_id() else None)
        assert manager.producer_id_and_epoch.producer_id >= 0
        assert manager.producer_id_and_epoch.epoch == 0
        assert not manager.has_fatal_error()
    finally:
        producer.close(timeout=5)


def test_a_kafka_python_transactional_producer_commits(cluster: LocalCluster) -> None:
    """kafka-python's transactional producer against the transaction coordinator: its id
    from the coordinator FindCoordinator names, a committed transaction, and the id's
    producer id not one of the idempotent blocks' (it comes from the same blocks)."""
    from kafka import KafkaProducer

    transactional = KafkaProducer(bootstrap_servers=cluster.bootstrap_servers,
                                  transactional_id="txn-kp", max_block_ms=60_000)
    try:
        transactional.init_transactions()
        transactional.begin_transaction()
        transactional.send("kp-txn", b"in a transaction").get(timeout=30)
        transactional.commit_transaction()
        manager = transactional._transaction_manager
        assert manager.producer_id_and_epoch.epoch == 0
        assert not manager.has_fatal_error()
    finally:
        transactional.close(timeout=5)
    assert new_id(cluster) != manager.producer_id_and_epoch.producer_id


def test_ids_stay_unique_across_broker_and_controller_restarts(
        cluster: LocalCluster) -> None:
    (controller,), (broker,) = cluster.controllers, cluster.brokers
    handed = [new_id(cluster), new_id(cluster)]
    assert handed == [0, 1]
    cluster.stop(broker)
    cluster.start(broker)
    wait_for_brokers(cluster, 1)
    handed.append(new_id(cluster))  # a new block: the old one is never resumed
    cluster.stop(controller)
    cluster.stop(broker)
    cluster.start(controller)
    cluster.start(broker)
    wait_for_brokers(cluster, 1)
    handed.append(new_id(cluster))  # the restarted controller read the committed blocks
    assert handed == [0, 1, 1000, 2000]
