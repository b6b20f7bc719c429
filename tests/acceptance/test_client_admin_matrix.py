"""The same admin round trip through every client, each with its own default request versions
(issue 12: one version per client hid defects): confluent-kafka, kafka-python, aiokafka and
Kafka's Java Admin create a topic, describe it by name, delete it, and describe a broker's
configs. A second client (kcat) and every broker's Metadata confirm what each one did."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
from collections.abc import Callable, Iterator
from typing import Any, Protocol

import pytest
from broker_harness import PROPERTIES, broker_call, running_cluster, wait_for
from java_admin import BOOTSTRAP_SERVERS, JavaAdmin, JavaAdminError, OpenAdmin

from pykraft.messages.kafka.metadata_request import MetadataRequest, MetadataRequestTopic
from pykraft.tools.local_cluster import LocalCluster

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]
TIMEOUT_S = 30
UNKNOWN_TOPIC_OR_PARTITION = 3

#: partition index -> replica ids, or None when the client says the topic does not exist
Replicas = dict[int, list[int]] | None
#: config name -> (value, source) with Kafka's ConfigSource names
Configs = dict[str, tuple[str | None, str]]


class AdminDriver(Protocol):
    """One client's admin calls, reduced to what the tests compare."""

    def create(self, topic: str, partitions: int, replication: int) -> None: ...
    def describe(self, topic: str) -> Replicas: ...
    def delete(self, topic: str) -> None: ...
    def broker_configs(self, broker_id: int) -> Configs: ...
    def close(self) -> None: ...


class Confluent:
    def __init__(self, cluster: LocalCluster) -> None:
        from confluent_kafka.admin import AdminClient
        self.admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})

    def create(self, topic: str, partitions: int, replication: int) -> None:
        from confluent_kafka.admin import NewTopic
        self.admin.create_topics([NewTopic(topic, partitions, replication)])[topic].result(
            TIMEOUT_S)

    def describe(self, topic: str) -> Replicas:
        from confluent_kafka import KafkaError, KafkaException, TopicCollection
        try:
            found = self.admin.describe_topics(TopicCollection([topic]))[topic].result(TIMEOUT_S)
        except KafkaException as exc:
            if exc.args[0].code() == KafkaError.UNKNOWN_TOPIC_OR_PART:
                return None
            raise
        return {p.id: [n.id for n in p.replicas] for p in found.partitions}

    def delete(self, topic: str) -> None:
        self.admin.delete_topics([topic])[topic].result(TIMEOUT_S)

    def broker_configs(self, broker_id: int) -> Configs:
        from confluent_kafka.admin import ConfigResource, ConfigSource
        resource = ConfigResource(ConfigResource.Type.BROKER, str(broker_id))
        entries = self.admin.describe_configs([resource])[resource].result(TIMEOUT_S)
        return {name: (e.value, ConfigSource(e.source).name) for name, e in entries.items()}

    def close(self) -> None:
        """librdkafka's handle has no close: dropped now, it stops before the cluster does
        (else it logs refused connections after the module's cluster is gone)."""
        del self.admin


class KafkaPython:
    def __init__(self, cluster: LocalCluster) -> None:
        from kafka.admin import KafkaAdminClient
        self.admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)

    def create(self, topic: str, partitions: int, replication: int) -> None:
        from kafka.admin import NewTopic
        self.admin.create_topics([NewTopic(topic, partitions, replication)])

    def describe(self, topic: str) -> Replicas:
        (found,) = self.admin.describe_topics([topic])
        if found["error_code"] == UNKNOWN_TOPIC_OR_PARTITION:
            return None
        assert found["error_code"] == 0, found
        return {p["partition_index"]: p["replica_nodes"] for p in found["partitions"]}

    def delete(self, topic: str) -> None:
        answer = self.admin.delete_topics([topic])
        assert [(t["name"], t["error_code"]) for t in answer["topics"]] == [(topic, 0)]

    def broker_configs(self, broker_id: int) -> Configs:
        from kafka.admin import ConfigResource, ConfigResourceType
        resource = ConfigResource(ConfigResourceType.BROKER, str(broker_id))
        described = self.admin.describe_configs([resource], config_filter="all")
        return {name: (entry["value"], entry["config_source"])
                for name, entry in described["broker"][str(broker_id)].items()}

    def close(self) -> None:
        self.admin.close()


class AioKafka:
    """Each call opens its own admin client in its own event loop."""

    def __init__(self, cluster: LocalCluster) -> None:
        self.bootstrap = cluster.bootstrap_servers

    def _run(self, call: Any) -> Any:
        from aiokafka.admin import AIOKafkaAdminClient

        async def run() -> Any:
            admin = AIOKafkaAdminClient(bootstrap_servers=self.bootstrap)
            await admin.start()
            try:
                return await asyncio.wait_for(call(admin), TIMEOUT_S)
            finally:
                await admin.close()
        return asyncio.run(run())

    def create(self, topic: str, partitions: int, replication: int) -> None:
        from aiokafka.admin import NewTopic
        self._run(lambda admin: admin.create_topics([NewTopic(topic, partitions, replication)]))

    def describe(self, topic: str) -> Replicas:
        (found,) = self._run(lambda admin: admin.describe_topics([topic]))
        if found["error_code"] == UNKNOWN_TOPIC_OR_PARTITION:
            return None
        assert found["error_code"] == 0, found
        return {p["partition"]: p["replicas"] for p in found["partitions"]}

    def delete(self, topic: str) -> None:
        answer = self._run(lambda admin: admin.delete_topics([topic])).to_object()
        assert [(t["topic"], t["error_code"]) for t in answer["topic_error_codes"]] == [
            (topic, 0)]

    def broker_configs(self, broker_id: int) -> Configs:
        from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType
        from confluent_kafka.admin import ConfigSource
        resource = ConfigResource(ConfigResourceType.BROKER, str(broker_id))
        (answer,) = self._run(lambda admin: admin.describe_configs([resource]))
        (described,) = answer.to_object()["resources"]
        assert described["error_code"] == 0, described
        return {e["config_names"]: (e["config_value"], ConfigSource(e["config_source"]).name)
                for e in described["config_entries"]}

    def close(self) -> None:
        """Nothing stays open between calls."""


