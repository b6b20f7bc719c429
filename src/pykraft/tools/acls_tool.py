"""``pykraft acls``: Kafka's ``kafka-acls.sh`` (AclCommand) over CreateAcls, DeleteAcls and
DescribeAcls.

Interface (the CLI in :mod:`pykraft.cli.acls` is a thin shell over it)::

    plan = AclOptions(topics=("t",), allow_principals=("User:alice",), operations=("Read",))
    async with AdminClient(admin_settings(bootstrap)) as admin:
        for line in await add_acls(admin, plan): print(line)

The options expand as Kafka's do: every resource (``--topic``, ``--group``, ``--cluster``,
``--transactional-id``) gets one entry per principal, operation and host (``*`` when no host
is given; ALL when no operation is); ``--producer`` means WRITE, DESCRIBE and CREATE on the
topics and WRITE, DESCRIBE on the transactional ids, ``--consumer`` READ and DESCRIBE on the
topics and READ on the groups. The output is Kafka's text (``Current ACLs for resource
`ResourcePattern(...)`:`` and one ``(principal=..., ...)`` line per entry).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass

from pykraft.errors import UsageError
from pykraft.image.acls import (
    CLUSTER_NAME,
    WILDCARD,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
    StandardAcl,
)
from pykraft.messages.kafka.create_acls_request import AclCreation, CreateAclsRequest
from pykraft.messages.kafka.create_acls_response import CreateAclsResponse
from pykraft.messages.kafka.delete_acls_request import DeleteAclsFilter, DeleteAclsRequest
from pykraft.messages.kafka.delete_acls_response import DeleteAclsResponse
from pykraft.messages.kafka.describe_acls_request import DescribeAclsRequest
from pykraft.messages.kafka.describe_acls_response import DescribeAclsResponse
from pykraft.security.authorizer import SUPPORTED_OPERATIONS
from pykraft.tools.admin_client import raise_for

#: Sends a request to the cluster and returns its answer (:meth:`AdminClient.request`).
Request = Callable[[object], Awaitable[object]]
Pattern = tuple[ResourceType, str, PatternType]
Entry = tuple[str, str, AclOperation, AclPermissionType]
"""(principal, host, operation, permission)."""



@dataclass(frozen=True, slots=True)
class AclOptions:
    topics: tuple[str, ...] = ()
    groups: tuple[str, ...] = ()
    transactional_ids: tuple[str, ...] = ()
    cluster: bool = False
    pattern_type: str = "LITERAL"
    operations: tuple[str, ...] = ()
    allow_principals: tuple[str, ...] = ()
    deny_principals: tuple[str, ...] = ()
    allow_hosts: tuple[str, ...] = ()
    deny_hosts: tuple[str, ...] = ()
    producer: bool = False
    consumer: bool = False
    idempotent: bool = False


def parse_operation(name: str) -> AclOperation:
    """``Read``, ``READ``, ``DescribeConfigs`` or ``describe_configs``."""
    wanted = name.strip().replace("_", "").replace("-", "").upper()
    for operation in AclOperation:
        if operation.name.replace("_", "") == wanted and operation not in (
                AclOperation.UNKNOWN, AclOperation.ANY):
            return operation
    raise UsageError(f"Invalid operation {name!r}: valid names are "
                     + ", ".join(op.name for op in AclOperation if op > AclOperation.ANY))


def _pattern_type(options: AclOptions) -> PatternType:
    pattern = PatternType.parse(options.pattern_type)
    if pattern == PatternType.UNKNOWN:
        raise UsageError(f"Invalid --resource-pattern-type {options.pattern_type!r}: one of "
                         "ANY, MATCH, LITERAL, PREFIXED")
    return pattern


def resources(options: AclOptions, *, required: bool = True) -> list[Pattern]:
    """The resource pattern (filters) the options name, in Kafka's order."""
    pattern = _pattern_type(options)
    found: list[Pattern] = [(ResourceType.TOPIC, t.strip(), pattern) for t in options.topics]
    if pattern == PatternType.LITERAL and (options.cluster or options.idempotent):
        found.append((ResourceType.CLUSTER, CLUSTER_NAME, PatternType.LITERAL))
    found += [(ResourceType.GROUP, g.strip(), pattern) for g in options.groups]
    found += [(ResourceType.TRANSACTIONAL_ID, t, pattern) for t in options.transactional_ids]
    if not found and required:
        raise UsageError("You must provide at least one resource: --topic <topic> or "
                         "--cluster or --group <group> or --delegation-token "
                         "<Delegation Token ID>")
    return list(dict.fromkeys(found))


