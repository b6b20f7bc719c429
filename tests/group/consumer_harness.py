"""Building ConsumerGroupHeartbeat requests and driving a ConsumerGroups in tests."""

from __future__ import annotations

import random
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field

from pykraft.group.config import GroupConfig
from pykraft.group.consumer_group import ConsumerGroup, ConsumerGroups
from pykraft.group.consumer_records import decode_consumer_record
from pykraft.group.outcome import OffsetsRecord, RequestContext, TopicInfo
from pykraft.group.registry import Groups
from pykraft.group.timers import Timers
from pykraft.messages.kafka.consumer_group_heartbeat_request import (
    ConsumerGroupHeartbeatRequest,
    TopicPartitions,
)
from pykraft.messages.kafka.consumer_group_heartbeat_response import (
    ConsumerGroupHeartbeatResponse,
)

FOO = uuid.UUID(int=0xF00)
BAR = uuid.UUID(int=0xBA4)
TOPICS = {"foo": TopicInfo(FOO, 6), "bar": TopicInfo(BAR, 3)}
GROUP = "g"
UNSET: object = object()


def request(
    member_id: str,
    epoch: int,
    *,
    group: str = GROUP,
    topics: tuple[str, ...] | object | None = UNSET,
    owned: Mapping[uuid.UUID, set[int]] | object | None = UNSET,
    rebalance_timeout_ms: int | object = UNSET,
    instance_id: str | None = None,
    rack_id: str | None = None,
    regex: str | None = None,
    assignor: str | None = None,
) -> ConsumerGroupHeartbeatRequest:
    """A heartbeat; a join (epoch 0) fills in what a first heartbeat must carry."""
    joining = epoch == 0
    if topics is UNSET:
        topics = ("foo",) if joining and regex is None else None
    if owned is UNSET:
        owned = {} if joining else None
    if rebalance_timeout_ms is UNSET:
        rebalance_timeout_ms = 30_000 if joining else -1
    assert isinstance(rebalance_timeout_ms, int)
    return ConsumerGroupHeartbeatRequest(
        group_id=group,
        member_id=member_id,
        member_epoch=epoch,
        instance_id=instance_id,
        rack_id=rack_id,
        rebalance_timeout_ms=rebalance_timeout_ms,
        subscribed_topic_names=topics if isinstance(topics, tuple) else None,
        subscribed_topic_regex=regex,
        server_assignor=assignor,
        topic_partitions=(
            tuple(
                TopicPartitions(topic_id=t, partitions=tuple(sorted(ps)))
                for t, ps in owned.items()
            )
            if isinstance(owned, Mapping)
            else None
        ),
    )


def assigned(response: ConsumerGroupHeartbeatResponse) -> dict[uuid.UUID, set[int]] | None:
    if response.assignment is None:
        return None
    return {tp.topic_id: set(tp.partitions) for tp in response.assignment.topic_partitions}


@dataclass
class Coordinator:
    """A ConsumerGroups with a clock, its log of records and the topics it sees."""

    config: GroupConfig = field(default_factory=GroupConfig)
    now_ms: int = 1_000
    topics: dict[str, TopicInfo] = field(default_factory=lambda: dict(TOPICS))
    log: list[OffsetsRecord] = field(default_factory=list)
    registry: Groups = field(default_factory=dict)
    timers: Timers = field(default_factory=Timers)
    groups: ConsumerGroups = field(init=False)

    def __post_init__(self) -> None:
        self.groups = ConsumerGroups(self.registry, self.config, random.Random(7), self.timers)

    def group(self, group_id: str = GROUP) -> ConsumerGroup:
        group = self.groups.group(group_id)
        assert group is not None
        return group

    def context(self) -> RequestContext:
        return RequestContext(self.now_ms, "client-1", "/127.0.0.1", self.topics)

    def heartbeat(
        self, req: ConsumerGroupHeartbeatRequest, api_version: int = 1
    ) -> ConsumerGroupHeartbeatResponse:
        response, records = self.groups.heartbeat(req, api_version, self.context())
        self.log.extend(records)
        return response

    def advance(self, ms: int) -> list[OffsetsRecord]:
        self.now_ms += ms
        records = self.timers.fire(self.now_ms).records
        self.log.extend(records)
        return records

    def reloaded(self) -> ConsumerGroups:
        """A fresh ConsumerGroups that replayed the log (a coordinator failover)."""
        fresh = ConsumerGroups({}, self.config, random.Random(0), Timers())
        for record in self.log:
            decoded = decode_consumer_record(record)
            assert decoded is not None
            fresh.replay(*decoded)
        return fresh
