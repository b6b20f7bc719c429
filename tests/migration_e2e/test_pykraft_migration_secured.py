"""A pykraft migrating controller on secured connections, as Kafka 3.9's are configured: its
ZooKeeper session over TLS only (``zookeeper.connect`` on ZooKeeper's ``secureClientPort``,
``zookeeper.ssl.*`` with a PKCS12 key store), and its legacy channel on the ZK broker's
inter-broker listener, SASL_PLAINTEXT with PLAIN (``sasl.mechanism.inter.broker.protocol``
and the listener's JAAS). One Kafka 3.9.1 ZK broker, one pykraft controller: the driver loads
ZooKeeper's metadata (a topic) and claims ``/controller`` over TLS, and the broker's request
log shows LeaderAndIsr and UpdateMetadata from the controller's principal on that listener."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from process_harness import wait_for
from reference_procedure import COMPLETED
from zk_cluster import SCRAM_LISTENER, TOPICS, BrokerMode, ZkCluster, zk_cluster

pytestmark = pytest.mark.timeout(900)

BROKER = 1
CONTROLLER = 3000
LEGACY_APIS = ("LEADER_AND_ISR", "UPDATE_METADATA")
REQUEST_LOG_TIMEOUT_S = 60.0


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ZkCluster]:
    with zk_cluster(tmp_path_factory.mktemp("secured-migration"), brokers=(BROKER,),
                    controllers=(CONTROLLER,), request_logs=True, pykraft_controllers=True,
                    zk_tls=True, inter_broker_sasl=True) as made:
        made.extra_controller_properties |= made.zk_tls_properties()
        made.start_zookeeper()
        made.start_broker(BROKER, BrokerMode.ZK)
        made.wait_broker(BROKER)
        made.admin(TOPICS, "--create", "--topic", "secured", "--partitions", "2",
                   "--replication-factor", "1")
        made.format_controller(CONTROLLER, made.cluster_id(), migration=True)
        made.start_controller(CONTROLLER, migration=True)
        made.wait_controller(CONTROLLER)
        made.wait_controller_line("to WAIT_FOR_BROKERS state")
        made.roll_broker(BROKER, BrokerMode.MIGRATION)
        made.wait_controller_line(COMPLETED)
        made.controller(CONTROLLER).wait_line("to DUAL_WRITE state")
        yield made


def test_the_driver_claims_zookeeper_over_tls(cluster: ZkCluster) -> None:
    """The controller knows ZooKeeper only by its TLS port, and it holds /controller with
    its KRaft epoch (read here on the plaintext port)."""
    properties = (cluster.base / f"{cluster.controller_name(CONTROLLER)}.migration.properties"
                  ).read_text().splitlines()
    assert f"zookeeper.connect={cluster.zk_tls_connect}" in properties
    assert "zookeeper.ssl.client.enable=true" in properties
    with cluster.zk_session() as plain:
        found = plain.get("/controller")
    assert found is not None and found.raw is not None
    claim = json.loads(found.raw)
    assert claim["brokerid"] == CONTROLLER and claim["kraftControllerEpoch"] >= 1, claim


def test_the_zk_broker_hears_from_the_controller_over_sasl(cluster: ZkCluster) -> None:
    """The controller's first requests follow its DUAL_WRITE line: waited for in the
    broker's request log, then every one of them authenticated as the controller."""
    log = cluster.base / f"{cluster.broker_name(BROKER)}.requests.log"

    def from_controller() -> list[str] | None:
        lines = [line for line in log.read_text(errors="replace").splitlines()
                 if f'"controllerId":{CONTROLLER},"isKRaftController":true' in line]
        apis = {api for api in LEGACY_APIS for line in lines
                if f'"requestApiKeyName":"{api}"' in line}
        return lines if apis == set(LEGACY_APIS) else None
    for line in wait_for("LeaderAndIsr and UpdateMetadata from the controller",
                         from_controller, REQUEST_LOG_TIMEOUT_S):
        assert '"principal":"User:controller"' in line, line
        assert f'"listener":"{SCRAM_LISTENER}"' in line, line
        assert f'"securityProtocol":"{SCRAM_LISTENER}"' in line, line
        assert '"response":{"errorCode":0' in line, line
