"""The controller state machine in a real process: the QuorumController on a RaftNode.

The :class:`QuorumController` is sans-I/O; this service is its driver. It is the core's
listener (through the node's fan-out, next to the bench counter), hands each admin or broker
request to the controller inside one node step (so the records it appends reach the core,
the batch and the disk together), arms one timer at the controller's next deadline (session
fencing, NoOpRecords every ``metadata.max.idle.interval.ms``, activation), and resolves each
caller's future only when the controller releases the response, i.e. after its records
commit. The node hands it the core's events after the core's step returned, so their
follow-up (releasing responses, re-arming the timer) happens at once.

It watches the connections brokers heartbeat on (:mod:`pykraft.runtime.broker_liveness`,
unless ``pykraft.broker.fence.on.refused.connection.enable`` is false) and hands the
controller the evidence that a broker's process is gone.

It also snapshots the committed image when Kafka's thresholds pass (encoded over several
loop turns, see :mod:`pykraft.image.snapshot_generator`), and hands a snapshot the core
announces to the controller, which replaces its committed state with it (never on the
active controller).
"""

from __future__ import annotations

import asyncio
import dataclasses
import random
from collections.abc import Sequence
from typing import Any, Protocol

from pykraft.controller import ControllerConfig, QuorumController
from pykraft.controller.activation import DEFAULT_BOOTSTRAP_SOURCE
from pykraft.controller.broker_liveness import OVERDUE_HEARTBEATS
from pykraft.controller.quorum_controller import not_controller_answer
from pykraft.controller.responses import delete_topic_states
from pykraft.image.cluster_image import BrokerRegistration
from pykraft.image.image import MetadataDelta, MetadataImage
from pykraft.image.snapshot_generator import SnapshotGenerator
from pykraft.messages.kafka.delete_topics_request import DeleteTopicsRequest
from pykraft.protocol.apis import ApiKey
from pykraft.raft.api import LeaderAndEpoch
from pykraft.raft.log import OffsetAndEpoch
from pykraft.records.batch import RecordBatch
from pykraft.runtime.broker_liveness import BrokerLiveness
from pykraft.runtime.host_names import ip_resolves
from pykraft.runtime.node import RaftNode
from pykraft.runtime.snapshot_loader import SnapshotLoader

#: The APIs the controller state machine answers on its listener (one generated request class
#: each, for every version).
CONTROLLER_REQUESTS: frozenset[ApiKey] = frozenset({
    ApiKey.BROKER_REGISTRATION, ApiKey.BROKER_HEARTBEAT, ApiKey.UNREGISTER_BROKER,
    ApiKey.CONTROLLER_REGISTRATION, ApiKey.ALTER_PARTITION, ApiKey.ASSIGN_REPLICAS_TO_DIRS,
    ApiKey.CREATE_TOPICS, ApiKey.DELETE_TOPICS, ApiKey.CREATE_PARTITIONS,
    ApiKey.DESCRIBE_CONFIGS, ApiKey.ALTER_CONFIGS, ApiKey.INCREMENTAL_ALTER_CONFIGS,
    ApiKey.UPDATE_FEATURES, ApiKey.ALLOCATE_PRODUCER_IDS, ApiKey.ALTER_USER_SCRAM_CREDENTIALS,
    ApiKey.DESCRIBE_ACLS, ApiKey.CREATE_ACLS, ApiKey.DELETE_ACLS, ApiKey.ELECT_LEADERS,
    ApiKey.ALTER_CLIENT_QUOTAS, ApiKey.ALTER_PARTITION_REASSIGNMENTS,
    ApiKey.LIST_PARTITION_REASSIGNMENTS, ApiKey.CREATE_DELEGATION_TOKEN,
    ApiKey.RENEW_DELEGATION_TOKEN, ApiKey.EXPIRE_DELEGATION_TOKEN,
})
#: The token APIs, whose answer depends on who asks: submitted with the principal.
TOKEN_REQUESTS = frozenset({ApiKey.CREATE_DELEGATION_TOKEN, ApiKey.RENEW_DELEGATION_TOKEN,
                            ApiKey.EXPIRE_DELEGATION_TOKEN})


