"""A broker's controlled shutdown against the controller's real answers: it heartbeats with
WantShutDown until told to shut down, which the controller does only once the broker's
leaderships moved and the other active broker reported seeing the move; bounded by the
caller's timeout; skipped by a broker that was never unfenced. A broker the controller
fenced for a lapsed session keeps heartbeating and is unfenced again (Kafka's RUNNING
broker ignores the fenced answer)."""

from __future__ import annotations

import asyncio
import uuid
from typing import cast

from controller_harness import (  # type: ignore[import-not-found]
    Cluster,
    ControllerOf,
    create_topic,
)

from pykraft.broker.lifecycle import BrokerIdentity, BrokerLifecycle
from pykraft.broker.metadata_listener import BrokerMetadataListener
from pykraft.config.server import Endpoint
from pykraft.messages.kafka.broker_heartbeat_request import BrokerHeartbeatRequest
from pykraft.runtime.controller_channel import ControllerChannel
from pykraft.security.session import SecurityProtocol

PLAINTEXT = SecurityProtocol.PLAINTEXT

BROKER, OTHER = 1, 2
DEADLINE_S = 10.0


class _Replayed:
    """The broker's metadata: everything the harness's controller committed."""

    def __init__(self, cluster: Cluster) -> None:
        self._cluster = cluster

    @property
    def committed_offset(self) -> int:
        return int(self._cluster.controller.committed_offset)


def _lifecycle(cluster: Cluster) -> tuple[BrokerLifecycle, ControllerOf]:
    channel = ControllerOf(cluster)
    identity = BrokerIdentity(broker_id=BROKER, cluster_id="test-cluster",
                              endpoints=((Endpoint("PLAINTEXT", "127.0.0.1", 9092), PLAINTEXT),),
                              rack=None,
                              log_dirs=(uuid.UUID(int=5),), heartbeat_interval_ms=1)
    return BrokerLifecycle(identity, cast(ControllerChannel, channel),
                           cast(BrokerMetadataListener, _Replayed(cluster))), channel


def _cluster() -> Cluster:
    cluster = Cluster()
    cluster.elect()
    cluster.register(OTHER)
    cluster.heartbeat(OTHER)
    return cluster


async def _shut_down(cluster: Cluster, lifecycle: BrokerLifecycle,
                     channel: ControllerOf) -> bool:
    running = asyncio.create_task(lifecycle.run())
    try:
        await lifecycle.first_unfenced.wait()
        cluster.call(create_topic("t", -1, -1, assignments=[[BROKER, OTHER]]))
        sent = channel.count(BrokerHeartbeatRequest)
        shutting = asyncio.create_task(lifecycle.controlled_shutdown(DEADLINE_S))
        await channel.wait_for(BrokerHeartbeatRequest, sent + 2)
        partition = cluster.controller.image.topics.by_name["t"].partitions[0]
        assert (partition.leader, partition.isr) == (OTHER, (OTHER,))
        assert not shutting.done()  # the other broker has not reported the move yet
        cluster.heartbeat(OTHER)
        return await shutting
    finally:
        running.cancel()


def test_controlled_shutdown_waits_for_the_controller_to_agree() -> None:
    cluster = _cluster()
    lifecycle, channel = _lifecycle(cluster)
    assert asyncio.run(asyncio.wait_for(_shut_down(cluster, lifecycle, channel), DEADLINE_S))
    assert cluster.controller.image.cluster.brokers[BROKER].fenced


async def _never_granted(cluster: Cluster, lifecycle: BrokerLifecycle) -> bool:
    running = asyncio.create_task(lifecycle.run())
    try:
        await lifecycle.first_unfenced.wait()
        cluster.call(create_topic("t", -1, -1, assignments=[[BROKER, OTHER]]))
        return await lifecycle.controlled_shutdown(0.2)  # the other broker stays silent
    finally:
        running.cancel()


def test_controlled_shutdown_gives_up_at_its_bound() -> None:
    cluster = _cluster()
    lifecycle, _ = _lifecycle(cluster)
    assert not asyncio.run(asyncio.wait_for(_never_granted(cluster, lifecycle), DEADLINE_S))
    assert not cluster.controller.image.cluster.brokers[BROKER].fenced


def test_a_broker_never_unfenced_skips_controlled_shutdown() -> None:
    cluster = _cluster()
    lifecycle, channel = _lifecycle(cluster)
    assert asyncio.run(lifecycle.controlled_shutdown(DEADLINE_S))
    assert channel.sent == []


async def _fenced_then_back(cluster: Cluster, lifecycle: BrokerLifecycle,
                            channel: ControllerOf) -> None:
    running = asyncio.create_task(lifecycle.run())
    try:
        await lifecycle.first_unfenced.wait()
        cluster.tick(cluster.controller.config.session_timeout_ms + 1)  # session lapsed
        assert cluster.controller.image.cluster.brokers[BROKER].fenced
        sent = channel.count(BrokerHeartbeatRequest)
        await channel.wait_for(BrokerHeartbeatRequest, sent + 2)
    finally:
        running.cancel()


def test_a_broker_fenced_for_a_lapsed_session_is_unfenced_by_its_next_heartbeat() -> None:
    cluster = _cluster()
    lifecycle, channel = _lifecycle(cluster)
    asyncio.run(asyncio.wait_for(_fenced_then_back(cluster, lifecycle, channel), DEADLINE_S))
    assert not cluster.controller.image.cluster.brokers[BROKER].fenced
    assert not lifecycle.fenced and lifecycle.epoch >= 0
