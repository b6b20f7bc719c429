"""The controller side of a ZooKeeper migration (KIP-866, Kafka 3.9's rules, migration-plan
§2-§3): the migration state written at activation, the pre-migration gate, the registration
rules for ZooKeeper and KRaft brokers, and the driver's Begin/Batch/Complete writes, all
through a QuorumController on the fake raft log."""

from __future__ import annotations

import dataclasses
import random
import sys
import uuid
from collections.abc import Sequence
from pathlib import Path

import pytest
from controller_harness import Cluster, create_topic  # type: ignore[import-not-found]

sys.path.insert(0, str(Path(__file__).parents[1] / "migration"))
from migration_captures import log_batches, log_records

from pykraft.controller.cluster_control import migration_registration_refusal
from pykraft.controller.context import ControllerContext
from pykraft.controller.migration_ops import (
    ABORT_REASON,
    NO_TRANSACTION_WARNING,
    AbortMigration,
    BeginMigration,
    CompleteMigration,
    MigrationBatch,
    MigrationRefused,
    MigrationWritten,
    zk_migration_not_ready_reason,
)
from pykraft.controller.quorum_controller import PRE_MIGRATION_MESSAGE
from pykraft.controller.responses import error_codes
from pykraft.errors import ControllerError, MetadataImageError
from pykraft.features import METADATA_VERSION_FEATURE
from pykraft.ids import uuid_from_str
from pykraft.image.features import FeaturesImage, ZkMigrationState
from pykraft.image.image import MetadataDelta, MetadataImage
from pykraft.image.snapshot import load_snapshot, write_image_snapshot
from pykraft.messages.kafka.allocate_producer_ids_request import AllocateProducerIdsRequest
from pykraft.messages.kafka.broker_heartbeat_response import BrokerHeartbeatResponse
from pykraft.messages.kafka.broker_registration_request import (
    BrokerRegistrationRequest,
    Feature,
    Listener,
)
from pykraft.messages.kafka.broker_registration_response import BrokerRegistrationResponse
from pykraft.messages.kafka.controller_registration_request import (
    ControllerRegistrationRequest,
)
from pykraft.messages.kafka.create_acls_request import AclCreation, CreateAclsRequest
from pykraft.messages.kafka.describe_configs_request import (
    DescribeConfigsRequest,
    DescribeConfigsResource,
)
from pykraft.messages.kafka.describe_configs_response import DescribeConfigsResponse
from pykraft.messages.kafka.incremental_alter_configs_request import (
    AlterableConfig,
    AlterConfigsResource,
    IncrementalAlterConfigsRequest,
)
from pykraft.messages.kafka.incremental_alter_configs_response import (
    IncrementalAlterConfigsResponse,
)
from pykraft.messages.kafka.unregister_broker_request import UnregisterBrokerRequest
from pykraft.messages.kafka.update_features_request import FeatureUpdateKey, UpdateFeaturesRequest
from pykraft.protocol.errors import ErrorCode
from pykraft.records.metadata import (
    AbortTransactionRecord,
    BeginTransactionRecord,
    BrokerRegistrationChangeRecord,
    ConfigRecord,
    EndTransactionRecord,
    FeatureLevelRecord,
    MetadataRecord,
    NoOpRecord,
    PartitionRecord,
    RegisterBrokerRecord,
    TopicRecord,
    ZkMigrationStateRecord,
    api_key_of,
    decode_metadata_record,
)
from pykraft.shell import MetadataShell, image_tree

MV_3_9_IV0 = 21  # what the ZooKeeper brokers of the reference run spoke
MV_3_6_IV0 = 12  # the last level without metadata transactions
MV_3_5_IV2 = 11
MV_3_3_IV3 = 7  # before migration support
ZK_BROKERS = (1, 2, 3)
TOPIC_ID = uuid.UUID(int=77)


def migrating(mv: int = MV_3_9_IV0, **kwargs: object) -> Cluster:
    """A migration-enabled controller, active on its fresh log (PRE_MIGRATION)."""
    cluster = Cluster(mv=mv, zk_migration=True, **kwargs)
    cluster.elect()
    return cluster