def controller_body(body: object) -> object:
    """A request body as the controller takes it and a broker forwards it: a DeleteTopics
    of v1-5 names its topics in ``topic_names``, which v6 (what a broker speaks to the
    controller) has as ``topics`` entries; written at v6 as it came, its names would be
    dropped (an ignorable field), so they move."""
    if isinstance(body, DeleteTopicsRequest) and body.topic_names:
        return dataclasses.replace(body, topics=delete_topic_states(body), topic_names=())
    return body

class ImagePublisher(Protocol):
    """Told of leader changes and of each committed image (Kafka's MetadataPublisher), on
    the event loop; the migration driver is one."""

    def leader_changed(self, leader_id: int | None, epoch: int) -> None: ...

    def published(self, delta: MetadataDelta, image: MetadataImage, *,
                  is_snapshot: bool) -> None: ...


class ControllerService:
    """Drives one :class:`QuorumController` from the event loop; see the module docstring."""

    def __init__(self, config: ControllerConfig, *, bootstrap: Sequence[object],
                 bootstrap_source: str = DEFAULT_BOOTSTRAP_SOURCE,
                 rng: random.Random | None = None) -> None:
        self.controller = QuorumController(config, writer=self._append,
                                           rng=rng or random.Random(), bootstrap=bootstrap,
                                           bootstrap_source=bootstrap_source,
                                           ip_resolves=ip_resolves)
        self._node: RaftNode | None = None
        self._snapshots = SnapshotLoader(self._load_image, label="controller")
        self.snapshot_generator = SnapshotGenerator(config.snapshot_policy())
        self._waiting: dict[int, asyncio.Future[Any]] = {}
        self._released: dict[int, Any] = {}
        self._timer: asyncio.TimerHandle | None = None
        self._submissions: list[tuple[object, asyncio.Future[Any]]] = []
        self._batching = False
        """True while :meth:`_submit_pending` submits: appends then wait for one write."""
        self.publishers: list[ImagePublisher] = []
        self._published: MetadataImage | None = None
        self.liveness: BrokerLiveness | None = None
        if config.fence_on_refused_connection:
            self.liveness = BrokerLiveness(
                self._registration, self.broker_unreachable, unfenced=self._unfenced,
                overdue_s=OVERDUE_HEARTBEATS * config.broker_heartbeat_interval_ms / 1000)

    def attach(self, node: RaftNode) -> None:
        """Bind to the node whose core this service listens to (it is built first)."""
        self._node = node
        self._snapshots.attach(node.core.read_snapshot)
        self.snapshot_generator.attach(
            node.core, step=node.step, clock=node.now_ms,
            defer=lambda callback: asyncio.get_running_loop().call_soon(callback))

    def close(self) -> None:
        if self.liveness is not None:
            self.liveness.close()
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        for waiter in self._waiting.values():
            waiter.cancel()
        self._waiting.clear()
        for _, waiter in self._submissions:
            waiter.cancel()
        self._submissions.clear()

    # -- requests -------------------------------------------------------------------------

    async def submit(self, request: object) -> Any:
        """The controller's response to ``request``, once its records committed (or an
        error response if this controller is not, or stops being, active).

        Requests that arrive during one event-loop iteration reach the controller in one
        node step, and their records reach the core as one batch and one log write (as the
        bench appends do): one step per request made the leader's loop the limit under load.
        """
        self._require_node()
        waiter: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._submissions.append((request, waiter))
        if len(self._submissions) == 1:
            asyncio.get_running_loop().call_soon(self._submit_pending)
        return await waiter

    def _submit_pending(self) -> None:
        pending, self._submissions = self._submissions, []
        node = self._require_node()
        tickets: list[int] = []

        def submit_all(now_ms: int) -> None:
            self._batching = True
            try:
                for request, _ in pending:
                    tickets.append(self.controller.submit(now_ms, request))
            finally:
                self._batching = False
            node.core.tick(now_ms)  # writes the batch the appends above accumulated

        try:
            node.step(submit_all)
        except Exception as exc:  # a bug, not bad input: every waiter hears of it
            for _, waiter in pending:
                if not waiter.done():
                    waiter.set_exception(exc)
            return
        for ticket, (_, waiter) in zip(tickets, pending, strict=False):
            self._waiting[ticket] = waiter
        for request, waiter in pending[len(tickets):]:  # the node hit a fatal error
            if not waiter.done():
                waiter.set_result(not_controller_answer(request))
        self._follow_up()

    def broker_unreachable(self, broker_id: int, broker_epoch: int) -> bool:
        """Hand the controller the evidence that the broker's process is gone; True if it
        fenced the broker."""
        fenced: list[bool] = []
        self._require_node().step(lambda now_ms: fenced.append(
            self.controller.broker_unreachable(now_ms, broker_id, broker_epoch)))
        self._follow_up()
        return bool(fenced) and fenced[0]

    # -- RaftListener ---------------------------------------------------------------------

    def handle_commit(self, batch: RecordBatch) -> None:
        self.controller.handle_commit(batch)
        self.snapshot_generator.committed(self.controller.committed_image, batch)
        self._publish(is_snapshot=False)
        self._follow_up()

    def handle_leader_change(self, leader: LeaderAndEpoch) -> None:
        self.controller.handle_leader_change(leader)
        for publisher in self.publishers:
            publisher.leader_changed(leader.leader_id, leader.epoch)
        self._follow_up()

    def handle_load_snapshot(self, snapshot_id: OffsetAndEpoch) -> None:
        """The log below ``snapshot_id`` is gone (a restart after cleaning, or a follower
        that fetched the leader's snapshot): the controller goes on from its image."""
        self._snapshots.announce(snapshot_id)

    # -- internals ------------------------------------------------------------------------

    def _require_node(self) -> RaftNode:
        if self._node is None:
            raise RuntimeError("ControllerService.attach() was not called")
        return self._node

    def _registration(self, broker_id: int) -> BrokerRegistration | None:
        return self.controller.image.cluster.brokers.get(broker_id)

    def _unfenced(self) -> list[int]:
        return [broker_id for broker_id, broker in self.controller.image.cluster.brokers.items()
                if not broker.fenced]

    def _load_image(self, image: MetadataImage) -> None:
        self.controller.load_image(image)
        self.snapshot_generator.loaded()
        self._publish(is_snapshot=True)

    def _publish(self, *, is_snapshot: bool) -> None:
        """Hand a new committed image to the publishers (none while a metadata transaction
        is open: its records are not in the image until its end)."""
        image = self.controller.committed_image
        if image is self._published:
            return
        self._published = image
        for publisher in self.publishers:
            publisher.published(self.controller.committed_delta, image, is_snapshot=is_snapshot)

    def _append(self, now_ms: int, values: list[bytes]) -> int:
        return self._require_node().core.append(now_ms, values, poll=not self._batching)

    def _follow_up(self) -> None:
        """Release finished responses, then re-arm the timer at the next deadline."""
        for ticket, response in self.controller.take_responses():
            self._released[ticket] = response
        for ticket in [t for t in self._released if t in self._waiting]:
            waiter = self._waiting.pop(ticket)
            response = self._released.pop(ticket)
            if not waiter.done():
                waiter.set_result(response)
        self._arm()

    def _arm(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        deadline = self.controller.next_deadline_ms()
        if deadline is None:
            return
        node = self._require_node()
        now = node.now_ms()
        self._timer = asyncio.get_running_loop().call_later(
            max(0, deadline - now) / 1000, self._on_timer)

    def _on_timer(self) -> None:
        self._timer = None
        self._require_node().step(self.controller.tick)
        self._follow_up()
