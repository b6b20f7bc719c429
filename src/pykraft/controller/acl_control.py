"""CreateAcls, DeleteAcls and DescribeAcls: Kafka's AclApis checks and AclControlManager.

CreateAcls validates each creation on its own (a refused one does not stop the others) and
appends an AccessControlEntryRecord, under a fresh id from the controller's randomness, for
each ACL not already present; an ACL that exists is a success without a record. DeleteAcls
appends a RemoveAccessControlEntryRecord for every ACL any filter matches, and answers each
filter with the ACLs it matched. As in Kafka, neither writes more than
MAX_RECORDS_PER_USER_OP records: past it, a CreateAcls is refused whole (POLICY_VIOLATION),
a DeleteAcls filter on its own. DescribeAcls is a read of an image (the broker answers it
from its own). Without ``authorizer.class.name`` all three answer SECURITY_DISABLED.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable

from pykraft.config.authorizer import authorizer_config
from pykraft.controller.context import (
    MAX_RECORDS_PER_USER_OP,
    TOO_LARGE_MESSAGE,
    ControllerContext,
    ControllerResult,
)
from pykraft.controller.responses import error_response
from pykraft.ids import random_uuid
from pykraft.image.acls import (
    CLUSTER_NAME,
    AclFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
    StandardAcl,
)
from pykraft.image.image import MetadataImage
from pykraft.messages.kafka import create_acls_request as create_req
from pykraft.messages.kafka import create_acls_response as create_resp
from pykraft.messages.kafka import delete_acls_request as delete_req
from pykraft.messages.kafka import delete_acls_response as delete_resp
from pykraft.messages.kafka import describe_acls_request as describe_req
from pykraft.messages.kafka import describe_acls_response as describe_resp
from pykraft.protocol.errors import ErrorCode
from pykraft.records.metadata import RemoveAccessControlEntryRecord

NO_AUTHORIZER = "No Authorizer is configured."
NO_AUTHORIZER_ON_BROKER = "No Authorizer is configured on the broker"


def creation_acl(creation: create_req.AclCreation) -> StandardAcl:
    return StandardAcl(
        ResourceType.of(creation.resource_type), creation.resource_name,
        PatternType.of(creation.resource_pattern_type), creation.principal, creation.host,
        AclOperation.of(creation.operation), AclPermissionType.of(creation.permission_type))


def creation_problem(acl: StandardAcl) -> str | None:
    """Why Kafka refuses to create ``acl`` (INVALID_REQUEST), None if it may be created:
    AclApis' resource name checks, then AclControlManager.validateNewAcl's."""
    if acl.resource_type == ResourceType.CLUSTER and acl.resource_name != CLUSTER_NAME:
        return f"The only valid name for the CLUSTER resource is {CLUSTER_NAME}"
    if not acl.resource_name:
        return "Invalid empty resource name"
    if acl.resource_type in (ResourceType.UNKNOWN, ResourceType.ANY):
        return f"Invalid resourceType {acl.resource_type.name}"
    if acl.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
        return f"Invalid patternType {acl.pattern_type.name}"
    if acl.operation in (AclOperation.UNKNOWN, AclOperation.ANY):
        return f"Invalid operation {acl.operation.name}"
    if acl.permission_type not in (AclPermissionType.DENY, AclPermissionType.ALLOW):
        return f"Invalid permissionType {acl.permission_type.name}"
    if ":" not in acl.principal:
        return (f"Could not parse principal from `{acl.principal}` (no colon is present "
                f"separating the principal type from the principal name)")
    return None


def _enabled(ctx: ControllerContext) -> bool:
    return authorizer_config(ctx.config.properties) is not None


def create_acls(ctx: ControllerContext, req: create_req.CreateAclsRequest) -> ControllerResult:
    if not _enabled(ctx):
        return ControllerResult((), error_response(req, ErrorCode.SECURITY_DISABLED,
                                                   NO_AUTHORIZER))
    existing = set(ctx.image.acls.acls.values())
    taken = set(ctx.image.acls.acls)
    records: list[object] = []
    results = []
    for creation in req.creations:
        acl = creation_acl(creation)
        problem = creation_problem(acl)
        if problem is None and acl not in existing:
            existing.add(acl)
            acl_id = random_uuid(lambda: uuid.UUID(int=ctx.rng.getrandbits(128)))
            while acl_id in taken:
                acl_id = random_uuid(lambda: uuid.UUID(int=ctx.rng.getrandbits(128)))
            taken.add(acl_id)
            records.append(acl.to_record(acl_id))
            if len(records) > MAX_RECORDS_PER_USER_OP:  # every creation refused, as Kafka
                return ControllerResult((), error_response(req, ErrorCode.POLICY_VIOLATION,
                                                           TOO_LARGE_MESSAGE))
        results.append(create_resp.AclCreationResult(
            error_code=ErrorCode.NONE if problem is None else ErrorCode.INVALID_REQUEST,
            error_message="" if problem is None else problem))  # Kafka's AclApis: unset
    return ControllerResult(tuple(records), create_resp.CreateAclsResponse(
        results=tuple(results)))


def delete_filter(f: delete_req.DeleteAclsFilter) -> AclFilter:
    return AclFilter(ResourceType.of(f.resource_type_filter), f.resource_name_filter,
                     PatternType.of(f.pattern_type_filter), f.principal_filter, f.host_filter,
                     AclOperation.of(f.operation), AclPermissionType.of(f.permission_type))


def _matching(acl: StandardAcl) -> delete_resp.DeleteAclsMatchingAcl:
    return delete_resp.DeleteAclsMatchingAcl(
        error_code=ErrorCode.NONE, error_message=None, resource_type=acl.resource_type,
        resource_name=acl.resource_name, pattern_type=acl.pattern_type,
        principal=acl.principal, host=acl.host, operation=acl.operation,
        permission_type=acl.permission_type)


#: A filter whose removals would take the request past MAX_RECORDS_PER_USER_OP: Kafka's
#: AclControlManager throws for it, answered UNKNOWN_SERVER_ERROR without a message; it
#: removes nothing here (Kafka keeps the one record past the bound it had added).
_TOO_MANY_REMOVED = delete_resp.DeleteAclsFilterResult(
    error_code=ErrorCode.UNKNOWN_SERVER_ERROR, error_message=None, matching_acls=())


def delete_acls(ctx: ControllerContext, req: delete_req.DeleteAclsRequest) -> ControllerResult:
    if not _enabled(ctx):
        return ControllerResult((), error_response(req, ErrorCode.SECURITY_DISABLED,
                                                   NO_AUTHORIZER))
    removed: dict[uuid.UUID, None] = {}  # ordered: the records follow the filters
    results = []
    for wire_filter in req.filters:
        acl_filter = delete_filter(wire_filter)
        problem = acl_filter.unknown_problem()
        matched = [] if problem is not None else list(ctx.image.acls.matching(acl_filter))
        fresh = [acl_id for acl_id, _ in matched if acl_id not in removed]
        if len(removed) + len(fresh) > MAX_RECORDS_PER_USER_OP:
            results.append(_TOO_MANY_REMOVED)
            continue
        removed.update(dict.fromkeys(fresh))
        results.append(delete_resp.DeleteAclsFilterResult(
            error_code=ErrorCode.NONE if problem is None else ErrorCode.INVALID_REQUEST,
            error_message=problem, matching_acls=tuple(_matching(acl) for _, acl in matched)))
    return ControllerResult(
        tuple(RemoveAccessControlEntryRecord(id=acl_id) for acl_id in removed),
        delete_resp.DeleteAclsResponse(filter_results=tuple(results)))


def describe_filter(req: describe_req.DescribeAclsRequest) -> AclFilter:
    return AclFilter(ResourceType.of(req.resource_type_filter), req.resource_name_filter,
                     PatternType.of(req.pattern_type_filter), req.principal_filter,
                     req.host_filter, AclOperation.of(req.operation),
                     AclPermissionType.of(req.permission_type))


def _resources(acls: Iterable[StandardAcl]) -> tuple[describe_resp.DescribeAclsResource, ...]:
    """The matched ACLs grouped by resource pattern (Kafka's ``aclsResources``)."""
    by_pattern: dict[tuple[ResourceType, str, PatternType], dict[StandardAcl, None]] = {}
    for acl in sorted(acls, key=lambda a: (a.resource_type, a.resource_name, a.pattern_type,
                                           a.principal, a.host, a.operation,
                                           a.permission_type)):
        key = (acl.resource_type, acl.resource_name, acl.pattern_type)
        by_pattern.setdefault(key, {})[acl] = None
    return tuple(
        describe_resp.DescribeAclsResource(
            resource_type=resource_type, resource_name=name, pattern_type=pattern,
            acls=tuple(describe_resp.AclDescription(
                principal=acl.principal, host=acl.host, operation=acl.operation,
                permission_type=acl.permission_type) for acl in entries))
        for (resource_type, name, pattern), entries in by_pattern.items())


def describe_acls(image: MetadataImage, req: describe_req.DescribeAclsRequest, *,
                  enabled: bool) -> describe_resp.DescribeAclsResponse:
    """The ACLs of ``image`` that the request's filter matches (``enabled``: an authorizer
    is configured on the answering node)."""
    if not enabled:
        return describe_resp.DescribeAclsResponse(
            error_code=ErrorCode.SECURITY_DISABLED, error_message=NO_AUTHORIZER_ON_BROKER)
    acl_filter = describe_filter(req)
    return describe_resp.DescribeAclsResponse(
        error_code=ErrorCode.NONE, error_message="",
        resources=_resources(acl for _, acl in image.acls.matching(acl_filter)))
