"""A migrating controller's settings and what it tells others (KIP-866, Kafka 3.9's names):
``zookeeper.metadata.migration.enable`` needs ``zookeeper.connect``, the ``zookeeper.*``
keys are known to a controller, its registration and ApiVersions say ``ZkMigrationReady``,
its ZkMigrationState gauge and its ZooKeeper write metrics on the metrics endpoint."""

from __future__ import annotations

import asyncio
import re
import urllib.request
import uuid
from pathlib import Path
from types import SimpleNamespace
from typing import cast

import pytest
from prometheus_client.parser import text_string_to_metric_families

from pykraft.config.server import ServerConfig
from pykraft.errors import ConfigError
from pykraft.ids import random_uuid, uuid_to_str
from pykraft.image.features import FeaturesImage, ZkMigrationState
from pykraft.image.image import MetadataImage, Provenance
from pykraft.runtime.controller_metrics import controller_families
from pykraft.runtime.controller_registration import registration_request
from pykraft.runtime.jmx_names import prometheus_name
from pykraft.runtime.metrics import RaftMetrics, serve_metrics
from pykraft.runtime.node import RaftNode
from pykraft.runtime.sasl_client import SaslCredentials
from pykraft.runtime.settings import NodeSettings, ZkClientSettings, load_settings
from pykraft.runtime.zk_write_metrics import ZkWriteMetrics
from pykraft.tools.local_cluster import free_ports
from pykraft.tools.storage_tool import FormatRequest, QuorumMode, format_storage

ZK = {"zookeeper.metadata.migration.enable": "true", "zookeeper.connect": "127.0.0.1:2181/kafka"}


def settings(tmp_path: Path, props: dict[str, str], *, roles: str = "controller"
             ) -> NodeSettings:
    config = ServerConfig({
        "process.roles": roles, "node.id": "2" if roles == "broker" else "1",
        "controller.listener.names": "CONTROLLER",
        "listeners": ("PLAINTEXT://127.0.0.1:9092" if roles == "broker"
                      else "CONTROLLER://127.0.0.1:9093"),
        "controller.quorum.voters": "1@127.0.0.1:9093", "log.dirs": str(tmp_path / "data"),
        **props})
    format_storage(FormatRequest(config=config, cluster_id=uuid_to_str(random_uuid()),
                                 mode=QuorumMode.STATIC))
    return load_settings(config)


def test_migration_needs_zookeeper_connect(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=re.escape(
            "If using `zookeeper.metadata.migration.enable` in KRaft mode, "
            "`zookeeper.connect` must also be set.")):
        settings(tmp_path, {"zookeeper.metadata.migration.enable": "true"})


def test_a_migrating_controller_reads_kafkas_keys_and_defaults(tmp_path: Path) -> None:
    found = settings(tmp_path, ZK)
    assert found.controller.zk_migration_enabled
    # the activation line names where the bootstrap came from, as Kafka's
    assert found.bootstrap_source == ("the binary bootstrap metadata file: "
                                      f"{tmp_path / 'data' / 'bootstrap.checkpoint'}")
    assert found.controller.zk_migration_min_batch_size == 200
    assert found.controller.inter_broker_listener_name == "PLAINTEXT"
    config = ServerConfig(ZK)
    assert (config.get("zookeeper.session.timeout.ms"),
            config.get("zookeeper.connection.timeout.ms"),
            config.get("zookeeper.max.in.flight.requests"), config.get("zookeeper.set.acl"),
            config.get("zookeeper.ssl.protocol")) == (18000, None, 10, False, "TLSv1.2")
    assert not [w for w in found.config_warnings if "zookeeper" in w]
    assert found.zookeeper == ZkClientSettings(
        connect="127.0.0.1:2181/kafka", session_timeout_ms=18000, connection_timeout_ms=18000,
        max_in_flight_requests=10, set_acl=False)


def test_the_migration_settings_can_be_set(tmp_path: Path) -> None:
    found = settings(tmp_path, {**ZK, "zookeeper.metadata.migration.min.batch.size": "1",
                                "inter.broker.listener.name": "internal",
                                "listener.security.protocol.map":
                                    "CONTROLLER:PLAINTEXT,INTERNAL:PLAINTEXT"})
    assert found.controller.zk_migration_min_batch_size == 1
    assert found.controller.inter_broker_listener_name == "INTERNAL"
    changed = settings(tmp_path / "zk", {**ZK, "zookeeper.session.timeout.ms": "6000",
                                         "zookeeper.connection.timeout.ms": "3000",
                                         "zookeeper.max.in.flight.requests": "2",
                                         "zookeeper.set.acl": "true"}).zookeeper
    assert changed is not None
    assert (changed.session_timeout_ms, changed.connection_timeout_ms,
            changed.max_in_flight_requests, changed.set_acl) == (6000, 3000, 2, True)
    with pytest.raises(ConfigError, match=re.escape(
            "Invalid value 0 for configuration zookeeper.metadata.migration.min.batch.size: "
            "Value must be at least 1")):
        ServerConfig({"zookeeper.metadata.migration.min.batch.size": "0"})


