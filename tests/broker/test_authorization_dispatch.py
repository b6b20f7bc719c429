"""Authorization through the dispatchers, on wire frames, over an image holding ACLs:
alice may write and read topic t, describe and read group g; admin is a super user."""

from __future__ import annotations

import asyncio
import dataclasses
import uuid
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from replica_fixtures import (
    broker,
    client_batch,
    replicas_of,
    request,
    topic,
    with_records,
)

from pykraft.broker.auto_topics import AutoTopicCreator
from pykraft.broker.coordinator_topics import GROUP_KEY, CoordinatorFinder, OffsetsTopicConfig
from pykraft.broker.dispatch import BrokerDispatcher
from pykraft.broker.log_dir_mover import LogDirMover
from pykraft.broker.produce import ProduceHandler
from pykraft.config.authorizer import (
    ALLOW_EVERYONE_IF_NO_ACL_FOUND,
    AUTHORIZER_CLASS_NAME,
    STANDARD_AUTHORIZER,
    SUPER_USERS,
)
from pykraft.errors import NetworkError, UnsupportedVersionError
from pykraft.ids import ZERO_UUID
from pykraft.image.acls import (
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
    StandardAcl,
)
from pykraft.image.image import MetadataImage
from pykraft.messages.kafka import offset_fetch_request as fetch
from pykraft.messages.kafka import offset_fetch_response as fetched
from pykraft.messages.kafka.alter_replica_log_dirs_request import (
    AlterReplicaLogDir,
    AlterReplicaLogDirsRequest,
    AlterReplicaLogDirTopic,
)
from pykraft.messages.kafka.create_acls_request import AclCreation, CreateAclsRequest
from pykraft.messages.kafka.describe_log_dirs_request import DescribeLogDirsRequest
from pykraft.messages.kafka.envelope_request import EnvelopeRequest
from pykraft.messages.kafka.find_coordinator_request import FindCoordinatorRequest
from pykraft.messages.kafka.init_producer_id_request import InitProducerIdRequest
from pykraft.messages.kafka.leave_group_request import LeaveGroupRequest
from pykraft.messages.kafka.leave_group_response import LeaveGroupResponse, MemberResponse
from pykraft.messages.kafka.metadata_request import MetadataRequest, MetadataRequestTopic
from pykraft.protocol.apis import ApiKey
from pykraft.protocol.codec import api_key_of, decode_response, encode_request
from pykraft.protocol.errors import ErrorCode
from pykraft.protocol.header import RequestHeader
from pykraft.raft import rpc
from pykraft.raft.log import OffsetAndEpoch
from pykraft.runtime.dispatch import Dispatcher
from pykraft.runtime.listener_dispatch import ListenerDispatcher
from pykraft.security.session import KafkaPrincipal, Session

Op, T = AclOperation, ResourceType
ALICE = Session(KafkaPrincipal("User", "alice"), "127.0.0.1:5000")
ADMIN = Session(KafkaPrincipal("User", "admin"), "127.0.0.1:5001")
TOPIC_REFUSED = ErrorCode.TOPIC_AUTHORIZATION_FAILED
SECURED = {AUTHORIZER_CLASS_NAME: STANDARD_AUTHORIZER, SUPER_USERS: "User:admin"}


def acl(resource_type: ResourceType, name: str, operation: AclOperation,
        principal: str = "User:alice") -> object:
    entry = StandardAcl(resource_type, name, PatternType.LITERAL, principal, "*", operation,
                        AclPermissionType.ALLOW)
    return entry.to_record(uuid.uuid4())


def image() -> MetadataImage:
    built: MetadataImage = with_records(
        MetadataImage(), broker(1, 9092),
        *topic("t", uuid.UUID(int=1), (1,)), *topic("secret", uuid.UUID(int=2), (1,)),
        *topic("open", uuid.UUID(int=3), (1,)),
        acl(T.TOPIC, "t", Op.WRITE), acl(T.TOPIC, "t", Op.READ),
        acl(T.TOPIC, "secret", Op.READ, "User:bob"),
        acl(T.GROUP, "g", Op.READ), acl(T.GROUP, "g", Op.DESCRIBE),
        acl(T.TOPIC, "made", Op.DESCRIBE), acl(T.TOPIC, "made", Op.CREATE),
        acl(T.TOPIC, "not-made", Op.DESCRIBE))
    return built


class NoController:
    """A controller that takes no Envelope (so the broker checks forwarded requests
    itself) and that no request reaches."""

    def __init__(self) -> None:
        self.sent = 0

    async def send(self, body: Any, client_id: str | None = None) -> Any:
        if isinstance(body, EnvelopeRequest):
            raise UnsupportedVersionError("no Envelope", api_key=ApiKey.ENVELOPE)
        self.sent += 1
        raise NetworkError("no active controller is known yet")


