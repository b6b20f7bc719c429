"""Issue 26 item 2: three pykraft brokers on a quorum of three Apache Kafka controllers.

One cluster for the module; the tests run in order on it, each building on the state the
ones before left: Kafka's tools write every metadata record type Kafka's controller writes,
the pykraft brokers replay them (and act on the ones they implement: a reassignment moves a
replica between them, a preferred-leader election makes one leader again), a fenced broker
is unfenced, a broker restarted from an empty metadata directory loads a Kafka controller's
snapshot, the active Kafka controller is SIGKILLed; last, every node's log is checked.
"""

from __future__ import annotations

import dataclasses
import shutil
import subprocess
import sys
from collections.abc import Iterator

import pytest
from confluent_kafka import Consumer, Producer
from kafka_brokers_harness import logged_errors, wait_until
from kafka_controllers_harness import (
    SPEC,
    MetadataState,
    PartitionView,
    SegmentKeeper,
    TopicsView,
    active_controller,
    controller_request,
    metadata_state,
    pykraft_problems,
    record_types,
    run_tools,
    topics_view,
)
from kafka_tool_runs import ACLS, CONFIGS, CONSUMER, TOPICS, VERIFIABLE_PRODUCER
from kafka_tools import ClusterTools, ToolRun, with_tool_batch
from oracle_cluster import KafkaInstall, Node, OracleCluster, call, running, unfenced_brokers

from pykraft.messages.kafka import alter_client_quotas_request as quotas
from pykraft.messages.kafka import alter_partition_reassignments_request as reassign
from pykraft.messages.kafka import create_topics_request as create
from pykraft.messages.kafka import create_topics_response as create_resp
from pykraft.messages.kafka import elect_leaders_request as elect
from pykraft.messages.kafka.alter_client_quotas_response import AlterClientQuotasResponse
from pykraft.messages.kafka.alter_partition_reassignments_response import (
    AlterPartitionReassignmentsResponse,
)
from pykraft.messages.kafka.elect_leaders_response import ElectLeadersResponse
from pykraft.protocol.apis import ApiKey

CLUSTER_TOOL = "org.apache.kafka.tools.ClusterTool"
FEATURES = "org.apache.kafka.tools.FeatureCommand"
BS = ("--bootstrap-server", "{bootstrap}")
TOPIC = "events"
MOVED = "moved"
PARTITIONS = 4
#: Kafka's keys of the admin APIs pykraft does not serve (not in ``ApiKey``).
ELECT_LEADERS, ALTER_PARTITION_REASSIGNMENTS, ALTER_CLIENT_QUOTAS = 43, 45, 49
#: pykraft's newest metadata.version (features.METADATA_VERSIONS), past the cluster's 3.9-IV0
UPGRADED_METADATA_VERSION = "4.2-IV1"
METADATA_DIR = "__cluster_metadata-0"
FIRST_SEGMENT = "00000000000000000000.log"
#: what a pykraft broker logs when it replaces its image by a snapshot's
SNAPSHOT_LOADED = "event=snapshot_loaded listener=broker"
CLEANER_WAIT_S = 150.0
#: what the SCRAM runs leave: alice's SCRAM-SHA-256 (mechanism 1) at 4096 iterations
ALICE_SCRAM = frozenset({("alice", 1, 4096)})
#: the quota set through Kafka's controller, as Kafka's metadata shell names and prints it
QUOTA_FILE = "/image/clientQuotas/clientId(c1)/producer_byte_rate"
QUOTA_TEXT = "1048576.0"


@pytest.fixture(scope="module")
def java(kafka: KafkaInstall, tmp_path_factory: pytest.TempPathFactory) -> KafkaInstall:
    return with_tool_batch(kafka, tmp_path_factory.mktemp("classes"))


@pytest.fixture(scope="module")
def keeper(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SegmentKeeper]:
    """Controller 1's metadata segments, kept as they appear."""
    kept = SegmentKeeper(1, tmp_path_factory.mktemp("segments"))
    yield kept
    kept.stop()


