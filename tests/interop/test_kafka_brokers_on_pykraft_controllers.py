"""Issue 26, item 1: three Apache Kafka brokers on a quorum of three pykraft controllers.

One cluster for the module, its operations in order: the brokers register and heartbeat;
admin requests sent to a Kafka broker reach the pykraft controller in an Envelope (API 58)
and are handled as the client's; topics are also created through the controllers;
confluent-kafka and Kafka's Java clients produce (idempotent: AllocateProducerIds), consume
and commit in a group; a stopped broker is fenced and unfenced when it comes back; the
active controller is SIGKILLed and the brokers carry on; a broker whose metadata log was
emptied catches up from a snapshot pykraft wrote. No Kafka broker logs an error.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic
from kafka_brokers_harness import (
    active_controller,
    console_consume,
    console_produce,
    logged_errors,
    wait_until,
)
from oracle_cluster import (
    CONTROLLER,
    KAFKA,
    MIXED_RELEASE_VERSION,
    PYKRAFT,
    ClusterSpec,
    KafkaInstall,
    OracleCluster,
    call,
    running,
    unfenced_brokers,
)
from oracle_kafka import skip_module_off_ci

from pykraft.messages.kafka.create_topics_request import CreatableTopic, CreateTopicsRequest
from pykraft.protocol.apis import ApiKey
from pykraft.storage.bootstrap import METADATA_LOG_DIR_NAME

skip_module_off_ci()
pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

ADMIN_TIMEOUT_S = 60.0
COUNT = 50
#: Snapshots every few KiB of records, and a metadata log that rolls and drops its old
#: segments, so a broker starting from an empty metadata log must load a snapshot.
SNAPSHOTTING = {
    "metadata.log.max.record.bytes.between.snapshots": "4096",
    "internal.metadata.log.segment.bytes": "16384",
    "metadata.max.retention.bytes": "16384",
    "metadata.max.retention.ms": "1000",
}


@pytest.fixture(scope="module")
def cluster(kafka: KafkaInstall, tmp_path_factory: pytest.TempPathFactory,
            ) -> Iterator[OracleCluster]:
    spec = ClusterSpec(controllers=(PYKRAFT,) * 3, brokers=(KAFKA,) * 3,
                       release_version=MIXED_RELEASE_VERSION, properties=SNAPSHOTTING)
    with running(tmp_path_factory.mktemp("kafka-on-pykraft"), kafka, spec) as (found,):
        yield found


def admin(cluster: OracleCluster) -> AdminClient:
    return AdminClient({"bootstrap.servers": cluster.bootstrap_servers})


def created(client: AdminClient, *topics: NewTopic) -> None:
    for future in client.create_topics(list(topics),
                                       request_timeout=ADMIN_TIMEOUT_S).values():
        future.result(timeout=ADMIN_TIMEOUT_S)


def partition_counts(client: AdminClient) -> dict[str, int]:
    listed = client.list_topics(timeout=ADMIN_TIMEOUT_S)
    return {name: len(topic.partitions) for name, topic in listed.topics.items()
            if topic.error is None}


def produced(cluster: OracleCluster, topic: str, prefix: str) -> list[str]:
    """COUNT values produced by an idempotent confluent-kafka producer, all acknowledged."""
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers,
                         "enable.idempotence": True, "acks": "all"})
    values = [f"{prefix}-{i}" for i in range(COUNT)]
    failures: list[str] = []
    for value in values:
        producer.produce(topic, value.encode(), on_delivery=lambda err, _m: (
            failures.append(str(err)) if err is not None else None))
    assert producer.flush(ADMIN_TIMEOUT_S) == 0
    assert failures == []
    return values


def consumed(cluster: OracleCluster, topic: str, group: str, count: int) -> list[str]:
    """``count`` values read in ``group`` by confluent-kafka, committed synchronously."""
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": group,
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe([topic])
    read: list[str] = []
    try:
        def more() -> bool:
            message = consumer.poll(1.0)
            if message is not None and message.error() is None:
                read.append(bytes(message.value() or b"").decode())
            return len(read) >= count
        wait_until(f"{count} values read from {topic}", more)
        consumer.commit(asynchronous=False)
        committed = consumer.committed([TopicPartition(topic, 0)], timeout=ADMIN_TIMEOUT_S)
        assert committed[0].offset > 0
    finally:
        consumer.close()
    return read


def test_kafka_brokers_register_and_heartbeat(cluster: OracleCluster) -> None:
    """``running`` waited for every broker to see three unfenced brokers; they stay so
    (their heartbeats keep them unfenced past the session timeout)."""
    assert active_controller(cluster) in {n.node_id for n in cluster.controllers}
    for broker in cluster.brokers:
        assert unfenced_brokers(broker.address) == 3


def test_admin_requests_through_a_kafka_broker(cluster: OracleCluster) -> None:
    """CreateTopics, CreatePartitions, IncrementalAlterConfigs and DeleteTopics sent to
    a Kafka broker, which forwards each to the pykraft controller in an Envelope."""
    client = admin(cluster)
    created(client, NewTopic("via-broker", 1, 3), NewTopic("doomed", 1, 1))
    for future in client.create_partitions([NewPartitions("via-broker", 2)],
                                           request_timeout=ADMIN_TIMEOUT_S).values():
        future.result(timeout=ADMIN_TIMEOUT_S)
    for future in client.delete_topics(["doomed"], request_timeout=ADMIN_TIMEOUT_S).values():
        future.result(timeout=ADMIN_TIMEOUT_S)
    wait_until("via-broker with 2 partitions, doomed gone", lambda: (
        (counts := partition_counts(client)).get("via-broker") == 2 and "doomed" not in counts))
    with pytest.raises(KafkaException, match="TOPIC_ALREADY_EXISTS"):
        created(client, NewTopic("via-broker", 1, 3))


def test_topic_created_through_the_controllers(cluster: OracleCluster) -> None:
    """CreateTopics on the active controller's own listener (no broker, no Envelope)."""
    leader = active_controller(cluster)
    assert leader is not None
    topic = CreatableTopic(name="via-controllers", num_partitions=1,
                           replication_factor=3, assignments=(), configs=())
    answer = call(cluster.nodes[leader].listener(CONTROLLER), ApiKey.CREATE_TOPICS, 7,
                  CreateTopicsRequest(topics=(topic,), validate_only=False))
    assert [t.error_code for t in answer.topics] == [0]
    wait_until("via-controllers seen by the brokers",
               lambda: "via-controllers" in partition_counts(admin(cluster)))


