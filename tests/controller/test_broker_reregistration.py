"""A broker's lifecycle against the controller's real answers: a heartbeat the controller
refuses because it no longer knows the broker (unregistered) sends the broker back to
registering, and the new registration gets a new epoch."""

from __future__ import annotations

import asyncio
import uuid
from typing import cast

from controller_harness import (  # type: ignore[import-not-found]
    Cluster,
    ControllerOf,
    Metadata,
)

from pykraft.broker.lifecycle import BrokerIdentity, BrokerLifecycle
from pykraft.broker.metadata_listener import BrokerMetadataListener
from pykraft.config.server import Endpoint
from pykraft.messages.kafka.broker_heartbeat_request import BrokerHeartbeatRequest
from pykraft.messages.kafka.broker_registration_request import BrokerRegistrationRequest
from pykraft.messages.kafka.unregister_broker_request import UnregisterBrokerRequest
from pykraft.protocol.errors import ErrorCode
from pykraft.runtime.controller_channel import ControllerChannel
from pykraft.security.session import SecurityProtocol

PLAINTEXT = SecurityProtocol.PLAINTEXT

BROKER = 1
DEADLINE_S = 10.0


async def _unregister_after_first_heartbeat(cluster: Cluster, lifecycle: BrokerLifecycle,
                                            channel: ControllerOf) -> None:
    task = asyncio.create_task(lifecycle.run())
    try:
        await channel.wait_for(BrokerHeartbeatRequest, 1)
        response = cluster.call(UnregisterBrokerRequest(broker_id=BROKER))
        assert getattr(response, "error_code", None) == ErrorCode.NONE
        await channel.wait_for(BrokerRegistrationRequest, 2)
    finally:
        task.cancel()


def test_a_broker_the_controller_lost_registers_again() -> None:
    cluster = Cluster()
    cluster.elect()
    channel = ControllerOf(cluster)
    identity = BrokerIdentity(broker_id=BROKER, cluster_id="test-cluster",
                              endpoints=((Endpoint("PLAINTEXT", "127.0.0.1", 9092), PLAINTEXT),),
                              rack=None,
                              log_dirs=(uuid.UUID(int=5),), heartbeat_interval_ms=1)
    lifecycle = BrokerLifecycle(identity, cast(ControllerChannel, channel),
                                cast(BrokerMetadataListener, Metadata()))
    asyncio.run(asyncio.wait_for(
        _unregister_after_first_heartbeat(cluster, lifecycle, channel), DEADLINE_S))
    refusals = [error for kind, error in channel.sent if error != ErrorCode.NONE]
    assert refusals == [ErrorCode.STALE_BROKER_EPOCH]
    assert channel.sent[-1] == (BrokerRegistrationRequest, ErrorCode.NONE)
    assert cluster.controller.image.cluster.brokers[BROKER].epoch == lifecycle.epoch


async def _unfenced_once_caught_up(lifecycle: BrokerLifecycle, channel: ControllerOf,
                                   metadata: Metadata, cluster: Cluster) -> None:
    task = asyncio.create_task(lifecycle.run())
    try:
        await channel.wait_for(BrokerHeartbeatRequest, 2)  # behind: still fenced
        assert lifecycle.fenced
        metadata.committed_offset = cluster.controller.committed_offset  # caught up
        await lifecycle.first_unfenced.wait()
    finally:
        task.cancel()


def test_a_starting_broker_heartbeats_at_once_and_often_until_unfenced() -> None:
    """As Kafka's BrokerLifecycleManager (issue 29): a heartbeat right after registering
    and every 10 ms while starting, so a broker is unfenced as soon as it caught up, not a
    heartbeat interval (here a minute, longer than the bound) later."""
    cluster = Cluster()
    cluster.elect()
    channel = ControllerOf(cluster)
    metadata = Metadata()
    identity = BrokerIdentity(broker_id=BROKER, cluster_id="test-cluster",
                              endpoints=((Endpoint("PLAINTEXT", "127.0.0.1", 9092), PLAINTEXT),),
                              rack=None, log_dirs=(uuid.UUID(int=5),),
                              heartbeat_interval_ms=60_000)
    lifecycle = BrokerLifecycle(identity, cast(ControllerChannel, channel),
                                cast(BrokerMetadataListener, metadata))
    asyncio.run(asyncio.wait_for(
        _unfenced_once_caught_up(lifecycle, channel, metadata, cluster), DEADLINE_S))
    assert not cluster.controller.image.cluster.brokers[BROKER].fenced
