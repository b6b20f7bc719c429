"""Activation, broker registration, heartbeats, fencing, controlled shutdown, NoOps,
withheld responses and revert on lost leadership."""

from __future__ import annotations

import uuid

import pytest
from controller_harness import Cluster, create_topic  # type: ignore[import-not-found]

from pykraft.errors import ConfigError
from pykraft.features import ELIGIBLE_LEADER_REPLICAS_FEATURE, METADATA_VERSION_FEATURE
from pykraft.messages.kafka.broker_heartbeat_response import BrokerHeartbeatResponse
from pykraft.messages.kafka.broker_registration_response import BrokerRegistrationResponse
from pykraft.messages.kafka.controller_registration_request import (
    ControllerRegistrationRequest,
)
from pykraft.messages.kafka.controller_registration_request import (
    Listener as ControllerRegistrationListener,
)
from pykraft.messages.kafka.create_topics_response import CreateTopicsResponse
from pykraft.messages.kafka.describe_configs_request import DescribeConfigsRequest
from pykraft.messages.kafka.describe_configs_response import DescribeConfigsResponse
from pykraft.messages.kafka.unregister_broker_request import UnregisterBrokerRequest
from pykraft.protocol.errors import ErrorCode
from pykraft.records.metadata import (
    AbortTransactionRecord,
    BeginTransactionRecord,
    BrokerRegistrationChangeRecord,
    ConfigRecord,
    EndTransactionRecord,
    FeatureLevelRecord,
    FenceBrokerRecord,
    NoOpRecord,
    RegisterControllerRecord,
    UnregisterBrokerRecord,
    encode_metadata_record,
)


def test_activation_on_empty_log_writes_bootstrap_in_a_transaction() -> None:
    cluster = Cluster(bootstrap=[FeatureLevelRecord(name="group.version", feature_level=1),
                                 FeatureLevelRecord(name="zeta", feature_level=0),
                                 FeatureLevelRecord(name=METADATA_VERSION_FEATURE,
                                                    feature_level=19)])
    cluster.elect()
    records = [r.message for r in cluster.raft.metadata_records()]
    assert records == [
        BeginTransactionRecord(name="Bootstrap records"),
        FeatureLevelRecord(name=METADATA_VERSION_FEATURE, feature_level=19),
        FeatureLevelRecord(name="group.version", feature_level=1),
        EndTransactionRecord(),
    ]
    assert cluster.controller.committed_image.features.finalized == {
        METADATA_VERSION_FEATURE: 19, "group.version": 1}


def test_bootstrap_with_elr_on_writes_the_cluster_min_insync_replicas() -> None:
    """Kafka's ActivationRecordsGenerator: eligible.leader.replicas.version > 0 in the
    bootstrap (Kafka 4.4's format default) adds min.insync.replicas for the cluster (BROKER
    "") at the controller's static value, last in the bootstrap transaction; its topics
    then describe it as DYNAMIC_DEFAULT_BROKER_CONFIG."""
    elr = FeatureLevelRecord(name=ELIGIBLE_LEADER_REPLICAS_FEATURE, feature_level=1)
    cluster = Cluster(bootstrap=[FeatureLevelRecord(name=METADATA_VERSION_FEATURE,
                                                    feature_level=21), elr],
                      properties={"min.insync.replicas": " 2"})
    cluster.elect()
    assert [r.message for r in cluster.raft.metadata_records()] == [
        BeginTransactionRecord(name="Bootstrap records"),
        FeatureLevelRecord(name=METADATA_VERSION_FEATURE, feature_level=21), elr,
        ConfigRecord(resource_type=4, resource_name="", name="min.insync.replicas", value="2"),
        EndTransactionRecord(),
    ]
    assert cluster.controller.committed_image.configs.get((4, "")) == {
        "min.insync.replicas": "2"}


def test_bootstrap_without_elr_writes_no_cluster_config() -> None:
    """ELR off (pykraft's own format, Kafka's before 4.1) or at level 0: nothing is added;
    the static value is Kafka's default 1 when the properties omit it."""
    off = FeatureLevelRecord(name=ELIGIBLE_LEADER_REPLICAS_FEATURE, feature_level=0)
    cluster = Cluster(bootstrap=[FeatureLevelRecord(name=METADATA_VERSION_FEATURE,
                                                    feature_level=21), off])
    cluster.elect()
    assert not any(isinstance(r.message, ConfigRecord)
                   for r in cluster.raft.metadata_records())


