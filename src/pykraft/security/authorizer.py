"""KRaft's StandardAuthorizer as pure rules over the ACLs of a metadata image (KIP-801).

A decision for (principal, host, operation, resource): super users are allowed everything;
otherwise every ACL whose pattern applies to the resource (LITERAL with the same name or
``*``, PREFIXED with a prefix of it) and whose principal (the same or ``User:*``), host (the
same or ``*``) and operation match is considered, and any DENY wins over every ALLOW. ALL
matches every operation; an ALLOW on READ, WRITE, DELETE or ALTER also allows DESCRIBE, and
one on ALTER_CONFIGS allows DESCRIBE_CONFIGS (a DENY implies nothing). When no ACL applies
to the resource at all, ``allow.everyone.if.no.acl.found`` decides.

The ACLs are indexed once per image by (resource type, name) for LITERAL patterns and by
(resource type, prefix) for PREFIXED ones, so a decision looks up the resource's name and
each of its prefixes instead of scanning every ACL.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from pykraft.config.authorizer import AuthorizerConfig
from pykraft.image.acls import (
    WILDCARD,
    AclOperation,
    AclPermissionType,
    AclsImage,
    PatternType,
    ResourceType,
    StandardAcl,
)
from pykraft.security.session import KafkaPrincipal

WILDCARD_PRINCIPAL = "User:*"
_IMPLIES_DESCRIBE = frozenset({AclOperation.DESCRIBE, AclOperation.READ, AclOperation.WRITE,
                               AclOperation.DELETE, AclOperation.ALTER})
_IMPLIES_DESCRIBE_CONFIGS = frozenset({AclOperation.DESCRIBE_CONFIGS,
                                       AclOperation.ALTER_CONFIGS})
_O = AclOperation
#: The operations each resource type knows (Kafka's ``AclEntry.supportedOperations``): the
#: ones an authorized-operations bitfield can contain.
SUPPORTED_OPERATIONS: dict[ResourceType, tuple[AclOperation, ...]] = {
    ResourceType.TOPIC: (_O.READ, _O.WRITE, _O.CREATE, _O.DELETE, _O.ALTER, _O.DESCRIBE,
                         _O.DESCRIBE_CONFIGS, _O.ALTER_CONFIGS),
    ResourceType.GROUP: (_O.READ, _O.DELETE, _O.DESCRIBE, _O.DESCRIBE_CONFIGS,
                         _O.ALTER_CONFIGS),
    ResourceType.CLUSTER: (_O.CREATE, _O.ALTER, _O.DESCRIBE, _O.CLUSTER_ACTION,
                           _O.DESCRIBE_CONFIGS, _O.ALTER_CONFIGS, _O.IDEMPOTENT_WRITE),
    ResourceType.TRANSACTIONAL_ID: (_O.WRITE, _O.DESCRIBE),
    ResourceType.DELEGATION_TOKEN: (_O.DESCRIBE,),
    ResourceType.USER: (_O.CREATE_TOKENS, _O.DESCRIBE_TOKENS),
}


@dataclass(frozen=True, slots=True)
class Action:
    """One operation on one (LITERAL) resource, for :meth:`StandardAuthorizer.authorize_all`."""

    operation: AclOperation
    resource_type: ResourceType
    resource_name: str


def _entry_result(acl: StandardAcl, principals: frozenset[str], host: str,
                  operation: AclOperation) -> AclPermissionType | None:
    """ALLOW or DENY if ``acl`` (whose pattern applies) decides ``operation``, else None."""
    if acl.principal not in principals or acl.host not in (WILDCARD, host):
        return None
    if acl.operation != AclOperation.ALL:
        if acl.permission_type == AclPermissionType.ALLOW:
            if operation == AclOperation.DESCRIBE:
                implied = acl.operation in _IMPLIES_DESCRIBE
            elif operation == AclOperation.DESCRIBE_CONFIGS:
                implied = acl.operation in _IMPLIES_DESCRIBE_CONFIGS
            else:
                implied = acl.operation == operation
            if not implied:
                return None
        elif acl.operation != operation:
            return None
    return acl.permission_type


class StandardAuthorizer:
    """Decisions over one image's ACLs; build a new one when the image changes."""

    def __init__(self, acls: AclsImage, super_users: Iterable[str] = (),
                 allow_everyone_if_no_acl_found: bool = False) -> None:
        self.super_users = frozenset(super_users)
        self.allow_everyone_if_no_acl_found = allow_everyone_if_no_acl_found
        self._literal: dict[tuple[ResourceType, str], list[StandardAcl]] = defaultdict(list)
        self._prefixed: dict[tuple[ResourceType, str], list[StandardAcl]] = defaultdict(list)
        for acl in acls.acls.values():
            index = self._prefixed if acl.pattern_type == PatternType.PREFIXED else (
                self._literal)
            index[acl.resource_type, acl.resource_name].append(acl)

    @classmethod
    def configured(cls, acls: AclsImage, config: AuthorizerConfig) -> StandardAuthorizer:
        return cls(acls, config.super_users, config.allow_everyone_if_no_acl_found)

    def _applicable(self, resource_type: ResourceType, name: str) -> Iterable[StandardAcl]:
        """Every ACL whose pattern applies to the resource."""
        yield from self._literal.get((resource_type, name), ())
        if name != WILDCARD:
            yield from self._literal.get((resource_type, WILDCARD), ())
        for end in range(len(name) + 1):
            yield from self._prefixed.get((resource_type, name[:end]), ())

    def authorize(self, principal: KafkaPrincipal | str, host: str, operation: AclOperation,
                  resource_type: ResourceType, resource_name: str) -> bool:
        """May ``principal`` connecting from ``host`` do ``operation`` on the resource?"""
        text = str(principal)
        if text in self.super_users:
            return True
        principals = frozenset({text, WILDCARD_PRINCIPAL})
        found_acl = allowed = False
        for acl in self._applicable(resource_type, resource_name):
            found_acl = True
            result = _entry_result(acl, principals, host, operation)
            if result == AclPermissionType.DENY:
                return False
            allowed = allowed or result == AclPermissionType.ALLOW
        return allowed or (not found_acl and self.allow_everyone_if_no_acl_found)

    def authorize_all(self, principal: KafkaPrincipal | str, host: str,
                      actions: Sequence[Action]) -> list[bool]:
        """:meth:`authorize` for each action, in order (Kafka's batch ``authorize``)."""
        return [self.authorize(principal, host, a.operation, a.resource_type,
                               a.resource_name) for a in actions]

    def authorized_operations(self, principal: KafkaPrincipal | str, host: str,
                              resource_type: ResourceType, resource_name: str) -> int:
        """The bitfield of allowed operations (bit = operation code) among those the
        resource type supports: Metadata's, DescribeGroups' and DescribeCluster's
        authorized-operations fields."""
        bits = 0
        for operation in SUPPORTED_OPERATIONS.get(resource_type, ()):
            if self.authorize(principal, host, operation, resource_type, resource_name):
                bits |= 1 << operation
        return bits
