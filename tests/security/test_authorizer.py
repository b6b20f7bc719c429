"""The StandardAuthorizer's rules: Kafka's documented examples as a table, and properties
that must hold for any set of ACLs."""

from __future__ import annotations

import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pykraft.config.authorizer import STANDARD_AUTHORIZER, AuthorizerConfig, authorizer_config
from pykraft.errors import ConfigError
from pykraft.image.acls import (
    AclOperation,
    AclPermissionType,
    AclsImage,
    PatternType,
    ResourceType,
    StandardAcl,
)
from pykraft.security.authorizer import Action, StandardAuthorizer
from pykraft.security.session import KafkaPrincipal

Op, T, P = AclOperation, ResourceType, PatternType
ALLOW, DENY = AclPermissionType.ALLOW, AclPermissionType.DENY
ALICE = KafkaPrincipal("User", "alice")


def acl(name: str, operation: AclOperation, permission: AclPermissionType = ALLOW, *,
        pattern: PatternType = P.LITERAL, principal: str = "User:alice", host: str = "*",
        resource_type: ResourceType = T.TOPIC) -> StandardAcl:
    return StandardAcl(resource_type, name, pattern, principal, host, operation, permission)


def authorizer(*acls: StandardAcl, super_users: tuple[str, ...] = (),
               allow_if_none: bool = False) -> StandardAuthorizer:
    image = AclsImage({uuid.UUID(int=i + 1): a for i, a in enumerate(acls)})
    return StandardAuthorizer(image, super_users, allow_if_none)


@pytest.mark.parametrize(("acls", "operation", "name", "allowed"), [
    ([acl("t", Op.READ)], Op.READ, "t", True),
    ([acl("t", Op.READ)], Op.WRITE, "t", False),
    ([acl("t", Op.READ)], Op.READ, "t2", False),
    ([acl("*", Op.READ)], Op.READ, "anything", True),
    ([acl("fo", Op.READ, pattern=P.PREFIXED)], Op.READ, "foo", True),
    ([acl("fo", Op.READ, pattern=P.PREFIXED)], Op.READ, "f", False),
    ([acl("fo", Op.READ)], Op.READ, "foo", False),  # LITERAL is no prefix
    ([acl("t", Op.ALL)], Op.ALTER_CONFIGS, "t", True),
    ([acl("t", Op.READ, principal="User:*")], Op.READ, "t", True),
    ([acl("t", Op.READ, principal="User:bob")], Op.READ, "t", False),
    ([acl("t", Op.READ, host="10.0.0.2")], Op.READ, "t", False),
    ([acl("t", Op.READ, host="10.0.0.1")], Op.READ, "t", True),
    ([acl("t", Op.READ), acl("t", Op.READ, DENY, principal="User:*")], Op.READ, "t", False),
    ([acl("t", Op.ALL), acl("t", Op.WRITE, DENY)], Op.WRITE, "t", False),
    ([acl("t", Op.ALL), acl("t", Op.WRITE, DENY)], Op.READ, "t", True),
    ([acl("*", Op.READ), acl("t", Op.ALL, DENY, pattern=P.PREFIXED)], Op.READ, "topic", False),
    # implied DESCRIBE and DESCRIBE_CONFIGS, from ALLOW only
    ([acl("t", Op.WRITE)], Op.DESCRIBE, "t", True),
    ([acl("t", Op.DELETE)], Op.DESCRIBE, "t", True),
    ([acl("t", Op.ALTER)], Op.DESCRIBE, "t", True),
    ([acl("t", Op.CREATE)], Op.DESCRIBE, "t", False),
    ([acl("t", Op.ALTER_CONFIGS)], Op.DESCRIBE_CONFIGS, "t", True),
    ([acl("t", Op.ALTER_CONFIGS)], Op.DESCRIBE, "t", False),
    ([acl("t", Op.READ), acl("t", Op.READ, DENY)], Op.DESCRIBE, "t", True),
    ([acl("t", Op.DESCRIBE), acl("t", Op.READ, DENY)], Op.DESCRIBE, "t", True),
    ([acl("t", Op.DESCRIBE), acl("t", Op.DESCRIBE, DENY)], Op.DESCRIBE, "t", False),
    # another resource type never applies
    ([acl("t", Op.READ, resource_type=T.GROUP)], Op.READ, "t", False),
], ids=str)
def test_decisions(acls: list[StandardAcl], operation: AclOperation, name: str,
                   allowed: bool) -> None:
    assert authorizer(*acls).authorize(ALICE, "10.0.0.1", operation, T.TOPIC, name) is allowed


