"""Eligible leader replicas (KIP-966) as Kafka 4.4's PartitionChangeBuilder and
ReplicationControlManager keep them: below the min ISR the replicas that left the ISR stay
eligible, one of them leads when the ISR is empty, a broker back from an unclean shutdown
is not eligible, and a change of min.insync.replicas clears the ELRs."""

from __future__ import annotations

import uuid

from controller_harness import Cluster, create_topic  # type: ignore[import-not-found]
from test_controller_lifecycle import beat, partition  # type: ignore[import-not-found]

from pykraft.features import ELIGIBLE_LEADER_REPLICAS_FEATURE, METADATA_VERSION_FEATURE
from pykraft.image.configs import ConfigResourceType
from pykraft.image.topics import NO_LEADER
from pykraft.messages.kafka.broker_registration_request import Feature
from pykraft.messages.kafka.incremental_alter_configs_request import (
    AlterableConfig,
    AlterConfigsResource,
    IncrementalAlterConfigsRequest,
)
from pykraft.messages.kafka.incremental_alter_configs_response import (
    IncrementalAlterConfigsResponse,
)
from pykraft.protocol.errors import ErrorCode
from pykraft.records.metadata import ClearElrRecord, FeatureLevelRecord
from pykraft.replica.leader import RECOVERING

MV_4_0_IV1 = 23
ELR = (Feature(ELIGIBLE_LEADER_REPLICAS_FEATURE, 0, 1),)
SET, DELETE = 0, 1


def elr_cluster(*, elr: int = 1) -> Cluster:
    """Brokers 1-3, topic t with replicas [1, 2, 3] and min.insync.replicas=2, at
    metadata.version 4.0-IV1 with eligible.leader.replicas.version ``elr``."""
    cluster = Cluster(bootstrap=[
        FeatureLevelRecord(name=METADATA_VERSION_FEATURE, feature_level=MV_4_0_IV1),
        FeatureLevelRecord(name=ELIGIBLE_LEADER_REPLICAS_FEATURE, feature_level=elr)])
    cluster.elect()
    for broker_id in (1, 2, 3):
        cluster.register(broker_id, features=ELR, log_dirs=dirs(broker_id))
        beat(cluster, broker_id)
    cluster.call(create_topic("t", -1, -1, assignments=[[1, 2, 3]],
                              configs={"min.insync.replicas": "2"}))
    return cluster


def dirs(broker_id: int) -> tuple[uuid.UUID]:
    """The broker's one log directory (not a reserved id: 1 is UNASSIGNED, 2 LOST)."""
    return (uuid.UUID(int=1000 + broker_id),)


