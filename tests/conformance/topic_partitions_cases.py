"""Conformance rows for DescribeTopicPartitions (API 75, KIP-966) on the broker: every
topic or named ones, unknown names, cursor paging, the cursor's rules, the broker's cap on
the partitions of an answer (the suite's cluster sets it to :data:`PARTITION_CAP`) and what
a session without DESCRIBE sees. The rows share three topics of their own, created by the
first row that needs them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kafka.protocol.admin import CreateTopicsRequest

from conformance.cases import Case, Meaning, code, create_topics, settled
from conformance.harness import BROKER, SASL, Run
from conformance.sasl_cases import as_alice
from pykraft.image.acls import AclOperation, AclPermissionType, PatternType, ResourceType
from pykraft.messages.kafka.create_acls_request import AclCreation, CreateAclsRequest
from pykraft.messages.kafka.describe_topic_partitions_request import (
    Cursor,
    DescribeTopicPartitionsRequest,
    TopicRequest,
)
from pykraft.protocol.apis import API_SPECS, ApiKey

#: The suite's ``max.request.partition.size.limit``: small, so that a topic of a few
#: partitions shows the cap.
PARTITION_CAP = 4
#: The rows' topics and their partition counts (FIVE: above the cap).
THREE, TWO, FIVE = "dtp-three", "dtp-two", "dtp-five"
COUNTS = {THREE: 3, TWO: 2, FIVE: 5}
#: Named by alice, who may not describe it: sorts before her allowed topic, answered after.
HIDDEN = "a-dtp-hidden"
_DTP = ApiKey.DESCRIBE_TOPIC_PARTITIONS


def request(names: tuple[str, ...] = (), *, limit: int = 2000,
            cursor: tuple[str, int] | None = None) -> DescribeTopicPartitionsRequest:
    return DescribeTopicPartitionsRequest(
        topics=tuple(TopicRequest(name=n) for n in names), response_partition_limit=limit,
        cursor=None if cursor is None else Cursor(topic_name=cursor[0],
                                                  partition_index=cursor[1]))


def describe(run: Run, *names: str, limit: int = 2000,
             cursor: tuple[str, int] | None = None) -> Any:
    return run.generated(_DTP, request(names, limit=limit, cursor=cursor))


def on_broker(run: Run, version: int) -> Run:
    """``run``'s row sending another request (at ``version``) on the PLAINTEXT listener."""
    return Run(run.cluster, run.api_name, run.case, BROKER, version)


def with_topics(run: Run, *names: str) -> None:
    """The rows' topics created (once) and known to the broker with their leaders."""
    for name in names:
        create_topics(on_broker(run, CreateTopicsRequest.max_version), name, COUNTS[name], 1)
    broker = on_broker(run, run.version)
    settled(lambda: describe(broker, *names), lambda body: [
        (t.name, len(t.partitions), all(p.leader_id >= 0 for p in t.partitions))
        for t in body.topics] == [(n, COUNTS[n], True) for n in sorted(names)])


def described_with(*names: str, limit: int) -> Callable[[Run], Any]:
    """A row's request: the topics ``names`` (created first), at most ``limit`` partitions."""
    def send(run: Run) -> Any:
        with_topics(run, *names)
        return describe(run, *names, limit=limit)
    return send


def topics(body: Any, run: Run) -> tuple[list[tuple[str, str, list[int], bool]],
                                         tuple[str, int] | None]:
    """Per topic: name, error, partition indexes, led by the cluster's broker; the cursor."""
    cursor = body.next_cursor
    return ([(t.name, code(t.error_code), [p.partition_index for p in t.partitions],
              all(p.leader_id == run.cluster.broker_id for p in t.partitions))
             for t in body.topics],
            None if cursor is None else (cursor.topic_name, cursor.partition_index))


def all_from_the_shared_topic(body: Any, run: Run) -> Meaning:
    """Every topic from the shared one on: it comes first, whatever follows it."""
    names = [t.name for t in body.topics]
    return topics(body, run)[0][0], names == sorted(names)


def paged(run: Run) -> Any:
    """THREE and TWO, two partitions a page, each page from the last page's cursor."""
    with_topics(run, THREE, TWO)
    pages = [describe(run, TWO, THREE, limit=2)]
    while pages[-1].next_cursor is not None and len(pages) < 4:
        cursor = pages[-1].next_cursor
        pages.append(describe(run, TWO, THREE, limit=2,
                              cursor=(cursor.topic_name, cursor.partition_index)))
    return pages


