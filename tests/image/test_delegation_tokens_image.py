"""Delegation tokens in the image: created, renewed and expired by Kafka's records, written
into snapshots from 3.6-IV2 on (after the SCRAM credentials, as Kafka writes them), shown by
the metadata shell as Kafka's shell shows them."""

from __future__ import annotations

from pathlib import Path

from pykraft.image import (
    MetadataDelta,
    MetadataImage,
    Provenance,
    load_snapshot,
    write_image_snapshot,
)
from pykraft.image.delegation_tokens import MV_3_6_IV2
from pykraft.records.metadata import (
    DelegationTokenRecord,
    FeatureLevelRecord,
    RemoveDelegationTokenRecord,
    UserScramCredentialRecord,
)
from pykraft.shell import MetadataShell, image_tree

MV_3_9_IV0 = 21


def token(token_id: str, expiry: int = 2000) -> DelegationTokenRecord:
    return DelegationTokenRecord(
        owner="User:alice", requester="User:alice", renewers=("User:bob", "User:carol"),
        issue_timestamp=1000, max_timestamp=9000, expiration_timestamp=expiry,
        token_id=token_id)


def then(image: MetadataImage, *records: object) -> MetadataImage:
    """``image`` with ``records`` replayed on it."""
    delta = MetadataDelta(image)
    for record in records:
        delta.replay(record)
    return delta.apply(Provenance(10, 1, 0))


def image_of(*records: object, mv: int = MV_3_9_IV0) -> MetadataImage:
    return then(MetadataImage(), FeatureLevelRecord(name="metadata.version", feature_level=mv),
                *records)


def test_a_token_is_created_renewed_and_expired() -> None:
    created = image_of(token("t1"), token("t2"))
    assert set(created.delegation_tokens.tokens) == {"t1", "t2"}
    renewed = then(created, token("t1", expiry=5000))
    assert renewed.delegation_tokens.tokens["t1"].expiration_timestamp == 5000
    assert created.delegation_tokens.tokens["t1"].expiration_timestamp == 2000
    expired = then(renewed, RemoveDelegationTokenRecord(token_id="t1"))
    assert set(expired.delegation_tokens.tokens) == {"t2"}
    assert then(expired, RemoveDelegationTokenRecord(token_id="t2")) == image_of()


def test_tokens_are_written_last_and_only_from_3_6_iv2(tmp_path: Path) -> None:
    scram = UserScramCredentialRecord(name="alice", mechanism=1, salt=b"s", stored_key=b"k",
                                      server_key=b"v", iterations=4096)
    image = image_of(token("t2"), scram, token("t1"))
    assert [type(r) for r, _ in image.records()][-3:] == [
        UserScramCredentialRecord, DelegationTokenRecord, DelegationTokenRecord]
    assert [r for r, _ in image.records()][-2:] == [token("t1"), token("t2")]
    assert load_snapshot(write_image_snapshot(tmp_path, image, clock=lambda: 5)) == image
    older = image_of(token("t1"), mv=MV_3_6_IV2 - 1)
    assert not [r for r, _ in older.records() if isinstance(r, DelegationTokenRecord)]


def test_metadata_shell_prints_a_token_as_kafkas_shell() -> None:
    shell = MetadataShell(image_tree(image_of(token("t1")), source="test"))
    assert shell.execute("ls /image/delegationToken").lines == ["t1"]
    assert shell.execute("cat /image/delegationToken/t1").lines == [
        "DelegationTokenDatatokenId=t1(owner=User:alice(tokenRequester=User:alice"
        "(renewers=User:bobUser:carol, issueTimestamp=1000, maxTimestamp=9000), "
        "expiryTimestamp=2000"]