def successor(of: Cluster, *, zk_migration: bool, mv: int = MV_3_9_IV0) -> Cluster:
    """Another controller that replayed ``of``'s log, then became active in a new epoch."""
    nxt = Cluster(mv=mv, zk_migration=zk_migration)
    nxt.raft.batches = list(of.raft.batches)
    nxt.raft.committed_batches = 0
    nxt.raft.epoch = of.raft.epoch
    nxt.commit()
    nxt.elect()
    return nxt


def zk_registration(broker_id: int, *, zk: bool = True, listener: str = "PLAINTEXT",
                    level: int = MV_3_9_IV0) -> BrokerRegistrationRequest:
    """A ZooKeeper broker's BrokerRegistration in migration mode (captured in §3: its
    metadata.version range min = max = its IBP level), or a KRaft broker's with ``zk=False``."""
    return BrokerRegistrationRequest(
        broker_id=broker_id, cluster_id="test-cluster",
        incarnation_id=uuid.UUID(int=5000 + broker_id),
        listeners=(Listener(name=listener, host="127.0.0.1", port=24190 + broker_id),),
        features=(Feature(METADATA_VERSION_FEATURE, level, level),),
        is_migrating_zk_broker=zk, log_dirs=(uuid.UUID(int=9000 + broker_id),))


def register_zk_brokers(cluster: Cluster, ids: Sequence[int] = ZK_BROKERS) -> None:
    for broker_id in ids:
        answer = cluster.call(zk_registration(broker_id))
        assert isinstance(answer, BrokerRegistrationResponse)
        assert answer.error_code == ErrorCode.NONE, answer


def written(cluster: Cluster, request: object) -> MigrationWritten:
    answer = cluster.call(request)
    assert isinstance(answer, MigrationWritten), answer
    return answer


def topic_records() -> tuple[MetadataRecord, ...]:
    """A topic as the load writes it: every record at version 0 (§6)."""
    def v0(message: object) -> MetadataRecord:
        return MetadataRecord(api_key_of(type(message)), 0, message)
    return (v0(TopicRecord(name="t-rf3", topic_id=TOPIC_ID)),
            v0(PartitionRecord(partition_id=0, topic_id=TOPIC_ID, replicas=(1, 3, 2),
                               isr=(1, 2), leader=1, leader_epoch=3, partition_epoch=5)))


def migrated(cluster: Cluster) -> None:
    """The driver's whole load: Begin, one batch, Complete."""
    written(cluster, BeginMigration())
    written(cluster, MigrationBatch(topic_records()))
    written(cluster, CompleteMigration())


def state(cluster: Cluster) -> ZkMigrationState:
    found: ZkMigrationState = cluster.controller.image.features.zk_migration_state
    return found


def last_batch(cluster: Cluster) -> list[tuple[str, int]]:
    """(record type, version) of the last data batch of the log."""
    _, _, values, _ = [b for b in cluster.raft.batches if not b[3]][-1]
    records = cluster.raft.metadata_records()[-len(values):]
    return [(type(r.message).__name__, r.version) for r in records]


def messages(cluster: Cluster, since: int = 0) -> list[object]:
    return [r.message for r in cluster.raft.metadata_records()[since:]
            if not isinstance(r.message, NoOpRecord)]


# -- activation (§2's table) -------------------------------------------------------------


def test_an_empty_log_with_migration_bootstraps_into_pre_migration() -> None:
    cluster = migrating()
    assert messages(cluster) == [
        BeginTransactionRecord(name="Bootstrap records"),
        FeatureLevelRecord(name=METADATA_VERSION_FEATURE, feature_level=MV_3_9_IV0),
        ZkMigrationStateRecord(zk_migration_state=2), EndTransactionRecord()]
    assert cluster.replayed_image().features.zk_migration_state == ZkMigrationState.PRE_MIGRATION
    assert cluster.controller.in_pre_migration


def test_an_empty_log_without_migration_writes_no_state_as_kafka_4() -> None:
    cluster = Cluster(mv=MV_3_9_IV0)
    cluster.elect()
    assert not any(isinstance(m, ZkMigrationStateRecord) for m in messages(cluster))
    assert state(cluster) == ZkMigrationState.NONE