def pages_of(bodies: Any, run: Run) -> Meaning:
    return [topics(body, run) for body in bodies]


def as_alice_allowed_two(run: Run) -> Any:
    """alice may DESCRIBE TWO only: named with HIDDEN, then every topic, as she sees them
    (once the broker's image holds her ACL)."""
    with_topics(run, TWO)
    creator = on_broker(run, API_SPECS[ApiKey.CREATE_ACLS].max_version)
    creator.generated(ApiKey.CREATE_ACLS, CreateAclsRequest(creations=(AclCreation(
        resource_type=ResourceType.TOPIC, resource_name=TWO,
        resource_pattern_type=PatternType.LITERAL, principal="User:alice", host="*",
        operation=AclOperation.DESCRIBE, permission_type=AclPermissionType.ALLOW),)))
    named = settled(lambda: as_alice(run, request((TWO, HIDDEN))),
                    lambda body: body.topics[0].error_code == 0)
    return named, as_alice(run, request())


def alice_sees(bodies: Any, run: Run) -> Meaning:
    named, every = bodies
    return (topics(named, run), [t.topic_authorized_operations for t in named.topics],
            topics(every, run))


def shared(run: Run) -> list[int]:
    return list(range(run.cluster.partitions))


DESCRIBE_TOPIC_PARTITIONS = [
    Case("DescribeTopicPartitions", _DTP, "all_topics",
         lambda r: describe(r, cursor=(r.cluster.topic, 0)), all_from_the_shared_topic,
         lambda r: ((r.cluster.topic, "NONE", shared(r), True), True)),
    Case("DescribeTopicPartitions", _DTP, "named_topics",
         lambda r: describe(r, r.cluster.topic, r.cluster.topic), topics,
         lambda r: ([(r.cluster.topic, "NONE", shared(r), True)], None)),
    Case("DescribeTopicPartitions", _DTP, "unknown_topics",
         lambda r: describe(r, "no/such topic", "no-such-topic"), topics,
         lambda _r: ([("no-such-topic", "UNKNOWN_TOPIC_OR_PARTITION", [], True),
                      ("no/such topic", "INVALID_TOPIC_EXCEPTION", [], True)], None)),
    Case("DescribeTopicPartitions", _DTP, "paged_across_topics", paged, pages_of,
         lambda _r: [([(THREE, "NONE", [0, 1], True)], (THREE, 2)),
                     ([(THREE, "NONE", [2], True), (TWO, "NONE", [0], True)], (TWO, 1)),
                     ([(TWO, "NONE", [1], True)], None)]),
    Case("DescribeTopicPartitions", _DTP, "limit_spent_at_a_topic_s_end",
         described_with(TWO, THREE, limit=3), topics,
         lambda _r: ([(THREE, "NONE", [0, 1, 2], True)], (TWO, 0))),
    Case("DescribeTopicPartitions", _DTP, "limit_above_the_broker_s_cap",
         described_with(FIVE, limit=5000), topics,
         lambda _r: ([(FIVE, "NONE", list(range(PARTITION_CAP)), True)],
                     (FIVE, PARTITION_CAP))),
    Case("DescribeTopicPartitions", _DTP, "cursor_topic_not_requested",
         lambda r: describe(r, r.cluster.topic, cursor=("not-requested", 0)), topics,
         lambda r: ([(r.cluster.topic, "INVALID_REQUEST", [], True)], None)),
    Case("DescribeTopicPartitions", _DTP, "negative_cursor_partition",
         lambda r: describe(r, r.cluster.topic, cursor=(r.cluster.topic, -1)), topics,
         lambda r: ([(r.cluster.topic, "INVALID_REQUEST", [], True)], None)),
    Case("DescribeTopicPartitions", _DTP, "cursor_beyond_the_partitions",
         lambda r: describe(r, r.cluster.topic, cursor=(r.cluster.topic, 9)), topics,
         lambda r: ([(r.cluster.topic, "NONE", [], True)], None)),
    Case("DescribeTopicPartitions", _DTP, "unauthorized_topics", as_alice_allowed_two,
         alice_sees,
         lambda _r: (([(TWO, "NONE", [0, 1], True),
                       (HIDDEN, "TOPIC_AUTHORIZATION_FAILED", [], True)], None),
                     [1 << AclOperation.DESCRIBE, -(2**31)],
                     ([(TWO, "NONE", [0, 1], True)], None)),
         listeners=(SASL,)),
]