@pytest.fixture(scope="module")
def cluster(java: KafkaInstall, keeper: SegmentKeeper,
            tmp_path_factory: pytest.TempPathFactory) -> Iterator[OracleCluster]:
    with running(tmp_path_factory.mktemp("kctl"), java, SPEC,
                 prepare=keeper.watch) as (started,):
        yield started


@pytest.fixture(scope="module")
def tools(cluster: OracleCluster, tmp_path_factory: pytest.TempPathFactory) -> ClusterTools:
    return ClusterTools(cluster, tmp_path_factory.mktemp("tools"))


def tool(name: str, main_class: str, *args: str) -> ToolRun:
    """A run named ``<tool> <operation>`` (its outcome's key: ``<tool>.<operation>``)."""
    name, _, operation = name.partition(" ")
    return ToolRun(name, operation, main_class, args)


def configs(name: str, *args: str) -> ToolRun:
    return tool(f"kafka-configs {name}", CONFIGS, *BS, *args)


ADMIN = [
    tool("kafka-topics create", TOPICS, *BS, "--create", "--topic", TOPIC, "--partitions", "3",
         "--replication-factor", "3"),
    tool("kafka-topics create-partitions", TOPICS, *BS, "--alter", "--topic", TOPIC,
         "--partitions", str(PARTITIONS)),
    tool("kafka-topics create moved", TOPICS, *BS, "--create", "--topic", MOVED,
         "--replica-assignment", "1000"),
    tool("kafka-topics create gone", TOPICS, *BS, "--create", "--topic", "gone"),
    tool("kafka-topics delete gone", TOPICS, *BS, "--delete", "--topic", "gone"),
    configs("topic", "--alter", "--entity-type", "topics", "--entity-name", TOPIC,
            "--add-config", "retention.ms=86400000"),
    configs("broker", "--alter", "--entity-type", "brokers", "--entity-name", "1000",
            "--add-config", "log.retention.bytes=1073741824"),
    configs("cluster", "--alter", "--entity-type", "brokers", "--entity-default",
            "--add-config", "log.retention.ms=172800000"),
    configs("scram alice", "--alter", "--entity-type", "users", "--entity-name", "alice",
            "--add-config", "SCRAM-SHA-256=[iterations=4096,password=alice-secret]"),
    configs("scram bob", "--alter", "--entity-type", "users", "--entity-name", "bob",
            "--add-config", "SCRAM-SHA-512=[iterations=4096,password=bob-secret]"),
    configs("scram bob removed", "--alter", "--entity-type", "users", "--entity-name", "bob",
            "--delete-config", "SCRAM-SHA-512"),
    tool("kafka-acls alice", ACLS, *BS, "--add", "--allow-principal", "User:alice",
         "--operation", "Read", "--topic", TOPIC),
    tool("kafka-acls bob", ACLS, *BS, "--add", "--allow-principal", "User:bob",
         "--operation", "Write", "--topic", TOPIC),
    tool("kafka-acls bob removed", ACLS, *BS, "--remove", "--force", "--allow-principal",
         "User:bob", "--operation", "Write", "--topic", TOPIC),
    tool("kafka-features upgrade", FEATURES, *BS, "upgrade", "--metadata",
         UPGRADED_METADATA_VERSION),
    # the Java producer is idempotent by default: InitProducerId makes a pykraft broker ask
    # Kafka's controller for a block of producer ids (AllocateProducerIds)
    tool("kafka-verifiable-producer events", VERIFIABLE_PRODUCER, *BS, "--topic", TOPIC,
         "--max-messages", "40"),
    tool("kafka-verifiable-producer moved", VERIFIABLE_PRODUCER, *BS, "--topic", MOVED,
         "--max-messages", "10"),
    tool("kafka-console-consumer group", CONSUMER, *BS, "--topic", TOPIC, "--group", "java",
         "--from-beginning", "--max-messages", "40", "--timeout-ms", "60000"),
]