def test_an_empty_log_below_transactions_cannot_start_a_migration() -> None:
    cluster = Cluster(mv=MV_3_6_IV0, zk_migration=True)
    with pytest.raises(ControllerError, match=r"^The bootstrap metadata.version 3.6-IV0 does "
                       r"not support ZK migrations. Cannot continue with ZK migrations "
                       r"enabled.$"):
        cluster.elect()


def test_migration_on_a_log_created_in_kraft_mode_is_refused() -> None:
    kraft = Cluster(mv=MV_3_9_IV0)
    kraft.elect()
    with pytest.raises(ControllerError, match=r"^Should not have ZK migrations enabled on a "
                       r"cluster that was created in KRaft mode.$"):
        successor(kraft, zk_migration=True)


def test_migration_on_a_log_without_migration_support_is_refused() -> None:
    old = Cluster(mv=MV_3_3_IV3)
    old.elect()
    with pytest.raises(ControllerError, match=r"^Should not have ZK migrations enabled on a "
                       r"cluster running metadata.version 3.3-IV3$"):
        successor(old, zk_migration=True, mv=MV_3_3_IV3)


def test_a_controller_without_migration_finalises_a_migrated_log() -> None:
    first = migrating()
    migrated(first)
    end = len(first.raft.metadata_records())
    final = successor(first, zk_migration=False)
    assert messages(final, end) == [ZkMigrationStateRecord(zk_migration_state=3)]
    assert final.replayed_image().features.zk_migration_state == ZkMigrationState.POST_MIGRATION
    # finalised: a later controller with migration on only ignores the setting
    again = successor(final, zk_migration=True)
    assert messages(again, len(final.raft.metadata_records())) == []
    assert state(again) == ZkMigrationState.POST_MIGRATION


def test_a_controller_with_migration_stays_in_migration() -> None:
    first = migrating()
    migrated(first)
    end = len(first.raft.metadata_records())
    nxt = successor(first, zk_migration=True)
    assert messages(nxt, end) == []
    assert state(nxt) == ZkMigrationState.MIGRATION


def test_a_load_left_open_by_a_dead_leader_is_aborted_first() -> None:
    first = migrating()
    register_zk_brokers(first)
    written(first, BeginMigration())
    written(first, MigrationBatch(topic_records()))
    end = len(first.raft.metadata_records())
    nxt = successor(first, zk_migration=True)
    assert messages(nxt, end) == [AbortTransactionRecord(reason="Controller failover")]
    assert state(nxt) == ZkMigrationState.PRE_MIGRATION
    assert not nxt.controller.image.topics.by_id  # the aborted load is gone
    migrated(nxt)  # the next driver loads again
    assert nxt.replayed_image().topics.by_id.keys() == {TOPIC_ID}


# -- the driver's writes -----------------------------------------------------------------


def test_begin_batch_and_complete_write_kafkas_batches_and_answer_once_committed() -> None:
    cluster = migrating()
    ticket = cluster.submit(BeginMigration())
    assert ticket not in cluster.responses  # answered only once committed
    cluster.commit()
    begin = cluster.responses.pop(ticket)
    assert last_batch(cluster) == [("BeginTransactionRecord", 0)]
    assert begin == MigrationWritten(cluster.raft.end_offset - 1, cluster.raft.epoch)
    batch = written(cluster, MigrationBatch(topic_records()))
    # as given: version 0, where the metadata.version would write PartitionRecord v1
    assert last_batch(cluster) == [("TopicRecord", 0), ("PartitionRecord", 0)]
    assert batch.offset == begin.offset + 2
    assert cluster.replayed_image().topics.by_id == {}  # inside the transaction
    complete = written(cluster, CompleteMigration())
    assert last_batch(cluster) == [("ZkMigrationStateRecord", 0), ("EndTransactionRecord", 0)]
    assert complete == MigrationWritten(batch.offset + 2, cluster.raft.epoch)
    image = cluster.replayed_image()
    assert image.features.zk_migration_state == ZkMigrationState.MIGRATION
    assert image.topics.by_id[TOPIC_ID].partitions[0].partition_epoch == 5


