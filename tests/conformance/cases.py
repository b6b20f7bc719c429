"""The conformance table: one :class:`Case` per (API, behaviour).

A case sends its request at any version (``send``: built by kafka-python where it has the
API, else by pykraft's generated classes), reduces the response to a version-independent
meaning (``meaning``), and says what that meaning must be (``expect``; None: the same as at
the latest version, for answers that depend on the cluster's state rather than on the
request). Adding a data-plane API is adding rows here.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from types import ModuleType
from typing import Any, TypeVar

from kafka.protocol.admin import (
    AlterConfigsRequest,
    AlterConfigsResponse,
    CreatePartitionsRequest,
    CreatePartitionsResponse,
    CreateTopicsRequest,
    CreateTopicsResponse,
    DeleteRecordsRequest,
    DeleteRecordsResponse,
    DeleteTopicsRequest,
    DeleteTopicsResponse,
    DescribeClusterRequest,
    DescribeClusterResponse,
    DescribeConfigsRequest,
    DescribeConfigsResponse,
    DescribeLogDirsRequest,
    DescribeLogDirsResponse,
    DescribeQuorumRequest,
    DescribeQuorumResponse,
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResponse,
    UpdateFeaturesRequest,
    UpdateFeaturesResponse,
)
from kafka.protocol.consumer import (
    FetchRequest,
    FetchResponse,
    ListOffsetsRequest,
    ListOffsetsResponse,
    OffsetForLeaderEpochRequest,
    OffsetForLeaderEpochResponse,
)
from kafka.protocol.metadata import (
    ApiVersionsRequest,
    ApiVersionsResponse,
    MetadataRequest,
    MetadataResponse,
)
from kafka.protocol.producer.transaction import InitProducerIdRequest, InitProducerIdResponse
from kafka.record.default_records import DefaultRecordBatchBuilder

from conformance.harness import BROKER, CONTROLLER, Run
from conformance.wire import CLIENT_ID
from pykraft.messages.kafka import add_raft_voter_request as add_req
from pykraft.messages.kafka import assign_replicas_to_dirs_request as dirs_req
from pykraft.messages.kafka import begin_quorum_epoch_request as bqe_req
from pykraft.messages.kafka import end_quorum_epoch_request as eqe_req
from pykraft.messages.kafka import fetch_snapshot_request as fs_req
from pykraft.messages.kafka import produce_request as produce_req
from pykraft.messages.kafka import remove_raft_voter_request as remove_req
from pykraft.messages.kafka import update_raft_voter_request as update_req
from pykraft.messages.kafka import vote_request as vote_req
from pykraft.messages.kafka.allocate_producer_ids_request import AllocateProducerIdsRequest
from pykraft.messages.kafka.alter_partition_request import AlterPartitionRequest
from pykraft.messages.kafka.api_versions_request import (
    ApiVersionsRequest as GeneratedApiVersionsRequest,
)
from pykraft.messages.kafka.broker_heartbeat_request import BrokerHeartbeatRequest
from pykraft.messages.kafka.broker_registration_request import BrokerRegistrationRequest
from pykraft.messages.kafka.controller_registration_request import (
    ControllerRegistrationRequest,
)
from pykraft.messages.kafka.unregister_broker_request import UnregisterBrokerRequest
from pykraft.protocol.errors import ErrorCode

METADATA_TOPIC = "__cluster_metadata"
#: Kafka's fixed id of the metadata topic (``Uuid.METADATA_TOPIC_ID``).
METADATA_TOPIC_ID = uuid.UUID(int=1)
WRONG_CLUSTER = "not-this-cluster"
UNKNOWN_BROKER = 999
TOPIC_RESOURCE = 2
SET = 0  # IncrementalAlterConfigs operation
BOTH = (BROKER, CONTROLLER)
SETTLE_S = 10.0
ABSENT = "UNKNOWN_TOPIC_OR_PARTITION"
T = TypeVar("T")

Meaning = object


@dataclass(frozen=True)
class Case:
    api: str
    api_key: int
    name: str
    send: Callable[[Run], Any]
    meaning: Callable[[Any, Run], Meaning]
    #: The meaning every version must give; None: the latest version's.
    expect: Callable[[Run], Meaning] | None = None
    listeners: tuple[str, ...] = (BROKER,)
    #: Versions the behaviour exists at (e.g. validate_only from CreateTopics v1).
    since: int = 0
    #: A check of the meaning beyond equality across versions (for ``expect=None`` rows).
    check: Callable[[Meaning, Run], bool] = field(default=lambda _m, _r: True)
    #: A known deviation from Kafka: where it is and what Kafka does (a strict xfail).
    deviation: str | None = None
    #: Versions the row stops at (exclusive), for behaviour a later version changed.
    until: int = 1 << 15


def code(value: int) -> str:
    """Error codes shown by Kafka's name, so a failing row reads like Kafka's logs."""
    try:
        return ErrorCode(value).name
    except ValueError:
        return str(value)


def errors(values: Iterable[int]) -> list[str]:
    return [code(v) for v in values]


# -- Metadata ---------------------------------------------------------------------------------

def metadata(run: Run, names: list[str] | None, *, tagged: bool = False) -> Any:
    topics = None if names is None else [MetadataRequest.MetadataRequestTopic(name=n)
                                         for n in names]
    if topics is None and run.version == 0:
        topics = []  # v0 has no null list: empty means all topics
    return run.kafka_python(MetadataRequest, MetadataResponse, unknown_tag=tagged,
                            topics=topics, allow_auto_topic_creation=False,
                            include_cluster_authorized_operations=False,
                            include_topic_authorized_operations=False)


def topic_rows(body: Any, run: Run, only: set[str] | None = None) -> Meaning:
    return [(t.name, code(t.error_code), len(t.partitions),
             all(p.leader_id == run.cluster.broker_id for p in t.partitions))
            for t in body.topics if only is None or t.name in only]


def brokers_of(body: Any) -> Meaning:
    return sorted((b.node_id, b.host, b.port) for b in body.brokers)


def shared_topic(run: Run) -> Meaning:
    return [(run.cluster.topic, "NONE", run.cluster.partitions, True)]


def settled(ask: Callable[[], T], done: Callable[[T], bool]) -> T:
    """``ask()`` again until ``done`` holds of its answer or :data:`SETTLE_S` passed: the
    last answer (one that never settles is then compared, and differs)."""
    deadline = time.monotonic() + SETTLE_S
    while True:
        answer = ask()
        if done(answer) or time.monotonic() > deadline:
            return answer
        time.sleep(0.05)


def me(run: Run) -> Meaning:
    return [(run.cluster.broker_id, *run.cluster.broker)]


def topic_state(run: Run, name: str, settles_on: str) -> str:
    """Whether ``name`` exists, asked with kafka-python's Metadata v12 on the broker. The
    broker learns a change from the metadata log after the controller answered, so this
    asks again until the state is ``settles_on`` or :data:`SETTLE_S` passed (and then
    returns the state it last saw)."""
    probe = Run(run.cluster, "probe", "probe", BROKER, 12)

    def state() -> str:
        (topic,) = metadata(probe, [name]).topics
        return f"{len(topic.partitions)} partitions" if topic.error_code == 0 else code(
            topic.error_code)
    return settled(state, lambda seen: seen == settles_on)


METADATA = [
    Case("Metadata", 3, "named_topics", lambda r: metadata(r, [r.cluster.topic]),
         lambda b, r: (topic_rows(b, r), brokers_of(b)),
         lambda r: (shared_topic(r), me(r))),
    Case("Metadata", 3, "unknown_tagged_field",
         lambda r: metadata(r, [r.cluster.topic], tagged=True),
         lambda b, r: (topic_rows(b, r), brokers_of(b)),
         lambda r: (shared_topic(r), me(r)), since=9),
    Case("Metadata", 3, "all_topics", lambda r: metadata(r, None),
         lambda b, r: topic_rows(b, r, {r.cluster.topic}), shared_topic),
    Case("Metadata", 3, "unknown_topic", lambda r: metadata(r, ["no-such-topic"]),
         topic_rows, lambda _r: [("no-such-topic", ABSENT, 0, True)]),
    Case("Metadata", 3, "invalid_topic_name", lambda r: metadata(r, ["no/such topic"]),
         topic_rows, lambda _r: [("no/such topic", "INVALID_TOPIC_EXCEPTION", 0, True)]),
    Case("Metadata", 3, "authorized_operations_not_requested",
         lambda r: metadata(r, [r.cluster.topic]),
         lambda b, _r: ([t.authorized_operations for t in b.topics],
                        getattr(b, "authorized_operations", None)),
         lambda _r: ([None], None), since=8),  # None: kafka-python's -2147483648
]


# -- topics -----------------------------------------------------------------------------------

def create_topics(run: Run, name: str, partitions: int, replication: int, *,
                  validate_only: bool = False, client_id: str = CLIENT_ID) -> Any:
    topic = CreateTopicsRequest.CreatableTopic(
        name=name, num_partitions=partitions, replication_factor=replication)
    return run.kafka_python(CreateTopicsRequest, CreateTopicsResponse, topics=[topic],
                            timeout_ms=30_000, validate_only=validate_only,
                            client_id=client_id)


def create_results(body: Any, _run: Run) -> Meaning:
    return [(t.name, code(t.error_code)) for t in body.topics]


CREATE_TOPICS = [
    Case("CreateTopics", 19, "creates",
         lambda r: create_topics(r, r.fresh_topic, 1, 1),
         lambda b, r: (create_results(b, r), topic_state(r, r.fresh_topic, "1 partitions")),
         lambda r: ([(r.fresh_topic, "NONE")], "1 partitions"), listeners=BOTH),
    Case("CreateTopics", 19, "validate_only",
         lambda r: create_topics(r, r.fresh_topic, 1, 1, validate_only=True),
         lambda b, r: (create_results(b, r), topic_state(r, r.fresh_topic, ABSENT)),
         lambda r: ([(r.fresh_topic, "NONE")], ABSENT),
         listeners=BOTH),
    Case("CreateTopics", 19, "already_exists",
         lambda r: create_topics(r, r.cluster.topic, 1, 1), create_results,
         lambda r: [(r.cluster.topic, "TOPIC_ALREADY_EXISTS")], listeners=BOTH),
    Case("CreateTopics", 19, "invalid_partitions",
         lambda r: create_topics(r, r.fresh_topic, 0, 1), create_results,
         lambda r: [(r.fresh_topic, "INVALID_PARTITIONS")], listeners=BOTH),
    Case("CreateTopics", 19, "more_records_than_one_operation_may_write",
         lambda r: create_topics(r, r.fresh_topic, 10_001, 1, validate_only=True),
         create_results, lambda r: [(r.fresh_topic, "POLICY_VIOLATION")], listeners=BOTH,
         since=1),
    Case("CreateTopics", 19, "invalid_replication_factor",
         lambda r: create_topics(r, r.fresh_topic, 1, 3), create_results,
         lambda r: [(r.fresh_topic, "INVALID_REPLICATION_FACTOR")], listeners=BOTH),
]


def delete_topics(run: Run, name: str, *, client_id: str = CLIENT_ID) -> Any:
    fields: dict[str, Any] = (
        {"topics": [DeleteTopicsRequest.DeleteTopicState(name=name)]} if run.version >= 6
        else {"topic_names": [name]})
    return run.kafka_python(DeleteTopicsRequest, DeleteTopicsResponse, timeout_ms=30_000,
                            client_id=client_id, **fields)


def delete_fresh(run: Run) -> Any:
    create_topics(Run(run.cluster, "setup", "setup", BROKER, 7), run.fresh_topic, 1, 1)
    return delete_topics(run, run.fresh_topic)


DELETE_TOPICS = [
    Case("DeleteTopics", 20, "deletes", delete_fresh,
         lambda b, r: ([(t.name, code(t.error_code)) for t in b.responses],
                       topic_state(r, r.fresh_topic, ABSENT)),
         lambda r: ([(r.fresh_topic, "NONE")], ABSENT),
         listeners=BOTH),
    Case("DeleteTopics", 20, "unknown_topic", lambda r: delete_topics(r, "no-such-topic"),
         lambda b, _r: [(t.name, code(t.error_code)) for t in b.responses],
         lambda _r: [("no-such-topic", ABSENT)], listeners=BOTH),
]


def create_partitions(run: Run, name: str, count: int, *, validate_only: bool = True,
                      client_id: str = CLIENT_ID) -> Any:
    topic = CreatePartitionsRequest.CreatePartitionsTopic(name=name, count=count,
                                                          assignments=None)
    return run.kafka_python(CreatePartitionsRequest, CreatePartitionsResponse,
                            topics=[topic], timeout_ms=30_000, validate_only=validate_only,
                            client_id=client_id)


def partition_results(body: Any, _run: Run) -> Meaning:
    return [(t.name, code(t.error_code)) for t in body.results]


CREATE_PARTITIONS = [
    Case("CreatePartitions", 37, "validate_only",
         lambda r: create_partitions(r, r.cluster.topic, r.cluster.partitions + 1),
         lambda b, r: (partition_results(b, r),
                       topic_state(r, r.cluster.topic, f"{r.cluster.partitions} partitions")),
         lambda r: ([(r.cluster.topic, "NONE")], f"{r.cluster.partitions} partitions"),
         listeners=BOTH),
    Case("CreatePartitions", 37, "unknown_topic",
         lambda r: create_partitions(r, "no-such-topic", 3), partition_results,
         lambda _r: [("no-such-topic", ABSENT)], listeners=BOTH),
    Case("CreatePartitions", 37, "fewer_partitions",
         lambda r: create_partitions(r, r.cluster.topic, 1), partition_results,
         lambda r: [(r.cluster.topic, "INVALID_PARTITIONS")], listeners=BOTH),
]


# -- configs ----------------------------------------------------------------------------------

def describe_configs(run: Run, name: str, keys: list[str]) -> Any:
    resource = DescribeConfigsRequest.DescribeConfigsResource(
        resource_type=TOPIC_RESOURCE, resource_name=name, configuration_keys=keys)
    return run.kafka_python(DescribeConfigsRequest, DescribeConfigsResponse,
                            resources=[resource], include_synonyms=False,
                            include_documentation=False)


def config_results(body: Any, _run: Run) -> Meaning:
    return [(r.resource_name, code(r.error_code),
             sorted((c.name, c.value) for c in r.configs)) for r in body.results]


DESCRIBE_CONFIGS = [
    Case("DescribeConfigs", 32, "topic_key",
         lambda r: describe_configs(r, r.cluster.topic, ["cleanup.policy"]), config_results,
         lambda r: [(r.cluster.topic, "NONE", [("cleanup.policy", "delete")])],
         listeners=BOTH),
    Case("DescribeConfigs", 32, "unknown_topic",
         lambda r: describe_configs(r, "no-such-topic", ["cleanup.policy"]),
         config_results, lambda _r: [("no-such-topic", ABSENT, [])],
         listeners=BOTH),
]


def alter_configs(run: Run, name: str) -> Any:
    resource = AlterConfigsRequest.AlterConfigsResource(
        resource_type=TOPIC_RESOURCE, resource_name=name,
        configs=[AlterConfigsRequest.AlterConfigsResource.AlterableConfig(
            name="retention.ms", value="1000")])
    return run.kafka_python(AlterConfigsRequest, AlterConfigsResponse, resources=[resource],
                            validate_only=True)


def incremental_alter(run: Run, name: str) -> Any:
    resource = IncrementalAlterConfigsRequest.AlterConfigsResource(
        resource_type=TOPIC_RESOURCE, resource_name=name,
        configs=[IncrementalAlterConfigsRequest.AlterConfigsResource.AlterableConfig(
            name="retention.ms", config_operation=SET, value="1000")])
    return run.kafka_python(IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse,
                            resources=[resource], validate_only=True)


def alter_results(body: Any, _run: Run) -> Meaning:
    return [(r.resource_name, code(r.error_code)) for r in body.responses]


def retention(run: Run) -> Meaning:
    probe = Run(run.cluster, "probe", "probe", BROKER, 4)
    return config_results(describe_configs(probe, run.cluster.topic, ["retention.ms"]), run)


DEFAULT_RETENTION_MS = "604800000"


def alter_rows(api: str, api_key: int, send: Callable[[Run, str], Any]) -> list[Case]:
    return [
        Case(api, api_key, "validate_only", lambda r: send(r, r.cluster.topic),
             lambda b, r: (alter_results(b, r), retention(r)),
             lambda r: ([(r.cluster.topic, "NONE")], [
                 (r.cluster.topic, "NONE", [("retention.ms", DEFAULT_RETENTION_MS)])]),
             listeners=BOTH),
        Case(api, api_key, "unknown_topic", lambda r: send(r, "no-such-topic"),
             alter_results, lambda _r: [("no-such-topic", ABSENT)], listeners=BOTH),
    ]


BROKER_RESOURCE = 4
#: What Kafka 4.4's broker answers a change of its log cleaner's threads past double the
#: running count, before forwarding it (ConfigAdminManager.preprocess).
CLEANER_THREADS_REFUSED = (
    "Invalid value org.apache.kafka.common.config.ConfigException: Log cleaner threads "
    "cannot be increased to more than double the current value 1 for configuration Invalid "
    "dynamic configuration")


def cleaner_threads(run: Run, incremental: bool) -> Any:
    """``log.cleaner.threads=3`` for the cluster default (validate only): a broker running
    one cleaner thread refuses it."""
    if incremental:
        resource: Any = IncrementalAlterConfigsRequest.AlterConfigsResource(
            resource_type=BROKER_RESOURCE, resource_name="",
            configs=[IncrementalAlterConfigsRequest.AlterConfigsResource.AlterableConfig(
                name="log.cleaner.threads", config_operation=SET, value="3")])
        return run.kafka_python(IncrementalAlterConfigsRequest,
                                IncrementalAlterConfigsResponse, resources=[resource],
                                validate_only=True)
    resource = AlterConfigsRequest.AlterConfigsResource(
        resource_type=BROKER_RESOURCE, resource_name="",
        configs=[AlterConfigsRequest.AlterConfigsResource.AlterableConfig(
            name="log.cleaner.threads", value="3")])
    return run.kafka_python(AlterConfigsRequest, AlterConfigsResponse, resources=[resource],
                            validate_only=True)


def alter_messages(body: Any, _run: Run) -> Meaning:
    return [(r.resource_name, code(r.error_code), r.error_message) for r in body.responses]


def cleaner_threads_row(api: str, api_key: int, *, incremental: bool) -> Case:
    return Case(api, api_key, "cleaner_threads_past_double",
                lambda r: cleaner_threads(r, incremental), alter_messages,
                lambda _r: [("", "INVALID_REQUEST", CLEANER_THREADS_REFUSED)])


ALTER_CONFIGS = [*alter_rows("AlterConfigs", 33, alter_configs),
                 *alter_rows("IncrementalAlterConfigs", 44, incremental_alter),
                 cleaner_threads_row("AlterConfigs", 33, incremental=False),
                 cleaner_threads_row("IncrementalAlterConfigs", 44, incremental=True)]


# -- cluster, features, quorum ---------------------------------------------------------------

def api_versions(run: Run, cluster_id: str | None = None, node_id: int = -1, *,
                 software: str = "conformance", generated: bool = False) -> Any:
    """ApiVersions by kafka-python up to its newest (v4), by the generated classes above
    (v5 names the cluster and node the client means to reach: KIP-1242) or when
    ``generated`` (kafka-python reads any error answer as v0, which a refusal is not)."""
    if run.version <= ApiVersionsRequest.max_version and not generated:
        return run.kafka_python(ApiVersionsRequest, ApiVersionsResponse,
                                client_software_name=software,
                                client_software_version="1")
    return run.generated(18, GeneratedApiVersionsRequest(
        software, "1", cluster_id=cluster_id, node_id=node_id))


def node_id_of(run: Run) -> int:
    return run.cluster.broker_id if run.listener == BROKER else run.cluster.controller_id


def api_versions_refusal(body: Any, _run: Run) -> Meaning:
    """The error of an ApiVersions answer, and whether it lists APIs (a refusal does not)."""
    return code(body.error_code), bool(body.api_keys)


def describe_cluster(run: Run, endpoint_type: int, *, tagged: bool = False) -> Any:
    return run.kafka_python(DescribeClusterRequest, DescribeClusterResponse, unknown_tag=tagged,
                            include_cluster_authorized_operations=False,
                            endpoint_type=endpoint_type, include_fenced_brokers=False)


def cluster_meaning(body: Any, _run: Run) -> Meaning:
    return (code(body.error_code), body.cluster_id or None, body.controller_id,
            sorted((b.broker_id, b.host, b.port) for b in body.brokers),
            body.authorized_operations)


def controllers(run: Run) -> Meaning:
    return [(run.cluster.controller_id, *run.cluster.controller)]


def update_features(run: Run) -> Any:
    update = UpdateFeaturesRequest.FeatureUpdateKey(
        feature="no.such.feature", max_version_level=1, allow_downgrade=False, upgrade_type=1)
    return run.kafka_python(UpdateFeaturesRequest, UpdateFeaturesResponse, timeout_ms=30_000,
                            feature_updates=[update], validate_only=True)


def describe_quorum(run: Run) -> Any:
    topic = DescribeQuorumRequest.TopicData(
        topic_name=METADATA_TOPIC,
        partitions=[DescribeQuorumRequest.TopicData.PartitionData(partition_index=0)])
    return run.kafka_python(DescribeQuorumRequest, DescribeQuorumResponse, topics=[topic])


def quorum_meaning(body: Any, run: Run) -> Meaning:
    (topic,) = body.topics
    (part,) = topic.partitions
    return (code(body.error_code), topic.topic_name, code(part.error_code), part.leader_id,
            [v.replica_id for v in part.current_voters],
            run.cluster.broker_id in [o.replica_id for o in part.observers])


CLUSTER = [
    Case("ApiVersions", 18, "lists_apis", api_versions,
         lambda b, _r: (code(b.error_code),
                        sorted((k.api_key, k.min_version, k.max_version) for k in b.api_keys)),
         None, listeners=BOTH, check=lambda m, _r: isinstance(m, tuple) and m[0] == "NONE"),
    # KIP-511 (v3): a software name outside Kafka's pattern is INVALID_REQUEST
    Case("ApiVersions", 18, "invalid_software_name",
         lambda r: api_versions(r, software="-conformance", generated=True),
         api_versions_refusal,
         lambda _r: ("INVALID_REQUEST", False), listeners=BOTH, since=3),
    # KIP-1242 (v5): Kafka 4.4's brokers check the cluster and node a client names, its
    # controllers only that both or neither are named.
    Case("ApiVersions", 18, "v5_this_node",
         lambda r: api_versions(r, r.cluster.cluster_id, node_id_of(r)), api_versions_refusal,
         lambda _r: ("NONE", True), listeners=BOTH, since=5),
    Case("ApiVersions", 18, "v5_another_cluster",
         lambda r: api_versions(r, WRONG_CLUSTER, node_id_of(r)), api_versions_refusal,
         lambda r: ("REBOOTSTRAP_REQUIRED", False) if r.listener == BROKER else ("NONE", True),
         listeners=BOTH, since=5),
    Case("ApiVersions", 18, "v5_another_node",
         lambda r: api_versions(r, r.cluster.cluster_id, node_id_of(r) + 100),
         api_versions_refusal,
         lambda r: ("REBOOTSTRAP_REQUIRED", False) if r.listener == BROKER else ("NONE", True),
         listeners=BOTH, since=5),
    Case("ApiVersions", 18, "v5_cluster_without_node",
         lambda r: api_versions(r, r.cluster.cluster_id), api_versions_refusal,
         lambda _r: ("INVALID_REQUEST", False), listeners=BOTH, since=5),
    Case("DescribeCluster", 60, "brokers", lambda r: describe_cluster(r, 1), cluster_meaning,
         lambda r: ("NONE", r.cluster.cluster_id, r.cluster.broker_id, me(r), None)),
    Case("DescribeCluster", 60, "unknown_tagged_field",
         lambda r: describe_cluster(r, 1, tagged=True), cluster_meaning,
         lambda r: ("NONE", r.cluster.cluster_id, r.cluster.broker_id, me(r), None)),
    Case("DescribeCluster", 60, "controller_endpoints_on_a_broker",
         lambda r: describe_cluster(r, 2), lambda b, _r: code(b.error_code),
         lambda _r: "MISMATCHED_ENDPOINT_TYPE", since=1),
    Case("DescribeCluster", 60, "controllers", lambda r: describe_cluster(r, 2),
         cluster_meaning,
         lambda r: ("NONE", r.cluster.cluster_id, r.cluster.controller_id, controllers(r),
                    None), listeners=(CONTROLLER,), since=1),
    Case("DescribeCluster", 60, "broker_endpoints_on_a_controller",
         lambda r: describe_cluster(r, 1), lambda b, _r: code(b.error_code),
         lambda r: "INVALID_REQUEST" if r.version == 0 else "MISMATCHED_ENDPOINT_TYPE",
         listeners=(CONTROLLER,)),
    Case("UpdateFeatures", 57, "unknown_feature", update_features,
         lambda b, _r: sorted({code(b.error_code)} | {
             code(x.error_code) for x in getattr(b, "results", ()) or ()} - {"NONE"}),
         lambda _r: ["INVALID_UPDATE_VERSION"], listeners=BOTH),
    Case("DescribeQuorum", 55, "describes", describe_quorum, quorum_meaning,
         lambda r: ("NONE", METADATA_TOPIC, "NONE", r.cluster.controller_id,
                    [r.cluster.controller_id], True), listeners=BOTH),
]


# -- the controller's own RPCs (generated classes: kafka-python does not have them) ---------

def top_error(body: Any, _run: Run) -> Meaning:
    return code(body.error_code)


def error_is(name: str) -> Callable[[Run], Meaning]:
    return lambda _run: name


def generated(api_key: int, request: Any) -> Callable[[Run], Any]:
    """A row sent as a generated class (:mod:`pykraft.messages.kafka`) at its version."""
    return lambda run: run.generated(api_key, request)


def election_topic(module: ModuleType, name: str, **fields: int) -> Any:
    """A Vote, BeginQuorumEpoch or EndQuorumEpoch topic of one partition (index 0)."""
    return module.TopicData(topic_name=name,
                            partitions=(module.PartitionData(partition_index=0, **fields),))


def election_request(module: ModuleType, cluster_id: str | None, topic: str) -> Any:
    """Leader 7's BeginQuorumEpoch or EndQuorumEpoch request, by the module of its class
    (the leader's endpoint goes from v1)."""
    request_class = (module.BeginQuorumEpochRequest if module is bqe_req
                     else module.EndQuorumEpochRequest)
    return request_class(
        cluster_id=cluster_id, topics=(election_topic(module, topic, leader_id=7,
                                                      leader_epoch=1),),
        leader_endpoints=(module.LeaderEndpoint(**VOTER_ENDPOINT),))


def vote(cluster_id: str | None, topic: str) -> vote_req.VoteRequest:
    return vote_req.VoteRequest(cluster_id=cluster_id, topics=(
        election_topic(vote_req, topic, replica_id=7, replica_epoch=1),))


VOTER_ENDPOINT: dict[str, Any] = {"name": "CONTROLLER", "host": "127.0.0.1", "port": 1}
VOTER_KEY: dict[str, Any] = {"voter_id": 7, "voter_directory_id": uuid.UUID(int=7)}

RAFT = [
    Case("Vote", 52, "wrong_cluster_id", generated(52, vote(WRONG_CLUSTER, METADATA_TOPIC)),
         top_error, error_is("INCONSISTENT_CLUSTER_ID"), listeners=(CONTROLLER,)),
    Case("BeginQuorumEpoch", 53, "wrong_cluster_id",
         generated(53, election_request(bqe_req, WRONG_CLUSTER, METADATA_TOPIC)),
         top_error, error_is("INCONSISTENT_CLUSTER_ID"), listeners=(CONTROLLER,)),
    Case("EndQuorumEpoch", 54, "wrong_cluster_id",
         generated(54, election_request(eqe_req, WRONG_CLUSTER, METADATA_TOPIC)),
         top_error, error_is("INCONSISTENT_CLUSTER_ID"), listeners=(CONTROLLER,)),
    # Until multi-raft, Kafka answers an election RPC for any other topic partition with a
    # top-level INVALID_REQUEST (KafkaRaftClient, RaftUtil.hasValidTopicPartition).
    Case("Vote", 52, "other_topic", generated(52, vote(None, "other")),
         top_error, error_is("INVALID_REQUEST"), listeners=(CONTROLLER,)),
    Case("BeginQuorumEpoch", 53, "other_topic",
         generated(53, election_request(bqe_req, None, "other")),
         top_error, error_is("INVALID_REQUEST"), listeners=(CONTROLLER,)),
    Case("EndQuorumEpoch", 54, "other_topic",
         generated(54, election_request(eqe_req, None, "other")),
         top_error, error_is("INVALID_REQUEST"), listeners=(CONTROLLER,)),
    Case("FetchSnapshot", 59, "wrong_cluster_id",
         generated(59, fs_req.FetchSnapshotRequest(cluster_id=WRONG_CLUSTER, topics=(
             fs_req.TopicSnapshot(name=METADATA_TOPIC, partitions=(fs_req.PartitionSnapshot(
                 partition=0, snapshot_id=fs_req.SnapshotId(end_offset=1, epoch=1)),)),))),
         top_error, error_is("INCONSISTENT_CLUSTER_ID"), listeners=(CONTROLLER,)),
    Case("AddRaftVoter", 80, "wrong_cluster_id",
         generated(80, add_req.AddRaftVoterRequest(
             cluster_id=WRONG_CLUSTER, timeout_ms=5_000, **VOTER_KEY,
             listeners=(add_req.Listener(**VOTER_ENDPOINT),))),
         top_error, error_is("INCONSISTENT_CLUSTER_ID"), listeners=BOTH),
    Case("RemoveRaftVoter", 81, "wrong_cluster_id",
         generated(81, remove_req.RemoveRaftVoterRequest(cluster_id=WRONG_CLUSTER,
                                                         **VOTER_KEY)),
         top_error, error_is("INCONSISTENT_CLUSTER_ID"), listeners=BOTH),
    Case("UpdateRaftVoter", 82, "wrong_cluster_id",
         generated(82, update_req.UpdateRaftVoterRequest(
             cluster_id=WRONG_CLUSTER, current_leader_epoch=1, **VOTER_KEY,
             listeners=(update_req.Listener(**VOTER_ENDPOINT),),
             k_raft_version_feature=update_req.KRaftVersionFeature(
                 min_supported_version=0, max_supported_version=1))),
         top_error, error_is("INCONSISTENT_CLUSTER_ID"), listeners=(CONTROLLER,)),
]


def fetch(run: Run, cluster_id: str | None) -> Any:
    """An observer's first Fetch of the metadata log, as KRaft sends it (offset 0, epoch 0,
    the current leader epoch); before v13 the topic can only be named by name."""
    named = {"topic": METADATA_TOPIC} if run.version < 13 else {"topic_id": METADATA_TOPIC_ID}
    part = FetchRequest.FetchTopic.FetchPartition(
        partition=0, current_leader_epoch=run.cluster.epoch, fetch_offset=0,
        last_fetched_epoch=0, log_start_offset=-1, partition_max_bytes=1 << 20)
    return run.kafka_python(
        FetchRequest, FetchResponse, cluster_id=cluster_id, replica_id=-1,
        replica_state=FetchRequest.ReplicaState(replica_id=-1, replica_epoch=-1),
        max_wait_ms=0, min_bytes=0, max_bytes=1 << 20, isolation_level=0, session_id=0,
        session_epoch=-1, topics=[FetchRequest.FetchTopic(partitions=[part], **named)],
        forgotten_topics_data=[], rack_id="")


def fetch_meaning(body: Any, _run: Run) -> Meaning:
    parts = [p for t in body.responses for p in t.partitions]
    return (code(getattr(body, "error_code", 0)),
            [(code(p.error_code), p.high_watermark > 0, bool(p.records)) for p in parts])


FETCH = [
    Case("Fetch", 1, "observer_reads_the_metadata_log", lambda r: fetch(r, None),
         fetch_meaning, lambda _r: ("NONE", [("NONE", True, True)]),
         listeners=(CONTROLLER,), since=13),
    # KRaft checks the topic id only (RaftUtil.hasValidTopicPartition): a Fetch that names
    # the topic (v4-v12) is INVALID_REQUEST, in the top-level error code from v7 on.
    Case("Fetch", 1, "metadata_log_by_topic_name", lambda r: fetch(r, None),
         fetch_meaning,
         lambda r: ("INVALID_REQUEST" if r.version >= 7 else "NONE", []),
         listeners=(CONTROLLER,), until=13),
    Case("Fetch", 1, "wrong_cluster_id", lambda r: fetch(r, WRONG_CLUSTER),
         lambda b, _r: code(b.error_code), error_is("INCONSISTENT_CLUSTER_ID"),
         listeners=(CONTROLLER,), since=12),
]

BROKER_LIFECYCLE = [
    Case("BrokerRegistration", 62, "wrong_cluster_id",
         generated(62, BrokerRegistrationRequest(
             broker_id=UNKNOWN_BROKER, cluster_id=WRONG_CLUSTER,
             incarnation_id=uuid.UUID(int=9), rack=None)),
         top_error, error_is("INCONSISTENT_CLUSTER_ID"), listeners=(CONTROLLER,)),
    # a ZooKeeper broker's registration (KIP-866), to a controller without migration
    Case("BrokerRegistration", 62, "migrating_zk_broker",
         lambda r: r.generated(62, BrokerRegistrationRequest(
             broker_id=UNKNOWN_BROKER, cluster_id=r.cluster.cluster_id,
             incarnation_id=uuid.UUID(int=9), rack=None, is_migrating_zk_broker=True)),
         top_error, error_is("BROKER_ID_NOT_REGISTERED"), listeners=(CONTROLLER,), since=1),
    Case("BrokerHeartbeat", 63, "unknown_broker",
         generated(63, BrokerHeartbeatRequest(broker_id=UNKNOWN_BROKER, broker_epoch=5,
                                              want_fence=True)),
         top_error, error_is("STALE_BROKER_EPOCH"), listeners=(CONTROLLER,)),
    Case("UnregisterBroker", 64, "unknown_broker",
         generated(64, UnregisterBrokerRequest(broker_id=UNKNOWN_BROKER)),
         top_error, error_is("BROKER_ID_NOT_REGISTERED"), listeners=BOTH),
    # Kafka registers any controller id; a request that registers nothing (no incarnation
    # id) is the one that leaves the cluster as it is. Its error is pykraft's choice.
    Case("ControllerRegistration", 70, "no_incarnation_id",
         generated(70, ControllerRegistrationRequest(controller_id=UNKNOWN_BROKER)),
         top_error, error_is("NONE"), listeners=(CONTROLLER,)),  # registered, as Kafka
    Case("AlterPartition", 56, "unknown_broker",
         generated(56, AlterPartitionRequest(broker_id=UNKNOWN_BROKER, broker_epoch=5)),
         top_error, error_is("NONE"), listeners=(CONTROLLER,)),  # no topic: no epoch check
    # Kafka's checkBrokerEpoch: an unregistered broker is a stale epoch, for the whole request
    Case("AssignReplicasToDirs", 73, "unknown_broker",
         generated(73, dirs_req.AssignReplicasToDirsRequest(
             broker_id=UNKNOWN_BROKER, broker_epoch=5, directories=(dirs_req.DirectoryData(
                 id=uuid.UUID(int=9), topics=(dirs_req.TopicData(
                     topic_id=uuid.UUID(int=10),
                     partitions=(dirs_req.PartitionData(partition_index=0),)),)),))),
         top_error, error_is("STALE_BROKER_EPOCH"), listeners=(CONTROLLER,)),
]


# -- producer ids -----------------------------------------------------------------------------

def init_producer_id(run: Run, transactional_id: str | None = None, producer_id: int = -1,
                     epoch: int = -1) -> Any:
    """InitProducerId by kafka-python; while the broker waits for its first block of ids
    it answers COORDINATOR_LOAD_IN_PROGRESS, which clients retry, and so does this (for up
    to :data:`SETTLE_S`)."""
    return settled(lambda: run.kafka_python(
        InitProducerIdRequest, InitProducerIdResponse, transactional_id=transactional_id,
        transaction_timeout_ms=60_000, producer_id=producer_id, producer_epoch=epoch),
        lambda body: code(body.error_code) != "COORDINATOR_LOAD_IN_PROGRESS")


def new_ids(run: Run) -> tuple[Any, Any]:
    return init_producer_id(run), init_producer_id(run)


def producer_meaning(body: Any, _run: Run) -> Meaning:
    return code(body.error_code), body.producer_id >= 0, body.producer_epoch


PRODUCER_IDS = [
    Case("InitProducerId", 22, "two_idempotent_producers", new_ids,
         lambda b, _r: ([producer_meaning(x, _r) for x in b], b[0].producer_id != b[1].producer_id),
         lambda _r: ([("NONE", True, 0)] * 2, True)),
    # before any FindCoordinator made __transaction_state, no broker coordinates the id
    Case("InitProducerId", 22, "transactional_id", lambda r: init_producer_id(r, "txn"),
         producer_meaning, lambda _r: ("NOT_COORDINATOR", False, -1)),
    Case("InitProducerId", 22, "empty_transactional_id", lambda r: init_producer_id(r, ""),
         producer_meaning, lambda _r: ("INVALID_REQUEST", False, -1)),
    Case("InitProducerId", 22, "producer_id_without_epoch",
         lambda r: init_producer_id(r, producer_id=5), producer_meaning,
         lambda _r: ("INVALID_REQUEST", False, -1), since=3),
    # KIP-360 fields from an idempotent producer: Kafka hands out a new id all the same
    Case("InitProducerId", 22, "idempotent_epoch_bump",
         lambda r: init_producer_id(r, producer_id=5, epoch=0), producer_meaning,
         lambda _r: ("NONE", True, 0), since=3),
    Case("AllocateProducerIds", 67, "unknown_broker",
         generated(67, AllocateProducerIdsRequest(broker_id=UNKNOWN_BROKER, broker_epoch=5)),
         top_error, error_is("STALE_BROKER_EPOCH"), listeners=(CONTROLLER,)),
]



def produce(acks: int, topic: str | None = None, *, records: bytes = b"") -> Callable[[Run], Any]:
    """One partition's records for ``topic`` (the cluster's existing topic by default),
    named before v13, by id from v13 (KIP-516)."""
    def send(run: Run) -> Any:
        name = topic or run.cluster.topic
        named = {"name": name} if run.version < 13 else {"topic_id": topic_id_of(run, name)}
        return run.generated(0, produce_req.ProduceRequest(
            acks=acks, timeout_ms=5_000, topic_data=(produce_req.TopicProduceData(
                **named, partition_data=(produce_req.PartitionProduceData(
                    index=0, records=records),)),)))
    return send


def one_batch() -> bytes:
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False,
                                        producer_id=-1, producer_epoch=-1, base_sequence=-1,
                                        batch_size=1 << 20)
    builder.append(0, timestamp=int(time.time() * 1000), key=b"k", value=b"v", headers=[])
    return bytes(builder.build())


