"""ACLs in the metadata log (KIP-801): Kafka's enums, the StandardAcl, binding filters, and
the image of AccessControlEntryRecord / RemoveAccessControlEntryRecord.

The enums and the filter live here, below both the controller (which validates and deletes
with filters) and the authorizer (which judges with the image), so one definition serves
both. Names and text forms are Kafka's (``StandardAcl.toString``, ``ResourcePattern``,
``AccessControlEntry``): the tools print them.
"""

from __future__ import annotations

import enum
import uuid
from collections.abc import Iterator, KeysView, Mapping
from dataclasses import dataclass, field
from typing import Self

from pykraft.errors import MetadataImageError
from pykraft.records.metadata import AccessControlEntryRecord, RemoveAccessControlEntryRecord

WILDCARD = "*"
"""A LITERAL resource name, principal (``User:*``) or host matching every one."""
CLUSTER_NAME = "kafka-cluster"
"""The one name of the CLUSTER resource."""


class _Coded(enum.IntEnum):
    """A Kafka enum with wire codes: an unknown code reads as UNKNOWN (``fromCode``)."""

    @classmethod
    def of(cls, code: int) -> Self:
        try:
            return cls(code)
        except ValueError:
            return cls(0)

    @classmethod
    def parse(cls, name: str) -> Self:
        """By name, case-insensitively (``fromString``); UNKNOWN for anything else."""
        try:
            return cls[name.strip().upper()]
        except KeyError:
            return cls(0)


class ResourceType(_Coded):
    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class PatternType(_Coded):
    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


class AclOperation(_Coded):
    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14


class AclPermissionType(_Coded):
    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


@dataclass(frozen=True, slots=True)
class StandardAcl:
    """One ACL: a resource pattern and an access control entry (Kafka's ``StandardAcl``)."""

    resource_type: ResourceType
    resource_name: str
    pattern_type: PatternType
    principal: str
    host: str
    operation: AclOperation
    permission_type: AclPermissionType

    @classmethod
    def from_record(cls, record: AccessControlEntryRecord) -> StandardAcl:
        return cls(ResourceType.of(record.resource_type), record.resource_name,
                   PatternType.of(record.pattern_type), record.principal, record.host,
                   AclOperation.of(record.operation),
                   AclPermissionType.of(record.permission_type))

    def to_record(self, acl_id: uuid.UUID) -> AccessControlEntryRecord:
        return AccessControlEntryRecord(
            id=acl_id, resource_type=self.resource_type, resource_name=self.resource_name,
            pattern_type=self.pattern_type, principal=self.principal, host=self.host,
            operation=self.operation, permission_type=self.permission_type)

    @property
    def pattern_text(self) -> str:
        """Kafka's ``ResourcePattern.toString``."""
        return (f"ResourcePattern(resourceType={self.resource_type.name}, "
                f"name={self.resource_name}, patternType={self.pattern_type.name})")

    @property
    def entry_text(self) -> str:
        """Kafka's ``AccessControlEntry.toString``."""
        return (f"(principal={self.principal}, host={self.host}, "
                f"operation={self.operation.name}, "
                f"permissionType={self.permission_type.name})")

    def __str__(self) -> str:
        return (f"StandardAcl(resourceType={self.resource_type.name}, "
                f"resourceName={self.resource_name}, patternType={self.pattern_type.name}, "
                f"principal={self.principal}, host={self.host}, "
                f"operation={self.operation.name}, "
                f"permissionType={self.permission_type.name})")


@dataclass(frozen=True, slots=True)
class AclFilter:
    """Kafka's ``AclBindingFilter``: None and the ANY codes match everything; a MATCH
    pattern type with a name matches the patterns that would apply to that name (LITERAL
    equal or ``*``, PREFIXED patterns that prefix it)."""

    resource_type: ResourceType = ResourceType.ANY
    name: str | None = None
    pattern_type: PatternType = PatternType.ANY
    principal: str | None = None
    host: str | None = None
    operation: AclOperation = AclOperation.ANY
    permission_type: AclPermissionType = AclPermissionType.ANY

    def unknown_problem(self) -> str | None:
        """Kafka's AclControlManager.validateFilter refusal, if any."""
        if self.pattern_type == PatternType.UNKNOWN or (
                self.resource_type == ResourceType.UNKNOWN):
            return "Unknown patternFilter."
        if self.operation == AclOperation.UNKNOWN or (
                self.permission_type == AclPermissionType.UNKNOWN):
            return "Unknown entryFilter."
        return None

    def matches(self, acl: StandardAcl) -> bool:
        return self._matches_pattern(acl) and self._matches_entry(acl)

    def _matches_pattern(self, acl: StandardAcl) -> bool:
        if self.resource_type not in (ResourceType.ANY, acl.resource_type):
            return False
        if self.pattern_type not in (PatternType.ANY, PatternType.MATCH, acl.pattern_type):
            return False
        if self.name is None:
            return True
        if self.pattern_type in (PatternType.ANY, acl.pattern_type):
            return self.name == acl.resource_name
        if acl.pattern_type == PatternType.LITERAL:
            return acl.resource_name in (self.name, WILDCARD)
        return acl.pattern_type == PatternType.PREFIXED and self.name.startswith(
            acl.resource_name)

    def _matches_entry(self, acl: StandardAcl) -> bool:
        return ((self.principal is None or self.principal == acl.principal)
                and (self.host is None or self.host == acl.host)
                and self.operation in (AclOperation.ANY, acl.operation)
                and self.permission_type in (AclPermissionType.ANY, acl.permission_type))


@dataclass(frozen=True, slots=True)
class AclsImage:
    """Every ACL by its id."""

    acls: Mapping[uuid.UUID, StandardAcl] = field(default_factory=dict)

    def matching(self, acl_filter: AclFilter) -> Iterator[tuple[uuid.UUID, StandardAcl]]:
        return ((acl_id, acl) for acl_id, acl in self.acls.items() if acl_filter.matches(acl))

    def records(self) -> Iterator[tuple[object, int]]:
        for acl_id in sorted(self.acls):
            yield self.acls[acl_id].to_record(acl_id), 0


class AclsDelta:
    """ACLs added and removed on top of an image, kept apart from it so a write of one ACL
    does not copy all of them; a removal of an unknown id is corrupt metadata, as in Kafka's
    replay."""

    def __init__(self, image: AclsImage) -> None:
        self._image = image
        self._changed: dict[uuid.UUID, StandardAcl | None] = {}
        """Touched ids: the new ACL, or None once removed."""

    @property
    def touched(self) -> KeysView[uuid.UUID]:
        """The ACL ids a record added or removed (Kafka's ``changes()``)."""
        return self._changed.keys()

    def replay(self, record: AccessControlEntryRecord | RemoveAccessControlEntryRecord) -> None:
        if isinstance(record, AccessControlEntryRecord):
            self._changed[record.id] = StandardAcl.from_record(record)
            return
        current = (self._changed[record.id] if record.id in self._changed
                   else self._image.acls.get(record.id))
        if current is None:
            raise MetadataImageError(f"Unable to replay {record}: no acl with that ID found.")
        self._changed[record.id] = None

    def apply(self) -> AclsImage:
        if not self._changed:
            return self._image
        acls = dict(self._image.acls)
        for acl_id, acl in self._changed.items():
            if acl is None:
                acls.pop(acl_id, None)
            else:
                acls[acl_id] = acl
        return AclsImage(acls)