def test_a_batch_larger_than_a_raft_batch_is_split_as_kafka_splits_it() -> None:
    cluster = migrating()
    written(cluster, BeginMigration())
    before = len(cluster.raft.batches)
    records = tuple(MetadataRecord(api_key_of(ConfigRecord), 0, ConfigRecord(
        resource_type=4, resource_name="", name=f"k{i}", value="v")) for i in range(10_001))
    answer = written(cluster, MigrationBatch(records))
    sizes = [len(values) for _, _, values, control in cluster.raft.batches[before:]
             if not control]
    assert sizes == [10_000, 1]
    assert answer.offset == cluster.raft.end_offset - 1


def test_migration_writes_are_refused_when_not_active_or_out_of_order() -> None:
    cluster = migrating()
    assert cluster.call(MigrationBatch(topic_records())) == MigrationRefused(
        ErrorCode.INVALID_REQUEST, "No ZK migration transaction is open")
    assert cluster.call(CompleteMigration()) == MigrationRefused(
        ErrorCode.INVALID_REQUEST, "No ZK migration transaction is open")
    written(cluster, BeginMigration())
    assert cluster.call(BeginMigration()) == MigrationRefused(
        ErrorCode.INVALID_REQUEST, "A metadata transaction is already open")
    marker = MetadataRecord(api_key_of(EndTransactionRecord), 0, EndTransactionRecord())
    refused = cluster.call(MigrationBatch((marker,)))
    assert isinstance(refused, MigrationRefused)
    assert refused.error_code == ErrorCode.INVALID_REQUEST
    written(cluster, CompleteMigration())
    assert cluster.call(BeginMigration()) == MigrationRefused(
        ErrorCode.INVALID_REQUEST, "The ZK migration state is MIGRATION, not PRE_MIGRATION")
    cluster.depose(truncate=False)
    refused = cluster.call(BeginMigration())
    assert isinstance(refused, MigrationRefused)
    assert refused.error_code == ErrorCode.NOT_CONTROLLER


def test_a_failed_load_is_aborted_by_its_own_controller_and_loaded_again() -> None:
    """pykraft's driver aborts a load it could not finish (Kafka's controller exits and its
    successor aborts): the load's records are discarded and the next Begin starts afresh."""
    cluster = migrating()
    written(cluster, BeginMigration())
    written(cluster, MigrationBatch(topic_records()))
    written(cluster, AbortMigration())
    assert last_batch(cluster) == [("AbortTransactionRecord", 0)]
    assert messages(cluster)[-1] == AbortTransactionRecord(reason=ABORT_REASON)
    assert cluster.replayed_image().topics.by_id == {}
    assert state(cluster) == ZkMigrationState.PRE_MIGRATION
    assert cluster.call(AbortMigration()) == MigrationRefused(
        ErrorCode.INVALID_REQUEST, "No ZK migration transaction is open")
    migrated(cluster)
    assert TOPIC_ID in cluster.replayed_image().topics.by_id


def test_a_migration_write_lost_with_its_leader_is_answered_not_controller() -> None:
    cluster = migrating()
    written(cluster, BeginMigration())
    ticket = cluster.submit(MigrationBatch(topic_records()))
    cluster.depose(truncate=True)
    refused = cluster.responses.pop(ticket)
    assert isinstance(refused, MigrationRefused)
    assert refused.error_code == ErrorCode.NOT_CONTROLLER


def test_begin_below_transactions_writes_nothing_and_warns() -> None:
    # a log Kafka 3.5 controllers left in PRE_MIGRATION (no transactions at 3.5-IV2)
    old = Cluster(mv=MV_3_5_IV2, bootstrap=[
        FeatureLevelRecord(name=METADATA_VERSION_FEATURE, feature_level=MV_3_5_IV2),
        ZkMigrationStateRecord(zk_migration_state=2)])
    old.elect()
    cluster = successor(old, zk_migration=True, mv=MV_3_5_IV2)
    end = cluster.raft.end_offset
    begin = written(cluster, BeginMigration())
    assert begin == MigrationWritten(end - 1, cluster.raft.epoch, NO_TRANSACTION_WARNING)
    written(cluster, MigrationBatch(topic_records()))
    written(cluster, CompleteMigration())
    assert last_batch(cluster) == [("ZkMigrationStateRecord", 0)]
    assert cluster.replayed_image().features.zk_migration_state == ZkMigrationState.MIGRATION


