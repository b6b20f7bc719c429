"""Appends of one event-loop iteration share one core call and one batch: the bench's
RaftNode.append, and the controller's requests through ControllerService.submit."""

from __future__ import annotations

import asyncio
import time
import uuid
from pathlib import Path

from pykraft.config.server import ServerConfig
from pykraft.errors import NotLeaderError
from pykraft.features import METADATA_VERSION_FEATURE, METADATA_VERSIONS
from pykraft.messages.kafka.broker_registration_request import (
    BrokerRegistrationRequest,
    Feature,
    Listener,
)
from pykraft.protocol.errors import ErrorCode
from pykraft.records.batch import iter_batches
from pykraft.records.metadata import RegisterBrokerRecord, decode_metadata_record
from pykraft.runtime.controller_service import ControllerService
from pykraft.runtime.node import RaftNode
from pykraft.runtime.settings import load_settings
from pykraft.tools.local_cluster import LocalCluster

DEADLINE_S = 20.0


def _node(base: Path, controllers: int) -> RaftNode:
    """Node 1 of a freshly formatted local cluster (only node 1 is ever run)."""
    cluster = LocalCluster.create(base, controllers,
                                  {"controller.quorum.append.linger.ms": "0"})
    return RaftNode(load_settings(ServerConfig.load(cluster.nodes[1].config)))


async def _until_leader(node: RaftNode) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while node.core.state.name != "Leader" or node.core.high_watermark is None:
        assert time.monotonic() < deadline, f"still {node.core.state.name}"
        await asyncio.sleep(0.01)


def test_one_iteration_of_appends_is_one_batch(tmp_path: Path) -> None:
    async def scenario() -> None:
        node = _node(tmp_path, 1)
        node.start()
        try:
            await _until_leader(node)
            values = [b"value-%d" % i for i in range(10)]
            offsets = await asyncio.gather(*(node.append(v) for v in values))
            assert offsets == list(range(offsets[0], offsets[0] + 10))
            committed = await asyncio.wait_for(
                asyncio.gather(*(node.machine.wait_committed(o) for o in offsets)), DEADLINE_S)
            assert all(committed)
            data = node.disk_log.read(offsets[0], 1 << 20)
            batch = next(iter_batches(data))
            assert (batch.header.base_offset, batch.header.last_offset) == (
                offsets[0], offsets[-1])
            assert [r.value for r in batch.records()] == values
        finally:
            await node.shutdown()

    asyncio.run(scenario())


def test_appends_on_a_non_leader_all_fail_with_not_leader(tmp_path: Path) -> None:
    async def scenario() -> None:
        node = _node(tmp_path, 3)  # the two other voters never start: no leader
        node.start()
        try:
            results = await asyncio.gather(node.append(b"a"), node.append(b"b"),
                                           return_exceptions=True)
            assert all(isinstance(r, NotLeaderError) for r in results)
            assert node.disk_log.log_end_offset == 0
        finally:
            await node.shutdown()

    asyncio.run(scenario())


def _registration(cluster_id: str, broker_id: int) -> BrokerRegistrationRequest:
    return BrokerRegistrationRequest(
        broker_id=broker_id, cluster_id=cluster_id, incarnation_id=uuid.uuid4(),
        listeners=(Listener(name="PLAINTEXT", host="127.0.0.1", port=9092 + broker_id),),
        features=(Feature(METADATA_VERSION_FEATURE, 1, METADATA_VERSIONS[-1].level),),
        rack=None)


def test_controller_requests_of_one_iteration_are_one_batch(tmp_path: Path) -> None:
    async def scenario() -> None:
        cluster = LocalCluster.create(tmp_path, 1, {"controller.quorum.append.linger.ms": "0"})
        settings = load_settings(ServerConfig.load(cluster.nodes[1].config))
        service = ControllerService(settings.controller, bootstrap=settings.bootstrap)
        node = RaftNode(settings, listeners=(service,))
        service.attach(node)
        node.start()
        try:
            await _until_leader(node)
            first = await asyncio.wait_for(
                service.submit(_registration(settings.cluster_id, 100)), DEADLINE_S)
            assert first.error_code == ErrorCode.NONE  # active, activation records written
            start = node.disk_log.log_end_offset
            answers = await asyncio.wait_for(asyncio.gather(*(
                service.submit(_registration(settings.cluster_id, b)) for b in range(1, 6))),
                DEADLINE_S)
            assert [a.error_code for a in answers] == [ErrorCode.NONE] * 5
            data_batches = [b for b in iter_batches(node.disk_log.read(start, 1 << 20))
                            if not b.is_control]
            assert len(data_batches) == 1
            registered = [decode_metadata_record(r.value or b"").message
                          for r in data_batches[0].records()]
            assert [m.broker_id for m in registered if isinstance(m, RegisterBrokerRecord)] == [
                1, 2, 3, 4, 5]
        finally:
            await node.shutdown()
            service.close()

    asyncio.run(scenario())
