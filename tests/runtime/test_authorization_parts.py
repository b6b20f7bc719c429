"""Admin requests with parts, split by what the session may do: the refused parts get
their error, the rest is handled, and the two answers are merged."""

from __future__ import annotations

import uuid

from pykraft.config.authorizer import AuthorizerConfig
from pykraft.image.acls import (
    AclOperation,
    AclPermissionType,
    AclsImage,
    PatternType,
    ResourceType,
    StandardAcl,
)
from pykraft.image.topics import TopicImage
from pykraft.messages.kafka import create_topics_request as ct_req
from pykraft.messages.kafka import create_topics_response as ct_resp
from pykraft.messages.kafka import delete_topics_request as dt_req
from pykraft.messages.kafka import describe_configs_request as dc_req
from pykraft.messages.kafka.delete_topics_response import DeleteTopicsResponse
from pykraft.messages.kafka.describe_configs_response import DescribeConfigsResponse
from pykraft.protocol.apis import ApiKey
from pykraft.protocol.errors import ErrorCode
from pykraft.runtime.authorization import merge_parts, split_parts
from pykraft.security.api_rules import Access, AuthorizerCache
from pykraft.security.session import KafkaPrincipal, Session

ALICE = Session(KafkaPrincipal("User", "alice"), "127.0.0.1:5000")
Op, T = AclOperation, ResourceType


def access(*allowed: tuple[ResourceType, str, AclOperation]) -> Access:
    image = AclsImage({uuid.UUID(int=i + 1): StandardAcl(
        resource_type, name, PatternType.LITERAL, "User:alice", "*", operation,
        AclPermissionType.ALLOW) for i, (resource_type, name, operation) in enumerate(allowed)})
    return AuthorizerCache(AuthorizerConfig()).access(lambda: image, ALICE)


def creatable(name: str) -> ct_req.CreatableTopic:
    return ct_req.CreatableTopic(name=name, num_partitions=1,
                                 replication_factor=1, assignments=(), configs=())


def test_create_topics_creates_the_allowed_and_refuses_the_rest() -> None:
    request = ct_req.CreateTopicsRequest(
        topics=(creatable("a"), creatable("b")),
        timeout_ms=1000,
        validate_only=False)
    split = split_parts(ApiKey.CREATE_TOPICS, request, access((T.TOPIC, "a", Op.CREATE)), {})
    assert isinstance(split.allowed, ct_req.CreateTopicsRequest)
    assert [t.name for t in split.allowed.topics] == ["a"]
    created = ct_resp.CreateTopicsResponse(topics=(
        ct_resp.CreatableTopicResult(name="a", topic_id=uuid.UUID(int=5),
                                     error_code=ErrorCode.NONE, error_message=None,
                                     num_partitions=1, replication_factor=1,
                                     configs=()),))
    merged = merge_parts(ApiKey.CREATE_TOPICS, split, created)
    assert isinstance(merged, ct_resp.CreateTopicsResponse)
    assert [(t.name, t.error_code, t.topic_config_error_code) for t in merged.topics] == [
        ("a", ErrorCode.NONE, ErrorCode.TOPIC_AUTHORIZATION_FAILED),  # no DESCRIBE_CONFIGS
        ("b", ErrorCode.TOPIC_AUTHORIZATION_FAILED, ErrorCode.NONE)]


def test_delete_topics_by_id_needs_describe_and_delete() -> None:
    known = uuid.UUID(int=1)
    request = dt_req.DeleteTopicsRequest(topics=(
        dt_req.DeleteTopicState(name=None, topic_id=known),
        dt_req.DeleteTopicState(name=None, topic_id=uuid.UUID(int=2)),  # unknown id
    ), timeout_ms=1000)
    topics = {known: TopicImage("t", known, {})}
    split = split_parts(ApiKey.DELETE_TOPICS, request, access((T.TOPIC, "t", Op.DELETE)),
                        topics)
    assert split.refused is None and split.allowed == request  # DELETE implies DESCRIBE
    refused = split_parts(ApiKey.DELETE_TOPICS, request, access(), topics)
    assert isinstance(refused.allowed, dt_req.DeleteTopicsRequest)
    assert isinstance(refused.refused, DeleteTopicsResponse)
    assert [t.topic_id for t in refused.allowed.topics] == [uuid.UUID(int=2)]
    assert [(r.topic_id, r.error_code) for r in refused.refused.responses] == [
        (known, ErrorCode.TOPIC_AUTHORIZATION_FAILED)]


def test_describe_configs_refuses_each_resource_with_its_types_error() -> None:
    request = dc_req.DescribeConfigsRequest(resources=(
        dc_req.DescribeConfigsResource(resource_type=2, resource_name="t",
                                       configuration_keys=None),
        dc_req.DescribeConfigsResource(resource_type=4, resource_name="1",
                                       configuration_keys=None),
    ), include_synonyms=False, include_documentation=False)
    split = split_parts(ApiKey.DESCRIBE_CONFIGS, request, access(), {})
    assert split.allowed is None
    merged = merge_parts(ApiKey.DESCRIBE_CONFIGS, split, None)
    assert isinstance(merged, DescribeConfigsResponse)
    assert [(r.resource_name, r.error_code) for r in merged.results] == [
        ("t", ErrorCode.TOPIC_AUTHORIZATION_FAILED),
        ("1", ErrorCode.CLUSTER_AUTHORIZATION_FAILED)]