class Service:
    """The group shards: LeaveGroup's member unknown, OffsetFetch's offsets all 5."""

    def __init__(self) -> None:
        self.seen: list[Any] = []

    async def handle(self, api_key: int, api_version: int, body: Any, *, client_id: str,
                     client_host: str) -> Any:
        self.seen.append(body)
        if api_key == ApiKey.LEAVE_GROUP:
            return LeaveGroupResponse(members=tuple(MemberResponse(
                member_id=m.member_id, error_code=ErrorCode.UNKNOWN_MEMBER_ID)
                for m in body.members))
        return fetched.OffsetFetchResponse(groups=tuple(
            fetched.OffsetFetchResponseGroup(group_id=g.group_id, topics=tuple(
                fetched.OffsetFetchResponseTopics(name=t.name, partitions=tuple(
                    fetched.OffsetFetchResponsePartitions(partition_index=p, committed_offset=5,
                                                          metadata="")
                    for p in t.partition_indexes))
                for t in g.topics or ()))
            for g in body.groups))


@dataclasses.dataclass
class Broker:
    dispatcher: BrokerDispatcher
    channel: NoController
    service: Service


def make_broker(tmp_path: Path, properties: dict[str, str],
                auto_topics: AutoTopicCreator | None = None) -> Broker:
    metadata = image()
    replicas = replicas_of(tmp_path, 1, metadata)
    node = SimpleNamespace(settings=SimpleNamespace(
        node_id=1, controller=SimpleNamespace(properties=properties)))
    channel, service = NoController(), Service()
    dispatcher = BrokerDispatcher(
        node, SimpleNamespace(image=metadata), channel,  # type: ignore[arg-type]
        cluster_id="cid", listener_name="PLAINTEXT",
        produce=ProduceHandler(replicas, lambda: 1_000, "PLAINTEXT"), replicas=replicas,
        groups=(service, CoordinatorFinder(  # type: ignore[arg-type]
            {GROUP_KEY: OffsetsTopicConfig()}, channel, "PLAINTEXT")), auto_topics=auto_topics,
        log_dir_mover=LogDirMover(replicas, clock_ms=lambda: 1_000, max_bytes=1 << 20,
                                  backoff_ms=1))
    return Broker(dispatcher, channel, service)


def ask(dispatcher: ListenerDispatcher, body: Any, version: int, session: Session) -> Any:
    api_key = api_key_of(body)
    frame = encode_request(RequestHeader(api_key, version, 9, "test"), body)
    return decode_response(api_key, version,
                           asyncio.run(dispatcher.handle(frame, session))).body


def produce(*names: str) -> Any:
    batch = client_batch([b"v"])
    first = request({0: batch}, name=names[0])
    return dataclasses.replace(first, topic_data=tuple(
        request({0: batch}, name=name).topic_data[0] for name in names))


def produced(answer: Any) -> dict[str, ErrorCode]:
    return {str(t.name): p.error_code for t in answer.responses for p in t.partition_responses}


def metadata(*names: str, operations: bool = False, create: bool = False) -> MetadataRequest:
    return MetadataRequest(
        topics=tuple(MetadataRequestTopic(name=n) for n in names)
        if names else None, allow_auto_topic_creation=create,
        include_topic_authorized_operations=operations)


def test_produce_is_refused_per_topic(tmp_path: Path) -> None:
    secured = make_broker(tmp_path, SECURED)
    answer = ask(secured.dispatcher, produce("t", "secret"), 9, ALICE)
    assert produced(answer) == {"t": ErrorCode.NONE, "secret": TOPIC_REFUSED}
    again = ask(secured.dispatcher, produce("secret"), 9, ADMIN)  # a super user
    assert produced(again) == {"secret": ErrorCode.NONE}
    assert [p.base_offset for t in again.responses for p in t.partition_responses] == [0]


def test_metadata_hides_or_refuses_what_may_not_be_described(tmp_path: Path) -> None:
    secured = make_broker(tmp_path, SECURED).dispatcher
    every = ask(secured, metadata(operations=True), 12, ALICE)
    assert [(t.name, t.topic_authorized_operations) for t in every.topics] == [
        ("t", (1 << Op.READ) | (1 << Op.WRITE) | (1 << Op.DESCRIBE))]
    named = ask(secured, metadata("t", "secret", "missing"), 12, ALICE)
    assert [(t.name, t.error_code, t.topic_id) for t in named.topics] == [
        ("t", ErrorCode.NONE, uuid.UUID(int=1)), ("secret", TOPIC_REFUSED, ZERO_UUID),
        ("missing", TOPIC_REFUSED, ZERO_UUID)]  # no id disclosed
    assert [t.name for t in ask(secured, metadata(), 12, ADMIN).topics] == [
        "open", "secret", "t"]