def produce_meaning(body: Any, _run: Run) -> Meaning:
    return [[(p.index, code(p.error_code), p.base_offset >= 0) for p in t.partition_responses]
            for t in body.responses]


PRODUCE = [
    Case("Produce", 0, "unknown_topic", produce(1, "no-such-topic", records=one_batch()),
         produce_meaning, lambda r: [[(0, "UNKNOWN_TOPIC_ID" if r.version >= 13 else ABSENT,
                                       False)]]),
    Case("Produce", 0, "invalid_required_acks", produce(2, records=one_batch()),
         produce_meaning, lambda _r: [[(0, "INVALID_REQUIRED_ACKS", False)]]),
    Case("Produce", 0, "no_record_batch", produce(1), produce_meaning,
         lambda _r: [[(0, "INVALID_RECORD", False)]]),
    Case("Produce", 0, "appended", produce(-1, records=one_batch()), produce_meaning,
         lambda _r: [[(0, "NONE", True)]]),
]


# -- the broker's read path -------------------------------------------------------------------
# The shared topic's partition 0 also takes the Produce rows' batches, so these rows do not
# depend on how much it holds.

FAR_OFFSET = 1 << 40
NO_SUCH_TOPIC = "no-such-topic"


def topic_id_of(run: Run, name: str) -> uuid.UUID:
    """A topic's id from the broker's Metadata (a random one for a topic that is not)."""
    (topic,) = metadata(Run(run.cluster, "probe", "probe", BROKER, 12), [name]).topics
    return topic.topic_id if topic.error_code == 0 else uuid.uuid4()


