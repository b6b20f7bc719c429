"""The ACL and delegation token writes of the migration (Kafka's ``handleAclsSnapshot``/
``Delta``, ``handleDelegationTokenSnapshot``/``Delta``, ``ZkAclMigrationClient``,
``ZkDelegationTokenMigrationClient``): AclAuthorizer's resource znodes and change nodes,
``DelegationTokenManagerZk``'s token znodes."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence

from pykraft.image.acls import AclsImage, PatternType, ResourceType, StandardAcl
from pykraft.image.delegation_tokens import DelegationTokensImage
from pykraft.migration.zk_config_writes import sanitize
from pykraft.migration.zk_ops import CreateOp, DeleteOp, SetDataOp, ZkError
from pykraft.migration.zk_tree import ZkTree
from pykraft.migration.zk_write import (
    ANY_RESULT,
    DELETE_ACL,
    DELETE_DELEGATION_TOKEN,
    UPDATE_ACL,
    UPDATE_DELEGATION_TOKEN,
    Notification,
    ZkWrite,
)
from pykraft.migration.znodes import (
    AclResourceZNode,
    DelegationTokenZNode,
    ExtendedAclChangeZNode,
    LiteralAclChangeZNode,
    ZkAclEntry,
)
from pykraft.records.metadata import DelegationTokenRecord

_LITERAL_ACL_CHANGE = "/kafka-acl-changes/acl_changes_"
_EXTENDED_ACL_CHANGE = "/kafka-acl-extended-changes/acl_changes_"

AclPattern = tuple[ResourceType, str, PatternType]


def _camel(name: str) -> str:
    """AclAuthorizer's names in ZooKeeper: ``TRANSACTIONAL_ID`` -> ``TransactionalId``."""
    return "".join(part.capitalize() for part in name.split("_"))


def acl_path(pattern: AclPattern) -> str:
    resource_type, name, pattern_type = pattern
    store = "/kafka-acl" if pattern_type is PatternType.LITERAL else \
        f"/kafka-acl-extended/{pattern_type.name.lower()}"
    return f"{store}/{_camel(resource_type.name)}/{name}"


def _zk_entry(acl: StandardAcl) -> ZkAclEntry:
    return ZkAclEntry(acl.principal, _camel(acl.permission_type.name), acl.host,
                      _camel(acl.operation.name))


def _acl_change(pattern: AclPattern) -> Notification:
    resource_type, name, pattern_type = pattern
    if pattern_type is PatternType.LITERAL:
        op = CreateOp(_LITERAL_ACL_CHANGE, LiteralAclChangeZNode(resource_type.name,
                                                                 name).encode(), sequential=True)
    else:
        op = CreateOp(_EXTENDED_ACL_CHANGE, ExtendedAclChangeZNode(
            resource_type.name, name, pattern_type.name).encode(), sequential=True)
    return Notification(op, ensure_parent=False)


def write_acls(pattern: AclPattern, entries: Sequence[ZkAclEntry]) -> ZkWrite:
    """``writeResourceAcls``: set, or create on NONODE (no parents); Kafka counts any other
    result as written and notifies."""
    data = AclResourceZNode(tuple(dict.fromkeys(entries))).encode()
    description = f"Wrote {len(entries)} for resource {pattern}"
    notification = _acl_change(pattern)
    create = ZkWrite(UPDATE_ACL, description, (CreateOp(acl_path(pattern), data),),
                     ok=ANY_RESULT - {ZkError.NO_NODE}, notification=notification)
    return ZkWrite(UPDATE_ACL, description, (SetDataOp(acl_path(pattern), data),), ok=ANY_RESULT,
                   create_instead=create, notification=notification)


def delete_acls(pattern: AclPattern) -> ZkWrite:
    return ZkWrite(DELETE_ACL, f"Deleted resource {pattern}", (DeleteOp(acl_path(pattern)),),
                   ok=frozenset({ZkError.OK, ZkError.NO_NODE}), notification=_acl_change(pattern))