def shell_cat(broker: Node, path: str) -> str:
    """A file of the image pykraft's metadata shell replays from ``broker``'s metadata log
    ("" when it has no such file yet)."""
    done = subprocess.run([sys.executable, "-m", "pykraft", "metadata-shell", "--directory",
                           str(broker.data), "--", "cat", path], capture_output=True,
                          text=True, timeout=60, check=False, stdin=subprocess.DEVNULL)
    return done.stdout.strip()


def test_brokers_on_kafka_controllers_apply_kafkas_admin_operations(
        java: KafkaInstall, cluster: OracleCluster, tools: ClusterTools) -> None:
    outcomes = run_tools(java, tools, ADMIN)
    assert len(outcomes["kafka-console-consumer.group"].stdout.splitlines()) == 40
    created = call(active_controller(cluster).listener("controller"), ApiKey.CREATE_TOPICS, 7,
                   create.CreateTopicsRequest(topics=(create.CreatableTopic(
                       name="from-controller", num_partitions=2, replication_factor=3),)))
    assert isinstance(created, create_resp.CreateTopicsResponse)
    assert [t.error_code for t in created.topics] == [0], created
    quota = controller_request(cluster, ALTER_CLIENT_QUOTAS, 1, quotas.AlterClientQuotasRequest(
        entries=(quotas.EntryData(
            entity=(quotas.EntityData(entity_type="client-id", entity_name="c1"),),
            ops=(quotas.OpData(key="producer_byte_rate", value=1048576.0, remove=False),)),),
        validate_only=False), AlterClientQuotasResponse)
    assert [e.error_code for e in quota.entries] == [0], quota
    for broker in cluster.brokers:
        wait_until(f"broker {broker.node_id} sees topics",
                   lambda b=broker: {TOPIC, MOVED, "from-controller"} <= set(topics_view(b))
                   and "gone" not in topics_view(b))
        view = topics_view(broker)
        assert len(view[TOPIC]) == PARTITIONS
        assert view[MOVED] == {0: PartitionView(1000, (1000,), (1000,))}
        wait_until(f"broker {broker.node_id}'s image holds the client quota",
                   lambda b=broker: shell_cat(b, QUOTA_FILE) == QUOTA_TEXT)


def test_confluent_kafka_produces_and_commits_in_a_group(cluster: OracleCluster) -> None:
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers,
                         "enable.idempotence": True})
    for i in range(20):
        producer.produce("from-controller", key=b"k%d" % i, value=b"v%d" % i)
    assert producer.flush(60) == 0
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "librd",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe(["from-controller"])
    values: set[bytes] = set()
    try:
        wait_until("20 messages consumed", lambda: _poll_into(consumer, values) >= 20)
        committed = consumer.commit(asynchronous=False)
    finally:
        consumer.close()
    assert values == {b"v%d" % i for i in range(20)}
    assert committed is not None and sum(tp.offset for tp in committed) == 20


def _poll_into(consumer: Consumer, values: set[bytes]) -> int:
    message = consumer.poll(1.0)
    if message is not None and message.error() is None:
        value = message.value()
        assert value is not None
        values.add(value)
    return len(values)


def test_a_reassignment_moves_the_replica_between_pykraft_brokers(
        cluster: OracleCluster) -> None:
    moving = controller_request(
        cluster, ALTER_PARTITION_REASSIGNMENTS, 0, reassign.AlterPartitionReassignmentsRequest(
            topics=(reassign.ReassignableTopic(name=MOVED, partitions=(
                reassign.ReassignablePartition(partition_index=0, replicas=(1001,)),)),)),
        AlterPartitionReassignmentsResponse)
    assert moving.error_code == 0 and [
        p.error_code for t in moving.responses for p in t.partitions] == [0], moving
    for broker in cluster.brokers:
        wait_until(f"broker {broker.node_id} sees {MOVED}-0 on 1001",
                   lambda b=broker: topics_view(b)[MOVED][0] == PartitionView(
                       1001, (1001,), (1001,)))
    old, new = (cluster.nodes[n].data / f"{MOVED}-0" for n in (1000, 1001))
    wait_until(f"{old} deleted", lambda: not old.exists())
    assert sum(f.stat().st_size for f in new.glob("*.log")) > 0


