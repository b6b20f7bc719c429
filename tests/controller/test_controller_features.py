"""UpdateFeatures and AllocateProducerIds."""

from __future__ import annotations

import uuid
from types import SimpleNamespace
from typing import cast

import pytest
from controller_harness import Cluster, create_topic  # type: ignore[import-not-found]

from pykraft.controller import ControllerConfig
from pykraft.features import SUPPORTED_FEATURES
from pykraft.image.configs import ConfigResourceType
from pykraft.messages.kafka.allocate_producer_ids_request import AllocateProducerIdsRequest
from pykraft.messages.kafka.allocate_producer_ids_response import AllocateProducerIdsResponse
from pykraft.messages.kafka.incremental_alter_configs_request import (
    AlterableConfig,
    AlterConfigsResource,
    IncrementalAlterConfigsRequest,
)
from pykraft.messages.kafka.update_features_request import FeatureUpdateKey, UpdateFeaturesRequest
from pykraft.messages.kafka.update_features_response import UpdateFeaturesResponse
from pykraft.protocol.api_versions import node_features
from pykraft.protocol.apis import ApiKey
from pykraft.protocol.codec import decode_request, encode_request
from pykraft.protocol.errors import ErrorCode
from pykraft.protocol.header import RequestHeader
from pykraft.records.metadata import (
    ConfigRecord,
    FeatureLevelRecord,
    PartitionRecord,
    RegisterBrokerRecord,
)
from pykraft.runtime.controller_registration import registration_request
from pykraft.runtime.node import RaftNode

UPGRADE, SAFE, UNSAFE = 1, 2, 3


def update(cluster: Cluster, *updates: tuple[str, int, int],
           validate_only: bool = False) -> UpdateFeaturesResponse:
    response = cluster.call(UpdateFeaturesRequest(feature_updates=tuple(
        FeatureUpdateKey(feature=name, max_version_level=level, upgrade_type=kind)
        for name, level, kind in updates), validate_only=validate_only))
    assert isinstance(response, UpdateFeaturesResponse)
    return response


def started(mv: int = 12) -> Cluster:
    cluster = Cluster(mv=mv)
    cluster.elect()
    return cluster


def test_metadata_version_upgrade_changes_record_versions() -> None:
    cluster = started(12)
    cluster.start_brokers([None])
    assert cluster.raft.metadata_records()[0].version == 0  # FeatureLevelRecord
    registered = [r for r in cluster.raft.metadata_records()
                  if isinstance(r.message, RegisterBrokerRecord)]
    assert registered[-1].version == 2
    response = update(cluster, ("metadata.version", 19, UPGRADE))
    assert response.error_code == ErrorCode.NONE
    assert [r.error_code for r in response.results] == [ErrorCode.NONE]
    assert cluster.controller.image.features.metadata_version == 19
    cluster.call(create_topic("t"))
    partitions = [r for r in cluster.raft.metadata_records()
                  if isinstance(r.message, PartitionRecord)]
    assert partitions[-1].version == 1 and len(partitions[-1].message.directories) == 1
    assert cluster.replayed_image() == cluster.controller.image


def test_a_new_partitions_directories_are_kafkas_default_dirs() -> None:
    """Each replica's broker's only log directory; UNASSIGNED (0, 1) when it has several,
    MIGRATING (0, 0) when it named none (ClusterControlManager.defaultDir)."""
    cluster = started(19)
    only = uuid.UUID(int=7)
    for broker_id, dirs in ((1, (only,)), (2, (uuid.UUID(int=8), uuid.UUID(int=9))), (3, ())):
        cluster.register(broker_id, log_dirs=dirs)
        cluster.heartbeat(broker_id)
    cluster.call(create_topic("t", partitions=-1, rf=-1, assignments=[(1, 2, 3)]))
    (partition,) = [r.message for r in cluster.raft.metadata_records()
                    if isinstance(r.message, PartitionRecord)]
    assert partition.directories == (only, uuid.UUID(int=1), uuid.UUID(int=0))


