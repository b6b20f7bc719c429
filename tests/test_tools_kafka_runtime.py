"""Kafka nodes in a local cluster, without running them: where Kafka is found, what a
mixed cluster records, and the refusals a user meets (``cluster up --kafka-brokers``).
``tests/interop/test_mixed_cluster_up.py`` runs such a cluster."""

from __future__ import annotations

from pathlib import Path

import pytest

from pykraft.tools.kafka_runtime import (
    JVM_OPTIONS,
    KAFKA_HOME_ENV,
    MIXED_RELEASE_VERSION,
    SERVER_START_JVM_OPTIONS,
    KafkaRuntime,
    KafkaRuntimeError,
)
from pykraft.tools.local_cluster import ClusterError, LocalCluster


@pytest.fixture
def kafka_home(tmp_path: Path) -> Path:
    """A directory shaped as a Kafka distribution: libs/ with a server jar."""
    libs = tmp_path / "kafka" / "libs"
    libs.mkdir(parents=True)
    for name in ("kafka_2.13-4.4.0.jar", "kafka-clients-4.4.0.jar"):
        (libs / name).write_bytes(b"")
    return tmp_path / "kafka"


def test_kafka_is_found_in_a_distribution_or_a_directory_of_jars(kafka_home: Path) -> None:
    for home in (kafka_home, kafka_home / "libs"):
        runtime = KafkaRuntime.locate(home)
        assert [jar.name for jar in runtime.jars] == ["kafka-clients-4.4.0.jar",
                                                      "kafka_2.13-4.4.0.jar"]
    command = runtime.format_command(Path("node.properties"), "abc",
                                     "--standalone", log4j2=Path("log4j2.properties"))
    assert command[-9:] == ["kafka.tools.StorageTool", "format", "--config", "node.properties",
                            "--cluster-id", "abc", "--release-version", MIXED_RELEASE_VERSION,
                            "--standalone"]


def test_without_kafka_the_error_says_where_to_point(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(KAFKA_HOME_ENV, raising=False)
    with pytest.raises(KafkaRuntimeError, match="pass --kafka-home"):
        KafkaRuntime.locate(None)
    monkeypatch.setenv(KAFKA_HOME_ENV, str(tmp_path))
    with pytest.raises(KafkaRuntimeError, match="holds no Kafka server jar"):
        KafkaRuntime.locate(None)


def test_a_mixed_cluster_records_which_nodes_run_kafka(tmp_path: Path,
                                                       kafka_home: Path) -> None:
    base = tmp_path / "cluster"
    made = LocalCluster.create(base, 2, brokers=1, kafka_controllers=1, kafka_brokers=2,
                               kafka=KafkaRuntime.locate(kafka_home), format_nodes=False)
    assert made.controllers == [1, 2, 3] and made.brokers == [1000, 1001, 1002]
    assert made.kafka_nodes == {3, 1001, 1002}
    loaded = LocalCluster.load(base)
    assert loaded.kafka_nodes == made.kafka_nodes
    # every node, of either kind, replicates internal topics no wider than 3 brokers allow
    for node_id in (1, 1000):
        assert "offsets.topic.replication.factor=3\n" in made.nodes[node_id].config.read_text()
    with pytest.raises(ClusterError, match="1 Kafka controllers and 2 Kafka brokers"):
        LocalCluster.reopen(base, 2, brokers=1, kafka_brokers=1)


@pytest.mark.parametrize(("controllers", "kafka_brokers", "message"), [
    (1, 1, "Kafka nodes need --kafka-home"),
    (1, -1, "--kafka-brokers must be at least 0, not -1"),
    (0, 0, "a cluster needs a controller"),
])
def test_a_mixed_cluster_is_refused_before_anything_is_written(
        tmp_path: Path, controllers: int, kafka_brokers: int, message: str) -> None:
    with pytest.raises(ClusterError, match=message):
        LocalCluster.create(tmp_path / "cluster", controllers, kafka_brokers=kafka_brokers,
                            format_nodes=False)
    assert not (tmp_path / "cluster").exists()


def test_a_secure_cluster_has_no_kafka_nodes(tmp_path: Path, kafka_home: Path) -> None:
    with pytest.raises(ClusterError, match="--secure is for pykraft nodes only"):
        LocalCluster.create(tmp_path / "cluster", 1, kafka_brokers=1, secure=True,
                            kafka=KafkaRuntime.locate(kafka_home), format_nodes=False)


def test_jvm_options_are_the_light_ones_unless_given(kafka_home: Path) -> None:
    """A laptop's cluster keeps the light JVM; a comparison with Kafka (bench/vs_kafka.py)
    runs it as kafka-server-start.sh does, and every Kafka command of that runtime does too."""
    light = KafkaRuntime.locate(kafka_home)
    assert light.jvm_options == JVM_OPTIONS
    config, log4j2 = Path("server.properties"), Path("log4j2.properties")
    assert light.server_command(config, log4j2=log4j2)[1:1 + len(JVM_OPTIONS)] == list(
        JVM_OPTIONS)
    started = KafkaRuntime.locate(kafka_home, SERVER_START_JVM_OPTIONS)
    assert {"-Xmx1G", "-Xms1G", "-XX:+UseG1GC", "-XX:MaxInlineLevel=15"} <= set(
        SERVER_START_JVM_OPTIONS)
    for command in (started.server_command(config, log4j2=log4j2),
                    started.format_command(config, "abc", log4j2=log4j2)):
        assert command[1:1 + len(SERVER_START_JVM_OPTIONS)] == list(SERVER_START_JVM_OPTIONS)
        assert "-XX:+UseSerialGC" not in command