def test_fenced_then_unfenced_broker_regains_leadership_by_preferred_election(
        cluster: OracleCluster) -> None:
    stopped = cluster.nodes[1002]
    first = cluster.nodes[1000]
    cluster.stop(stopped)
    wait_until("1002 fenced", lambda: unfenced_brokers(first.address) == 2)
    wait_until("leadership moved off 1002",
               lambda: all(p.leader != 1002 for p in topics_view(first)[TOPIC].values()))
    cluster.start(stopped)
    wait_until("1002 unfenced", lambda: unfenced_brokers(first.address) == 3)
    wait_until("1002 back in every ISR",
               lambda: all(1002 in p.isr for p in topics_view(first)[TOPIC].values()))
    preferred = [i for i, p in topics_view(first)[TOPIC].items() if p.replicas[0] == 1002]
    assert preferred, topics_view(first)[TOPIC]
    elected = controller_request(cluster, ELECT_LEADERS, 2, elect.ElectLeadersRequest(
        election_type=0, topic_partitions=(elect.TopicPartitions(
            topic=TOPIC, partitions=tuple(preferred)),)),
        ElectLeadersResponse)
    assert elected.error_code == 0 and all(
        p.error_code == 0 for r in elected.replica_election_results
        for p in r.partition_result), elected
    for broker in cluster.brokers:
        wait_until(f"broker {broker.node_id} sees 1002 lead again",
                   lambda b=broker: all(topics_view(b)[TOPIC][i].leader == 1002
                                        for i in preferred))


def test_an_unregistered_broker_registers_again(
        java: KafkaInstall, cluster: OracleCluster, tools: ClusterTools) -> None:
    stopped = cluster.nodes[1001]
    first = cluster.nodes[1000]
    cluster.stop(stopped)
    wait_until("1001 fenced", lambda: unfenced_brokers(first.address) == 2)
    run_tools(java, tools, [tool("kafka-cluster unregister", CLUSTER_TOOL, "unregister", *BS,
                                 "--id", "1001")])
    cluster.start(stopped)
    wait_until("1001 registered again", lambda: unfenced_brokers(first.address) == 3)


#: Kafka's names of the record types the operations above make Kafka's controllers write.
#: Not here: DelegationTokenRecord and RemoveDelegationTokenRecord (they need a Kafka broker
#: with a SASL listener: test_delegation_tokens_on_kafka_controllers.py), ClearElrRecord
#: (eligible.leader.replicas.version is not finalized in a mixed cluster), AbortTransaction
#: (a controller failing over inside a metadata transaction), FenceBrokerRecord and
#: UnfenceBrokerRecord (Kafka writes them below metadata.version 3.3-IV3 only; from there a
#: BrokerRegistrationChangeRecord's ``fenced`` field says it).
WRITTEN = {
    "TOPIC_RECORD", "PARTITION_RECORD", "PARTITION_CHANGE_RECORD", "REMOVE_TOPIC_RECORD",
    "CONFIG_RECORD", "ACCESS_CONTROL_ENTRY_RECORD", "REMOVE_ACCESS_CONTROL_ENTRY_RECORD",
    "USER_SCRAM_CREDENTIAL_RECORD", "REMOVE_USER_SCRAM_CREDENTIAL_RECORD",
    "CLIENT_QUOTA_RECORD", "PRODUCER_IDS_RECORD", "FEATURE_LEVEL_RECORD",
    "REGISTER_BROKER_RECORD", "BROKER_REGISTRATION_CHANGE_RECORD",
    "UNREGISTER_BROKER_RECORD", "REGISTER_CONTROLLER_RECORD",
    "NO_OP_RECORD", "BEGIN_TRANSACTION_RECORD", "END_TRANSACTION_RECORD",
}