# -- the pre-migration gate --------------------------------------------------------------

ADMIN_WRITES: list[object] = [
    create_topic("t"),
    IncrementalAlterConfigsRequest(resources=(AlterConfigsResource(
        resource_type=4, resource_name="", configs=(AlterableConfig(
            name="log.cleaner.threads", config_operation=0, value="2"),)),)),
    CreateAclsRequest(creations=(AclCreation(
        resource_type=2, resource_name="t", resource_pattern_type=3, principal="User:a",
        host="*", operation=2, permission_type=3),)),
    UpdateFeaturesRequest(feature_updates=(FeatureUpdateKey(
        feature="group.version", max_version_level=1),)),
    AllocateProducerIdsRequest(broker_id=1, broker_epoch=0),
]


@pytest.mark.parametrize("request_", ADMIN_WRITES, ids=lambda r: type(r).__name__)
def test_writes_without_runs_in_premigration_are_not_controller(request_: object) -> None:
    cluster = migrating()
    end = cluster.raft.end_offset
    answer = cluster.call(request_)
    assert error_codes(answer) and set(error_codes(answer)) == {ErrorCode.NOT_CONTROLLER}
    assert error_messages(answer) <= {PRE_MIGRATION_MESSAGE}  # where the response has one
    assert cluster.raft.end_offset == end  # nothing written


def error_messages(response: object) -> set[str]:
    """The error messages of a response and of its parts."""
    parts = [response, *(part for value in vars_of(response) if isinstance(value, tuple)
                         for part in value)]
    return {m for part in parts if (m := getattr(part, "error_message", None)) is not None}


def vars_of(response: object) -> list[object]:
    return [getattr(response, f.name) for f in dataclasses.fields(response)]  # type: ignore[arg-type]


def test_pre_migration_allows_registrations_heartbeats_and_unregistration() -> None:
    cluster = migrating()
    register_zk_brokers(cluster)
    heartbeat = cluster.heartbeat(1)
    assert isinstance(heartbeat, BrokerHeartbeatResponse) and not heartbeat.is_fenced
    assert cluster.call(ControllerRegistrationRequest(
        controller_id=0, incarnation_id=uuid.UUID(int=7), zk_migration_ready=True,
    )).error_code == ErrorCode.NONE
    assert cluster.call(UnregisterBrokerRequest(broker_id=3)).error_code == ErrorCode.NONE
    assert cluster.controller.committed_image.cluster.controllers[0].zk_migration_ready
    assert set(cluster.controller.committed_image.cluster.brokers) == {1, 2}


def test_reads_are_answered_in_pre_migration() -> None:
    cluster = migrating()
    answer = cluster.call(DescribeConfigsRequest(resources=(DescribeConfigsResource(
        resource_type=4, resource_name="0", configuration_keys=("log.cleaner.threads",)),)))
    assert isinstance(answer, DescribeConfigsResponse)
    assert answer.results[0].error_code == ErrorCode.NONE


def test_admin_writes_run_once_the_load_committed() -> None:
    cluster = migrating()
    register_zk_brokers(cluster)
    migrated(cluster)
    answer = cluster.call(IncrementalAlterConfigsRequest(resources=(AlterConfigsResource(
        resource_type=4, resource_name="", configs=(AlterableConfig(
            name="log.cleaner.threads", config_operation=0, value="2"),)),)))
    assert isinstance(answer, IncrementalAlterConfigsResponse)
    assert answer.responses[0].error_code == ErrorCode.NONE


