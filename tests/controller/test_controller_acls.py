"""CreateAcls, DeleteAcls and DescribeAcls on the controller: Kafka's validation, no-op
re-creation, ids from the injected randomness, filters with ANY and MATCH."""

from __future__ import annotations

import random
from typing import Any

import pytest

from pykraft.config.authorizer import STANDARD_AUTHORIZER
from pykraft.controller import acl_control
from pykraft.controller.acl_control import create_acls, delete_acls, describe_acls
from pykraft.controller.context import ControllerConfig, ControllerContext, ControllerResult
from pykraft.image.acls import AclOperation, AclPermissionType, PatternType, ResourceType
from pykraft.image.image import MetadataDelta, MetadataImage
from pykraft.messages.kafka.create_acls_request import AclCreation, CreateAclsRequest
from pykraft.messages.kafka.delete_acls_request import DeleteAclsFilter, DeleteAclsRequest
from pykraft.messages.kafka.describe_acls_request import DescribeAclsRequest
from pykraft.protocol.errors import ErrorCode

ENABLED = ControllerConfig(node_id=1, properties={"authorizer.class.name": STANDARD_AUTHORIZER})
T, P, Op = ResourceType, PatternType, AclOperation
ALLOW, DENY = AclPermissionType.ALLOW, AclPermissionType.DENY


def creation(name: str = "t", *, resource_type: int = T.TOPIC, pattern: int = P.LITERAL,
             principal: str = "User:alice", host: str = "*", operation: int = Op.READ,
             permission: int = ALLOW) -> AclCreation:
    return AclCreation(resource_type=resource_type, resource_name=name,
                       resource_pattern_type=pattern, principal=principal, host=host,
                       operation=operation, permission_type=permission)


def wire_filter(name: str | None = None, *, resource_type: int = T.ANY,
                pattern: int = P.ANY, principal: str | None = None,
                operation: int = Op.ANY, permission: int = AclPermissionType.ANY
                ) -> DeleteAclsFilter:
    return DeleteAclsFilter(resource_type_filter=resource_type, resource_name_filter=name,
                            pattern_type_filter=pattern, principal_filter=principal,
                            host_filter=None, operation=operation,
                            permission_type=permission)


def context(image: MetadataImage, config: ControllerConfig = ENABLED,
            seed: int = 0) -> ControllerContext:
    return ControllerContext(config, image, 0, 0, random.Random(seed))


def applied(image: MetadataImage, result: ControllerResult) -> MetadataImage:
    delta = MetadataDelta(image)
    for record in result.records:
        delta.replay(record)
    return delta.apply()


def errors(response: Any) -> list[tuple[ErrorCode, str | None]]:
    parts = getattr(response, "results", None) or response.filter_results
    return [(part.error_code, part.error_message) for part in parts]


def test_create_validates_each_acl_as_kafka_does() -> None:
    bad = [
        creation(resource_type=T.CLUSTER, name="c"),
        creation(name=""),
        creation(resource_type=T.ANY),
        creation(pattern=P.MATCH),
        creation(operation=Op.ANY),
        creation(permission=AclPermissionType.ANY),
        creation(principal="alice"),
    ]
    result = create_acls(context(MetadataImage()),
                         CreateAclsRequest(creations=(creation(), *bad)))
    invalid = ErrorCode.INVALID_REQUEST
    assert errors(result.response) == [
        (ErrorCode.NONE, ""),  # Kafka's AclApis sets no message: the schema's default
        (invalid, "The only valid name for the CLUSTER resource is kafka-cluster"),
        (invalid, "Invalid empty resource name"),
        (invalid, "Invalid resourceType ANY"),
        (invalid, "Invalid patternType MATCH"),
        (invalid, "Invalid operation ANY"),
        (invalid, "Invalid permissionType ANY"),
        (invalid, "Could not parse principal from `alice` (no colon is present separating "
                  "the principal type from the principal name)"),
    ]
    assert len(result.records) == 1


def test_creating_an_existing_acl_is_a_success_without_a_record() -> None:
    request = CreateAclsRequest(creations=(creation(), creation()))
    first = create_acls(context(MetadataImage()), request)
    assert len(first.records) == 1 and errors(first.response) == [(ErrorCode.NONE, "")] * 2
    image = applied(MetadataImage(), first)
    again = create_acls(context(image), request)
    assert again.records == () and errors(again.response) == [(ErrorCode.NONE, "")] * 2


def test_ids_come_from_the_injected_randomness() -> None:
    request = CreateAclsRequest(creations=(creation("a"), creation("b")))
    records: list[Any] = [create_acls(context(MetadataImage(), seed=7), request).records
                          for _ in range(2)]
    ids = [[record.id for record in batch] for batch in records]
    assert ids[0] == ids[1] and len(set(ids[0])) == 2


