"""DescribeTopicPartitions (API 75) from an image: Kafka's order, paging, cursor rules,
errors, authorization and partition fields."""

from __future__ import annotations

import uuid

from replica_fixtures import topic, with_records

from pykraft.broker.describe_topic_partitions import describe_topic_partitions
from pykraft.config.authorizer import AuthorizerConfig
from pykraft.ids import ZERO_UUID
from pykraft.image.acls import (
    AclOperation,
    AclPermissionType,
    AclsImage,
    PatternType,
    ResourceType,
    StandardAcl,
)
from pykraft.image.image import MetadataImage
from pykraft.messages.kafka.describe_topic_partitions_request import (
    Cursor,
    DescribeTopicPartitionsRequest,
    TopicRequest,
)
from pykraft.messages.kafka.describe_topic_partitions_response import (
    DescribeTopicPartitionsResponse,
)
from pykraft.protocol.codec import decode_response, encode_response
from pykraft.protocol.errors import ErrorCode
from pykraft.records.metadata import (
    BrokerEndpoint,
    PartitionChangeRecord,
    PartitionRecord,
    RegisterBrokerRecord,
)
from pykraft.security.api_rules import AuthorizerCache
from pykraft.security.session import KafkaPrincipal, Session

LISTENER = "PLAINTEXT"
ALICE = Session(KafkaPrincipal("User", "alice"), "127.0.0.1:5000")
ANYONE = AuthorizerCache(None).access(AclsImage, ALICE)
#: Every operation Kafka lists for a topic without an authorizer (AclEntry.supportedOperations)
ALL_TOPIC_OPERATIONS = ANYONE.operations(ResourceType.TOPIC, "a")
LOST = uuid.UUID(int=2)  # Kafka's DirectoryId.LOST


def registered(broker_id: int, *, fenced: bool = False, listener: str = LISTENER,
               log_dirs: tuple[uuid.UUID, ...] = ()) -> RegisterBrokerRecord:
    return RegisterBrokerRecord(
        broker_id=broker_id, incarnation_id=uuid.UUID(int=broker_id), broker_epoch=10,
        end_points=(BrokerEndpoint(name=listener, host="127.0.0.1", port=9000 + broker_id,
                                   security_protocol=0),), fenced=fenced, log_dirs=log_dirs)


#: a: 3 partitions, b: 2, c: 1, all on broker 1
IMAGE = with_records(MetadataImage(), registered(1), *topic("c", uuid.UUID(int=3), (1,)),
                     *topic("a", uuid.UUID(int=1), (1,), (1,), (1,)),
                     *topic("b", uuid.UUID(int=2), (1,), (1,)))


def ask(*names: str, limit: int = 2000, cursor: tuple[str, int] | None = None,
        image: MetadataImage = IMAGE, cap: int = 2000,
        access: object = ANYONE) -> DescribeTopicPartitionsResponse:
    request = DescribeTopicPartitionsRequest(
        topics=tuple(TopicRequest(name=n) for n in names), response_partition_limit=limit,
        cursor=None if cursor is None else Cursor(topic_name=cursor[0],
                                                  partition_index=cursor[1]))
    answer = describe_topic_partitions(image, request, access,  # type: ignore[arg-type]
                                       listener=LISTENER, partition_cap=cap)
    parsed = decode_response(75, 0, encode_response(1, 75, 0, answer)).body  # on the wire
    assert isinstance(parsed, DescribeTopicPartitionsResponse)
    return parsed


def pages(answer: DescribeTopicPartitionsResponse) -> tuple[list[tuple[str, list[int]]],
                                                              tuple[str, int] | None]:
    cursor = answer.next_cursor
    return ([(str(t.name), [p.partition_index for p in t.partitions]) for t in answer.topics],
            None if cursor is None else (cursor.topic_name, cursor.partition_index))


def test_every_topic_in_name_order_with_ids_and_operations() -> None:
    answer = ask()
    assert pages(answer) == ([("a", [0, 1, 2]), ("b", [0, 1]), ("c", [0])], None)
    assert [(t.topic_id, t.is_internal, t.topic_authorized_operations)
            for t in answer.topics] == [(uuid.UUID(int=i), False, ALL_TOPIC_OPERATIONS)
                                        for i in (1, 2, 3)]


def test_named_topics_are_answered_sorted_and_once() -> None:
    assert pages(ask("c", "a", "c")) == ([("a", [0, 1, 2]), ("c", [0])], None)


def test_a_topic_cut_short_is_the_next_cursor_and_the_cursor_resumes_it() -> None:
    assert pages(ask(limit=4)) == ([("a", [0, 1, 2]), ("b", [0])], ("b", 1))
    assert pages(ask(limit=4, cursor=("b", 1))) == ([("b", [1]), ("c", [0])], None)


def test_a_limit_spent_at_a_topic_s_end_points_at_the_next_topic() -> None:
    assert pages(ask("a", "b", limit=3)) == ([("a", [0, 1, 2])], ("b", 0))
    assert pages(ask("a", "no-such", limit=3)) == ([("a", [0, 1, 2])], ("no-such", 0))