def test_old_metadata_version_bootstraps_without_transaction() -> None:
    cluster = Cluster(mv=12)
    cluster.elect()
    assert [r.message for r in cluster.raft.metadata_records()] == [
        FeatureLevelRecord(name=METADATA_VERSION_FEATURE, feature_level=12)]


def test_second_activation_writes_nothing() -> None:
    cluster = Cluster()
    cluster.elect()
    before = len(cluster.raft.metadata_records())
    cluster.depose(truncate=False)
    cluster.elect()
    assert len(cluster.raft.metadata_records()) == before


def test_partial_bootstrap_transaction_is_aborted_and_reappended() -> None:
    cluster = Cluster()
    cluster.raft.epoch = 1
    partial = [encode_metadata_record(BeginTransactionRecord(name="Bootstrap records")),
               encode_metadata_record(FeatureLevelRecord(name=METADATA_VERSION_FEATURE,
                                                         feature_level=19))]
    cluster.raft.batches.append((0, 1, partial, False))
    cluster.commit()
    assert cluster.controller.committed_image.features.metadata_version is None
    cluster.elect()
    messages = [r.message for r in cluster.raft.metadata_records()]
    assert messages[2:] == [
        AbortTransactionRecord(reason="Controller failover"),
        BeginTransactionRecord(name="Bootstrap records"),
        FeatureLevelRecord(name=METADATA_VERSION_FEATURE, feature_level=19),
        EndTransactionRecord(),
    ]
    assert cluster.replayed_image().features.metadata_version == 19


def test_broker_epoch_is_the_next_write_offset() -> None:
    cluster = Cluster()
    cluster.elect()
    expected = cluster.controller.next_offset
    response = cluster.register(1)
    assert isinstance(response, BrokerRegistrationResponse)
    assert response.error_code == ErrorCode.NONE and response.broker_epoch == expected
    registration = cluster.controller.image.cluster.brokers[1]
    assert registration.epoch == expected and registration.fenced


def test_same_incarnation_keeps_epoch_and_fenced_state() -> None:
    cluster = Cluster()
    cluster.elect()
    first = cluster.register(1)
    cluster.heartbeat(1)
    assert not cluster.controller.image.cluster.brokers[1].fenced
    again = cluster.register(1)
    assert isinstance(first, BrokerRegistrationResponse)
    assert isinstance(again, BrokerRegistrationResponse)
    assert again.broker_epoch == first.broker_epoch
    assert not cluster.controller.image.cluster.brokers[1].fenced


def test_new_incarnation_with_live_session_is_a_duplicate() -> None:
    cluster = Cluster()
    cluster.elect()
    cluster.register(1)
    cluster.heartbeat(1)
    response = cluster.register(1, incarnation=uuid.UUID(int=999))
    assert isinstance(response, BrokerRegistrationResponse)
    assert response.error_code == ErrorCode.DUPLICATE_BROKER_REGISTRATION
    cluster.tick(9001)  # session lapses: the broker is fenced, a new incarnation may register
    assert cluster.controller.image.cluster.brokers[1].fenced
    response = cluster.register(1, incarnation=uuid.UUID(int=999))
    assert isinstance(response, BrokerRegistrationResponse)
    assert response.error_code == ErrorCode.NONE
    assert response.broker_epoch == cluster.controller.image.cluster.brokers[1].epoch
    assert cluster.controller.image.cluster.brokers[1].incarnation_id == uuid.UUID(int=999)


def test_a_restart_on_the_same_log_dirs_registers_at_once() -> None:
    """Beyond Kafka (issue 29): a new incarnation naming the registered one's log
    directories is the same storage restarted (killed with -9), not a second broker with
    the same id, so it is not made to wait out the old session: the old incarnation is
    fenced (its leaderships go) and the new one registered, fenced until it catches up."""
    dirs = (uuid.UUID(int=7), uuid.UUID(int=8))
    cluster = Cluster()
    cluster.elect()
    cluster.register(1, log_dirs=dirs)
    cluster.heartbeat(1)
    cluster.call(create_topic("t"))
    topic = cluster.controller.image.topics.by_name["t"]
    assert topic.partitions[0].leader == 1
    old_epoch = cluster.controller.image.cluster.brokers[1].epoch
    response = cluster.register(1, incarnation=uuid.UUID(int=999), log_dirs=dirs[::-1])
    assert isinstance(response, BrokerRegistrationResponse)
    assert response.error_code == ErrorCode.NONE and response.broker_epoch > old_epoch
    broker = cluster.controller.image.cluster.brokers[1]
    assert broker.incarnation_id == uuid.UUID(int=999) and broker.fenced
    topic = cluster.controller.image.topics.by_name["t"]
    assert topic.partitions[0].leader == -1
    cluster.heartbeat(1)
    assert not cluster.controller.image.cluster.brokers[1].fenced
    topic = cluster.controller.image.topics.by_name["t"]
    assert topic.partitions[0].leader == 1