def test_feature_rules() -> None:
    cluster = started(19)
    cluster.start_brokers([None])  # the harness broker supports metadata.version 1-29 only
    cases = [
        (("metadata.version", 15, SAFE), ErrorCode.INVALID_UPDATE_VERSION),
        (("metadata.version", 15, UNSAFE), ErrorCode.INVALID_UPDATE_VERSION),
        (("metadata.version", 0, UNSAFE), ErrorCode.INVALID_UPDATE_VERSION),
        (("metadata.version", 99, UPGRADE), ErrorCode.INVALID_UPDATE_VERSION),
        (("no.such.feature", 1, UPGRADE), ErrorCode.INVALID_UPDATE_VERSION),
        (("metadata.version", 20, SAFE), ErrorCode.INVALID_UPDATE_VERSION),
        (("metadata.version", 20, 7), ErrorCode.INVALID_UPDATE_VERSION),
    ]
    for change, code in cases:
        before = len(cluster.raft.batches)
        assert update(cluster, change).error_code == code, change
        assert len(cluster.raft.batches) == before
    duplicate = update(cluster, ("metadata.version", 20, UPGRADE),
                       ("metadata.version", 21, UPGRADE))
    assert duplicate.error_code == ErrorCode.INVALID_REQUEST
    assert update(cluster, ("metadata.version", 20, UPGRADE),
                  validate_only=True).results[0].error_code == ErrorCode.NONE
    assert cluster.controller.image.features.metadata_version == 19


def test_v0_allow_downgrade_is_not_read() -> None:
    """v0 has ``AllowDowngrade`` where v1+ have ``UpgradeType``; Kafka's QuorumController
    reads ``UpgradeType`` only (its default, UPGRADE, at v0), so a v0 downgrade is refused
    as an upgrade to a lower level."""
    cluster = started(19)
    request = UpdateFeaturesRequest(feature_updates=(
        FeatureUpdateKey("metadata.version", 15, allow_downgrade=True),))
    header = RequestHeader(ApiKey.UPDATE_FEATURES, 0, 1, "admin")
    response = cluster.call(decode_request(encode_request(header, request)).body)
    assert isinstance(response, UpdateFeaturesResponse)
    assert response.error_code == ErrorCode.INVALID_UPDATE_VERSION
    assert str(response.error_message).endswith(
        "Can't downgrade the version of this feature without setting the upgrade type to "
        "either safe or unsafe downgrade.")


def test_all_or_nothing() -> None:
    """Kafka's answer: the first failing update's reason at the top level, no per-feature
    results, nothing written; the updates after it are not even looked at."""
    cluster = started(19)
    response = update(cluster, ("metadata.version", 20, UPGRADE),
                      ("metadata.version.typo", 1, UPGRADE),
                      *((f"unknown.{i}", 1, UPGRADE) for i in range(10_000)))
    assert (response.error_code, response.error_message, response.results) == (
        ErrorCode.INVALID_UPDATE_VERSION,
        "The update failed for all features since the following feature had an error: "
        "Invalid update version 1 for feature metadata.version.typo. Local controller 0 "
        "does not support this feature.", ())
    assert cluster.controller.image.features.metadata_version == 19


@pytest.mark.parametrize(("feature", "level"), [
    ("group.version", 1), ("transaction.version", 3), ("no.such.feature", 1),
])
def test_update_features_accepts_only_what_pykraft_implements(feature: str, level: int) -> None:
    """No group.version, no transaction.version past 2: those levels are refused in Kafka's
    words (FeatureControlManager.invalidUpdateVersion, QuorumFeatures.reasonNotSupported)."""
    cluster = started(19)
    before = len(cluster.raft.batches)
    response = update(cluster, (feature, level, UPGRADE))
    reason = ("only supports versions 0-2" if feature == "transaction.version"
              else "does not support this feature.")
    message = ("The update failed for all features since the following feature had an "
               f"error: Invalid update version {level} for feature {feature}. "
               f"Local controller 0 {reason}")
    assert (response.error_code, response.error_message, response.results) == (
        ErrorCode.INVALID_UPDATE_VERSION, message, ())
    assert len(cluster.raft.batches) == before


def test_transaction_version_2_is_finalized_and_removed() -> None:
    """KIP-890's levels: an upgrade to 2 finalizes it, a safe downgrade to 0 removes it."""
    cluster = started(19)
    assert update(cluster, ("transaction.version", 2, UPGRADE)).error_code == ErrorCode.NONE
    assert cluster.controller.image.features.finalized["transaction.version"] == 2
    assert update(cluster, ("transaction.version", 0, SAFE)).error_code == ErrorCode.NONE
    assert "transaction.version" not in cluster.controller.image.features.finalized


