"""A QuorumController driven by a fake raft log: appends are recorded, and the test decides
when they commit (``commit``) and who leads (``elect``/``depose``)."""

from __future__ import annotations

import asyncio
import random
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

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
from pykraft.messages.kafka.create_topics_request import (
    CreatableReplicaAssignment,
    CreatableTopic,
    CreatableTopicConfig,
    CreateTopicsRequest,
)
from pykraft.protocol.errors import ErrorCode
from pykraft.raft.api import LeaderAndEpoch
from pykraft.records.batch import RecordBatch, encode_batch, iter_batches
from pykraft.records.control import LeaderChangeMessage, encode_control
from pykraft.records.metadata import FeatureLevelRecord, MetadataRecord, decode_metadata_record

MV_3_7_IV4 = 19


@dataclass
class FakeRaft:
    """The log as (base offset, epoch, values, is_control) batches."""

    batches: list[tuple[int, int, list[bytes], bool]] = field(default_factory=list)
    committed_batches: int = 0
    epoch: int = 0
    leader: int | None = None
    node_id: int = 0

    @property
    def end_offset(self) -> int:
        if not self.batches:
            return 0
        base, _, values, _ = self.batches[-1]
        return base + len(values)

    def append(self, now_ms: int, values: list[bytes]) -> int:
        if self.leader != self.node_id:
            raise NotLeaderError("not the leader")
        base = self.end_offset
        self.batches.append((base, self.epoch, list(values), False))
        return base + len(values) - 1

    def batch(self, index: int) -> RecordBatch:
        base, epoch, values, control = self.batches[index]
        if control:
            records = [encode_control(LeaderChangeMessage(0, self.leader or -1, (), ()))]
            data = encode_batch(base, records, partition_leader_epoch=epoch, timestamp=0,
                                control=True)
        else:
            data = encode_batch(base, [(None, v) for v in values], partition_leader_epoch=epoch,
                                timestamp=0)
        return next(iter_batches(data))

    def metadata_records(self, up_to_batch: int | None = None) -> list[MetadataRecord]:
        end = len(self.batches) if up_to_batch is None else up_to_batch
        return [decode_metadata_record(v) for _, _, values, control in self.batches[:end]
                if not control for v in values]