def known_topic_id(run: Run, name: str) -> uuid.UUID:
    """A topic just created: its id once the broker's Metadata names it (the broker learns
    of it from the metadata log a moment after CreateTopics answered; ci25's Kafka had not)."""
    probe = Run(run.cluster, "probe", "probe", BROKER, 12)
    (topic,) = settled(lambda: metadata(probe, [name]).topics,
                       lambda topics: topics[0].error_code == 0)
    topic_id: uuid.UUID = topic.topic_id
    return topic_id


def consumer_fetch(run: Run, topic: str, *, offset: int = 0, epoch: int = -1,
                   session_epoch: int = -1, session_id: int = 0, partitions: bool = True,
                   forgotten: bool = False, rack: str = "") -> Any:
    """A consumer's Fetch of partition 0 (by name before v13, by id from v13); in a
    session from v7: without the partition (``partitions=False``, as an incremental fetch
    that changes nothing) or forgetting it; from v11 with the client's ``rack``."""
    named = ({"topic": topic} if run.version < 13
             else {"topic_id": topic_id_of(run, topic)})
    part = FetchRequest.FetchTopic.FetchPartition(
        partition=0, current_leader_epoch=epoch, fetch_offset=offset, last_fetched_epoch=-1,
        log_start_offset=-1, partition_max_bytes=1 << 20)
    return run.kafka_python(
        FetchRequest, FetchResponse, cluster_id=None, replica_id=-1,
        replica_state=FetchRequest.ReplicaState(replica_id=-1, replica_epoch=-1),
        max_wait_ms=0, min_bytes=0, max_bytes=1 << 20, isolation_level=0,
        session_id=session_id, session_epoch=session_epoch,
        topics=[FetchRequest.FetchTopic(partitions=[part], **named)] if partitions else [],
        forgotten_topics_data=[FetchRequest.ForgottenTopic(partitions=[0], **named)]
        if forgotten else [], rack_id=rack)