def _pattern(acl: StandardAcl) -> AclPattern:
    return acl.resource_type, acl.resource_name, acl.pattern_type


def _acls_by_pattern(acls: AclsImage) -> dict[AclPattern, list[ZkAclEntry]]:
    found: dict[AclPattern, list[ZkAclEntry]] = {}
    for acl in acls.acls.values():
        found.setdefault(_pattern(acl), []).append(_zk_entry(acl))
    return found


def acls_sync(acls: AclsImage, tree: ZkTree) -> list[ZkWrite]:
    """``handleAclsSnapshot``: new patterns, then ZooKeeper's without ACLs in the image,
    then the changed ones (compared as sets)."""
    kraft = _acls_by_pattern(acls)
    in_zk = {(r.resource_type, r.name, r.pattern_type): r.acls.value.acls for r in tree.acls}
    writes = [write_acls(p, entries) for p, entries in kraft.items() if p not in in_zk]
    writes += [delete_acls(p) for p in in_zk if p not in kraft]
    writes += [write_acls(p, kraft[p]) for p, entries in in_zk.items()
               if p in kraft and set(kraft[p]) != set(entries)]
    return writes


def acls_delta(previous: AclsImage, acls: AclsImage,
               touched: Iterable[uuid.UUID]) -> list[ZkWrite]:
    """``handleAclsDelta``: every pattern a touched ACL had (removed ones from the previous
    image) rewritten with the image's ACLs, or deleted when none are left."""
    patterns: dict[AclPattern, list[ZkAclEntry]] = {}
    for acl_id in touched:
        acl = acls.acls.get(acl_id) or previous.acls.get(acl_id)
        if acl is not None:  # Kafka logs "Cannot delete ACL ... missing from previous image"
            patterns[_pattern(acl)] = []
    for acl in acls.acls.values():
        entries = patterns.get(_pattern(acl))
        if entries is not None:
            entries.append(_zk_entry(acl))
    return [write_acls(p, entries) if entries else delete_acls(p)
            for p, entries in patterns.items()]


# --- delegation tokens ----------------------------------------------------------------------

def _token_path(token_id: str) -> str:
    return f"/delegation_token/tokens/{token_id}"


def write_token(token: DelegationTokenRecord) -> ZkWrite:
    """``writeDelegationToken``: set, or create on NONODE; principals sanitized."""
    data = DelegationTokenZNode(
        sanitize(token.owner), sanitize(token.requester),
        tuple(sanitize(r) for r in token.renewers), token.issue_timestamp,
        token.max_timestamp, token.expiration_timestamp, token.token_id).encode()
    description = f"Updated DelegationToken for {token.token_id}"
    path = _token_path(token.token_id)
    create = ZkWrite(UPDATE_DELEGATION_TOKEN, description, (CreateOp(path, data),))
    return ZkWrite(UPDATE_DELEGATION_TOKEN, description, (SetDataOp(path, data),),
                   create_instead=create)


def delete_token(token_id: str) -> ZkWrite:
    return ZkWrite(DELETE_DELEGATION_TOKEN, f"Deleted DelegationToken for {token_id}",
                   (DeleteOp(_token_path(token_id)),), already_done=frozenset({ZkError.NO_NODE}))


def tokens_sync(tokens: DelegationTokensImage, tree: ZkTree) -> list[ZkWrite]:
    """``handleDelegationTokenSnapshot``: every token of the image, then the deletion of
    ZooKeeper's others (Kafka names them by znode, pykraft's tree by the token's id: the
    same for every znode Kafka wrote)."""
    writes = [write_token(token) for token in tokens.tokens.values()]
    writes += [delete_token(token.token_id) for token in tree.delegation_tokens
               if token.token_id not in tokens.tokens]
    return writes


def tokens_delta(tokens: DelegationTokensImage, touched: Iterable[str]) -> list[ZkWrite]:
    """``handleDelegationTokenDelta``: each touched token written, or deleted when gone."""
    return [write_token(token) if (token := tokens.tokens.get(token_id)) is not None
            else delete_token(token_id) for token_id in touched]
