"""QuorumControllers on real raft cores inside the seeded simulator: lossy links, a killed
and restarted active controller, brokers registering and heartbeating, topics created.
After every event the simulator's invariants hold; at the end every controller's committed
image equals a fresh replay of its own log, all controllers agree, and every topic whose
creation was acknowledged exists. A failure names the seed."""

from __future__ import annotations

import dataclasses
import random
import uuid
from typing import Any

import pytest
from controller_harness import create_topic  # type: ignore[import-not-found]

from pykraft.controller import ControllerConfig, QuorumController
from pykraft.errors import NotLeaderError
from pykraft.features import METADATA_VERSION_FEATURE
from pykraft.image import ImageLoader, MetadataImage
from pykraft.messages.kafka.broker_heartbeat_request import BrokerHeartbeatRequest
from pykraft.messages.kafka.broker_registration_request import (
    BrokerRegistrationRequest,
    Feature,
    Listener,
)
from pykraft.messages.kafka.create_topics_response import CreateTopicsResponse
from pykraft.protocol.errors import ErrorCode
from pykraft.raft.core import RaftClient
from pykraft.records.batch import iter_batches
from pykraft.records.metadata import FeatureLevelRecord
from pykraft.sim.invariants import default_invariants
from pykraft.sim.simulated_cluster import Cluster
from pykraft.sim.violations import InvariantViolation

BROKERS = (1, 2, 3)
BOOTSTRAP = (FeatureLevelRecord(name=METADATA_VERSION_FEATURE, feature_level=21),)


class ControllerCluster:
    """A simulated 3-voter quorum whose state machine is the QuorumController."""

    def __init__(self, seed: int) -> None:
        self.sim = Cluster(seed, 3, client_factory=self._client)
        # the simulator's counter snapshots are not metadata: keep the log start at 0
        self.sim.config = dataclasses.replace(self.sim.config, snapshot_retention_bytes=-1)
        self.sim.invariants.extend(default_invariants())
        self.controllers: dict[int, QuorumController] = {}
        self.acked_topics: set[str] = set()
        self._tickets: dict[tuple[int, int], str] = {}

    def _client(self, node_id: int, config: Any, log: Any, store: Any,
                **kwargs: Any) -> RaftClient:
        """A fresh controller per incarnation, replaying the log the core delivers."""
        holder: list[RaftClient] = []

        def write(now_ms: int, values: list[bytes]) -> int:
            return holder[0].append(now_ms, values)  # the core is built after the controller

        controller = QuorumController(ControllerConfig(node_id=node_id, cluster_id="sim"),
                                      writer=write, rng=random.Random(node_id),
                                      bootstrap=BOOTSTRAP)
        self.controllers[node_id] = controller
        self.sim.applications[node_id] = controller
        client = RaftClient(node_id, config, log, store, **kwargs)
        holder.append(client)
        return client

    def drive(self, node_id: int, action: Any) -> Any:
        """Run ``action(controller, now)`` on a live node, collect answers, drain the core."""
        controller = self.controllers[node_id]

        def run(_client: RaftClient, now: int) -> Any:
            try:
                return action(controller, now)
            except NotLeaderError:
                return None
            finally:
                for ticket, response in controller.take_responses():
                    name = self._tickets.pop((node_id, ticket), None)
                    if (name is not None and isinstance(response, CreateTopicsResponse)
                            and response.topics[0].error_code == ErrorCode.NONE):
                        self.acked_topics.add(name)
        return self.sim.call(node_id, run)

    def tick_controllers(self) -> None:
        for node_id in self.sim.nodes:
            if self.sim.is_alive(node_id):
                self.drive(node_id, lambda c, now: c.tick(now))
        self.sim.queue.schedule(self.sim.queue.now_ms + 50, "controller ticks",
                                self.tick_controllers)

    def active(self) -> int | None:
        leader = self.sim.leader_id()
        if leader is None or not self.controllers[leader].is_active:
            return None
        return leader

    def submit(self, request: object, topic: str | None = None) -> None:
        node_id = self.active()
        if node_id is None:
            return
        ticket = self.drive(node_id, lambda c, now: c.submit(now, request))
        if ticket is not None and topic is not None:
            self._tickets[(node_id, ticket)] = topic

    def broker_traffic(self, rng: random.Random) -> None:
        """Brokers register and heartbeat; now and then a topic is created."""
        node_id = self.active()
        if node_id is not None:
            image = self.controllers[node_id].image
            for broker_id in BROKERS:
                broker = image.cluster.brokers.get(broker_id)
                if broker is None:
                    self.submit(_registration(broker_id))
                else:
                    self.submit(BrokerHeartbeatRequest(
                        broker_id=broker_id, broker_epoch=broker.epoch,
                        current_metadata_offset=self.controllers[node_id].committed_offset,
                        want_fence=False, want_shut_down=False))
            if rng.random() < 0.3:
                name = f"t{rng.randrange(10_000)}"
                self.submit(create_topic(name, rng.randint(1, 3), rng.randint(1, 3)), name)
        self.sim.queue.schedule(self.sim.queue.now_ms + 200, "broker traffic",
                                lambda: self.broker_traffic(rng))