def consumer_fetch_meaning(body: Any, _run: Run) -> tuple[str, int, list[tuple[str, bool]]]:
    parts = [p for t in body.responses for p in t.partitions]
    return (code(getattr(body, "error_code", 0)), getattr(body, "session_id", 0),
            [(code(p.error_code), p.high_watermark >= 0) for p in parts])


def preferred_replica_meaning(body: Any, _run: Run) -> Meaning:
    """Each partition's error, whether it has a high watermark, and its preferred read
    replica (KIP-392: -1 while the leader is the one to read)."""
    return [(code(p.error_code), p.high_watermark >= 0, p.preferred_read_replica)
            for t in body.responses for p in t.partitions]


def in_session(run: Run, then: Callable[[Run, int], Any]) -> tuple[Any, Any]:
    """A full fetch opening a session (epoch 0) at partition 0's end, so that what other
    rows wrote is not new to it, then ``then(run, session id)``."""
    opened = consumer_fetch(run, run.cluster.topic, session_epoch=0, offset=log_end(run))
    return opened, then(run, opened.session_id)


def log_end(run: Run) -> int:
    """The shared topic's partition 0 log end (ListOffsets v4, latest)."""
    probe = Run(run.cluster, "probe", "probe", BROKER, 4)
    (offset,) = (p.offset for t in list_offsets_request(probe, run.cluster.topic, [-1]).topics
                 for p in t.partitions)
    return int(offset)


