"""The controller on the real sans-I/O raft core: one voter, in-memory log.

Checks the offsets the controller predicts (broker epoch = next write offset) against the
offsets the core really assigns, and that responses wait for the core's high watermark.
"""

from __future__ import annotations

import random
import uuid

from pykraft.controller import ControllerConfig, QuorumController
from pykraft.image import ImageLoader
from pykraft.messages.kafka.broker_heartbeat_request import BrokerHeartbeatRequest
from pykraft.messages.kafka.broker_registration_request import (
    BrokerRegistrationRequest,
    Feature,
)
from pykraft.messages.kafka.broker_registration_response import BrokerRegistrationResponse
from pykraft.raft.api import deliver
from pykraft.raft.config import QuorumConfig
from pykraft.raft.core import RaftClient
from pykraft.raft.memory_log import MemoryLog
from pykraft.raft.quorum_state import MemoryQuorumStateStore
from pykraft.records.batch import iter_batches
from pykraft.records.metadata import RegisterBrokerRecord, decode_metadata_record


class Node:
    def __init__(self) -> None:
        self.now = 0
        self.log = MemoryLog()
        self.controller = QuorumController(
            ControllerConfig(node_id=0), writer=self._append, rng=random.Random(3))
        self.raft = RaftClient(0, QuorumConfig(voters=frozenset({0})), self.log,
                               MemoryQuorumStateStore(None),
                               rng=random.Random(1), now_ms=0)
        self.responses: dict[int, object] = {}

    def _append(self, now_ms: int, values: list[bytes]) -> int:
        """The core is built after the controller (each needs the other)."""
        return self.raft.append(now_ms, values)

    def run(self, ms: int) -> None:
        """Advance time in 10 ms steps, completing every flush the core asks for."""
        for _ in range(ms // 10):
            self.now += 10
            self.raft.tick(self.now)
            self.controller.tick(self.now)
            ready = self.raft.ready()
            deliver(ready.events, self.controller)
            if ready.flush is not None:
                self.log.flush(ready.flush.up_to_offset)
                self.raft.flush_completed(self.now, ready.flush.up_to_offset)
            self.responses.update(self.controller.take_responses())


def test_controller_over_the_raft_core() -> None:
    node = Node()
    node.run(3000)
    assert node.controller.is_active
    assert node.controller.committed_image.features.metadata_version is not None
    ticket = node.controller.submit(node.now, BrokerRegistrationRequest(
        broker_id=1, cluster_id="c", incarnation_id=uuid.UUID(int=5), listeners=(),
        features=(Feature("metadata.version", 1, 29),), rack=None))
    assert ticket not in node.responses  # not committed yet
    node.run(100)
    response = node.responses[ticket]
    assert isinstance(response, BrokerRegistrationResponse)
    registered = [
        (record.offset, decode_metadata_record(record.value).message)
        for batch in iter_batches(node.log.read(0, 1 << 20)) if not batch.is_control
        for record in batch.records() if record.value is not None
    ]
    offset, message = next((o, m) for o, m in registered if isinstance(m, RegisterBrokerRecord))
    assert response.broker_epoch == offset == message.broker_epoch
    heartbeat = node.controller.submit(node.now, BrokerHeartbeatRequest(
        broker_id=1, broker_epoch=offset, current_metadata_offset=offset,
        want_fence=False, want_shut_down=False))
    node.run(100)
    assert not getattr(node.responses[heartbeat], "is_fenced", True)
    loader = ImageLoader()
    for batch in iter_batches(node.log.read(0, 1 << 20)):
        if batch.last_offset < (node.raft.high_watermark or 0):
            loader.load_batch(batch)
    assert loader.image == node.controller.committed_image == node.controller.image