def test_metadata_version_cannot_change_while_migrating() -> None:
    cluster = migrating()
    migrated(cluster)
    answer = cluster.call(UpdateFeaturesRequest(feature_updates=(FeatureUpdateKey(
        feature=METADATA_VERSION_FEATURE, max_version_level=MV_3_9_IV0 + 1),)))
    assert answer.error_code == ErrorCode.INVALID_UPDATE_VERSION
    assert answer.error_message.endswith(
        f"Invalid metadata.version {MV_3_9_IV0 + 1}. Unable to modify metadata.version while "
        "a ZK migration is in progress.")


def test_pre_migration_fences_no_lapsed_session_but_keeps_writing_noops() -> None:
    cluster = migrating(session_timeout_ms=1000)
    register_zk_brokers(cluster, (1,))
    cluster.heartbeat(1)
    end = len(cluster.raft.metadata_records())
    for _ in range(5):
        cluster.tick(1000)
        cluster.commit()
    assert not cluster.controller.image.cluster.brokers[1].fenced
    assert {type(m) for m in [r.message for r in cluster.raft.metadata_records()[end:]]} == {
        NoOpRecord}
    deadline = cluster.controller.next_deadline_ms()
    assert deadline is not None and deadline > cluster.now  # no busy loop on the lapsed one
    migrated(cluster)  # then the lapsed session is fenced as usual
    cluster.tick(1)
    assert cluster.controller.image.cluster.brokers[1].fenced


# -- registration rules (§2, §3) ---------------------------------------------------------


def test_a_zk_broker_registers_with_migration_on() -> None:
    cluster = migrating()
    answer = cluster.call(zk_registration(1))
    assert isinstance(answer, BrokerRegistrationResponse)
    assert answer.error_code == ErrorCode.NONE
    record = cluster.raft.metadata_records()[-1]
    assert isinstance(record.message, RegisterBrokerRecord)
    assert record.message.is_migrating_zk_broker and record.message.fenced
    assert record.version == 3  # RegisterBrokerRecord at 3.9-IV0, as captured
    assert cluster.controller.committed_image.cluster.brokers[1].is_migrating_zk_broker


def refusal(cluster: Cluster, request: BrokerRegistrationRequest) -> tuple[ErrorCode, str] | None:
    """The rule's answer through the controller, checked against Kafka's text."""
    answer = cluster.call(request)
    assert isinstance(answer, BrokerRegistrationResponse)
    ctx = ControllerContext(cluster.controller.config, cluster.controller.image, 0, 0,
                            random.Random(0))
    found = migration_registration_refusal(ctx, request)
    assert answer.error_code == (ErrorCode.NONE if found is None else found[0])
    return found


def test_a_zk_broker_is_refused_without_migration() -> None:
    cluster = Cluster(mv=MV_3_9_IV0)
    cluster.elect()
    assert refusal(cluster, zk_registration(1)) == (
        ErrorCode.BROKER_ID_NOT_REGISTERED, "Controller does not support registering ZK brokers.")
    assert 1 not in cluster.controller.image.cluster.brokers


def test_a_zk_broker_without_the_inter_broker_listener_is_refused() -> None:
    cluster = migrating()
    assert refusal(cluster, zk_registration(1, listener="EXTERNAL")) == (
        ErrorCode.INVALID_REGISTRATION,
        "Broker does not have the current inter.broker.listener PLAINTEXT")


def test_the_inter_broker_listener_is_the_controllers_setting() -> None:
    cluster = migrating()
    cluster.controller.config = dataclasses.replace(cluster.controller.config,
                                                    inter_broker_listener_name="INTERNAL")
    assert refusal(cluster, zk_registration(1, listener="INTERNAL")) is None
    assert refusal(cluster, zk_registration(2))[0] == ErrorCode.INVALID_REGISTRATION  # type: ignore[index]


def test_a_kraft_broker_is_refused_in_pre_migration_and_accepted_after() -> None:
    cluster = migrating()
    assert refusal(cluster, zk_registration(4, zk=False)) == (
        ErrorCode.BROKER_ID_NOT_REGISTERED,
        "Controller is in pre-migration mode and cannot register KRaft brokers until the "
        "metadata migration is complete.")
    migrated(cluster)
    assert refusal(cluster, zk_registration(4, zk=False)) is None
    assert not cluster.controller.image.cluster.brokers[4].is_migrating_zk_broker