def session_meaning(bodies: tuple[Any, ...], run: Run) -> Meaning:
    """Each answer's meaning, its session id only as opened (non-zero) or not: ids are
    random."""
    return [(error, session != 0, parts) for error, session, parts in (
        consumer_fetch_meaning(body, run) for body in bodies)]


def closed_session(run: Run) -> tuple[Any, Any, Any]:
    """A session opened, closed by a fetch at epoch -1 (read sessionless), then fetched
    in as if open."""
    opened, closed = in_session(run, lambda r, sid: consumer_fetch(
        r, r.cluster.topic, session_id=sid, session_epoch=-1))
    return opened, closed, consumer_fetch(run, run.cluster.topic, session_epoch=1,
                                          session_id=opened.session_id, partitions=False)


OPENED = ("NONE", True, [("NONE", True)])
#: Beyond the last of Kafka's 8 cache shards: its lookup throws (FetchSessionCache), and
#: the answer is FetchRequest.getErrorResponse's (the session echoed; before v13 the
#: request's partitions listed with the error).
NO_SHARD_SESSION_ID = (1 << 31) - 1


def list_offsets_request(run: Run, topic: str, timestamps: list[int], *,
                         epoch: int = -1) -> Any:
    parts = [ListOffsetsRequest.ListOffsetsTopic.ListOffsetsPartition(
        partition_index=0, current_leader_epoch=epoch, timestamp=ts, max_num_offsets=1)
        for ts in timestamps]
    return run.kafka_python(
        ListOffsetsRequest, ListOffsetsResponse, replica_id=-1, isolation_level=0,
        timeout_ms=1000,
        topics=[ListOffsetsRequest.ListOffsetsTopic(name=topic, partitions=parts)])


