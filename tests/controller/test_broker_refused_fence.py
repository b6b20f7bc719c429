"""pykraft's fast failover on the controller core: a broker whose listeners refused
connections (the runtime's evidence that its process is gone) is fenced at once, as session
expiry would fence it, but only the incarnation the evidence is about."""

from __future__ import annotations

import uuid

from controller_harness import Cluster, create_topic  # type: ignore[import-not-found]

from pykraft.image.topics import PartitionRegistration
from pykraft.records.metadata import BrokerRegistrationChangeRecord, PartitionChangeRecord


def started(**options: bool) -> Cluster:
    """An active controller, brokers 1-3 unfenced, topic ``t`` led by broker 1."""
    cluster = Cluster(session_timeout_ms=30_000, **options)
    cluster.elect()
    cluster.start_brokers(["a", "b", "c"])
    cluster.call(create_topic("t", -1, -1, assignments=[[1, 2, 3]]))
    return cluster


def partition(cluster: Cluster) -> PartitionRegistration:
    registration: PartitionRegistration = (
        cluster.controller.image.topics.by_name["t"].partitions[0])
    return registration


def epoch_of(cluster: Cluster, broker_id: int) -> int:
    epoch: int = cluster.controller.image.cluster.brokers[broker_id].epoch
    return epoch


def report(cluster: Cluster, broker_id: int, epoch: int) -> bool:
    fenced: bool = cluster.controller.broker_unreachable(cluster.now, broker_id, epoch)
    cluster.commit()
    return fenced


def test_refused_evidence_at_the_current_epoch_fences_and_moves_leadership_at_once() -> None:
    cluster = started()
    start = len(cluster.raft.metadata_records())
    cluster.tick(100)  # far inside the 30 s session
    assert report(cluster, 1, epoch_of(cluster, 1))
    written = [r.message for r in cluster.raft.metadata_records()[start:]]
    kinds = [type(m) for m in written
             if isinstance(m, PartitionChangeRecord | BrokerRegistrationChangeRecord)]
    assert kinds == [PartitionChangeRecord, BrokerRegistrationChangeRecord]  # as expiry
    assert cluster.replayed_image().cluster.brokers[1].fenced
    assert (partition(cluster).leader, partition(cluster).isr) == (2, (2, 3))


def test_stale_epoch_evidence_changes_nothing() -> None:
    cluster = started()
    assert not report(cluster, 1, epoch_of(cluster, 1) - 1)
    assert not cluster.controller.image.cluster.brokers[1].fenced
    assert partition(cluster).leader == 1


def test_evidence_about_a_re_registered_broker_changes_nothing() -> None:
    cluster = started()
    old_epoch = epoch_of(cluster, 1)
    cluster.heartbeat(1, want_fence=True)  # a clean shutdown ends fenced
    cluster.register(1, incarnation=uuid.UUID(int=77))  # the new process
    cluster.heartbeat(1)
    assert not cluster.controller.image.cluster.brokers[1].fenced
    assert not report(cluster, 1, old_epoch)
    assert not cluster.controller.image.cluster.brokers[1].fenced


def test_an_already_fenced_or_unknown_broker_writes_nothing() -> None:
    cluster = started()
    cluster.heartbeat(2, want_fence=True)
    written = len(cluster.raft.metadata_records())
    assert not report(cluster, 2, epoch_of(cluster, 2))
    assert not report(cluster, 9, 0)
    assert len(cluster.raft.metadata_records()) == written


def test_a_lapsed_session_is_left_to_session_expiry() -> None:
    cluster = started()
    cluster.now += 30_001  # no tick: the expiry fence has not run yet
    assert not cluster.controller.broker_unreachable(cluster.now, 1, epoch_of(cluster, 1))


def test_evidence_is_ignored_when_the_config_turns_it_off() -> None:
    cluster = started(fence_on_refused_connection=False)
    assert not report(cluster, 1, epoch_of(cluster, 1))
    assert partition(cluster).leader == 1


def test_an_inactive_controller_ignores_evidence() -> None:
    cluster = started()
    cluster.depose(truncate=False)
    assert not cluster.controller.broker_unreachable(cluster.now, 1, epoch_of(cluster, 1))