# -- heartbeats inside the load's transaction (§6, "A Kafka 3.9 defect") ---------------


def test_an_unfence_inside_an_aborted_load_is_written_again_by_the_next_leader() -> None:
    first = migrating()
    register_zk_brokers(first)
    for broker_id in (1, 2):
        first.heartbeat(broker_id)
    written(first, BeginMigration())
    written(first, MigrationBatch(topic_records()))
    unfenced = first.heartbeat(3)  # the unfence joins the open transaction, as Kafka's
    assert isinstance(unfenced, BrokerHeartbeatResponse) and not unfenced.is_fenced
    assert first.controller.committed_image.cluster.brokers[3].fenced  # not visible yet
    nxt = successor(first, zk_migration=True)  # the leader died mid-load: aborted
    assert nxt.controller.image.cluster.brokers[3].fenced
    end = len(nxt.raft.metadata_records())
    again = nxt.heartbeat(3)
    assert isinstance(again, BrokerHeartbeatResponse) and not again.is_fenced
    assert messages(nxt, end) == [BrokerRegistrationChangeRecord(
        broker_id=3, broker_epoch=nxt.controller.image.cluster.brokers[3].epoch, fenced=-1)]
    assert not nxt.replayed_image().cluster.brokers[3].fenced


# -- the image, its snapshot and the shell -----------------------------------------------


def test_a_snapshot_keeps_the_migration_state_but_writes_no_none(tmp_path: Path) -> None:
    cluster = migrating()
    migrated(cluster)
    image = cluster.replayed_image()
    names = [type(record).__name__ for record, _ in image.records()]
    assert names[:2] == ["FeatureLevelRecord", "ZkMigrationStateRecord"]  # Kafka 3.9's order
    loaded = load_snapshot(write_image_snapshot(tmp_path, image, clock=lambda: 0))
    assert loaded.features.zk_migration_state == ZkMigrationState.MIGRATION
    kraft = Cluster(mv=MV_3_9_IV0)
    kraft.elect()
    assert not any(isinstance(record, ZkMigrationStateRecord)
                   for record, _ in kraft.replayed_image().records())


def test_the_shell_shows_the_migration_state_when_there_is_one() -> None:
    cluster = migrating()
    shell = MetadataShell(image_tree(cluster.replayed_image(), source="test"))
    assert shell.execute("cat /image/features/zkMigrationState").lines == ["PRE_MIGRATION"]
    kraft = Cluster(mv=MV_3_9_IV0)
    kraft.elect()
    plain = MetadataShell(image_tree(kraft.replayed_image(), source="test"))
    assert plain.execute("ls /image/features").lines == ["metadataVersion"]


def test_an_unknown_migration_state_is_refused() -> None:
    delta = MetadataDelta(MetadataImage())
    with pytest.raises(MetadataImageError, match="Unsupported ZkMigrationState value 9"):
        delta.replay(ZkMigrationStateRecord(zk_migration_state=9))


# -- the controllers' readiness (§3) -----------------------------------------------------


def registered(cluster: Cluster, controller_id: int, *, ready: bool) -> None:
    assert cluster.call(ControllerRegistrationRequest(
        controller_id=controller_id, incarnation_id=uuid.UUID(int=controller_id),
        zk_migration_ready=ready)).error_code == ErrorCode.NONE


def test_the_quorum_is_ready_once_every_voter_registered_with_migration() -> None:
    cluster = migrating()
    voters = (3000, 3001, 3002)

    def reason() -> str | None:
        return zk_migration_not_ready_reason(cluster.controller.committed_image, voters)
    assert reason() == "No registration found for controller 3000"
    registered(cluster, 3000, ready=True)
    assert reason() == "No registration found for controller 3001"
    registered(cluster, 3001, ready=False)  # voters are checked in order, as Kafka's
    registered(cluster, 3002, ready=True)
    assert reason() == "Controller 3001 has not enabled zookeeper.metadata.migration.enable"
    registered(cluster, 3001, ready=True)
    assert reason() is None