class Java:
    def __init__(self, admin: JavaAdmin) -> None:
        self.admin = admin

    def create(self, topic: str, partitions: int, replication: int) -> None:
        self.admin.call("createTopic", topic, partitions, replication)

    def describe(self, topic: str) -> Replicas:
        try:
            found = self.admin.call("describeTopics", topic)[topic]
        except JavaAdminError as exc:
            if exc.error == "UnknownTopicOrPartitionException":
                return None
            raise
        return {p["partition"]: p["replicas"] for p in found["partitions"]}

    def delete(self, topic: str) -> None:
        self.admin.call("deleteTopics", topic)

    def broker_configs(self, broker_id: int) -> Configs:
        entries = self.admin.call("describeConfigs", "BROKER", str(broker_id))
        return {name: (e["value"], e["source"]) for name, e in entries.items()}

    def close(self) -> None:
        """The java_admin fixture closes the JVM."""


PYTHON_CLIENTS: dict[str, Callable[[LocalCluster], AdminDriver]] = {
    "confluent-kafka": Confluent, "kafka-python": KafkaPython, "aiokafka": AioKafka}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    """The shared cluster without topic auto-creation: aiokafka's describe_topics asks for
    it (Metadata's allow_auto_topic_creation), so after a delete it would recreate the topic
    behind the test's back, as Kafka would; these tests are about the admin APIs."""
    with running_cluster(tmp_path_factory.mktemp("admin-matrix") / "cluster",
                         {**PROPERTIES, "auto.create.topics.enable": "false"},
                         controllers=3, brokers=3) as made:
        yield made


@pytest.fixture(params=[*PYTHON_CLIENTS, "java"])
def client(request: pytest.FixtureRequest, cluster: LocalCluster) -> Iterator[AdminDriver]:
    driver: AdminDriver
    if request.param == "java":
        open_admin: OpenAdmin = request.getfixturevalue("java_admin")
        driver = Java(open_admin(BOOTSTRAP_SERVERS, cluster.bootstrap_servers))
    else:
        driver = PYTHON_CLIENTS[request.param](cluster)
    yield driver
    driver.close()


def kcat_topic(cluster: LocalCluster, topic: str) -> str:
    """``kcat -L -t TOPIC`` (librdkafka's Metadata v4 naming the topic)."""
    if shutil.which("kcat") is None:
        pytest.skip("kcat could not be installed (needs root and apt-get)")
    done = subprocess.run(["kcat", "-L", "-b", cluster.bootstrap_servers, "-t", topic,
                           "-m", "10"], capture_output=True, text=True, timeout=TIMEOUT_S,
                          check=True)
    return done.stdout


def metadata_errors(cluster: LocalCluster, topic: str) -> set[int]:
    """The topic's error code in each broker's Metadata v13 answer naming it."""
    request = MetadataRequest(topics=(MetadataRequestTopic(name=topic),),
                              allow_auto_topic_creation=False,
                              include_topic_authorized_operations=False)
    return {int(broker_call(cluster, b, request).topics[0].error_code) for b in cluster.brokers}


def test_create_describe_delete(client: AdminDriver, cluster: LocalCluster,
                                request: pytest.FixtureRequest) -> None:
    topic = f"matrix-{request.node.callspec.id}"
    client.create(topic, 3, 2)

    def described() -> dict[int, list[int]] | None:
        replicas = client.describe(topic)
        return replicas if replicas is not None and len(replicas) == 3 else None
    replicas = wait_for(f"{topic} described", described)
    assert sorted(replicas) == [0, 1, 2]
    for ids in replicas.values():
        assert len(set(ids)) == 2 and set(ids) <= set(cluster.brokers)
    wait_for(f"kcat to list {topic}", lambda: True if (
        f'topic "{topic}" with 3 partitions:' in kcat_topic(cluster, topic)) else None)

    client.delete(topic)
    wait_for(f"{topic} gone from every broker", lambda: True if metadata_errors(
        cluster, topic) == {UNKNOWN_TOPIC_OR_PARTITION} else None)
    assert client.describe(topic) is None
    listed = kcat_topic(cluster, topic)
    assert f'topic "{topic}" with 0 partitions: Broker: Unknown topic or partition' in listed


def test_describe_broker_configs(client: AdminDriver, cluster: LocalCluster) -> None:
    broker = cluster.brokers[-1]
    configs = client.broker_configs(broker)
    assert configs["log.retention.hours"] == ("168", "DEFAULT_CONFIG")
    assert configs["num.network.threads"] == ("3", "DEFAULT_CONFIG")
    assert configs["node.id"] == (str(broker), "STATIC_BROKER_CONFIG")
    assert configs["process.roles"] == ("broker", "STATIC_BROKER_CONFIG")
    assert configs["broker.heartbeat.interval.ms"] == ("500", "STATIC_BROKER_CONFIG")
    assert configs["listeners"] == (f"PLAINTEXT://{cluster.nodes[broker].address}",
                                    "STATIC_BROKER_CONFIG")
    # Kafka's KafkaConfig copies node.id into broker.id (populateSynonyms) before it parses
    assert configs["broker.id"] == (str(broker), "STATIC_BROKER_CONFIG")