def state(cluster: Cluster) -> tuple[int, tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """(leader, ISR, ELR, last known ELR) of t-0."""
    p = partition(cluster)
    return p.leader, p.isr, p.eligible_leader_replicas or (), p.last_known_elr or ()


def restart(cluster: Cluster, broker_id: int, *, clean: bool) -> None:
    """A new incarnation of ``broker_id`` registers (naming its previous epoch if it shut
    down cleanly) and is unfenced."""
    previous = cluster.controller.image.cluster.brokers[broker_id].epoch
    cluster.register(broker_id, incarnation=uuid.uuid4(), features=ELR, log_dirs=dirs(broker_id),
                     previous_broker_epoch=previous if clean else -1)
    beat(cluster, broker_id)


def test_below_the_min_isr_the_replicas_that_left_the_isr_stay_eligible() -> None:
    cluster = elr_cluster()
    beat(cluster, 3, want_fence=True)
    assert state(cluster) == (1, (1, 2), (), ())  # at the min ISR: no ELR
    beat(cluster, 2, want_fence=True)
    assert state(cluster) == (1, (1,), (2,), ())
    beat(cluster, 1, want_fence=True)  # the ISR may be empty: the last leader is known
    assert state(cluster) == (NO_LEADER, (), (1, 2), (1,))


def test_without_elr_the_last_isr_member_stays_and_nothing_is_eligible() -> None:
    cluster = elr_cluster(elr=0)
    for broker_id in (3, 2, 1):
        beat(cluster, broker_id, want_fence=True)
    assert state(cluster) == (NO_LEADER, (1,), (), ())


def test_an_elr_member_leads_an_empty_isr_cleanly() -> None:
    cluster = elr_cluster()
    for broker_id in (3, 2, 1):
        beat(cluster, broker_id, want_fence=True)
    restart(cluster, 2, clean=True)
    assert state(cluster) == (2, (2,), (1,), ())
    assert partition(cluster).leader_recovery_state != RECOVERING


def test_a_broker_back_from_an_unclean_shutdown_leaves_the_elr() -> None:
    cluster = elr_cluster()
    for broker_id in (3, 2, 1):
        beat(cluster, broker_id, want_fence=True)
    restart(cluster, 1, clean=False)
    assert state(cluster) == (NO_LEADER, (), (2,), (1,))  # 1 may have lost records
    restart(cluster, 2, clean=True)
    assert state(cluster) == (2, (2,), (), ())


def test_with_no_isr_and_no_elr_the_last_known_leader_leads_uncleanly() -> None:
    """Kafka 4.4's balanced recovery (useLastKnownLeaderInBalancedRecovery, always on)."""
    cluster = elr_cluster()
    for broker_id in (3, 2, 1):
        beat(cluster, broker_id, want_fence=True)
    restart(cluster, 2, clean=False)
    restart(cluster, 1, clean=False)
    assert state(cluster) == (1, (1,), (), ())
    assert partition(cluster).leader_recovery_state == RECOVERING


def test_an_unclean_restart_of_an_isr_member_takes_it_out_at_registration() -> None:
    """Killed and started again at once (its old session still open): the registration
    itself takes it out of the ISR."""
    cluster = elr_cluster()
    cluster.register(3, incarnation=uuid.uuid4(), features=ELR, log_dirs=dirs(3))
    assert state(cluster) == (1, (1, 2), (), ())


def alter(cluster: Cluster, resource_type: int, name: str, op: int,
          value: str | None) -> tuple[ErrorCode, str | None]:
    answer = cluster.call(IncrementalAlterConfigsRequest(resources=(AlterConfigsResource(
        resource_type=resource_type, resource_name=name, configs=(AlterableConfig(
            name="min.insync.replicas", config_operation=op, value=value),)),)))
    assert isinstance(answer, IncrementalAlterConfigsResponse)
    (result,) = answer.responses
    return ErrorCode(result.error_code), result.error_message


def written(cluster: Cluster, start: int) -> list[object]:
    return [r.message for r in cluster.raft.metadata_records()[start:]]


def test_a_min_isr_change_clears_the_elrs_it_concerns() -> None:
    cluster = elr_cluster()
    beat(cluster, 3, want_fence=True)
    beat(cluster, 2, want_fence=True)
    start = len(cluster.raft.metadata_records())
    assert alter(cluster, ConfigResourceType.TOPIC, "t", SET, "1") == (ErrorCode.NONE, None)
    assert ClearElrRecord(topic_name="t") in written(cluster, start)
    assert state(cluster) == (1, (1,), (), ())
    start = len(cluster.raft.metadata_records())
    assert alter(cluster, ConfigResourceType.BROKER, "", SET, "3") == (ErrorCode.NONE, None)
    assert ClearElrRecord(topic_name="") in written(cluster, start)


def test_with_elr_on_a_broker_min_isr_may_not_change_nor_the_cluster_one_go() -> None:
    cluster = elr_cluster()
    assert alter(cluster, ConfigResourceType.BROKER, "1", SET, "2") == (
        ErrorCode.INVALID_CONFIG,
        "Broker-level min.insync.replicas cannot be altered while ELR is enabled.")
    assert alter(cluster, ConfigResourceType.BROKER, "", DELETE, None) == (
        ErrorCode.INVALID_CONFIG,
        "Cluster-level min.insync.replicas cannot be removed while ELR is enabled.")