@pytest.mark.parametrize("other_dirs", [(uuid.UUID(int=9),), (uuid.UUID(int=7),), ()])
def test_a_new_incarnation_on_other_log_dirs_is_still_a_duplicate(
        other_dirs: tuple[uuid.UUID, ...]) -> None:
    """Other directories (or a subset, or none named) may be another process with a
    duplicated node.id: refused while the registered one's session lives, as in Kafka."""
    cluster = Cluster()
    cluster.elect()
    cluster.register(1, log_dirs=(uuid.UUID(int=7), uuid.UUID(int=8)))
    cluster.heartbeat(1)
    response = cluster.register(1, incarnation=uuid.UUID(int=999), log_dirs=other_dirs)
    assert isinstance(response, BrokerRegistrationResponse)
    assert response.error_code == ErrorCode.DUPLICATE_BROKER_REGISTRATION
    assert not cluster.controller.image.cluster.brokers[1].fenced


def test_a_cleanly_shut_down_broker_registers_again_at_once() -> None:
    """Kafka's registerBroker refuses a new incarnation only while the old one has a valid
    session, and a fenced broker has none (BrokerHeartbeatManager.hasValidSession): a
    broker fenced by its controlled shutdown restarts without waiting out its session."""
    cluster = Cluster()
    cluster.elect()
    cluster.register(1)
    cluster.heartbeat(1)
    shut = cluster.heartbeat(1, want_shut_down=True)  # it leads nothing: fenced at once
    assert isinstance(shut, BrokerHeartbeatResponse) and shut.should_shut_down
    assert cluster.controller.image.cluster.brokers[1].fenced
    response = cluster.register(1, incarnation=uuid.UUID(int=999))
    assert isinstance(response, BrokerRegistrationResponse)
    assert response.error_code == ErrorCode.NONE
    assert cluster.controller.image.cluster.brokers[1].incarnation_id == uuid.UUID(int=999)


def test_registration_refused_when_metadata_version_unsupported() -> None:
    cluster = Cluster()
    cluster.elect()
    response = cluster.register(1, mv_range=(1, 18))
    assert isinstance(response, BrokerRegistrationResponse)
    assert response.error_code == ErrorCode.UNSUPPORTED_VERSION
    assert 1 not in cluster.controller.image.cluster.brokers


def test_unfence_needs_caught_up_offset_and_no_want_fence() -> None:
    cluster = Cluster()
    cluster.elect()
    response = cluster.register(1)
    assert isinstance(response, BrokerRegistrationResponse)
    registered_at = response.broker_epoch
    behind = cluster.heartbeat(1, offset=registered_at - 1)
    assert isinstance(behind, BrokerHeartbeatResponse)
    assert behind.is_fenced and not behind.is_caught_up
    wants = cluster.heartbeat(1, offset=registered_at, want_fence=True)
    assert isinstance(wants, BrokerHeartbeatResponse) and wants.is_fenced
    assert cluster.controller.image.cluster.brokers[1].fenced
    ok = cluster.heartbeat(1, offset=registered_at)
    assert isinstance(ok, BrokerHeartbeatResponse) and not ok.is_fenced and ok.is_caught_up
    assert isinstance(cluster.raft.metadata_records()[-1].message,
                      BrokerRegistrationChangeRecord)


def test_heartbeat_errors() -> None:
    """Kafka's ClusterControlManager.checkBrokerEpoch: an unknown broker is a stale epoch
    too ("No broker registration found for broker id 5"), not BROKER_ID_NOT_REGISTERED."""
    cluster = Cluster()
    cluster.elect()
    unknown = cluster.heartbeat(5, epoch=3)
    assert isinstance(unknown, BrokerHeartbeatResponse)
    assert unknown.error_code == ErrorCode.STALE_BROKER_EPOCH
    cluster.register(1)
    stale = cluster.heartbeat(1, epoch=1)
    assert isinstance(stale, BrokerHeartbeatResponse)
    assert stale.error_code == ErrorCode.STALE_BROKER_EPOCH