def test_without_migration_a_controller_is_not_migrating(tmp_path: Path) -> None:
    found = settings(tmp_path, {"zookeeper.connect": "127.0.0.1:2181"})
    assert not found.controller.zk_migration_enabled
    assert found.zookeeper is None


def test_a_broker_still_warns_of_zookeeper_keys_as_kafka_4(tmp_path: Path) -> None:
    found = settings(tmp_path, {"zookeeper.connect": "127.0.0.1:2181"}, roles="broker")
    assert any("'zookeeper.connect'" in w for w in found.config_warnings)
    assert not found.controller.zk_migration_enabled


def test_the_controller_registration_says_whether_it_migrates(tmp_path: Path) -> None:
    node = cast(RaftNode, SimpleNamespace(settings=settings(tmp_path, ZK)))
    assert registration_request(1, uuid.UUID(int=1), node).zk_migration_ready
    plain = cast(RaftNode, SimpleNamespace(settings=settings(tmp_path / "plain", {})))
    assert not registration_request(1, uuid.UUID(int=1), plain).zk_migration_ready


def gauge(image: MetadataImage) -> float:
    name = prometheus_name("kafka.controller", "KafkaController", "ZkMigrationState")
    return next(family.samples[0].value for family in controller_families(image, active=True)
                if family.name == name)


def test_the_zk_migration_state_gauge() -> None:
    assert gauge(MetadataImage()) == -1  # before the first image
    committed = Provenance(last_offset=4, last_epoch=1)
    assert gauge(MetadataImage(provenance=committed)) == 0
    assert gauge(MetadataImage(features=FeaturesImage(
        zk_migration_state=ZkMigrationState.PRE_MIGRATION), provenance=committed)) == 2


def _page(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as page:
        text: str = page.read().decode()
    return text


def test_the_metrics_endpoint_shows_the_zookeeper_write_metrics_under_kafkas_names() -> None:
    metrics = ZkWriteMetrics()
    metrics.zk_write_snapshot_time(12)
    metrics.zk_write_delta_time(3)
    metrics.dual_write_offset(40)

    async def scrape() -> str:
        port = free_ports(1)[0]
        server = serve_metrics(RaftMetrics(), "127.0.0.1", port,
                               on_loop=[lambda: metrics.families(45, active=True)])
        try:
            return await asyncio.to_thread(_page, port)  # the loop computes the families
        finally:
            await asyncio.to_thread(server.shutdown)
            server.server_close()

    found = {(s.name, s.labels.get("le")): s.value
             for family in text_string_to_metric_families(asyncio.run(scrape()))
             for s in family.samples}
    prefix = "kafka_controller_kafkacontroller_"
    assert found[(f"{prefix}zkwritebehindlag", None)] == 5
    assert found[(f"{prefix}zkwritesnapshottimems_count", None)] == 1
    assert found[(f"{prefix}zkwritesnapshottimems_sum", None)] == 12
    assert found[(f"{prefix}zkwritesnapshottimems_bucket", "10.0")] == 0
    assert found[(f"{prefix}zkwritesnapshottimems_bucket", "25.0")] == 1
    assert found[(f"{prefix}zkwritedeltatimems_count", None)] == 1


PLAIN_JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
              'username="controller" password="controller-secret";')


def test_the_legacy_channel_speaks_the_inter_broker_listeners_protocol(tmp_path: Path) -> None:
    """PLAINTEXT by default; on SASL_SSL, TLS with the listener's ssl.* keys and SASL with
    sasl.mechanism.inter.broker.protocol and the listener's JAAS, as Kafka's controller."""
    plain = settings(tmp_path / "plain", ZK)
    assert (plain.legacy_tls, plain.legacy_sasl) == (None, None)
    secured = settings(tmp_path / "secured", {
        **ZK, "inter.broker.listener.name": "INTERNAL",
        "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,INTERNAL:SASL_SSL",
        "sasl.mechanism.inter.broker.protocol": "PLAIN",
        "listener.name.internal.plain.sasl.jaas.config": PLAIN_JAAS,
        "listener.name.internal.ssl.endpoint.identification.algorithm": ""})
    assert secured.legacy_tls is not None and not secured.legacy_tls.check_hostname
    assert secured.legacy_sasl == SaslCredentials("PLAIN", "controller", "controller-secret")
    assert settings(tmp_path / "broker-only", {**ZK, "zookeeper.metadata.migration.enable":
                                               "false"}).legacy_sasl is None


@pytest.mark.parametrize(("props", "message"), [
    ({"inter.broker.listener.name": "INTERNAL"},
     "Listener with name INTERNAL defined in inter.broker.listener.name not found in "
     "listener.security.protocol.map."),
    ({"inter.broker.listener.name": "INTERNAL", "sasl.mechanism.inter.broker.protocol": "PLAIN",
      "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,INTERNAL:SASL_PLAINTEXT"},
     "sasl.mechanism.inter.broker.protocol=PLAIN but listener INTERNAL has no "
     "listener.name.internal.plain.sasl.jaas.config"),
])
def test_a_legacy_channel_it_cannot_secure_stops_the_controller(tmp_path: Path,
                                                                props: dict[str, str],
                                                                message: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)):
        settings(tmp_path, {**ZK, **props})