def test_the_cursor_skips_topics_before_it_and_one_beyond_its_partitions_has_none() -> None:
    assert pages(ask("a", "b", "c", cursor=("b", 0))) == ([("b", [0, 1]), ("c", [0])], None)
    assert pages(ask("a", "b", cursor=("a", 7))) == ([("a", []), ("b", [0, 1])], None)
    assert pages(ask(cursor=("bb", 0))) == ([("c", [0])], None)  # all topics: any name


def test_the_limit_is_capped_by_the_broker_and_at_least_one() -> None:
    assert pages(ask(limit=5000, cap=2)) == ([("a", [0, 1])], ("a", 2))
    assert pages(ask(limit=0)) == ([("a", [0])], ("a", 1))
    assert pages(ask(limit=-5)) == ([("a", [0])], ("a", 1))


def test_a_cursor_topic_not_named_or_a_negative_partition_is_an_invalid_request() -> None:
    refused = ask("b", "a", "b", cursor=("c", 0))
    assert [(t.name, t.error_code, t.topic_id, t.partitions, t.topic_authorized_operations)
            for t in refused.topics] == [
        (name, ErrorCode.INVALID_REQUEST, ZERO_UUID, (), -(2**31)) for name in ("b", "a", "b")]
    assert refused.next_cursor is None
    named = ask("a", cursor=("a", -1))
    assert [(t.name, t.error_code) for t in named.topics] == [("a", ErrorCode.INVALID_REQUEST)]
    assert ask(cursor=("a", -1)).topics == ()  # all topics: nothing named to answer
    # a cursor topic named but sorting below the others is still among them
    assert pages(ask("a", "c", cursor=("c", 0))) == ([("c", [0])], None)


def test_unknown_and_invalid_names_are_answered_in_their_place() -> None:
    answer = ask("zz", "b", "no/such", "__consumer_offsets")
    assert [(t.name, t.error_code, t.topic_id, t.is_internal, len(t.partitions))
            for t in answer.topics] == [
        ("__consumer_offsets", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ZERO_UUID, True, 0),
        ("b", ErrorCode.NONE, uuid.UUID(int=2), False, 2),
        ("no/such", ErrorCode.INVALID_TOPIC_EXCEPTION, ZERO_UUID, False, 0),
        ("zz", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ZERO_UUID, False, 0)]


def allowed(name: str, operation: AclOperation) -> object:
    return StandardAcl(ResourceType.TOPIC, name, PatternType.LITERAL, "User:alice", "*",
                       operation, AclPermissionType.ALLOW).to_record(uuid.uuid4())


def test_what_alice_may_not_describe_is_hidden_or_refused_last() -> None:
    image = with_records(IMAGE, allowed("b", AclOperation.READ),
                         allowed("c", AclOperation.DESCRIBE))
    access = AuthorizerCache(AuthorizerConfig()).access(lambda: image.acls, ALICE)
    assert pages(ask(image=image, access=access)) == ([("b", [0, 1]), ("c", [0])], None)
    answer = ask("c", "missing", "a", "b", image=image, access=access)
    assert [(t.name, t.error_code, t.topic_id, t.topic_authorized_operations)
            for t in answer.topics] == [
        ("b", ErrorCode.NONE, uuid.UUID(int=2),
         (1 << AclOperation.READ) | (1 << AclOperation.DESCRIBE)),
        ("c", ErrorCode.NONE, uuid.UUID(int=3), 1 << AclOperation.DESCRIBE),
        ("a", ErrorCode.TOPIC_AUTHORIZATION_FAILED, ZERO_UUID, -(2**31)),
        ("missing", ErrorCode.TOPIC_AUTHORIZATION_FAILED, ZERO_UUID, -(2**31))]


def test_leaders_offline_replicas_and_elr_as_kafka_s_metadata_cache_has_them() -> None:
    """Leader -1 when its broker is unregistered or lacks the listener; offline: unregistered,
    fenced, without the listener, or on a lost directory. ELR as the image holds it (none in
    the record: empty lists, never null)."""
    dirs = (uuid.UUID(int=100), LOST)
    image = with_records(
        MetadataImage(), registered(1), registered(2, fenced=True),
        registered(3, listener="OTHER"), registered(4, log_dirs=(dirs[0],)),
        registered(5, log_dirs=(dirs[0],)),
        *topic("t", uuid.UUID(int=1), (1, 2), (3, 1), (9, 1)),
        PartitionRecord(partition_id=3, topic_id=uuid.UUID(int=1), replicas=(4, 5),
                        isr=(4, 5), leader=4, leader_epoch=3, partition_epoch=0,
                        directories=dirs),
        PartitionChangeRecord(partition_id=0, topic_id=uuid.UUID(int=1),
                              eligible_leader_replicas=(2,), last_known_elr=(1,)))
    (answered,) = ask("t", image=image).topics
    assert [(p.leader_id, p.leader_epoch, p.replica_nodes, p.isr_nodes, p.offline_replicas,
             p.eligible_leader_replicas, p.last_known_elr) for p in answered.partitions] == [
        (1, 0, (1, 2), (1, 2), (2,), (2,), (1,)),
        (-1, 0, (3, 1), (3, 1), (3,), (), ()),
        (-1, 0, (9, 1), (9, 1), (9,), (), ()),
        (4, 3, (4, 5), (4, 5), (5,), (), ())]