def test_session_timeout_fences_and_moves_leadership() -> None:
    cluster = Cluster()
    cluster.elect()
    cluster.start_brokers(["a", "b"])
    cluster.call(create_topic("t", 4, 2))
    cluster.tick(5000)
    cluster.heartbeat(2)
    cluster.tick(4500)  # broker 1: 9500 ms without heartbeat; broker 2: 4500 ms
    image = cluster.controller.image
    assert image.cluster.brokers[1].fenced and not image.cluster.brokers[2].fenced
    for partition in image.topics.by_name["t"].partitions.values():
        assert partition.leader == 2 and partition.isr == (2,)
    cluster.commit()
    assert cluster.replayed_image() == cluster.controller.image


def test_fence_record_type_follows_metadata_version() -> None:
    cluster = Cluster(mv=5)
    cluster.elect()
    cluster.register(1)
    cluster.heartbeat(1)
    cluster.tick(10_000)
    assert any(isinstance(r.message, FenceBrokerRecord)
               for r in cluster.raft.metadata_records())


def test_last_isr_member_fenced_leaves_partition_leaderless_until_unfenced() -> None:
    cluster = Cluster()
    cluster.elect()
    cluster.start_brokers([None])
    cluster.call(create_topic("t", 2, 1))
    cluster.heartbeat(1, want_fence=True)
    for partition in cluster.controller.image.topics.by_name["t"].partitions.values():
        assert partition.leader == -1 and partition.isr == (1,)
    cluster.heartbeat(1)
    for partition in cluster.controller.image.topics.by_name["t"].partitions.values():
        assert partition.leader == 1 and partition.leader_epoch == 2


def test_controlled_shutdown() -> None:
    cluster = Cluster()
    cluster.elect()
    cluster.start_brokers(["a", "b", "c"])
    cluster.call(create_topic("t", 6, 3))
    first = cluster.heartbeat(1, want_shut_down=True)
    assert isinstance(first, BrokerHeartbeatResponse) and not first.should_shut_down
    image = cluster.controller.image
    assert image.cluster.brokers[1].in_controlled_shutdown
    for partition in image.topics.by_name["t"].partitions.values():
        assert partition.leader != 1 and 1 not in partition.isr
    waiting = cluster.heartbeat(1, want_shut_down=True)  # 2 and 3 have not seen the moves
    assert isinstance(waiting, BrokerHeartbeatResponse) and not waiting.should_shut_down
    cluster.heartbeat(2)
    cluster.heartbeat(3)
    second = cluster.heartbeat(1, want_shut_down=True)
    assert isinstance(second, BrokerHeartbeatResponse)
    assert second.should_shut_down and second.is_fenced
    assert cluster.controller.image.cluster.brokers[1].fenced


def test_unregister_broker() -> None:
    cluster = Cluster()
    cluster.elect()
    cluster.start_brokers(["a", "b"])
    cluster.call(create_topic("t", 2, 2))
    response = cluster.call(UnregisterBrokerRequest(broker_id=1))
    assert getattr(response, "error_code", None) == ErrorCode.NONE
    assert 1 not in cluster.controller.image.cluster.brokers
    assert isinstance(cluster.raft.metadata_records()[-1].message, UnregisterBrokerRecord)
    for partition in cluster.controller.image.topics.by_name["t"].partitions.values():
        assert 1 not in partition.isr and partition.leader == 2
    missing = cluster.call(UnregisterBrokerRequest(broker_id=1))
    assert getattr(missing, "error_code", None) == ErrorCode.BROKER_ID_NOT_REGISTERED


def test_controller_registration() -> None:
    cluster = Cluster()
    cluster.elect()
    request = ControllerRegistrationRequest(controller_id=3000, incarnation_id=uuid.UUID(int=8))
    response = cluster.call(request)
    assert getattr(response, "error_code", None) == ErrorCode.NONE
    assert isinstance(cluster.raft.metadata_records()[-1].message, RegisterControllerRecord)
    assert 3000 in cluster.controller.image.cluster.controllers
    old = Cluster(mv=14)
    old.elect()
    refused = old.call(request)
    assert getattr(refused, "error_code", None) == ErrorCode.UNSUPPORTED_VERSION