class Cluster:
    """One controller (node 0) over a :class:`FakeRaft`."""

    def __init__(self, *, seed: int = 0, mv: int = MV_3_7_IV4, bootstrap: Sequence[object] = (),
                 session_timeout_ms: int = 9000, max_idle_interval_ms: int = 500,
                 properties: dict[str, str] | None = None,
                 fence_on_refused_connection: bool = True, zk_migration: bool = False) -> None:
        """``zk_migration``: zookeeper.metadata.migration.enable on the controller."""
        self.raft = FakeRaft()
        self.now = 0
        config = ControllerConfig(node_id=0, cluster_id="test-cluster",
                                  session_timeout_ms=session_timeout_ms,
                                  max_idle_interval_ms=max_idle_interval_ms,
                                  fence_on_refused_connection=fence_on_refused_connection,
                                  zk_migration_enabled=zk_migration,
                                  properties=properties or {})
        boot = list(bootstrap) or [FeatureLevelRecord(name=METADATA_VERSION_FEATURE,
                                                      feature_level=mv)]
        self.controller = QuorumController(config, writer=self.raft.append,
                                           rng=random.Random(seed), bootstrap=boot)
        self.responses: dict[int, object] = {}
        self.incarnations: dict[int, uuid.UUID] = {}

    # -- raft side --------------------------------------------------------------------

    def elect(self) -> None:
        """Node 0 wins a new epoch; its LeaderChange batch commits; the controller activates
        and its activation records commit."""
        self.raft.epoch += 1
        self.raft.leader = 0
        self.raft.batches.append((self.raft.end_offset, self.raft.epoch, [b"lc"], True))
        self.commit()
        self.controller.handle_leader_change(LeaderAndEpoch(0, self.raft.epoch))
        self.tick(0)
        self.commit()

    def depose(self, *, truncate: bool) -> None:
        """Another node leads a new epoch; uncommitted batches are dropped if ``truncate``."""
        if truncate:
            del self.raft.batches[self.raft.committed_batches:]
        self.raft.epoch += 1
        self.raft.leader = 1
        self.controller.handle_leader_change(LeaderAndEpoch(1, self.raft.epoch))
        self._collect()

    def commit(self) -> None:
        while self.raft.committed_batches < len(self.raft.batches):
            self.controller.handle_commit(self.raft.batch(self.raft.committed_batches))
            self.raft.committed_batches += 1
        self._collect()

    def tick(self, advance_ms: int) -> None:
        self.now += advance_ms
        self.controller.tick(self.now)
        self._collect()

    def _collect(self) -> None:
        for ticket, response in self.controller.take_responses():
            self.responses[ticket] = response

    def call(self, request: object, *, commit: bool = True) -> object:
        """Submit; with ``commit`` the log commits and the response must be there."""
        ticket = self.controller.submit(self.now, request)
        self._collect()
        if commit:
            self.commit()
        return self.responses.pop(ticket, None)

    def submit(self, request: object) -> int:
        ticket = self.controller.submit(self.now, request)
        self._collect()
        return ticket

    # -- replay -----------------------------------------------------------------------

    def replayed_image(self) -> MetadataImage:
        """A fresh image from every committed batch, as a broker would build it."""
        loader = ImageLoader()
        for index in range(self.raft.committed_batches):
            loader.load_batch(self.raft.batch(index))
        return loader.image

    # -- requests ---------------------------------------------------------------------

    def register(self, broker_id: int, *, rack: str | None = None,
                 incarnation: uuid.UUID | None = None, mv_range: tuple[int, int] = (1, 29),
                 commit: bool = True, log_dirs: Sequence[uuid.UUID] = (),
                 features: Sequence[Feature] = (), previous_broker_epoch: int = -1) -> object:
        """``features``: declared besides metadata.version; ``previous_broker_epoch``: the
        epoch of the incarnation that shut down cleanly (-1: none did)."""
        inc = incarnation or self.incarnations.get(broker_id) or uuid.UUID(int=1000 + broker_id)
        self.incarnations[broker_id] = inc
        return self.call(BrokerRegistrationRequest(
            broker_id=broker_id, cluster_id="test-cluster", incarnation_id=inc,
            listeners=(Listener(name="PLAINTEXT", host=f"b{broker_id}", port=9092),),
            features=(Feature(METADATA_VERSION_FEATURE, *mv_range), *features),
            rack=rack, log_dirs=tuple(log_dirs), previous_broker_epoch=previous_broker_epoch,
        ), commit=commit)

    def heartbeat(self, broker_id: int, *, offset: int | None = None, want_fence: bool = False,
                  want_shut_down: bool = False, epoch: int | None = None,
                  commit: bool = True) -> object:
        broker = self.controller.image.cluster.brokers.get(broker_id)
        return self.call(BrokerHeartbeatRequest(
            broker_id=broker_id,
            broker_epoch=epoch if epoch is not None else (broker.epoch if broker else -1),
            current_metadata_offset=(self.controller.committed_offset if offset is None
                                     else offset),
            want_fence=want_fence, want_shut_down=want_shut_down,
        ), commit=commit)

    def start_brokers(self, racks: Sequence[str | None]) -> None:
        for broker_id, rack in enumerate(racks, start=1):
            self.register(broker_id, rack=rack)
            self.heartbeat(broker_id)


class Metadata:
    """A broker's metadata listener, as far as its lifecycle reads it."""

    committed_offset = 0


class ControllerOf:
    """A broker's channel, answered by the harness's controller: it records each request
    kind with its answer's error, and wakes whoever waits for a kind to reach a count."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.sent: list[tuple[type, ErrorCode]] = []
        self._changed = asyncio.Condition()

    async def send(self, body: Any) -> Any:
        response = self.cluster.call(body)
        async with self._changed:
            self.sent.append((type(body), ErrorCode(getattr(response, "error_code", 0))))
            self._changed.notify_all()
        return response

    async def wait_for(self, kind: type, count: int) -> None:
        async with self._changed:
            await self._changed.wait_for(lambda: self.count(kind) >= count)

    def count(self, kind: type) -> int:
        return sum(sent is kind for sent, _ in self.sent)


def create_topic(name: str, partitions: int = 1, rf: int = 1, *,
                 configs: dict[str, str | None] | None = None,
                 assignments: Sequence[Sequence[int]] = (),
                 validate_only: bool = False) -> CreateTopicsRequest:
    return CreateTopicsRequest(topics=(CreatableTopic(
        name=name, num_partitions=partitions, replication_factor=rf,
        assignments=tuple(CreatableReplicaAssignment(partition_index=i, broker_ids=tuple(
            b for b in replicas)) for i, replicas in enumerate(assignments)),
        configs=tuple(CreatableTopicConfig(name=k, value=v) for k, v in (configs or {}).items()),
    ),), validate_only=validate_only)