def test_readiness_below_controller_registrations_and_migration() -> None:
    at_3_6 = MetadataImage(features=FeaturesImage({METADATA_VERSION_FEATURE: MV_3_6_IV0}))
    assert zk_migration_not_ready_reason(at_3_6, (3000,)) is None  # nothing to check
    at_3_3 = MetadataImage(features=FeaturesImage({METADATA_VERSION_FEATURE: MV_3_3_IV3}))
    assert zk_migration_not_ready_reason(at_3_3, (3000,)) == (
        "The metadata.version too low at 3.3-IV3")


def test_an_unfence_inside_the_load_is_published_with_it() -> None:
    cluster = migrating()
    register_zk_brokers(cluster, (1,))
    written(cluster, BeginMigration())
    cluster.heartbeat(1)
    assert cluster.replayed_image().cluster.brokers[1].fenced  # the transaction hides it
    written(cluster, MigrationBatch(topic_records()))
    written(cluster, CompleteMigration())
    assert not cluster.replayed_image().cluster.brokers[1].fenced


# -- the reference run's records (docs/design/migration-reference/captured) --------------


def json_at(cluster: Cluster, offset: int) -> dict[str, object]:
    """The decoder's JSON of the record at ``offset`` of ``cluster``'s log."""
    for base, _, values, control in cluster.raft.batches:
        if not control and base <= offset < base + len(values):
            found: dict[str, object] = decode_metadata_record(
                values[offset - base]).to_json_dict()
            return found
    raise KeyError(offset)


def batch_of(cluster: Cluster, offset: int) -> tuple[int, int]:
    return next((base, base + len(values) - 1) for base, _, values, _ in cluster.raft.batches
                if base <= offset < base + len(values))


def test_the_records_and_batches_are_the_reference_runs() -> None:
    captured = log_records("metadata-D-finalised.records")
    batches = log_batches("metadata-D-finalised.batches")
    cluster = migrating()  # the run's log too starts with a LeaderChange at offset 0
    assert [json_at(cluster, offset) for offset in range(1, 5)] == [
        captured[offset] for offset in range(1, 5)]
    assert batch_of(cluster, 1) == (1, 4) and (1, 4) in batches
    # ZooKeeper broker 1's registration, from what the run's broker sent
    data = captured[31]["data"]
    answer = cluster.call(BrokerRegistrationRequest(
        broker_id=data["brokerId"], cluster_id="test-cluster",
        incarnation_id=uuid_from_str(data["incarnationId"]),
        listeners=tuple(Listener(name=e["name"], host=e["host"], port=e["port"],
                                 security_protocol=e["securityProtocol"])
                        for e in data["endPoints"]),
        features=tuple(Feature(f["name"], f["minSupportedVersion"], f["maxSupportedVersion"])
                       for f in data["features"]),
        rack=data["rack"], is_migrating_zk_broker=True,
        log_dirs=tuple(uuid_from_str(d) for d in data["logDirs"])))
    epoch = answer.broker_epoch
    assert json_at(cluster, epoch) == {**captured[31], "data": {**data, "brokerEpoch": epoch}}
    cluster.heartbeat(1)  # caught up: unfenced, at the change record's version 0 as Kafka's
    assert json_at(cluster, cluster.raft.end_offset - 1) == {
        **captured[33], "data": {**captured[33]["data"], "brokerEpoch": epoch}}
    begin = written(cluster, BeginMigration())
    assert json_at(cluster, begin.offset) == captured[72]
    assert batch_of(cluster, begin.offset) == (begin.offset, begin.offset)
    assert (72, 72) in batches
    complete = written(cluster, CompleteMigration())
    assert [json_at(cluster, complete.offset - 1), json_at(cluster, complete.offset)] == [
        captured[104], captured[105]]
    assert batch_of(cluster, complete.offset) == (complete.offset - 1, complete.offset)
    assert (104, 105) in batches
    final = successor(cluster, zk_migration=False)
    assert json_at(final, final.raft.end_offset - 1) == captured[433]
    assert (433, 433) in batches