def test_a_repeated_controller_listener_name_is_written_once_with_its_last_value() -> None:
    """Kafka keys a registration's listeners by name (ListenerInfo's LinkedHashMap): a
    request naming one listener 3 times writes one endpoint, at the first place, the last
    value."""
    cluster = Cluster()
    cluster.elect()
    listeners = tuple(ControllerRegistrationListener(name=name, host="h", port=port,
                                                     security_protocol=0)
                      for name, port in (("A", 1), ("B", 2), ("A", 3), ("A", 4)))
    response = cluster.call(ControllerRegistrationRequest(
        controller_id=3000, incarnation_id=uuid.UUID(int=8), listeners=listeners))
    assert getattr(response, "error_code", None) == ErrorCode.NONE
    record = cluster.raft.metadata_records()[-1].message
    assert isinstance(record, RegisterControllerRecord)
    assert [(e.name, e.port) for e in record.end_points] == [("A", 4), ("B", 2)]


def test_noop_record_every_idle_interval() -> None:
    cluster = Cluster(max_idle_interval_ms=500)
    cluster.elect()
    count = len(cluster.raft.metadata_records())
    cluster.tick(499)
    assert len(cluster.raft.metadata_records()) == count
    cluster.tick(1)
    assert isinstance(cluster.raft.metadata_records()[-1].message, NoOpRecord)
    assert cluster.controller.next_deadline_ms() == 1000


def test_responses_are_withheld_until_commit() -> None:
    cluster = Cluster()
    cluster.elect()
    cluster.start_brokers(["a"])
    ticket = cluster.submit(create_topic("t"))
    assert ticket not in cluster.responses
    cluster.commit()
    response = cluster.responses.pop(ticket)
    assert isinstance(response, CreateTopicsResponse)
    assert response.topics[0].error_code == ErrorCode.NONE
    # a request without records still waits for what was appended before it
    first = cluster.submit(create_topic("u"))
    second = cluster.submit(create_topic("t"))
    assert first not in cluster.responses and second not in cluster.responses
    cluster.commit()
    assert {first, second} <= set(cluster.responses)


def test_lost_leadership_reverts_uncommitted_state() -> None:
    cluster = Cluster()
    cluster.elect()
    cluster.start_brokers(["a"])
    committed = cluster.controller.image
    ticket = cluster.submit(create_topic("t"))
    assert "t" in cluster.controller.image.topics.by_name
    cluster.depose(truncate=True)
    assert not cluster.controller.is_active
    assert cluster.controller.image == committed
    response = cluster.responses.pop(ticket)
    assert isinstance(response, CreateTopicsResponse)
    assert response.topics[0].error_code == ErrorCode.NOT_CONTROLLER
    refused = cluster.call(create_topic("t"), commit=False)
    assert isinstance(refused, CreateTopicsResponse)
    assert refused.topics[0].error_code == ErrorCode.NOT_CONTROLLER
    cluster.elect()  # leader again: it continues from the committed state
    again = cluster.call(create_topic("t"))
    assert isinstance(again, CreateTopicsResponse)
    assert again.topics[0].error_code == ErrorCode.NONE
    assert cluster.replayed_image() == cluster.controller.image


def test_records_appended_before_losing_leadership_may_still_commit() -> None:
    cluster = Cluster()
    cluster.elect()
    cluster.start_brokers(["a"])
    cluster.submit(create_topic("t"))
    cluster.depose(truncate=False)  # the new leader keeps and commits the batch
    cluster.commit()
    assert "t" in cluster.controller.image.topics.by_name
    assert cluster.controller.image == cluster.replayed_image()


def test_bootstrap_without_metadata_version_is_refused() -> None:
    with pytest.raises(ConfigError):
        Cluster(bootstrap=[FeatureLevelRecord(name="group.version", feature_level=1)])


def test_inactive_controller_refuses_everything() -> None:
    cluster = Cluster()
    response = cluster.call(DescribeConfigsRequest(resources=()), commit=False)
    assert isinstance(response, DescribeConfigsResponse)
    heartbeat = cluster.heartbeat(1, epoch=0, commit=False)
    assert isinstance(heartbeat, BrokerHeartbeatResponse)
    assert heartbeat.error_code == ErrorCode.NOT_CONTROLLER
    assert cluster.raft.batches == []
