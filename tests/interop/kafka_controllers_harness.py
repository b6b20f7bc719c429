"""pykraft brokers on a quorum of Apache Kafka's controllers (issue 26 item 2): the cluster,
Kafka's tools and Admin client pointed at it, and what the tests read back from it.

Kafka's controllers are driven with Kafka's own tools (through the pykraft brokers, or through
the controllers where a tool takes ``--bootstrap-controller``) and, for the requests Kafka's
Admin client refuses to send to a controller (CreateTopics, ElectLeaders, AlterClientQuotas:
``UnsupportedEndpointTypeException``) and a pykraft broker does not serve, with the request
itself sent to the active controller (:func:`controller_request`, a generated class).
"""

from __future__ import annotations

import contextlib
import os
import re
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from kafka_brokers_harness import wait_until
from kafka_tools import ClusterTools, Outcome, ToolRun, run_batch
from oracle_cluster import (
    KAFKA,
    MIXED_RELEASE_VERSION,
    PYKRAFT,
    ClusterSpec,
    KafkaInstall,
    Node,
    OracleCluster,
    call,
)

from pykraft.messages.kafka.describe_acls_request import DescribeAclsRequest
from pykraft.messages.kafka.describe_configs_request import (
    DescribeConfigsRequest,
    DescribeConfigsResource,
)
from pykraft.messages.kafka.describe_user_scram_credentials_request import (
    DescribeUserScramCredentialsRequest,
)
from pykraft.messages.kafka.metadata_request import MetadataRequest
from pykraft.protocol.apis import ApiKey
from pykraft.raft import rpc

R = TypeVar("R")

REQUEST_TIMEOUT_S = 60.0
WAIT_S = 90.0
POLL_S = 0.2
METADATA_TOPIC = "__cluster_metadata"
DUMP_LOG = "org.apache.kafka.tools.DumpLogSegments"

#: Small metadata segments, a snapshot every few KiB and a short retention: Kafka's controllers
#: snapshot and delete the segments the snapshot covers, so a broker starting from an empty
#: metadata directory must FetchSnapshot. No automatic leader rebalance: the preferred-leader
#: election is the test's. The StandardAuthorizer (everyone a super user) so ACLs are written.
SPEC = ClusterSpec(
    controllers=(KAFKA,) * 3, brokers=(PYKRAFT,) * 3,
    release_version=MIXED_RELEASE_VERSION,
    properties={
        "internal.metadata.log.segment.bytes": "16384",
        "metadata.log.max.record.bytes.between.snapshots": "8192",
        "metadata.max.retention.bytes": "1",
        "metadata.max.retention.ms": "1",
        "auto.leader.rebalance.enable": "false",
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users": "User:ANONYMOUS",
        "allow.everyone.if.no.acl.found": "true",
    },
)


def controller_request(cluster: OracleCluster, api_key: int, version: int, body: object,
                       response: type[R]) -> R:
    """One request (a generated class, at ``version``) to the active controller; its
    response, a ``response``. Sent by :func:`oracle_cluster.call`, which codes any API Kafka
    defines: pykraft's API table has no ElectLeaders, AlterPartitionReassignments or
    AlterClientQuotas."""
    answer = call(active_controller(cluster).listener("controller"), api_key, version, body,
                  timeout_s=REQUEST_TIMEOUT_S)
    assert isinstance(answer, response), answer
    return answer


def run_tools(kafka: KafkaInstall, tools: ClusterTools, runs: list[ToolRun],
              ) -> dict[str, Outcome]:
    """Kafka's tools in one JVM (``kafka_tools.run_batch``); each must exit 0."""
    outcomes: dict[str, Outcome] = run_batch(kafka, tools, runs)
    failed = {name: outcome for name, outcome in outcomes.items() if outcome.code != 0}
    assert not failed, "\n".join(f"{name}: exit {o.code}\n{o.stdout}\n{o.stderr}"
                                 for name, o in failed.items())
    return outcomes


@dataclass(frozen=True, slots=True)
class PartitionView:
    leader: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]


TopicsView = dict[str, dict[int, PartitionView]]


def topics_view(broker: Node) -> TopicsView:
    """Every topic's partitions as a broker's Metadata response gives them."""
    answer = call(broker.address, ApiKey.METADATA, 12, MetadataRequest(
        topics=None, allow_auto_topic_creation=False,
        include_topic_authorized_operations=False))
    return {str(topic.name): {int(p.partition_index): PartitionView(
        int(p.leader_id), tuple(map(int, p.replica_nodes)), tuple(map(int, p.isr_nodes)))
        for p in topic.partitions} for topic in answer.topics if topic.error_code == 0}


def active_controller(cluster: OracleCluster) -> Node:
    """The quorum's leader, as the first running controller that answers says."""
    request = rpc.describe_quorum_request()
    leader = -1

    def known() -> bool:
        nonlocal leader
        for node in cluster.controllers:
            if cluster.is_running(node):
                answer = call(node.listener("controller"), ApiKey.DESCRIBE_QUORUM, 2, request)
                leader = answer.topics[0].partitions[0].leader_id
                if leader in cluster.nodes and cluster.is_running(cluster.nodes[leader]):
                    return True
        return False
    wait_until("a running controller leads the quorum", known)
    return cluster.nodes[leader]


