"""The migrating controller's legacy channel (``runtime/legacy_channel.py``) on a SASL
inter-broker listener of a real Kafka 3.9.1 ZK broker (the harness's SASL_PLAINTEXT listener,
SCRAM): with the settings a pykraft controller reads from Kafka's keys
(``sasl.mechanism.inter.broker.protocol`` and the listener's JAAS), UpdateMetadata reaches the
broker authenticated, as its request log shows (principal, listener, protocol); a wrong
password is refused by the broker and never delivered."""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Iterator

import pytest
from process_harness import wait_for
from zk_cluster import (
    CONFIGS,
    SCRAM_LISTENER,
    SCRAM_LOGIN_MODULE,
    BrokerMode,
    ZkCluster,
    zk_cluster,
)

from pykraft.config.server import ServerConfig
from pykraft.image.image import MetadataDelta, MetadataImage, Provenance
from pykraft.image.versions import MV_3_4_IV0
from pykraft.migration.propagator import MigrationPropagator
from pykraft.records.metadata import (
    BrokerEndpoint,
    FeatureLevelRecord,
    PartitionRecord,
    RegisterBrokerRecord,
    TopicRecord,
)
from pykraft.runtime.legacy_channel import LegacyChannel
from pykraft.runtime.sasl_client import SaslCredentials
from pykraft.runtime.settings import legacy_channel_security
from pykraft.tools.local_cluster import HOST

BROKER = 1
CONTROLLER = 3000
USER, PASSWORD = "kraft-controller", "controller-secret"
MECHANISM = "SCRAM-SHA-512"
UPDATE_METADATA = 6
SASL_PLAINTEXT = 2  # the endpoint's security protocol id
DELIVERY_TIMEOUT_S = 120.0  # the broker learns the credential from ZooKeeper's notifications
ZK_CONTROLLER_EPOCH = 1000


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ZkCluster]:
    with zk_cluster(tmp_path_factory.mktemp("legacy-sasl"), scram_listener=True,
                    request_logs=True) as made:
        made.start_zookeeper()
        made.start_broker(BROKER, BrokerMode.ZK)
        made.wait_broker(BROKER)
        made.admin(CONFIGS, "--alter", "--entity-type", "users", "--entity-name", USER,
                   "--add-config", f"{MECHANISM}=[iterations=4096,password={PASSWORD}]")
        yield made


def controller_sasl(cluster: ZkCluster, password: str) -> SaslCredentials:
    """What a migrating pykraft controller authenticates with when its inter-broker listener
    is the brokers' SCRAM one, configured as Kafka's controller is (no TLS: SASL_PLAINTEXT)."""
    listener = SCRAM_LISTENER.lower()
    properties = {
        **cluster.controller_properties(CONTROLLER, migration=True),
        "listener.security.protocol.map":
            f"CONTROLLER:PLAINTEXT,{SCRAM_LISTENER}:{SCRAM_LISTENER}",
        "inter.broker.listener.name": SCRAM_LISTENER,
        "sasl.mechanism.inter.broker.protocol": MECHANISM,
        f"listener.name.{listener}.{MECHANISM.lower()}.sasl.jaas.config":
            f'{SCRAM_LOGIN_MODULE} required username="{USER}" password="{password}";'}
    tls, sasl = legacy_channel_security(ServerConfig(properties))
    assert tls is None and sasl is not None
    return sasl


def _image(port: int) -> MetadataImage:
    """Broker 1 registered as a migrating ZK broker with its SCRAM listener, and a topic."""
    topic = uuid.UUID(int=7)
    delta = MetadataDelta(MetadataImage())
    delta.replay(FeatureLevelRecord(name="metadata.version", feature_level=MV_3_4_IV0))
    delta.replay(RegisterBrokerRecord(
        broker_id=BROKER, is_migrating_zk_broker=True, incarnation_id=uuid.uuid4(),
        broker_epoch=-1, fenced=False,
        end_points=(BrokerEndpoint(name=SCRAM_LISTENER, host=HOST, port=port,
                                   security_protocol=SASL_PLAINTEXT),)))
    delta.replay(TopicRecord(name="legacy-sasl", topic_id=topic))
    delta.replay(PartitionRecord(partition_id=0, topic_id=topic, replicas=(BROKER,),
                                 isr=(BROKER,), leader=BROKER, leader_epoch=1,
                                 partition_epoch=1))
    return delta.apply(Provenance(20, 5, 0))


async def _deliver(sasl: SaslCredentials, port: int, until: object) -> LegacyChannel:
    channel = LegacyChannel(CONTROLLER, SCRAM_LISTENER, sasl=sasl)
    image = _image(port)
    requests = [r for r in MigrationPropagator(CONTROLLER, SCRAM_LISTENER).image_requests(
        image, ZK_CONTROLLER_EPOCH) if r.api_key == UPDATE_METADATA]
    channel.deliver(image, requests, ZK_CONTROLLER_EPOCH)
    try:
        async with asyncio.timeout(DELIVERY_TIMEOUT_S):
            while not (callable(until) and until(channel)):
                await asyncio.sleep(0.1)  # a poll of the channel's state, bounded above
    finally:
        channel.close()
    return channel


def test_update_metadata_reaches_the_broker_authenticated(cluster: ZkCluster) -> None:
    asyncio.run(_deliver(controller_sasl(cluster, PASSWORD), cluster.scram_ports[BROKER],
                         lambda channel: channel.sent >= 1))
    log = cluster.base / f"{cluster.broker_name(BROKER)}.requests.log"

    def logged() -> str | None:
        return next((line for line in log.read_text(errors="replace").splitlines()
                     if '"requestApiKeyName":"UPDATE_METADATA"' in line
                     and f'"principal":"User:{USER}"' in line), None)
    line = wait_for("the broker to log the UpdateMetadata", logged, DELIVERY_TIMEOUT_S)
    assert f'"listener":"{SCRAM_LISTENER}"' in line
    assert f'"securityProtocol":"{SCRAM_LISTENER}"' in line
    assert f'"controllerId":{CONTROLLER},"isKRaftController":true' in line


def test_a_wrong_password_is_refused(cluster: ZkCluster,
                                     caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, "pykraft.runtime.legacy_channel")

    def refused(channel: LegacyChannel) -> bool:
        return any("Authentication failed" in r.getMessage() for r in caplog.records)
    channel = asyncio.run(_deliver(controller_sasl(cluster, "wrong"),
                                   cluster.scram_ports[BROKER], refused))
    assert channel.sent == 0
