"""A controller in pre-migration mode answers as Kafka 3.9's does (migration-plan §2, §3).

One Kafka 3.9.1 KRaft controller and one pykraft controller, each alone in its quorum, each
formatted and started with ``zookeeper.metadata.migration.enable`` against the same
ZooKeeper 3.8.4 (each under a chroot of its own), so both sit in PRE_MIGRATION waiting for
ZooKeeper brokers. The same requests go to each controller listener, and the answers are
compared field by field: ApiVersions' ZkMigrationReady, the registration rules for
ZooKeeper-mode and KRaft brokers, the admin writes refused NOT_CONTROLLER with Kafka's
message, reads still answered, a ZooKeeper broker's heartbeat, and the migration state
pykraft's tools read from either controller's metadata log.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from oracle_cluster import call
from process_harness import wait_for
from typer.testing import CliRunner
from zk_cluster import ZkCluster, required

from pykraft.cli.main import app
from pykraft.ids import random_uuid, uuid_to_str
from pykraft.messages.kafka.api_versions_request import ApiVersionsRequest
from pykraft.messages.kafka.broker_heartbeat_request import BrokerHeartbeatRequest
from pykraft.messages.kafka.broker_registration_request import (
    BrokerRegistrationRequest,
    Feature,
    Listener,
)
from pykraft.messages.kafka.create_acls_request import AclCreation, CreateAclsRequest
from pykraft.messages.kafka.create_topics_request import CreatableTopic, CreateTopicsRequest
from pykraft.messages.kafka.describe_configs_request import (
    DescribeConfigsRequest,
    DescribeConfigsResource,
)
from pykraft.messages.kafka.update_features_request import FeatureUpdateKey, UpdateFeaturesRequest
from pykraft.protocol.apis import ApiKey
from pykraft.protocol.errors import ErrorCode
from pykraft.tools.local_cluster import LocalCluster

pytestmark = pytest.mark.timeout(600)

KAFKA_CONTROLLER = 3000
MV_3_9 = 21


@dataclass(frozen=True)
class Controller:
    address: str
    cluster_id: str


@pytest.fixture(scope="module")
def controllers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Controller]]:
    base = tmp_path_factory.mktemp("premigration")
    kafka = ZkCluster(base / "kafka", required(), brokers=(), controllers=(KAFKA_CONTROLLER,))
    pykraft: LocalCluster | None = None
    try:
        kafka.start_zookeeper()
        kafka.extra_controller_properties["zookeeper.connect"] = f"{kafka.zk_connect}/kafka39"
        kafka_id = uuid_to_str(random_uuid())
        kafka.format_controller(KAFKA_CONTROLLER, kafka_id, migration=True)
        kafka.start_controller(KAFKA_CONTROLLER, migration=True)
        kafka.wait_controller(KAFKA_CONTROLLER)
        pykraft = LocalCluster.create(base / "pykraft", controllers=1, properties={
            "zookeeper.metadata.migration.enable": "true",
            "zookeeper.connect": f"{kafka.zk_connect}/pykraft"})
        pykraft.start(1)
        pykraft.wait_listening([1])
        yield {"kafka": Controller(f"127.0.0.1:{kafka.controller_ports[KAFKA_CONTROLLER]}",
                                   kafka_id),
               "pykraft": Controller(pykraft.nodes[1].address, pykraft.cluster_id)}
    finally:
        if pykraft is not None:
            for node_id in pykraft.running():
                pykraft.stop(node_id)
        kafka.stop_all()


def both(controllers: dict[str, Controller], ask: Callable[[Controller], Any]) -> list[Any]:
    """The meaning of each controller's answer, Kafka's first."""
    return [ask(controllers["kafka"]), ask(controllers["pykraft"])]


def registration(broker_id: int, *, zk: bool, listener: str = "PLAINTEXT"
                 ) -> Callable[[Controller], Any]:
    """A ZooKeeper-mode broker's registration in migration mode as Kafka 3.9's sends it
    (§3: metadata.version min = max = its IBP level), or a KRaft broker's."""
    def ask(controller: Controller) -> Any:
        body = BrokerRegistrationRequest(
            broker_id=broker_id, cluster_id=controller.cluster_id,
            incarnation_id=uuid.UUID(int=7000 + broker_id),
            listeners=(Listener(name=listener, host="127.0.0.1", port=24190 + broker_id,
                                security_protocol=0),),
            features=(Feature("kraft.version", 0, 1), Feature("metadata.version", MV_3_9,
                                                               MV_3_9)),
            rack=None, is_migrating_zk_broker=zk, log_dirs=(uuid.UUID(int=9000 + broker_id),),
            previous_broker_epoch=-1)
        answer = call(controller.address, ApiKey.BROKER_REGISTRATION, 4, body)
        return ErrorCode(answer.error_code).name, answer.broker_epoch >= 0
    return ask


def test_api_versions_tell_zk_migration_ready(controllers: dict[str, Controller]) -> None:
    assert both(controllers, lambda c: call(
        c.address, ApiKey.API_VERSIONS, 3, ApiVersionsRequest(
            client_software_name="pykraft-test", client_software_version="1")
    ).zk_migration_ready) == [True, True]


