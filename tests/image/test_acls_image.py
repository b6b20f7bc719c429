"""ACL records replayed into the image, written back by snapshots, shown by the shell."""

from __future__ import annotations

import uuid

import pytest

from pykraft.errors import MetadataImageError
from pykraft.ids import uuid_to_str
from pykraft.image.acls import (
    AclFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
    StandardAcl,
)
from pykraft.image.image import MetadataDelta, MetadataImage
from pykraft.records.metadata import RemoveAccessControlEntryRecord
from pykraft.shell.tree import DirNode, FileNode, image_tree

READ_T = StandardAcl(ResourceType.TOPIC, "t", PatternType.LITERAL, "User:alice", "*",
                     AclOperation.READ, AclPermissionType.ALLOW)
DENY_P = StandardAcl(ResourceType.GROUP, "app-", PatternType.PREFIXED, "User:*", "10.0.0.1",
                     AclOperation.ALL, AclPermissionType.DENY)
ID1, ID2 = uuid.UUID(int=1), uuid.UUID(int=2)


def replayed(*records: object, image: MetadataImage | None = None) -> MetadataImage:
    delta = MetadataDelta(image or MetadataImage())
    for record in records:
        delta.replay(record)
    return delta.apply()


def test_records_add_and_remove_acls_by_id() -> None:
    image = replayed(READ_T.to_record(ID1), DENY_P.to_record(ID2))
    assert dict(image.acls.acls) == {ID1: READ_T, ID2: DENY_P}
    after = replayed(RemoveAccessControlEntryRecord(id=ID1), image=image)
    assert dict(after.acls.acls) == {ID2: DENY_P}
    assert dict(image.acls.acls) == {ID1: READ_T, ID2: DENY_P}  # images are immutable


def test_removing_an_unknown_id_is_corrupt_metadata() -> None:
    with pytest.raises(MetadataImageError, match="no acl with that ID"):
        replayed(READ_T.to_record(ID1), RemoveAccessControlEntryRecord(id=ID1),
                 RemoveAccessControlEntryRecord(id=ID1))


def test_a_snapshot_holds_the_acls_and_replays_to_the_same_image() -> None:
    image = replayed(DENY_P.to_record(ID2), READ_T.to_record(ID1))
    records = [record for record, _ in image.records()]
    assert records[-2:] == [READ_T.to_record(ID1), DENY_P.to_record(ID2)]
    assert replayed(*records) == image


def test_kafka_text_forms() -> None:
    assert str(READ_T) == ("StandardAcl(resourceType=TOPIC, resourceName=t, "
                           "patternType=LITERAL, principal=User:alice, host=*, "
                           "operation=READ, permissionType=ALLOW)")
    assert READ_T.pattern_text == "ResourcePattern(resourceType=TOPIC, name=t, patternType=LITERAL)"
    assert READ_T.entry_text == ("(principal=User:alice, host=*, operation=READ, "
                                 "permissionType=ALLOW)")


def test_the_shell_lists_acls_by_id() -> None:
    tree = image_tree(replayed(READ_T.to_record(ID1)), source="test")
    image_dir = tree.children["image"]
    assert isinstance(image_dir, DirNode)
    acls = image_dir.children["acls"]
    assert isinstance(acls, DirNode)
    by_id = acls.children["byId"]
    assert isinstance(by_id, DirNode)
    assert by_id.children == {uuid_to_str(ID1): FileNode(str(READ_T))}


def test_unknown_codes_read_as_unknown() -> None:
    assert ResourceType.of(99) is ResourceType.UNKNOWN
    assert AclOperation.parse("describe_configs") is AclOperation.DESCRIBE_CONFIGS
    assert PatternType.parse("nope") is PatternType.UNKNOWN


@pytest.mark.parametrize(("acl_filter", "matches"), [
    (AclFilter(), True),
    (AclFilter(ResourceType.TOPIC, "t", PatternType.LITERAL), True),
    (AclFilter(ResourceType.TOPIC, "t", PatternType.PREFIXED), False),
    (AclFilter(ResourceType.GROUP), False),
    (AclFilter(name="t"), True),  # ANY: the name exactly
    (AclFilter(name="tt"), False),
    (AclFilter(principal="User:bob"), False),
    (AclFilter(host="*", operation=AclOperation.READ), True),
    (AclFilter(permission_type=AclPermissionType.DENY), False),
], ids=str)
def test_filters_on_a_literal_acl(acl_filter: AclFilter, matches: bool) -> None:
    assert acl_filter.matches(READ_T) is matches


def test_match_filters_find_the_patterns_that_apply_to_a_name() -> None:
    wildcard = StandardAcl(ResourceType.GROUP, "*", PatternType.LITERAL, "User:a", "*",
                           AclOperation.READ, AclPermissionType.ALLOW)
    literal = StandardAcl(ResourceType.GROUP, "app-1", PatternType.LITERAL, "User:a", "*",
                          AclOperation.READ, AclPermissionType.ALLOW)
    other = StandardAcl(ResourceType.GROUP, "app-2", PatternType.LITERAL, "User:a", "*",
                        AclOperation.READ, AclPermissionType.ALLOW)
    longer_prefix = StandardAcl(ResourceType.GROUP, "app-12", PatternType.PREFIXED, "User:a",
                                "*", AclOperation.READ, AclPermissionType.ALLOW)
    match = AclFilter(ResourceType.GROUP, "app-1", PatternType.MATCH)
    assert [acl for acl in (wildcard, literal, other, DENY_P, longer_prefix)
            if match.matches(acl)] == [wildcard, literal, DENY_P]


def test_unknown_filters_are_named() -> None:
    assert AclFilter(pattern_type=PatternType.UNKNOWN).unknown_problem() == (
        "Unknown patternFilter.")
    assert AclFilter(operation=AclOperation.UNKNOWN).unknown_problem() == "Unknown entryFilter."
    assert AclFilter().unknown_problem() is None