def test_auto_creation_needs_create_on_the_topic_or_cluster(tmp_path: Path) -> None:
    """KafkaApis: a missing topic the session may describe but not create is refused."""
    creator = AutoTopicCreator(NoController(), num_partitions=1, replication_factor=1)
    secured = make_broker(tmp_path, SECURED, creator).dispatcher
    named = ask(secured, metadata("made", "not-made", "t", create=True), 12, ALICE)
    assert [(t.name, t.error_code) for t in named.topics] == [
        ("made", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION), ("not-made", TOPIC_REFUSED),
        ("t", ErrorCode.NONE)]
    by_admin = ask(secured, metadata("not-made", create=True), 12, ADMIN)
    assert [(t.name, t.error_code) for t in by_admin.topics] == [
        ("not-made", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)]


def test_allow_everyone_if_no_acl_found(tmp_path: Path) -> None:
    secured = make_broker(tmp_path, SECURED | {ALLOW_EVERYONE_IF_NO_ACL_FOUND: "true"})
    answer = ask(secured.dispatcher, produce("open", "secret"), 9, ALICE)
    assert produced(answer) == {"open": ErrorCode.NONE, "secret": TOPIC_REFUSED}


def test_without_an_authorizer_nothing_is_checked(tmp_path: Path) -> None:
    plain = make_broker(tmp_path, {}).dispatcher
    assert produced(ask(plain, produce("secret"), 9, ALICE)) == {"secret": ErrorCode.NONE}
    topics = ask(plain, metadata("secret", operations=True), 12, ALICE).topics
    every_topic_operation = sum(1 << op for op in (
        Op.READ, Op.WRITE, Op.CREATE, Op.DELETE, Op.ALTER, Op.DESCRIBE, Op.DESCRIBE_CONFIGS,
        Op.ALTER_CONFIGS))
    assert [(t.error_code, t.topic_authorized_operations) for t in topics] == [
        (ErrorCode.NONE, every_topic_operation)]


def test_a_group_is_refused_before_the_coordinator_sees_it(tmp_path: Path) -> None:
    secured = make_broker(tmp_path, SECURED)
    refused = ask(secured.dispatcher, LeaveGroupRequest(group_id="h", member_id="m"), 1, ALICE)
    assert refused.error_code == ErrorCode.GROUP_AUTHORIZATION_FAILED
    assert secured.service.seen == []
    allowed = ask(secured.dispatcher, LeaveGroupRequest(group_id="g", member_id="m"), 1, ALICE)
    assert allowed.error_code == ErrorCode.UNKNOWN_MEMBER_ID
    assert len(secured.service.seen) == 1


def test_offset_fetch_refuses_groups_and_topics(tmp_path: Path) -> None:
    secured = make_broker(tmp_path, SECURED)
    wanted = (fetch.OffsetFetchRequestTopics(name="t", partition_indexes=(0,)),
              fetch.OffsetFetchRequestTopics(name="secret", partition_indexes=(0,)))
    body = fetch.OffsetFetchRequest(groups=(
        fetch.OffsetFetchRequestGroup(group_id="g", topics=wanted),
        fetch.OffsetFetchRequestGroup(group_id="h", topics=wanted)))
    answer = ask(secured.dispatcher, body, 8, ALICE)
    found = {(g.group_id, g.error_code): [(t.name, p.error_code, p.committed_offset)
                                          for t in g.topics for p in t.partitions]
             for g in answer.groups}
    assert found == {
        ("g", ErrorCode.NONE): [("t", ErrorCode.NONE, 5), ("secret", TOPIC_REFUSED, -1)],
        ("h", ErrorCode.GROUP_AUTHORIZATION_FAILED): []}
    (seen,) = secured.service.seen  # only g, only t
    assert [(g.group_id, [t.name for t in g.topics]) for g in seen.groups] == [("g", ["t"])]