def test_confluent_kafka_produces_consumes_and_commits(cluster: OracleCluster) -> None:
    sent = produced(cluster, "via-controllers", "confluent")
    assert consumed(cluster, "via-controllers", "confluent-group", COUNT) == sent


def test_java_clients_produce_consume_and_commit(cluster: OracleCluster,
                                                 kafka: KafkaInstall) -> None:
    values = [f"java-{i}" for i in range(COUNT)]
    created(admin(cluster), NewTopic("java", 1, 3))
    console_produce(kafka, cluster.bootstrap_servers, "java", values)
    assert console_consume(kafka, cluster.bootstrap_servers, "java", "java-group",
                           COUNT) == values


def test_a_stopped_broker_is_fenced_and_unfenced_on_restart(cluster: OracleCluster) -> None:
    stopped, *others = cluster.brokers
    cluster.stop(stopped)
    wait_until("2 unfenced brokers", lambda: unfenced_brokers(others[0].address) == 2)
    cluster.start(stopped)
    wait_until("3 unfenced brokers again", lambda: all(
        unfenced_brokers(b.address) == 3 for b in cluster.brokers))


def test_brokers_carry_on_after_the_active_controller_is_killed(
        cluster: OracleCluster) -> None:
    leader = active_controller(cluster)
    assert leader is not None
    cluster.kill(cluster.nodes[leader])
    wait_until("a new active controller", lambda: active_controller(cluster) not in (
        None, leader))
    created(admin(cluster), NewTopic("after-failover", 1, 3))  # Envelope to the new one
    sent = produced(cluster, "after-failover", "failover")
    assert consumed(cluster, "after-failover", "failover-group", COUNT) == sent
    cluster.start(cluster.nodes[leader])


def test_a_broker_with_an_empty_metadata_log_loads_pykrafts_snapshot(
        cluster: OracleCluster) -> None:
    """The controllers dropped their log's first segments, so the broker restarted on an
    empty metadata log is sent to the leader's snapshot (FetchSnapshot) by its first Fetch."""
    broker = cluster.brokers[-1]
    cluster.stop(broker)
    shutil.rmtree(broker.data / METADATA_LOG_DIR_NAME)
    created(admin(cluster), NewTopic("while-away", 1, 2))
    logged_before = broker.log.stat().st_size
    cluster.start(broker)
    wait_until("3 unfenced brokers after the restart", lambda: all(
        unfenced_brokers(b.address) == 3 for b in cluster.brokers))
    with broker.log.open("rb") as log:
        log.seek(logged_before)
        assert b"Fetching snapshot OffsetAndEpoch" in log.read()  # KafkaRaftClient's words
    client = AdminClient({"bootstrap.servers": broker.address})
    wait_until("the restarted broker knows every topic", lambda: {
        "via-broker", "via-controllers", "java", "after-failover", "while-away",
    } <= set(partition_counts(client)))


#: What a cluster of Kafka nodes only logs at ERROR all the same (beyond
#: kafka_brokers_harness.KAFKA_OWN_ERRORS).
KAFKA_ONLY_ERRORS = (
    # ReplicaManager.getOrCreatePartition: a partition CreatePartitions added to a topic the
    # broker's previous image held (test_admin_requests_through_a_kafka_broker).
    "Expected partition via-broker-1 with topic id",
)


def test_no_kafka_broker_logged_an_error(cluster: OracleCluster) -> None:
    found = {b.node_id: logged_errors(b, KAFKA_ONLY_ERRORS) for b in cluster.brokers}
    assert found == {b.node_id: [] for b in cluster.brokers}