def test_registrations_follow_kafkas_rules(controllers: dict[str, Controller]) -> None:
    assert both(controllers, registration(1, zk=True)) == [("NONE", True)] * 2
    assert both(controllers, registration(2, zk=True, listener="OTHER")) == [
        ("INVALID_REGISTRATION", False)] * 2
    assert both(controllers, registration(3, zk=False)) == [
        ("BROKER_ID_NOT_REGISTERED", False)] * 2


def test_a_zookeeper_broker_is_unfenced_by_its_heartbeats(
        controllers: dict[str, Controller]) -> None:
    def unfenced(controller: Controller) -> tuple[str, bool]:
        epoch = call(controller.address, ApiKey.BROKER_REGISTRATION, 4,
                     _reregistration(controller)).broker_epoch

        def beat() -> tuple[str, bool] | None:
            answer = call(controller.address, ApiKey.BROKER_HEARTBEAT, 1,
                          BrokerHeartbeatRequest(broker_id=4, broker_epoch=epoch,
                                                 current_metadata_offset=1 << 40,
                                                 want_fence=False, want_shut_down=False))
            found = (ErrorCode(answer.error_code).name, answer.is_fenced)
            return None if found[1] else found
        found: tuple[str, bool] = wait_for("the ZooKeeper broker unfenced", beat, 60)
        return found
    assert both(controllers, unfenced) == [("NONE", False)] * 2


def _reregistration(controller: Controller) -> BrokerRegistrationRequest:
    return BrokerRegistrationRequest(
        broker_id=4, cluster_id=controller.cluster_id, incarnation_id=uuid.UUID(int=7004),
        listeners=(Listener(name="PLAINTEXT", host="127.0.0.1", port=24194,
                            security_protocol=0),),
        features=(Feature("kraft.version", 0, 1), Feature("metadata.version", MV_3_9, MV_3_9)),
        rack=None, is_migrating_zk_broker=True, log_dirs=(uuid.UUID(int=9004),),
        previous_broker_epoch=-1)


def test_admin_writes_are_refused_not_controller(controllers: dict[str, Controller]) -> None:
    def create(controller: Controller) -> Any:
        answer = call(controller.address, ApiKey.CREATE_TOPICS, 7, CreateTopicsRequest(
            topics=(CreatableTopic(name="t", num_partitions=1, replication_factor=1),),
            timeout_ms=5000))
        return [(ErrorCode(t.error_code).name, t.error_message) for t in answer.topics]

    def acl(controller: Controller) -> Any:
        answer = call(controller.address, ApiKey.CREATE_ACLS, 3, CreateAclsRequest(creations=(
            AclCreation(resource_type=2, resource_name="t", resource_pattern_type=3,
                        principal="User:bob", host="*", operation=4, permission_type=3),)))
        return [(ErrorCode(r.error_code).name, r.error_message) for r in answer.results]

    def features(controller: Controller) -> Any:
        answer = call(controller.address, ApiKey.UPDATE_FEATURES, 1, UpdateFeaturesRequest(
            feature_updates=(FeatureUpdateKey(feature="metadata.version", max_version_level=22,
                                              upgrade_type=1),), validate_only=False))
        return (ErrorCode(answer.error_code).name, answer.error_message,
                [(ErrorCode(r.error_code).name, r.error_message) for r in answer.results])

    for ask in (create, acl, features):
        kafka, pykraft = both(controllers, ask)
        assert pykraft == kafka, ask.__name__
    assert both(controllers, create)[1] == [
        ("NOT_CONTROLLER", "The controller is in pre-migration mode.")]


def test_reads_are_answered(controllers: dict[str, Controller]) -> None:
    def describe(controller: Controller) -> Any:
        answer = call(controller.address, ApiKey.DESCRIBE_CONFIGS, 4, DescribeConfigsRequest(
            resources=(DescribeConfigsResource(resource_type=4, resource_name="",
                                               configuration_keys=("log.retention.ms",)),)))
        return [(ErrorCode(r.error_code).name, [c.name for c in r.configs])
                for r in answer.results]
    kafka, pykraft = both(controllers, describe)
    assert pykraft == kafka == [("NONE", [])]  # answered (the cluster default has none set)



def test_the_tools_show_pre_migration(controllers: dict[str, Controller]) -> None:
    """``metadata-quorum describe --status`` and ``features describe`` read the state from
    the metadata log as a non-replica fetcher (Kafka's leader serves replica id -1 as it does
    pykraft's): both controllers' committed logs hold PRE_MIGRATION."""
    def shown(controller: Controller) -> tuple[str, str]:
        status = CliRunner().invoke(app, ["metadata-quorum", "--bootstrap-controller",
                                          controller.address, "describe", "--status"])
        features = CliRunner().invoke(app, ["features", "--bootstrap-controller",
                                            controller.address, "describe"])
        assert status.exit_code == features.exit_code == 0, (status.output, features.output)
        return status.output.splitlines()[-1], features.output.splitlines()[-1]
    assert both(controllers, shown) == [("ZkMigrationState:       PRE_MIGRATION",
                                         "ZkMigrationState: PRE_MIGRATION")] * 2
