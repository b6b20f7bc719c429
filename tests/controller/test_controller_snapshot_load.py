"""A running, non-active controller that is handed a snapshot (it fell behind the log start)
replaces its state with the snapshot's and goes on from there: later batches apply on top,
and when it becomes active it serves brokers and admin requests from that state."""

from __future__ import annotations

import pytest
from controller_harness import Cluster, create_topic  # type: ignore[import-not-found]

from pykraft.errors import ControllerError
from pykraft.image import ImageLoader, MetadataImage
from pykraft.messages.kafka.broker_heartbeat_response import BrokerHeartbeatResponse
from pykraft.messages.kafka.create_topics_response import CreateTopicsResponse
from pykraft.protocol.errors import ErrorCode
from pykraft.raft.api import LeaderAndEpoch


def leader_history() -> tuple[Cluster, int, MetadataImage]:
    """A leader's log with brokers and topics; returns it, the number of batches covered
    by the snapshot taken halfway, and that snapshot's image."""
    leader = Cluster(seed=1)
    leader.elect()
    leader.start_brokers(["r1", "r2", "r3"])
    leader.call(create_topic("before", partitions=3, rf=2))
    covered = leader.raft.committed_batches
    snapshot = leader.controller.committed_image
    leader.call(create_topic("after", partitions=2, rf=3))
    leader.heartbeat(2, want_shut_down=True)
    leader.tick(100)
    leader.commit()
    return leader, covered, snapshot


def follower_of(leader: Cluster, replayed_batches: int) -> Cluster:
    """Another controller that has replayed the leader's first batches as a follower."""
    follower = Cluster(seed=2)
    follower.raft.batches = list(leader.raft.batches)
    follower.raft.epoch = leader.raft.epoch
    follower.raft.leader = 1
    for index in range(replayed_batches):
        follower.controller.handle_commit(follower.raft.batch(index))
    follower.raft.committed_batches = replayed_batches
    return follower


@pytest.mark.parametrize("replayed", [0, 3, 6])
def test_loaded_snapshot_plus_later_batches_equals_the_leaders_committed_state(
    replayed: int,
) -> None:
    leader, covered, snapshot = leader_history()
    assert replayed < covered  # the follower is behind the snapshot it gets
    follower = follower_of(leader, replayed)
    follower.controller.load_image(snapshot)
    assert follower.controller.committed_image == snapshot
    assert follower.controller.committed_offset == snapshot.provenance.last_offset
    assert follower.controller.next_offset == snapshot.provenance.last_offset + 1
    follower.raft.committed_batches = covered
    follower.commit()  # the batches after the snapshot, as the core delivers them
    assert follower.controller.committed_image == leader.controller.committed_image
    assert follower.controller.image == leader.controller.committed_image
    assert follower.controller.committed_image == leader.replayed_image()


def test_controller_that_loaded_a_snapshot_becomes_active_and_serves_from_it() -> None:
    leader, covered, snapshot = leader_history()
    follower = follower_of(leader, 2)
    follower.controller.load_image(snapshot)
    follower.raft.committed_batches = covered
    follower.commit()
    follower.elect()  # now node 0 of the follower's own log: a new epoch, activation
    assert follower.controller.is_active
    # the activation did not bootstrap again: the features and brokers are the snapshot's
    assert follower.controller.image.features == leader.controller.committed_image.features
    # a broker from the snapshot heartbeats with the epoch it registered with
    beat = follower.heartbeat(1)
    assert isinstance(beat, BrokerHeartbeatResponse)
    assert beat.error_code == ErrorCode.NONE and not beat.is_fenced
    created = follower.call(create_topic("later", partitions=2, rf=1))
    assert isinstance(created, CreateTopicsResponse)
    assert created.topics[0].error_code == ErrorCode.NONE
    duplicate = follower.call(create_topic("before"))
    assert isinstance(duplicate, CreateTopicsResponse)
    assert duplicate.topics[0].error_code == ErrorCode.TOPIC_ALREADY_EXISTS
    resumed = ImageLoader(snapshot)  # what a broker that loaded the snapshot then replays
    for index in range(covered, follower.raft.committed_batches):
        resumed.load_batch(follower.raft.batch(index))
    assert follower.controller.committed_image == resumed.image


def test_active_controller_refuses_a_snapshot() -> None:
    leader, _, snapshot = leader_history()
    with pytest.raises(ControllerError, match="active controller"):
        leader.controller.load_image(snapshot)
    assert leader.controller.committed_image != snapshot


def test_a_restarted_former_leader_loads_its_snapshot_before_activating() -> None:
    """On restart the core tells the controller it led the current epoch (it is Resigned)
    and then hands it the newest snapshot: the load must not fail, and the activation that
    follows finds the core no longer leading and resigns cleanly."""
    leader, covered, snapshot = leader_history()
    restarted = follower_of(leader, 0)
    restarted.controller.handle_leader_change(LeaderAndEpoch(0, restarted.raft.epoch))
    restarted.controller.load_image(snapshot)
    assert restarted.controller.committed_image == snapshot
    restarted.tick(1)  # activation from the loaded state
    restarted.tick(1000)  # its first write (a NoOpRecord) finds the core is not the leader
    assert not restarted.controller.is_active
    restarted.raft.committed_batches = covered
    restarted.commit()
    assert restarted.controller.committed_image == leader.controller.committed_image