@dataclass(frozen=True, slots=True)
class MetadataState:
    """What a node answers about the metadata image besides topics: a topic's dynamic
    configs, the cluster's default broker configs, every ACL, every SCRAM credential."""

    topic_configs: frozenset[tuple[str, str | None]]
    broker_configs: frozenset[tuple[str, str | None]]
    acls: frozenset[tuple[int, str, str, int, int]]
    scram: frozenset[tuple[str, int, int]]


#: DescribeConfigs' sources of a value set for the topic itself, and for every broker (a
#: topic's value inherited from the answering broker's own dynamic config differs by node)
_TOPIC_SOURCE, _CLUSTER_SOURCE = 1, 3
_TOPIC_RESOURCE, _BROKER_RESOURCE = 2, 4
_ANY = 1


def metadata_state(address: str, topic: str, *, scram: bool = True) -> MetadataState:
    """The :class:`MetadataState` a broker (or a Kafka controller, on its listener) gives.
    The default broker resource (``""``): Kafka's controller describes no other node's.
    ``scram=False`` for a Kafka controller: it advertises DescribeUserScramCredentials but
    fails it (``Unsupported ApiKey``, then a NullPointerException on ``users=null``)."""
    configs = call(address, ApiKey.DESCRIBE_CONFIGS, 4, DescribeConfigsRequest(resources=(
        DescribeConfigsResource(resource_type=_TOPIC_RESOURCE, resource_name=topic,
                                configuration_keys=None),
        DescribeConfigsResource(resource_type=_BROKER_RESOURCE, resource_name="",
                                configuration_keys=None))))
    assert [r.error_code for r in configs.results] == [0, 0], configs
    topic_configs, broker_configs = (frozenset(
        (c.name, c.value) for c in r.configs if c.config_source == source)
        for r, source in zip(configs.results, (_TOPIC_SOURCE, _CLUSTER_SOURCE), strict=True))
    acls = call(address, ApiKey.DESCRIBE_ACLS, 3, DescribeAclsRequest(
        resource_type_filter=_ANY, resource_name_filter=None, principal_filter=None,
        host_filter=None, operation=_ANY, permission_type=_ANY))
    assert acls.error_code == 0, acls
    return MetadataState(
        topic_configs, broker_configs,
        frozenset((int(r.resource_type), str(r.resource_name), str(a.principal),
                   int(a.operation), int(a.permission_type))
                  for r in acls.resources for a in r.acls),
        scram_credentials(address) if scram else frozenset())


def scram_credentials(address: str) -> frozenset[tuple[str, int, int]]:
    """(user, mechanism, iterations) of every SCRAM credential a broker describes."""
    answer = call(address, ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, 0,
                  DescribeUserScramCredentialsRequest(users=None))
    assert answer.error_code == 0, answer
    return frozenset((str(r.user), int(c.mechanism), int(c.iterations))
                     for r in answer.results for c in r.credential_infos)


class SegmentKeeper:
    """Hard links to a node's metadata log segments, taken as they appear. The cluster's
    retention lets Kafka's controllers delete the segments a snapshot covers (so a broker
    starting empty must FetchSnapshot), and the record-type check reads the whole log: a
    hard link keeps a deleted segment's data. Pass :meth:`watch` as ``running``'s
    ``prepare`` (it starts before the node does); :meth:`stop` it at the end."""

    def __init__(self, node_id: int, into: Path) -> None:
        self.node_id = node_id
        self.into = into
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    def watch(self, cluster: OracleCluster) -> None:
        source = cluster.nodes[self.node_id].data / f"{METADATA_TOPIC}-0"
        self.into.mkdir(parents=True, exist_ok=True)
        self._thread = threading.Thread(target=self._keep, args=(source,), daemon=True)
        self._thread.start()

    def _keep(self, source: Path) -> None:
        while not self._stopping.wait(POLL_S):  # another process's files: poll them
            for segment in source.glob("*.log") if source.exists() else ():
                kept = self.into / segment.name
                if not kept.exists():
                    with contextlib.suppress(FileNotFoundError):  # deleted meanwhile
                        os.link(segment, kept)

    def segments(self) -> list[Path]:
        return sorted(self.into.glob("*.log"))

    def stop(self) -> None:
        self._stopping.set()
        if self._thread is not None:
            self._thread.join(timeout=WAIT_S)


_RECORD_TYPE = re.compile(r'"type":"([A-Z_]+)"')


def record_types(kafka: KafkaInstall, tools: ClusterTools, segments: list[Path]) -> set[str]:
    """The metadata record types in log segments, decoded by Kafka's
    ``kafka-dump-log --cluster-metadata-decoder`` (Kafka's type names: ``TOPIC_RECORD``)."""
    files = [str(segment) for segment in segments]
    outcome = run_tools(kafka, tools, [ToolRun("kafka-dump-log", "metadata", DUMP_LOG, (
        "--files", ",".join(files), "--cluster-metadata-decoder"))])["kafka-dump-log.metadata"]
    return set(_RECORD_TYPE.findall(outcome.stdout))


#: pykraft's logfmt levels that say something went wrong
_PROBLEM = re.compile(r"\blevel=(warning|error|critical)\b")


def pykraft_problems(node: Node) -> list[str]:
    """A pykraft node's log lines at warning level or above."""
    return [line for line in node.log.read_text(errors="replace").splitlines()
            if _PROBLEM.search(line)]