def _registration(broker_id: int) -> BrokerRegistrationRequest:
    return BrokerRegistrationRequest(
        broker_id=broker_id, cluster_id="sim", incarnation_id=uuid.UUID(int=broker_id),
        listeners=(Listener(name="PLAINTEXT", host=f"b{broker_id}", port=9092),),
        features=(Feature(METADATA_VERSION_FEATURE, 7, 29),), rack=None)


def _replay(cluster: ControllerCluster, node_id: int) -> MetadataImage:
    """The node's log up to its controller's committed offset, replayed from scratch."""
    controller = cluster.controllers[node_id]
    loader = ImageLoader()
    log = cluster.sim.nodes[node_id].log
    for batch in iter_batches(log.read(0, 1 << 30)):
        if batch.last_offset > controller.committed_offset:
            break
        loader.load_batch(batch)
    return loader.image


def run(seed: int) -> ControllerCluster:
    rng = random.Random(seed)
    cluster = ControllerCluster(seed)
    sim = cluster.sim
    sim.start_all()
    cluster.tick_controllers()
    cluster.broker_traffic(rng)
    sim.run_until(lambda: cluster.active() is not None, 30_000, what="an active controller")
    sim.run_for(rng.randint(2_000, 5_000))
    victim = cluster.active() or 0
    sim.kill(victim)
    sim.run_until(lambda: cluster.active() not in (None, victim), 30_000,
                  what="a new active controller")
    sim.run_for(rng.randint(1_000, 3_000))
    sim.start(victim)
    sim.network.heal()
    sim.run_for(5_000)
    return cluster


@pytest.mark.parametrize("seed", range(20))
def test_controllers_on_the_simulated_quorum_agree_with_their_logs(seed: int) -> None:
    try:
        cluster = run(seed)
    except InvariantViolation as exc:
        pytest.fail(f"seed {seed}: {exc}")
    images = {}
    for node_id, controller in cluster.controllers.items():
        assert controller.committed_image == _replay(cluster, node_id), f"seed {seed}"
        images[node_id] = (controller.committed_offset, controller.committed_image)
    newest = max(offset for offset, _ in images.values())
    caught_up = [image for offset, image in images.values() if offset == newest]
    assert all(image == caught_up[0] for image in caught_up), f"seed {seed}"
    assert cluster.acked_topics, f"seed {seed}: no topic creation was acknowledged"
    assert cluster.acked_topics <= set(caught_up[0].topics.by_name), f"seed {seed}"
    assert len(caught_up[0].cluster.brokers) == len(BROKERS), f"seed {seed}"
