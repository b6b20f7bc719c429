"""The per-API authorization rules: every api key a broker or controller serves has one,
and the questions a handler asks are answered as Kafka's AuthHelper answers them."""

from __future__ import annotations

import uuid

import pytest

from pykraft.broker.dispatch import BROKER_APIS
from pykraft.config.authorizer import AuthorizerConfig
from pykraft.image.acls import (
    AclOperation,
    AclPermissionType,
    AclsImage,
    PatternType,
    ResourceType,
    StandardAcl,
)
from pykraft.protocol.apis import ApiKey
from pykraft.protocol.errors import ErrorCode
from pykraft.runtime.controller_service import CONTROLLER_REQUESTS
from pykraft.runtime.node import SERVED_APIS
from pykraft.runtime.sasl_authenticator import SASL_APIS
from pykraft.security.api_rules import (
    BROKER_RULES,
    CONTROLLER_RULES,
    OPERATIONS_OMITTED,
    AuthorizerCache,
    Scope,
    config_resource,
)
from pykraft.security.session import KafkaPrincipal, Session

Op, T = AclOperation, ResourceType
ALICE = Session(KafkaPrincipal("User", "alice"), "127.0.0.1:5000")


def acls(*entries: tuple[ResourceType, str, AclOperation, PatternType]) -> AclsImage:
    return AclsImage({uuid.UUID(int=i + 1): StandardAcl(
        resource_type, name, pattern, "User:alice", "*", operation, AclPermissionType.ALLOW)
        for i, (resource_type, name, operation, pattern) in enumerate(entries)})


def test_every_api_a_broker_serves_has_a_rule() -> None:
    served = frozenset(BROKER_APIS)
    assert sorted(ApiKey(k).name for k in served - BROKER_RULES.keys()) == []


def test_every_api_a_controller_serves_has_a_rule() -> None:
    served = SERVED_APIS | frozenset(CONTROLLER_REQUESTS) | SASL_APIS
    assert sorted(ApiKey(k).name for k in served - CONTROLLER_RULES.keys()) == []


@pytest.mark.parametrize(("rules", "api_key", "scope", "operation"), [
    (BROKER_RULES, ApiKey.API_VERSIONS, Scope.NONE, None),
    (BROKER_RULES, ApiKey.PRODUCE, Scope.TOPICS, Op.WRITE),
    (BROKER_RULES, ApiKey.FETCH, Scope.TOPICS, Op.READ),
    (BROKER_RULES, ApiKey.CREATE_ACLS, Scope.CLUSTER, Op.ALTER),
    (BROKER_RULES, ApiKey.DESCRIBE_ACLS, Scope.CLUSTER, Op.DESCRIBE),
    (BROKER_RULES, ApiKey.JOIN_GROUP, Scope.GROUP, Op.READ),
    (BROKER_RULES, ApiKey.OFFSET_FETCH, Scope.GROUP, Op.DESCRIBE),
    (BROKER_RULES, ApiKey.DELETE_GROUPS, Scope.GROUP, Op.DELETE),
    (BROKER_RULES, ApiKey.DESCRIBE_CLUSTER, Scope.NONE, None),
    (CONTROLLER_RULES, ApiKey.VOTE, Scope.CLUSTER, Op.CLUSTER_ACTION),
    (CONTROLLER_RULES, ApiKey.FETCH, Scope.CLUSTER, Op.CLUSTER_ACTION),
    (CONTROLLER_RULES, ApiKey.BROKER_HEARTBEAT, Scope.CLUSTER, Op.CLUSTER_ACTION),
    (CONTROLLER_RULES, ApiKey.DESCRIBE_CLUSTER, Scope.CLUSTER, Op.ALTER),
    (CONTROLLER_RULES, ApiKey.DESCRIBE_QUORUM, Scope.CLUSTER, Op.DESCRIBE),
    (CONTROLLER_RULES, ApiKey.UPDATE_FEATURES, Scope.CLUSTER, Op.ALTER),
    (CONTROLLER_RULES, ApiKey.ALTER_USER_SCRAM_CREDENTIALS, Scope.CLUSTER, Op.ALTER),
    (CONTROLLER_RULES, ApiKey.ELECT_LEADERS, Scope.CLUSTER, Op.ALTER),
    (CONTROLLER_RULES, ApiKey.ALTER_PARTITION_REASSIGNMENTS, Scope.CLUSTER, Op.ALTER),
    (CONTROLLER_RULES, ApiKey.LIST_PARTITION_REASSIGNMENTS, Scope.CLUSTER, Op.DESCRIBE),
])
def test_kafkas_rules(rules: dict[int, object], api_key: int, scope: Scope,
                      operation: AclOperation | None) -> None:
    rule = rules[api_key]
    assert (rule.scope, rule.operation) == (scope, operation)  # type: ignore[attr-defined]


def test_config_resources_are_checked_on_their_acl_resource() -> None:
    assert config_resource(2, "t") == (T.TOPIC, "t", ErrorCode.TOPIC_AUTHORIZATION_FAILED)
    assert config_resource(4, "1") == (T.CLUSTER, "kafka-cluster",
                                       ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    assert config_resource(32, "g") == (T.GROUP, "g", ErrorCode.GROUP_AUTHORIZATION_FAILED)


def test_without_an_authorizer_everything_is_allowed_and_every_operation_listed() -> None:
    access = AuthorizerCache(None).access(lambda: pytest.fail("image read"), ALICE)
    assert not access.enabled
    assert access.allows(Op.ALTER, T.CLUSTER)
    topic_bits = sum(1 << op for op in (Op.READ, Op.WRITE, Op.CREATE, Op.DELETE, Op.ALTER,
                                        Op.DESCRIBE, Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS))
    assert access.operations(T.TOPIC, "t") == topic_bits
    assert access.cluster_operations(False) == OPERATIONS_OMITTED


def test_answers_over_the_acls() -> None:
    cache = AuthorizerCache(AuthorizerConfig())
    image = acls((T.TOPIC, "t", Op.READ, PatternType.LITERAL))
    access = cache.access(lambda: image, ALICE)
    assert access.allowed(Op.READ, T.TOPIC, ["t", "u", "t"]) == {"t"}
    assert access.operations(T.TOPIC, "t") == (1 << Op.READ) | (1 << Op.DESCRIBE)
    assert access.cluster_operations(True) == 0  # no DESCRIBE on the cluster
    assert cache.access(lambda: image, ALICE).authorizer is access.authorizer  # cached


def test_write_on_any_topic_for_an_idempotent_producer() -> None:
    cache = AuthorizerCache(AuthorizerConfig())
    prefixed = cache.access(lambda: acls((T.TOPIC, "logs-", Op.WRITE, PatternType.PREFIXED)),
                            ALICE)
    assert prefixed.allows_any(Op.WRITE, T.TOPIC)
    reader = cache.access(lambda: acls((T.TOPIC, "t", Op.READ, PatternType.LITERAL)), ALICE)
    assert not reader.allows_any(Op.WRITE, T.TOPIC, ["t"])
    everyone = AuthorizerCache(AuthorizerConfig(allow_everyone_if_no_acl_found=True))
    assert everyone.access(AclsImage, ALICE).allows_any(Op.WRITE, T.TOPIC, ["t"])