def test_without_an_authorizer_every_acl_api_is_security_disabled() -> None:
    plain = ControllerConfig(node_id=1)
    created = create_acls(context(MetadataImage(), plain),
                          CreateAclsRequest(creations=(creation(),)))
    assert created.records == ()
    assert errors(created.response) == [(ErrorCode.SECURITY_DISABLED,
                                         "No Authorizer is configured.")]
    deleted = delete_acls(context(MetadataImage(), plain),
                          DeleteAclsRequest(filters=(wire_filter(),)))
    assert errors(deleted.response) == [(ErrorCode.SECURITY_DISABLED,
                                         "No Authorizer is configured.")]
    described = describe_acls(MetadataImage(), describe_request(), enabled=False)
    assert (described.error_code, described.error_message) == (
        ErrorCode.SECURITY_DISABLED, "No Authorizer is configured on the broker")


def _image_with(*creations: AclCreation) -> MetadataImage:
    return applied(MetadataImage(), create_acls(context(MetadataImage()),
                                                CreateAclsRequest(creations=creations)))


def test_delete_answers_each_filter_with_what_it_matched() -> None:
    image = _image_with(creation("app-1"), creation("app-", pattern=P.PREFIXED),
                        creation("*"), creation("other"),
                        creation("g", resource_type=T.GROUP, operation=Op.DESCRIBE))
    request = DeleteAclsRequest(filters=(
        wire_filter("app-1", resource_type=T.TOPIC, pattern=P.MATCH),
        wire_filter(resource_type=T.GROUP),
        wire_filter("app-1", resource_type=T.TOPIC, pattern=P.LITERAL),  # again: reported
        wire_filter(pattern=P.UNKNOWN),
    ))
    result = delete_acls(context(image), request)
    response: Any = result.response
    matched = [sorted(m.resource_name for m in r.matching_acls)
               for r in response.filter_results]
    assert matched == [["*", "app-", "app-1"], ["g"], ["app-1"], []]
    assert errors(response)[3] == (ErrorCode.INVALID_REQUEST, "Unknown patternFilter.")
    assert len(result.records) == 4  # each removed once
    left = applied(image, result)
    assert [a.resource_name for a in left.acls.acls.values()] == ["other"]


def test_creating_more_acls_than_one_operation_takes_refuses_them_all(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Kafka's bounded record list (MAX_RECORDS_PER_USER_OP, here 2): one new ACL past it
    and every creation gets POLICY_VIOLATION, nothing is written."""
    monkeypatch.setattr(acl_control, "MAX_RECORDS_PER_USER_OP", 2)
    image = _image_with(creation("a"))
    result = create_acls(context(image), CreateAclsRequest(creations=(
        creation("a"), creation(""), creation("b"), creation("c"), creation("d"))))
    assert result.records == ()
    assert errors(result.response) == [(
        ErrorCode.POLICY_VIOLATION, "Unable to perform excessively large batch operation.")] * 5


def test_a_delete_filter_past_the_bound_fails_on_its_own(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Kafka throws for the filter whose removals pass MAX_RECORDS_PER_USER_OP (here 2):
    UNKNOWN_SERVER_ERROR without a message for it, the other filters answered."""
    image = _image_with(creation("a"), creation("b"), creation("c"))
    monkeypatch.setattr(acl_control, "MAX_RECORDS_PER_USER_OP", 2)
    result = delete_acls(context(image), DeleteAclsRequest(filters=(
        wire_filter("a"), wire_filter(), wire_filter("a"), wire_filter("b"))))
    response: Any = result.response
    assert [(r.error_code, r.error_message, [m.resource_name for m in r.matching_acls])
            for r in response.filter_results] == [
        (ErrorCode.NONE, None, ["a"]), (ErrorCode.UNKNOWN_SERVER_ERROR, None, []),
        (ErrorCode.NONE, None, ["a"]), (ErrorCode.NONE, None, ["b"])]
    assert sorted(a.resource_name for a in applied(image, result).acls.acls.values()) == ["c"]


def describe_request(name: str | None = None, resource_type_filter: int = T.ANY,
                     pattern_type_filter: int = P.ANY) -> DescribeAclsRequest:
    return DescribeAclsRequest(resource_name_filter=name, principal_filter=None,
                               host_filter=None, resource_type_filter=resource_type_filter,
                               pattern_type_filter=pattern_type_filter, operation=Op.ANY,
                               permission_type=AclPermissionType.ANY)


def test_describe_groups_the_matching_acls_by_resource_pattern() -> None:
    image = _image_with(creation("t"), creation("t", principal="User:bob", operation=Op.WRITE),
                        creation("t", pattern=P.PREFIXED), creation("u"))
    response = describe_acls(image, describe_request("t", resource_type_filter=T.TOPIC,
                                                     pattern_type_filter=P.MATCH),
                             enabled=True)
    assert response.error_code == ErrorCode.NONE
    assert [(r.resource_name, int(r.pattern_type), sorted(a.principal for a in r.acls))
            for r in response.resources] == [
        ("t", P.LITERAL, ["User:alice", "User:bob"]), ("t", P.PREFIXED, ["User:alice"])]
    everything = describe_acls(image, describe_request(), enabled=True)
    assert sum(len(r.acls) for r in everything.resources) == 4