def test_kafkas_controller_wrote_every_record_type(
        java: KafkaInstall, keeper: SegmentKeeper, tools: ClusterTools) -> None:
    written = record_types(java, tools, keeper.segments())
    assert written >= WRITTEN, f"not in the metadata log: {WRITTEN - written}"


def test_brokers_agree_with_kafkas_controller(cluster: OracleCluster) -> None:
    controller = active_controller(cluster).listener("controller")
    expected = metadata_state(controller, TOPIC, scram=False)
    assert ("retention.ms", "86400000") in expected.topic_configs
    assert ("log.retention.ms", "172800000") in expected.broker_configs
    assert {principal for _, _, principal, _, _ in expected.acls} == {"User:alice"}
    for broker in cluster.brokers:
        assert metadata_state(broker.address, TOPIC) == dataclasses.replace(
            expected, scram=ALICE_SCRAM), broker.node_id


def _image(cluster: OracleCluster, node_id: int) -> tuple[TopicsView, MetadataState]:
    broker = cluster.nodes[node_id]
    return topics_view(broker), metadata_state(broker.address, TOPIC)


def test_a_broker_with_an_empty_metadata_dir_loads_a_kafka_controller_snapshot(
        cluster: OracleCluster) -> None:
    first = active_controller(cluster).data / METADATA_DIR / FIRST_SEGMENT
    # Kafka's controller deletes the segments a snapshot covers every 60 s (KafkaRaftClient's
    # log cleaner): without its first segment, a fetch from offset 0 must FetchSnapshot
    wait_until(f"{first} deleted", lambda: not first.exists(), timeout_s=CLEANER_WAIT_S)
    restarted = cluster.nodes[1002]
    cluster.stop(restarted)
    loaded_before = restarted.log.read_text().count(SNAPSHOT_LOADED)
    shutil.rmtree(restarted.data / METADATA_DIR)
    cluster.start(restarted)
    wait_until("1002 back", lambda: unfenced_brokers(restarted.address) == 3)
    assert restarted.log.read_text().count(SNAPSHOT_LOADED) == loaded_before + 1
    wait_until("every replica back in sync", lambda: all(
        set(p.isr) == set(p.replicas) for partitions in
        topics_view(cluster.nodes[1000]).values() for p in partitions.values()))
    wait_until("1002's topics as 1000's",
               lambda: topics_view(restarted) == topics_view(cluster.nodes[1000]))
    assert _image(cluster, 1002) == _image(cluster, 1000)
    assert shell_cat(restarted, QUOTA_FILE) == QUOTA_TEXT


def test_brokers_carry_on_after_the_active_kafka_controller_is_killed(
        java: KafkaInstall, cluster: OracleCluster, tools: ClusterTools) -> None:
    killed = active_controller(cluster)
    cluster.kill(killed)
    assert active_controller(cluster) != killed
    run_tools(java, tools, [
        tool("kafka-topics create after failover", TOPICS, *BS, "--create", "--topic",
             "after-failover", "--partitions", "2", "--replication-factor", "3"),
        tool("kafka-verifiable-producer after failover", VERIFIABLE_PRODUCER, *BS,
             "--topic", "after-failover", "--max-messages", "10"),
    ])
    cluster.start(killed)
    wait_until("every broker unfenced",
               lambda: all(unfenced_brokers(b.address) == 3 for b in cluster.brokers))


def test_no_node_logged_an_error(cluster: OracleCluster) -> None:
    for node in cluster.controllers:
        assert logged_errors(node) == [], f"{node.log}"
    for node in cluster.brokers:
        assert pykraft_problems(node) == [], f"{node.log}"