def _entries(options: AclOptions, operations: Iterable[AclOperation]) -> list[Entry]:
    for principal in (*options.allow_principals, *options.deny_principals):
        if ":" not in principal.strip():
            raise UsageError(f"expected a string in format principalType:principalName but "
                             f"got {principal.strip()}")
    ops = sorted(set(operations))
    entries: list[Entry] = []
    for principals, hosts, permission in (
            (options.allow_principals, options.allow_hosts, AclPermissionType.ALLOW),
            (options.deny_principals, options.deny_hosts, AclPermissionType.DENY)):
        for principal in principals:
            for operation in ops:
                for host in hosts or (WILDCARD,):
                    entries.append((principal.strip(), host.strip(), operation, permission))
    return list(dict.fromkeys(entries))


def resource_entries(options: AclOptions) -> dict[Pattern, list[Entry]]:
    """Each resource pattern with the entries to add or remove on it."""
    found = resources(options)
    plan: dict[Pattern, list[Entry]] = {}
    if not options.producer and not options.consumer:
        chosen = [parse_operation(o) for o in options.operations] or [AclOperation.ALL]
        plan = {resource: _entries(options, chosen) for resource in found}
    if options.producer:
        o = AclOperation
        for resource in found:
            if resource[0] == ResourceType.TOPIC:
                plan[resource] = _entries(options, (o.WRITE, o.DESCRIBE, o.CREATE))
            elif resource[0] == ResourceType.TRANSACTIONAL_ID:
                plan[resource] = _entries(options, (o.WRITE, o.DESCRIBE))
        if options.idempotent:
            plan[ResourceType.CLUSTER, CLUSTER_NAME, PatternType.LITERAL] = _entries(
                options, (o.IDEMPOTENT_WRITE,))
    if options.consumer:
        for resource in found:
            ops: tuple[AclOperation, ...]
            if resource[0] == ResourceType.TOPIC:
                ops = (AclOperation.READ, AclOperation.DESCRIBE)
            elif resource[0] == ResourceType.GROUP:
                ops = (AclOperation.READ,)
            else:
                continue
            plan[resource] = list(dict.fromkeys([*plan.get(resource, []),
                                                 *_entries(options, ops)]))
    for resource, entries in plan.items():
        valid = {*SUPPORTED_OPERATIONS[resource[0]], AclOperation.ALL}
        if any(entry[2] not in valid for entry in entries):
            raise UsageError(f"ResourceType {resource[0].name} only supports operations "
                             + ", ".join(sorted(op.name for op in valid)))
    return plan


def pattern_text(pattern: Pattern) -> str:
    return StandardAcl(pattern[0], pattern[1], pattern[2], "", "", AclOperation.ALL,
                       AclPermissionType.ALLOW).pattern_text


def entry_text(entry: Entry) -> str:
    return (f"(principal={entry[0]}, host={entry[1]}, operation={entry[2].name}, "
            f"permissionType={entry[3].name})")


def _block(title: str, entries: Sequence[Entry]) -> list[str]:
    """Kafka's ``s"$title $Newline ${entries.map("\\t" + _).mkString(Newline)} $Newline"``."""
    body = "\n".join("\t" + entry_text(entry) for entry in entries)
    return [f"{title} \n {body} \n"]


async def add_acls(request: Request, options: AclOptions) -> list[str]:
    if _pattern_type(options) not in (PatternType.LITERAL, PatternType.PREFIXED):
        raise UsageError(f"A '--resource-pattern-type' value of '{options.pattern_type}' is "
                         "not valid when adding acls.")
    plan = resource_entries(options)
    if any(not entries for entries in plan.values()):
        raise UsageError("You must specify one of: --allow-principal, --deny-principal when "
                         "trying to add ACLs.")
    lines: list[str] = []
    for pattern, entries in plan.items():
        lines += _block(f"Adding ACLs for resource `{pattern_text(pattern)}`:", entries)
        answer = await request(CreateAclsRequest(creations=tuple(
            AclCreation(resource_type=pattern[0], resource_name=pattern[1],
                        resource_pattern_type=pattern[2], principal=principal, host=host,
                        operation=operation, permission_type=permission)
            for principal, host, operation, permission in entries)))
        assert isinstance(answer, CreateAclsResponse)
        for result in answer.results:
            raise_for(result.error_code, result.error_message)
    return lines