def test_a_level_pykraft_does_not_implement_can_still_be_removed() -> None:
    """Level 0 is in every range (Kafka's DISABLED 0-0): a group.version finalized by a
    Kafka cluster's bootstrap can be taken away, never set."""
    cluster = Cluster(bootstrap=[FeatureLevelRecord(name="metadata.version", feature_level=19),
                                 FeatureLevelRecord(name="group.version", feature_level=1)])
    cluster.elect()
    assert cluster.controller.image.features.finalized["group.version"] == 1
    assert update(cluster, ("group.version", 0, SAFE)).error_code == ErrorCode.NONE
    assert "group.version" not in cluster.controller.image.features.finalized


def test_registration_advertises_and_update_features_agree() -> None:
    """One table, SUPPORTED_FEATURES: a controller registers it, ApiVersions shows it."""
    node = SimpleNamespace(settings=SimpleNamespace(
        quorum=SimpleNamespace(local_listeners=()), controller=ControllerConfig(node_id=0)))
    request = registration_request(0, uuid.UUID(int=1), cast(RaftNode, node))
    registered = {str(f.name): (int(f.min_supported_version), int(f.max_supported_version))
                  for f in request.features}
    advertised = {f.name: (f.min_version, f.max_version)
                  for f in node_features({}, 0, 0)["supported_features"]}
    assert registered == advertised == dict(SUPPORTED_FEATURES)
    assert set(SUPPORTED_FEATURES) == {"eligible.leader.replicas.version", "metadata.version",
                                       "kraft.version", "transaction.version"}


def test_producer_id_blocks() -> None:
    cluster = started(19)
    cluster.start_brokers([None, None])
    starts = []
    for broker_id in (1, 2, 1):
        epoch = cluster.controller.image.cluster.brokers[broker_id].epoch
        response = cluster.call(AllocateProducerIdsRequest(broker_id=broker_id,
                                                           broker_epoch=epoch))
        assert isinstance(response, AllocateProducerIdsResponse)
        assert response.error_code == ErrorCode.NONE and response.producer_id_len == 1000
        starts.append(response.producer_id_start)
    assert starts == [0, 1000, 2000]
    assert cluster.controller.image.producer_ids.next_producer_id == 3000
    stale = cluster.call(AllocateProducerIdsRequest(broker_id=1, broker_epoch=0))
    assert isinstance(stale, AllocateProducerIdsResponse)
    assert stale.error_code == ErrorCode.STALE_BROKER_EPOCH
    assert cluster.replayed_image() == cluster.controller.image


ELR = "eligible.leader.replicas.version"


def test_eligible_leader_replicas_need_metadata_version_4_0_iv1() -> None:
    """Kafka's dependency (Feature.validateVersion), against the levels the whole request
    proposes: with metadata.version 4.0-IV1 in the same request the upgrade is taken."""
    cluster = started(22)
    response = update(cluster, (ELR, 1, UPGRADE))
    assert (response.error_code, response.error_message) == (
        ErrorCode.INVALID_UPDATE_VERSION,
        "The update failed for all features since the following feature had an error: "
        f"Invalid update version 1 for feature {ELR}. {ELR} could not be set to 1 because "
        "it depends on metadata.version level 23")
    assert update(cluster, ("metadata.version", 23, UPGRADE),
                  (ELR, 1, UPGRADE)).error_code == ErrorCode.NONE
    assert cluster.controller.image.features.finalized[ELR] == 1


def test_turning_elr_on_writes_one_cluster_min_isr_and_drops_the_brokers_own() -> None:
    """Kafka's maybeGenerateElrSafetyRecords: the controller's static value (its properties)
    as the cluster default, and no broker-level min.insync.replicas."""
    cluster = Cluster(mv=23, properties={"min.insync.replicas": "2"})
    cluster.elect()
    cluster.call(IncrementalAlterConfigsRequest(resources=(AlterConfigsResource(
        resource_type=ConfigResourceType.BROKER, resource_name="1", configs=(AlterableConfig(
            name="min.insync.replicas", config_operation=0, value="3"),)),)))
    start = len(cluster.raft.metadata_records())
    assert update(cluster, (ELR, 1, UPGRADE)).error_code == ErrorCode.NONE
    assert [r.message for r in cluster.raft.metadata_records()[start:]] == [
        FeatureLevelRecord(name=ELR, feature_level=1),
        ConfigRecord(resource_type=ConfigResourceType.BROKER, resource_name="",
                     name="min.insync.replicas", value="2"),
        ConfigRecord(resource_type=ConfigResourceType.BROKER, resource_name="1",
                     name="min.insync.replicas", value=None)]
