"""A cluster finalized at transaction.version 2 (KIP-890 part 2), upgraded while running with
``pykraft features upgrade`` (every broker registers the levels): the coordinator writes its
``__transaction_state`` values in the v1 (flexible) format, and a client of the classic
protocol (librdkafka) still commits and aborts, a read_committed consumer seeing exactly the
committed records. A transaction version 2 client (Java's) is in the Java suite."""

from __future__ import annotations

import asyncio
import struct
from collections.abc import Iterator

import pytest
from broker_harness import PROPERTIES, create_topic, running_cluster
from txn_clients import TIMEOUT_S, TOPIC, consumed, producer

from pykraft.ids import TRANSACTION_STATE_TOPIC_NAME
from pykraft.records.batch import iter_batches
from pykraft.tools.features_tool import describe_features, upgrade_feature
from pykraft.tools.local_cluster import LocalCluster
from pykraft.tools.quorum_tool import parse_host_port

PROPS = {**PROPERTIES, "transaction.state.log.num.partitions": "2",
         "offsets.topic.replication.factor": "1", "offsets.topic.num.partitions": "2"}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with running_cluster(tmp_path_factory.mktemp("txn-v2") / "cluster", PROPS,
                         brokers=2) as made:
        create_topic(made.bootstrap_servers, TOPIC, 4, replication=2)
        yield made


def test_upgraded_to_version_2_a_classic_client_still_commits_and_aborts(
        cluster: LocalCluster) -> None:
    bootstrap = [parse_host_port(a) for a in cluster.bootstrap_servers.split(",")]
    asyncio.run(upgrade_feature(bootstrap, "transaction.version", 2, timeout_s=TIMEOUT_S))
    levels = {f.name: f.finalized for f in asyncio.run(describe_features(
        bootstrap, timeout_s=TIMEOUT_S)).features}
    assert levels["transaction.version"] == 2
    made = producer(cluster, "classic-on-v2")
    made.begin_transaction()
    for i in range(6):
        made.produce(TOPIC, f"kept-{i}".encode(), partition=i % 4)
    made.commit_transaction(TIMEOUT_S)
    made.begin_transaction()
    for i in range(3):
        made.produce(TOPIC, f"dropped-{i}".encode(), partition=i % 4)
    made.flush(TIMEOUT_S)
    made.abort_transaction(TIMEOUT_S)
    assert sorted(consumed(cluster, "read_committed", 6)) == sorted(
        f"kept-{i}".encode() for i in range(6))
    assert transaction_log_value_versions(cluster) == {1}


def transaction_log_value_versions(cluster: LocalCluster) -> set[int]:
    """The value versions of every ``__transaction_state`` record the brokers hold."""
    versions: set[int] = set()
    for broker_id in cluster.brokers:
        data = cluster.nodes[broker_id].data
        for segment in data.glob(f"{TRANSACTION_STATE_TOPIC_NAME}-*/*.log"):
            for batch in iter_batches(segment.read_bytes()):
                versions.update(struct.unpack_from(">h", record.value)[0]
                                for record in batch.records() if record.value)
    return versions