def remove_prompts(options: AclOptions) -> list[tuple[str, Pattern, list[Entry]]]:
    """Kafka's confirmation question for each resource filter, with what it removes."""
    prompts = []
    for pattern, entries in resource_entries(options).items():
        if entries:
            body = "\n".join("\t" + entry_text(entry) for entry in entries)
            question = (f"Are you sure you want to remove ACLs: \n {body} \n from resource "
                        f"filter `{pattern_text(pattern)}`? (y/n)")
        else:
            question = ("Are you sure you want to delete all ACLs for resource filter "
                        f"`{pattern_text(pattern)}`? (y/n)")
        prompts.append((question, pattern, entries))
    return prompts


async def remove_acls(request: Request, pattern: Pattern, entries: Sequence[Entry]) -> None:
    """Delete the entries on the resource filter (every entry when none is given)."""
    filters = [(None, None, AclOperation.ANY, AclPermissionType.ANY)] if not entries else [
        (principal, host, operation, permission)
        for principal, host, operation, permission in entries]
    answer = await request(DeleteAclsRequest(filters=tuple(
        DeleteAclsFilter(resource_type_filter=pattern[0], resource_name_filter=pattern[1],
                         pattern_type_filter=pattern[2], principal_filter=principal,
                         host_filter=host, operation=operation, permission_type=permission)
        for principal, host, operation, permission in filters)))
    assert isinstance(answer, DeleteAclsResponse)
    for result in answer.filter_results:
        raise_for(result.error_code, result.error_message)


async def describe(request: Request, options: AclOptions) -> dict[Pattern, list[Entry]]:
    """Every ACL the options' resource filters (or all, without one) match."""
    wanted: list[tuple[ResourceType, str | None, PatternType]] = [
        *resources(options, required=False)] or [(ResourceType.ANY, None, PatternType.ANY)]
    found: dict[Pattern, list[Entry]] = {}
    for resource_type, name, pattern in wanted:
        answer = await request(DescribeAclsRequest(
            resource_type_filter=resource_type, resource_name_filter=name,
            pattern_type_filter=pattern, principal_filter=None, host_filter=None,
            operation=AclOperation.ANY, permission_type=AclPermissionType.ANY))
        assert isinstance(answer, DescribeAclsResponse)
        raise_for(answer.error_code, answer.error_message)
        for res in answer.resources:
            key = (ResourceType.of(res.resource_type), res.resource_name,
                   PatternType.of(res.pattern_type))
            entries = found.setdefault(key, [])
            entries += [entry for entry in (
                (a.principal, a.host, AclOperation.of(a.operation),
                 AclPermissionType.of(a.permission_type)) for a in res.acls)
                if entry not in entries]
    return {key: sorted(found[key]) for key in sorted(found)}


def list_lines(found: dict[Pattern, list[Entry]], principals: Sequence[str] = ()) -> list[str]:
    """Kafka's listing; with ``--principal``, one section per principal."""
    if not principals:
        return [line for pattern, entries in found.items() for line in _block(
            f"Current ACLs for resource `{pattern_text(pattern)}`:", entries)]
    lines = []
    for principal in principals:
        lines.append(f"ACLs for principal `{principal}`")
        mine = {p: [e for e in entries if e[0] == principal] for p, entries in found.items()}
        lines += list_lines({p: e for p, e in mine.items() if e})
    return lines


def as_json(found: dict[Pattern, list[Entry]]) -> list[dict[str, str]]:
    """One object per ACL binding, with Kafka's names."""
    return [{"resourceType": p[0].name, "name": p[1], "patternType": p[2].name,
             "principal": e[0], "host": e[1], "operation": e[2].name,
             "permissionType": e[3].name}
            for p, entries in found.items() for e in entries]