def test_super_users_bypass_every_acl() -> None:
    deny_all = acl("*", Op.ALL, DENY, principal="User:*")
    judge = authorizer(deny_all, super_users=("User:admin",))
    assert judge.authorize("User:admin", "h", Op.ALTER, T.CLUSTER, "kafka-cluster")
    assert not judge.authorize(ALICE, "h", Op.READ, T.TOPIC, "t")


def test_allow_everyone_only_when_no_acl_names_the_resource() -> None:
    judge = authorizer(acl("t", Op.READ, principal="User:bob"), allow_if_none=True)
    assert judge.authorize(ALICE, "h", Op.WRITE, T.TOPIC, "other")
    assert not judge.authorize(ALICE, "h", Op.WRITE, T.TOPIC, "t")  # bob's ACL applies
    assert not authorizer().authorize(ALICE, "h", Op.READ, T.TOPIC, "t")


def test_batch_and_authorized_operations() -> None:
    judge = authorizer(acl("t", Op.WRITE), acl("t", Op.ALTER_CONFIGS))
    assert judge.authorize_all(ALICE, "h", [Action(Op.WRITE, T.TOPIC, "t"),
                                            Action(Op.READ, T.TOPIC, "t")]) == [True, False]
    bits = judge.authorized_operations(ALICE, "h", T.TOPIC, "t")
    assert bits == (1 << Op.WRITE) | (1 << Op.DESCRIBE) | (1 << Op.ALTER_CONFIGS) | (
        1 << Op.DESCRIBE_CONFIGS)
    cluster = authorizer(super_users=("User:alice",)).authorized_operations(
        ALICE, "h", T.CLUSTER, "kafka-cluster")
    assert cluster == sum(1 << op for op in (Op.CREATE, Op.ALTER, Op.DESCRIBE, Op.CLUSTER_ACTION,
                                             Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS,
                                             Op.IDEMPOTENT_WRITE))


def test_config_keys() -> None:
    assert authorizer_config({}) is None
    config = authorizer_config({"authorizer.class.name": STANDARD_AUTHORIZER,
                                "super.users": "User:a; User:b;",
                                "allow.everyone.if.no.acl.found": "TRUE"})
    assert config == AuthorizerConfig(frozenset({"User:a", "User:b"}), True)
    with pytest.raises(ConfigError, match=r"authorizer\.class\.name"):
        authorizer_config({"authorizer.class.name": "kafka.security.authorizer.AclAuthorizer"})
    with pytest.raises(ConfigError, match=r"super\.users"):
        authorizer_config({"authorizer.class.name": STANDARD_AUTHORIZER, "super.users": "bob"})
    judge = StandardAuthorizer.configured(AclsImage(), config)
    assert judge.authorize("User:b", "h", Op.READ, T.TOPIC, "t")


# -- properties -------------------------------------------------------------------------------

NAMES = st.sampled_from(["*", "a", "ab", "abc", "b", "ba"])
OPS = st.sampled_from([op for op in AclOperation if op not in (Op.UNKNOWN, Op.ANY)])
CONCRETE_OPS = st.sampled_from([op for op in AclOperation
                                if op not in (Op.UNKNOWN, Op.ANY, Op.ALL)])
