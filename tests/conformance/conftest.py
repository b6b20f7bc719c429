"""One controller and one broker (real processes on 127.0.0.1) for the whole suite, with
a shared topic for the read-only rows."""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from kafka.protocol.admin import CreateTopicsRequest

sys.path.insert(0, str(Path(__file__).parent.parent / "acceptance"))
from broker_harness import PROPERTIES, add_broker_listener, wait_for, wait_for_brokers

from conformance.cases import create_topics, describe_quorum, metadata
from conformance.harness import BROKER, CONTROLLER, ClusterInfo, Run
from conformance.sasl_cases import SASL_LISTENER_PROPERTIES
from conformance.token_cases import SECRET_PROPERTIES
from conformance.topic_partitions_cases import PARTITION_CAP
from pykraft.config.authorizer import AUTHORIZER_CLASS_NAME, STANDARD_AUTHORIZER, SUPER_USERS
from pykraft.security.session import ANONYMOUS
from pykraft.tools.local_cluster import HOST, LocalCluster
from pykraft.tools.quorum_tool import parse_host_port

SHARED_TOPIC = "conformance"
SHARED_PARTITIONS = 2
#: A group's first rebalance waits group.initial.rebalance.delay.ms (3 s) for more members;
#: every group row makes a group of its own, so the suite does not wait. The ACL rows need
#: an authorizer; the anonymous PLAINTEXT clients of the suite are its super users. The
#: unknown-topic rows need topics to stay unknown: Metadata v0-3 would create them. The
#: DescribeTopicPartitions rows show the broker's cap on an answer's partitions with a few.
GROUP_PROPERTIES = {**PROPERTIES, "group.initial.rebalance.delay.ms": "0",
                    "auto.create.topics.enable": "false",
                    "max.request.partition.size.limit": str(PARTITION_CAP),
                    AUTHORIZER_CLASS_NAME: STANDARD_AUTHORIZER,
                    SUPER_USERS: str(ANONYMOUS), **SASL_LISTENER_PROPERTIES,
                    **SECRET_PROPERTIES}


@pytest.fixture(scope="session")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClusterInfo]:
    made = LocalCluster.create(tmp_path_factory.mktemp("conformance") / "cluster", 1,
                               GROUP_PROPERTIES, brokers=1)
    sasl_port = add_broker_listener(made, made.brokers[0], "SASL_PLAINTEXT")
    made.start_all()
    try:
        wait_for_brokers(made, 1)
        (controller_id,), (broker_id,) = made.controllers, made.brokers
        yield set_up(ClusterInfo(
            cluster_id=made.cluster_id, controller_id=controller_id,
            controller=parse_host_port(made.nodes[controller_id].address),
            broker_id=broker_id, broker=parse_host_port(made.nodes[broker_id].address),
            topic=SHARED_TOPIC, partitions=SHARED_PARTITIONS, epoch=-1,
            sasl=(HOST, sasl_port)))
    finally:
        for node_id in made.nodes:
            made.kill(node_id)


def set_up(info: ClusterInfo) -> ClusterInfo:
    """What every row may read: the metadata partition's epoch (in the returned info) and
    the shared topic, its partitions led. Run against pykraft's cluster and Kafka's alike."""
    quorum = describe_quorum(Run(info, "setup", "setup", CONTROLLER, 2))
    assert quorum.error_code == 0, quorum
    info = dataclasses.replace(info, epoch=quorum.topics[0].partitions[0].leader_epoch)
    setup = Run(info, "setup", "setup", BROKER, CreateTopicsRequest.max_version)
    create_topics(setup, SHARED_TOPIC, SHARED_PARTITIONS, 1)
    wait_for("the shared topic's leaders", lambda: _has_leaders(setup))
    return info


def _has_leaders(run: Run) -> bool | None:
    (topic,) = metadata(Run(run.cluster, "probe", "probe", BROKER, 12),
                        [SHARED_TOPIC]).topics
    leaders = [p.leader_id for p in topic.partitions]
    return True if len(leaders) == SHARED_PARTITIONS and min(leaders) >= 0 else None