def listed(body: Any, _run: Run) -> Meaning:
    return [(code(p.error_code), p.offset) for t in body.topics for p in t.partitions]


def earliest_and_latest(run: Run) -> tuple[Any, Any]:
    """Two requests: one partition named twice in a request is INVALID_REQUEST."""
    return (list_offsets_request(run, run.cluster.topic, [-2]),
            list_offsets_request(run, run.cluster.topic, [-1]))


def earliest_and_latest_meaning(bodies: tuple[Any, Any], run: Run) -> Meaning:
    (error, earliest), (latest_error, latest) = (
        (code(p.error_code), p.offset) for body in bodies for t in body.topics
        for p in t.partitions)
    return (error, earliest), (latest_error, latest >= earliest)


def epoch_end(run: Run, topic: str, epoch: int, current: int = -1) -> Any:
    part = OffsetForLeaderEpochRequest.OffsetForLeaderTopic.OffsetForLeaderPartition(
        partition=0, current_leader_epoch=current, leader_epoch=epoch)
    return run.kafka_python(
        OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse, replica_id=-1,
        topics=[OffsetForLeaderEpochRequest.OffsetForLeaderTopic(topic=topic,
                                                                 partitions=[part])])


def epoch_ends(body: Any, _run: Run) -> Meaning:
    return [(code(p.error_code), p.end_offset >= 0) for t in body.topics for p in t.partitions]


