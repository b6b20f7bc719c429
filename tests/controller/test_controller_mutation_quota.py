"""The controller mutation quota (KIP-599) in the controller: CreateTopics, CreatePartitions and
DeleteTopics charged per topic with its partitions where Kafka 4.4's ReplicationControlManager
charges them, strict from CreateTopics v6, CreatePartitions v3 and DeleteTopics v5 (a topic
refused with THROTTLING_QUOTA_EXCEEDED while the client's tokens are below zero), permissive
before (everything through, the answer throttled), the throttle time in the answer."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
from controller_harness import Cluster, create_topic  # type: ignore[import-not-found]

from pykraft.config.server import ServerConfig
from pykraft.controller import QuorumController
from pykraft.controller.mutations import Mutation, MutationBody
from pykraft.ids import random_uuid, uuid_to_str
from pykraft.messages.kafka.alter_client_quotas_request import (
    AlterClientQuotasRequest,
    EntityData,
    EntryData,
    OpData,
)
from pykraft.messages.kafka.create_partitions_request import (
    CreatePartitionsAssignment,
    CreatePartitionsRequest,
    CreatePartitionsTopic,
)
from pykraft.messages.kafka.delete_topics_request import DeleteTopicsRequest, DeleteTopicState
from pykraft.protocol.errors import ErrorCode
from pykraft.records.metadata import PartitionRecord, RemoveTopicRecord
from pykraft.runtime.settings import load_settings
from pykraft.tools.storage_tool import FormatRequest, QuorumMode, format_storage

THROTTLED = (ErrorCode.THROTTLING_QUOTA_EXCEEDED, None)  # no message, as Kafka's
OK = (ErrorCode.NONE, None)
#: (error, message) of each topic, and the answer's throttle_time_ms
Answer = tuple[list[tuple[ErrorCode, str | None]], int]


@pytest.fixture
def cluster() -> Cluster:
    """alice may create or delete 1 partition a second (a burst of 11: Kafka's default
    controller.quota.window.num of 11 windows of 1 s)."""
    started = Cluster(seed=3)
    started.elect()
    started.start_brokers([None, None])
    started.call(AlterClientQuotasRequest(entries=(EntryData(
        entity=(EntityData(entity_type="user", entity_name="alice"),),
        ops=(OpData(key="controller_mutation_rate", value=1.0, remove=False),)),)))
    return started


def ask(cluster: Cluster, body: MutationBody, version: int, user: str = "alice") -> Answer:
    response = cluster.call(Mutation(body, user, "tool", version))
    parts: tuple[Any, ...] = next(getattr(response, field) for field in
                                  ("topics", "results", "responses") if hasattr(response, field))
    throttle: int = getattr(response, "throttle_time_ms", 0)
    return [(ErrorCode(p.error_code), p.error_message) for p in parts], throttle


def grow(name: str, count: int, *assignments: tuple[int, ...]) -> CreatePartitionsRequest:
    return CreatePartitionsRequest(topics=(CreatePartitionsTopic(
        name=name, count=count, assignments=tuple(
            CreatePartitionsAssignment(broker_ids=a) for a in assignments) or None),),
        timeout_ms=1000)


def delete(name: str) -> DeleteTopicsRequest:
    return DeleteTopicsRequest(topics=(DeleteTopicState(name=name),), timeout_ms=1000)


def test_strict_create_topics_refuses_once_the_tokens_are_below_zero(cluster: Cluster) -> None:
    assert ask(cluster, create_topic("big", 20), 6) == ([OK], 0)
    assert ask(cluster, create_topic("small", 1), 7) == ([THROTTLED], 9000)
    assert "small" not in cluster.controller.image.topics.by_name
    cluster.tick(4000)
    assert ask(cluster, create_topic("small", 1), 6) == ([THROTTLED], 5000)
    cluster.tick(5000)  # back to zero tokens: not below, so through
    assert ask(cluster, create_topic("small", 1), 6) == ([OK], 0)


def test_permissive_create_topics_goes_through_and_throttles_after(cluster: Cluster) -> None:
    assert ask(cluster, create_topic("big", 20), 5) == ([OK], 9000)
    assert ask(cluster, create_topic("more", 1), 2) == ([OK], 10000)
    assert {"big", "more"} <= set(cluster.controller.image.topics.by_name)


def test_a_strict_request_is_charged_topic_by_topic(cluster: Cluster) -> None:
    both = create_topic("first", 12)
    both = type(both)(topics=(*both.topics, *create_topic("second", 1).topics))
    assert ask(cluster, both, 6) == ([OK, THROTTLED], 1000)


def test_validate_only_is_charged_as_kafka_4_4_charges_it(cluster: Cluster) -> None:
    """Kafka 4.4's ReplicationControlManager.createTopic charges before it knows whether
    the request only validates (it drops the records after)."""
    assert ask(cluster, create_topic("checked", 20, validate_only=True), 6) == ([OK], 0)
    assert ask(cluster, create_topic("real", 1), 6) == ([THROTTLED], 9000)


def test_a_topic_refused_for_another_reason_costs_nothing(cluster: Cluster) -> None:
    assert ask(cluster, create_topic("wide", 20, rf=3), 6)[0][0][0] == \
        ErrorCode.INVALID_REPLICATION_FACTOR
    assert ask(cluster, create_topic("fits", 11), 6) == ([OK], 0)


def test_other_clients_and_unwrapped_requests_are_not_charged(cluster: Cluster) -> None:
    assert ask(cluster, create_topic("big", 20), 6) == ([OK], 0)
    assert ask(cluster, create_topic("bobs", 50), 6, user="bob") == ([OK], 0)
    assert ask(cluster, create_topic("bobs-too", 50), 6, user="bob") == ([OK], 0)
    response = cluster.call(create_topic("internal", 50))  # no client behind it
    assert getattr(response, "throttle_time_ms", None) == 0


def test_create_partitions_is_charged_before_the_new_partitions_are_placed(
        cluster: Cluster) -> None:
    cluster.call(create_topic("grown", 1))
    assert ask(cluster, grow("grown", 21), 3) == ([OK], 0)
    assert len(cluster.controller.image.topics.by_name["grown"].partitions) == 21
    # refused by the quota before its bad assignment is looked at, as in Kafka
    assert ask(cluster, grow("grown", 22, (99,)), 3) == ([THROTTLED], 9000)
    assert ask(cluster, grow("grown", 23), 2) == ([OK], 11000)  # permissive below v3
    assert len(cluster.controller.image.topics.by_name["grown"].partitions) == 23


def test_delete_topics_is_charged_with_the_topics_partitions(cluster: Cluster) -> None:
    for name in ("big", "next"):
        cluster.call(create_topic(name, 20))
    assert ask(cluster, delete("big"), 5) == ([OK], 0)
    response = cluster.call(Mutation(delete("next"), "alice", "tool", 6))
    result = response.responses[0]
    topic = cluster.controller.image.topics.by_name["next"]
    assert (result.name, result.topic_id, result.error_code, result.error_message) == (
        "next", topic.topic_id, ErrorCode.THROTTLING_QUOTA_EXCEEDED, None)
    assert ask(cluster, delete("next"), 4) == ([OK], 29000)  # permissive below v5
    removed = [r for r in cluster.raft.metadata_records()
               if isinstance(r.message, RemoveTopicRecord)]
    assert len(removed) == 2


def test_a_refused_topic_writes_nothing(cluster: Cluster) -> None:
    ask(cluster, create_topic("big", 20), 6)
    before = len([r for r in cluster.raft.metadata_records()
                  if isinstance(r.message, PartitionRecord)])
    assert ask(cluster, create_topic("small", 1), 6)[0] == [THROTTLED]
    assert len([r for r in cluster.raft.metadata_records()
                if isinstance(r.message, PartitionRecord)]) == before


def test_an_inactive_controller_answers_a_mutation_not_controller(cluster: Cluster) -> None:
    cluster.depose(truncate=False)
    assert ask(cluster, create_topic("late", 1), 6) == (
        [(ErrorCode.NOT_CONTROLLER, None)], 0)


def test_the_controller_takes_its_quota_windows_from_the_node_s_properties(
        tmp_path: Path) -> None:
    config = ServerConfig({
        "process.roles": "controller", "node.id": "1", "controller.listener.names": "CONTROLLER",
        "listeners": "CONTROLLER://127.0.0.1:9093", "log.dirs": str(tmp_path / "data"),
        "controller.quorum.voters": "1@127.0.0.1:9093", "controller.quota.window.num": "5",
        "controller.quota.window.size.seconds": "2"})
    format_storage(FormatRequest(config=config, cluster_id=uuid_to_str(random_uuid()),
                                 mode=QuorumMode.STATIC))
    controller = load_settings(config).controller
    assert (controller.mutation_quota_samples, controller.mutation_quota_window_s) == (5, 2)
    quotas = QuorumController(controller, writer=lambda _now, _values: 0,
                              rng=random.Random(0)).mutation_quotas
    assert quotas.burst_s == 10