ACLS = st.builds(
    StandardAcl, st.sampled_from([T.TOPIC, T.GROUP]), NAMES,
    st.sampled_from([P.LITERAL, P.PREFIXED]), st.sampled_from(["User:a", "User:b", "User:*"]),
    st.sampled_from(["*", "h1", "h2"]), OPS, st.sampled_from([ALLOW, DENY]))
Query = tuple[str, str, AclOperation, ResourceType, str]
QUERY: st.SearchStrategy[Query] = st.tuples(
    st.sampled_from(["User:a", "User:b"]), st.sampled_from(["h1", "h2"]), CONCRETE_OPS,
    st.sampled_from([T.TOPIC, T.GROUP]), st.sampled_from(["a", "ab", "abc", "b", "ba", "c"]))


def _applies(a: StandardAcl, resource_type: ResourceType, name: str) -> bool:
    if a.resource_type != resource_type:
        return False
    if a.pattern_type == P.PREFIXED:
        return name.startswith(a.resource_name)
    return a.resource_name in ("*", name)


@given(st.lists(ACLS, max_size=8), QUERY, st.booleans())
def test_a_matching_deny_always_wins(acls: list[StandardAcl], query: Query, allow: bool
                                     ) -> None:
    principal, host, operation, resource_type, name = query
    deny = StandardAcl(resource_type, name, P.LITERAL, principal, host, operation, DENY)
    judge = authorizer(*acls, deny, allow_if_none=allow)
    assert not judge.authorize(principal, host, operation, resource_type, name)


@given(st.lists(ACLS, max_size=8), QUERY)
def test_a_super_user_is_always_allowed(acls: list[StandardAcl], query: Query) -> None:
    principal, host, operation, resource_type, name = query
    judge = authorizer(*acls, super_users=(principal,))
    assert judge.authorize(principal, host, operation, resource_type, name)


@given(st.lists(ACLS, max_size=8), QUERY, ACLS, st.booleans())
def test_an_acl_for_another_resource_changes_nothing(
        acls: list[StandardAcl], query: Query, extra: StandardAcl, allow: bool) -> None:
    principal, host, operation, resource_type, name = query
    if _applies(extra, resource_type, name):
        return
    before = authorizer(*acls, allow_if_none=allow)
    after = authorizer(*acls, extra, allow_if_none=allow)
    assert (before.authorize(principal, host, operation, resource_type, name)
            == after.authorize(principal, host, operation, resource_type, name))


@given(NAMES.filter(lambda n: n != "*"), st.sampled_from(["a", "ab", "abc", "b", "ba", "c"]),
       CONCRETE_OPS)
def test_a_prefixed_allow_applies_exactly_to_the_names_it_prefixes(
        prefix: str, name: str, operation: AclOperation) -> None:
    judge = authorizer(acl(prefix, operation, pattern=P.PREFIXED))
    assert judge.authorize(ALICE, "h", operation, T.TOPIC, name) is name.startswith(prefix)


@given(st.lists(ACLS, max_size=8), QUERY)
def test_the_index_decides_as_a_scan_of_every_acl(acls: list[StandardAcl], query: Query
                                                  ) -> None:
    """The indexed lookup against the rules applied to every ACL one by one."""
    principal, host, operation, resource_type, name = query
    results = set()
    applicable = [a for a in acls if _applies(a, resource_type, name)]
    for a in applicable:
        if a.principal not in (principal, "User:*") or a.host not in ("*", host):
            continue
        if a.operation in (Op.ALL, operation):
            results.add(a.permission_type)
        elif a.permission_type == ALLOW and (
                (operation == Op.DESCRIBE and a.operation in (Op.READ, Op.WRITE, Op.DELETE,
                                                             Op.ALTER))
                or (operation == Op.DESCRIBE_CONFIGS and a.operation == Op.ALTER_CONFIGS)):
            results.add(ALLOW)
    expected = DENY not in results and ALLOW in results
    assert authorizer(*acls).authorize(principal, host, operation, resource_type,
                                       name) is expected