def test_offset_fetch_v10_names_topics_by_id(tmp_path: Path) -> None:
    """v10: the shards see the ids the image holds as names; the answer names each topic
    by its id, a refused one TOPIC_AUTHORIZATION_FAILED, one the image lacks
    UNKNOWN_TOPIC_ID (Kafka's fetchOffsetsForGroup: both after the coordinator's topics)."""
    secured = make_broker(tmp_path, SECURED)
    body = fetch.OffsetFetchRequest(groups=(
        fetch.OffsetFetchRequestGroup(group_id="g", topics=tuple(
            fetch.OffsetFetchRequestTopics(topic_id=uuid.UUID(int=n), partition_indexes=(0,))
            for n in (1, 2, 9))),))
    (group,) = ask(secured.dispatcher, body, 10, ALICE).groups
    assert [(t.topic_id, p.error_code, p.committed_offset)
            for t in group.topics for p in t.partitions] == [
        (uuid.UUID(int=1), ErrorCode.NONE, 5), (uuid.UUID(int=2), TOPIC_REFUSED, -1),
        (uuid.UUID(int=9), ErrorCode.UNKNOWN_TOPIC_ID, -1)]
    (seen,) = secured.service.seen
    assert [[t.name for t in g.topics] for g in seen.groups] == [["t"]]


def test_cluster_operations_are_refused_whole(tmp_path: Path) -> None:
    secured = make_broker(tmp_path, SECURED)
    creation = AclCreation(resource_type=2, resource_name="t", resource_pattern_type=3,
                           principal="User:alice", host="*", operation=3, permission_type=3)
    answer = ask(secured.dispatcher, CreateAclsRequest(creations=(creation,)), 3, ALICE)
    assert [r.error_code for r in answer.results] == [ErrorCode.CLUSTER_AUTHORIZATION_FAILED]
    assert secured.channel.sent == 0  # never forwarded
    dirs = ask(secured.dispatcher, DescribeLogDirsRequest(topics=None), 4, ALICE)
    assert dirs.error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    assert ask(secured.dispatcher, DescribeLogDirsRequest(topics=None), 4,
               ADMIN).error_code == ErrorCode.NONE
    move = AlterReplicaLogDirsRequest(dirs=(AlterReplicaLogDir(path="/nowhere", topics=(
        AlterReplicaLogDirTopic(name="t", partitions=(0, 1)),)),))
    for session, code in ((ALICE, ErrorCode.CLUSTER_AUTHORIZATION_FAILED),
                          (ADMIN, ErrorCode.LOG_DIR_NOT_FOUND)):
        moved = ask(secured.dispatcher, move, 2, session)
        assert [(p.partition_index, p.error_code) for t in moved.results
                for p in t.partitions] == [(0, code), (1, code)]


@pytest.mark.parametrize("body", [
    rpc.vote_request("cid", 1, epoch=1, local_id=2, last=OffsetAndEpoch(0, 0), pre_vote=False),
    rpc.describe_quorum_request(),
], ids=["Vote", "DescribeQuorum"])
def test_the_controller_listener_refuses_a_principal_without_cluster_rights(body: Any) -> None:
    node = SimpleNamespace(settings=SimpleNamespace(
        node_id=1, controller=SimpleNamespace(properties=SECURED)))
    dispatcher = Dispatcher(node)  # type: ignore[arg-type]
    answer = ask(dispatcher, body, 0, ALICE)
    assert answer.error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED


BOB = Session(KafkaPrincipal("User", "bob"), "127.0.0.1:5002")


def init_producer(transactional_id: str | None) -> InitProducerIdRequest:
    return InitProducerIdRequest(transactional_id=transactional_id, transaction_timeout_ms=60_000)


def test_init_producer_id_needs_a_write_right(tmp_path: Path) -> None:
    secured = make_broker(tmp_path, SECURED).dispatcher
    idempotent = ask(secured, init_producer(None), 4, BOB)  # bob may write nowhere
    assert (idempotent.error_code, idempotent.producer_id) == (
        ErrorCode.CLUSTER_AUTHORIZATION_FAILED, -1)
    transactional = ask(secured, init_producer("tx"), 4, ALICE)
    assert transactional.error_code == ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    allowed = ask(secured, init_producer(None), 4, ALICE)  # WRITE on t is enough
    assert allowed.error_code not in (ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                                      ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)


def test_find_coordinator_needs_describe_on_the_group(tmp_path: Path) -> None:
    secured = make_broker(tmp_path, SECURED).dispatcher
    refused = ask(secured, FindCoordinatorRequest(key="h"), 3, ALICE)
    assert (refused.error_code, refused.node_id) == (ErrorCode.GROUP_AUTHORIZATION_FAILED, -1)
    allowed = ask(secured, FindCoordinatorRequest(key="g"), 3, ALICE)
    assert allowed.error_code != ErrorCode.GROUP_AUTHORIZATION_FAILED