def describe_log_dirs_request(run: Run, topics: list[str] | None) -> Any:
    wanted = None if topics is None else [DescribeLogDirsRequest.DescribableLogDirTopic(
        topic=name, partitions=[0, 1]) for name in topics]
    return run.kafka_python(DescribeLogDirsRequest, DescribeLogDirsResponse, topics=wanted)


def log_dirs_meaning(body: Any, run: Run) -> Meaning:
    shared = sorted((code(d.error_code), p.partition_index, p.partition_size >= 0,
                     p.offset_lag) for d in body.results for t in d.topics
                    if t.name == run.cluster.topic for p in t.partitions)
    return len(body.results), shared


def delete_records_request(run: Run, topic: str, offset: int) -> Any:
    part = DeleteRecordsRequest.DeleteRecordsTopic.DeleteRecordsPartition(
        partition_index=0, offset=offset)
    return run.kafka_python(
        DeleteRecordsRequest, DeleteRecordsResponse, timeout_ms=5000,
        topics=[DeleteRecordsRequest.DeleteRecordsTopic(name=topic, partitions=[part])])


def deleted(body: Any, _run: Run) -> Meaning:
    return [(code(p.error_code), p.low_watermark) for t in body.topics for p in t.partitions]


READ_PATH = [
    Case("Fetch", 1, "consumer_reads_a_partition",
         lambda r: consumer_fetch(r, r.cluster.topic), consumer_fetch_meaning,
         lambda _r: ("NONE", 0, [("NONE", True)])),
    # KIP-392: a consumer naming its rack; the single broker leads every partition, so it
    # serves the read itself and names no other replica (-1), selector or not
    Case("Fetch", 1, "consumer_with_a_rack_reads_the_leader",
         lambda r: consumer_fetch(r, r.cluster.topic, rack="rack-c"),
         preferred_replica_meaning, lambda _r: [("NONE", True, -1)], since=11),
    Case("Fetch", 1, "consumer_with_a_rack_out_of_range",
         lambda r: consumer_fetch(r, r.cluster.topic, rack="rack-c", offset=FAR_OFFSET),
         preferred_replica_meaning, lambda _r: [("OFFSET_OUT_OF_RANGE", False, -1)], since=11),
    Case("Fetch", 1, "unknown_topic", lambda r: consumer_fetch(r, NO_SUCH_TOPIC),
         consumer_fetch_meaning,
         lambda r: ("NONE", 0, [("UNKNOWN_TOPIC_ID" if r.version >= 13 else ABSENT,
                                 False)])),
    Case("Fetch", 1, "offset_out_of_range",
         lambda r: consumer_fetch(r, r.cluster.topic, offset=FAR_OFFSET),
         consumer_fetch_meaning, lambda _r: ("NONE", 0, [("OFFSET_OUT_OF_RANGE", False)])),
    Case("Fetch", 1, "newer_leader_epoch",
         lambda r: consumer_fetch(r, r.cluster.topic, epoch=1 << 20),
         consumer_fetch_meaning, lambda _r: ("NONE", 0, [("UNKNOWN_LEADER_EPOCH", False)]),
         since=9),
    # fetch sessions (KIP-227): session id 0 is never one
    Case("Fetch", 1, "incremental_session",
         lambda r: consumer_fetch(r, r.cluster.topic, session_epoch=1),
         consumer_fetch_meaning, lambda _r: ("FETCH_SESSION_ID_NOT_FOUND", 0, []), since=7),
    Case("Fetch", 1, "unknown_session_id",
         lambda r: (consumer_fetch(r, r.cluster.topic, session_id=12345, session_epoch=1),),
         session_meaning, lambda _r: [("FETCH_SESSION_ID_NOT_FOUND", False, [])], since=7),
    Case("Fetch", 1, "session_id_beyond_every_shard",
         lambda r: (consumer_fetch(r, r.cluster.topic, session_id=NO_SHARD_SESSION_ID,
                                   session_epoch=1),),
         session_meaning, lambda r: [("UNKNOWN_SERVER_ERROR", True, [
             ("UNKNOWN_SERVER_ERROR", False)] if r.version < 13 else [])], since=7),
    Case("Fetch", 1, "session_opened",
         lambda r: (consumer_fetch(r, r.cluster.topic, session_epoch=0),), session_meaning,
         lambda _r: [OPENED], since=7),
    Case("Fetch", 1, "incremental_fetch_with_nothing_new",
         lambda r: in_session(r, lambda r, sid: consumer_fetch(
             r, r.cluster.topic, session_id=sid, session_epoch=1, partitions=False)),
         session_meaning, lambda _r: [OPENED, ("NONE", True, [])], since=7),
    Case("Fetch", 1, "incremental_fetch_of_a_moved_offset",
         lambda r: in_session(r, lambda r, sid: consumer_fetch(
             r, r.cluster.topic, session_id=sid, session_epoch=1, offset=FAR_OFFSET)),
         session_meaning, lambda _r: [OPENED, ("NONE", True, [("OFFSET_OUT_OF_RANGE", False)])],
         since=7),
    Case("Fetch", 1, "wrong_session_epoch",
         lambda r: in_session(r, lambda r, sid: consumer_fetch(
             r, r.cluster.topic, session_id=sid, session_epoch=5, partitions=False)),
         session_meaning, lambda _r: [OPENED, ("INVALID_FETCH_SESSION_EPOCH", False, [])],
         since=7),
    Case("Fetch", 1, "session_closed_by_the_final_epoch", closed_session, session_meaning,
         lambda _r: [OPENED, ("NONE", False, [("NONE", True)]),
                     ("FETCH_SESSION_ID_NOT_FOUND", False, [])], since=7),
    Case("Fetch", 1, "forgetting_every_partition_closes_the_session",
         lambda r: in_session(r, lambda r, sid: consumer_fetch(
             r, r.cluster.topic, session_id=sid, session_epoch=1, partitions=False,
             forgotten=True)),
         session_meaning, lambda _r: [OPENED, ("NONE", False, [])], since=7),
    Case("Fetch", 1, "topic_id_session_fetched_by_name",
         lambda r: in_session(r, lambda r, sid: consumer_fetch(
             replace(r, version=12), r.cluster.topic, session_id=sid,
             session_epoch=1, partitions=False)),
         session_meaning,
         lambda _r: [OPENED, ("FETCH_SESSION_TOPIC_ID_ERROR", False, [])], since=13),
    Case("ListOffsets", 2, "earliest_and_latest",
         earliest_and_latest, earliest_and_latest_meaning,
         lambda _r: (("NONE", 0), ("NONE", True))),
    Case("ListOffsets", 2, "by_timestamp_after_everything",
         lambda r: list_offsets_request(r, r.cluster.topic, [1 << 50]), listed,
         lambda _r: [("NONE", -1)]),
    Case("ListOffsets", 2, "earliest_pending_upload_without_tiered_storage",
         lambda r: list_offsets_request(r, r.cluster.topic, [-6]), listed,
         lambda _r: [("NONE", -1)], since=11),
    Case("ListOffsets", 2, "unknown_topic",
         lambda r: list_offsets_request(r, NO_SUCH_TOPIC, [-1]), listed,
         lambda _r: [(ABSENT, -1)]),
    Case("ListOffsets", 2, "duplicate_partition",
         lambda r: list_offsets_request(r, r.cluster.topic, [-1, -2]), listed,
         lambda _r: [("INVALID_REQUEST", -1)]),  # once, as Kafka
    Case("ListOffsets", 2, "newer_leader_epoch",
         lambda r: list_offsets_request(r, r.cluster.topic, [-1], epoch=1 << 20), listed,
         lambda _r: [("UNKNOWN_LEADER_EPOCH", -1)], since=4),
    Case("OffsetForLeaderEpoch", 23, "current_epoch",
         lambda r: epoch_end(r, r.cluster.topic, 0), epoch_ends,
         lambda _r: [("NONE", True)]),
    Case("OffsetForLeaderEpoch", 23, "unknown_topic",
         lambda r: epoch_end(r, NO_SUCH_TOPIC, 0), epoch_ends, lambda _r: [(ABSENT, False)]),
    Case("OffsetForLeaderEpoch", 23, "newer_leader_epoch",
         lambda r: epoch_end(r, r.cluster.topic, 0, current=1 << 20), epoch_ends,
         lambda _r: [("UNKNOWN_LEADER_EPOCH", False)]),
    Case("DescribeLogDirs", 35, "all_partitions", lambda r: describe_log_dirs_request(r, None),
         log_dirs_meaning, lambda _r: (1, [("NONE", 0, True, 0), ("NONE", 1, True, 0)])),
    Case("DescribeLogDirs", 35, "other_topic",
         lambda r: describe_log_dirs_request(r, [NO_SUCH_TOPIC]), log_dirs_meaning,
         lambda _r: (1, [])),
    Case("DeleteRecords", 21, "past_the_high_watermark",
         lambda r: delete_records_request(r, r.cluster.topic, FAR_OFFSET), deleted,
         lambda _r: [("OFFSET_OUT_OF_RANGE", -1)]),
    Case("DeleteRecords", 21, "unknown_topic",
         lambda r: delete_records_request(r, NO_SUCH_TOPIC, 0), deleted,
         lambda _r: [(ABSENT, -1)]),
    # nothing was deleted from the shared topic: asking for 0 keeps its log start there
    Case("DeleteRecords", 21, "to_the_log_start",
         lambda r: delete_records_request(r, r.cluster.topic, 0), deleted,
         lambda _r: [("NONE", 0)]),
]

CASES: list[Case] = [*CLUSTER, *METADATA, *CREATE_TOPICS, *DELETE_TOPICS, *CREATE_PARTITIONS,
                     *DESCRIBE_CONFIGS, *ALTER_CONFIGS, *RAFT, *FETCH, *BROKER_LIFECYCLE,
                     *PRODUCER_IDS, *PRODUCE, *READ_PATH]
