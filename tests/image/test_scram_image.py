"""SCRAM credentials in the image: replay, removal, snapshot round trip, the key derivation."""

from __future__ import annotations

import base64
import hashlib
import hmac
from pathlib import Path

import pytest
import scramp

from pykraft.image import (
    MetadataDelta,
    MetadataImage,
    Provenance,
    load_snapshot,
    write_image_snapshot,
)
from pykraft.image.scram import (
    MV_3_5_IV2,
    ScramCredential,
    ScramImage,
    ScramMechanism,
    salted_password,
)
from pykraft.records.metadata import (
    FeatureLevelRecord,
    RemoveUserScramCredentialRecord,
    UserScramCredentialRecord,
)
from pykraft.shell import MetadataShell, image_tree

SALT = b"0123456789abcdef"


def credential_record(user: str, mechanism: ScramMechanism = ScramMechanism.SCRAM_SHA_256,
                      iterations: int = 4096) -> UserScramCredentialRecord:
    cred = ScramCredential.from_password(mechanism, f"{user}-secret", SALT, iterations)
    return UserScramCredentialRecord(name=user, mechanism=mechanism, salt=cred.salt,
                                     stored_key=cred.stored_key, server_key=cred.server_key,
                                     iterations=iterations)


def replayed(*records: object, base: MetadataImage | None = None, mv: int = 21
             ) -> MetadataImage:
    delta = MetadataDelta(base or MetadataImage())
    if base is None:
        delta.replay(FeatureLevelRecord(name="metadata.version", feature_level=mv))
    for record in records:
        delta.replay(record)
    return delta.apply(Provenance(10, 1, 0))


def test_credentials_replay_replace_and_remove() -> None:
    image = replayed(credential_record("alice"),
                     credential_record("alice", ScramMechanism.SCRAM_SHA_512, 8192),
                     credential_record("bob"))
    assert image.scram.users() == ["alice", "bob"]
    assert [(m, c.iterations) for m, c in image.scram.credentials_of("alice")] == [
        (ScramMechanism.SCRAM_SHA_256, 4096), (ScramMechanism.SCRAM_SHA_512, 8192)]
    again = replayed(credential_record("alice", iterations=5000), base=image)
    cred = again.scram.get("alice", ScramMechanism.SCRAM_SHA_256)
    assert cred is not None and cred.iterations == 5000
    assert image.scram.get("alice", ScramMechanism.SCRAM_SHA_256).iterations == 4096  # type: ignore[union-attr]
    removed = replayed(
        RemoveUserScramCredentialRecord(name="bob", mechanism=ScramMechanism.SCRAM_SHA_256),
        RemoveUserScramCredentialRecord(name="alice", mechanism=ScramMechanism.SCRAM_SHA_512),
        base=again)
    assert removed.scram.users() == ["alice"]
    assert ScramMechanism.SCRAM_SHA_512 not in removed.scram.mechanisms  # no empty mechanism
    assert removed != again


def test_image_writes_credentials_after_producer_ids_only_from_3_5_iv2() -> None:
    image = replayed(credential_record("bob"), credential_record("alice"),
                     credential_record("alice", ScramMechanism.SCRAM_SHA_512))
    written = [r for r, _ in image.records() if isinstance(r, UserScramCredentialRecord)]
    assert [(r.mechanism, r.name) for r in written] == [(1, "alice"), (1, "bob"), (2, "alice")]
    assert isinstance(image.records()[-1][0], UserScramCredentialRecord)
    older = replayed(credential_record("alice"), mv=MV_3_5_IV2 - 1)
    assert not [r for r, _ in older.records() if isinstance(r, UserScramCredentialRecord)]


def test_snapshot_round_trip_keeps_credentials(tmp_path: Path) -> None:
    image = replayed(credential_record("alice"),
                     credential_record("carol", ScramMechanism.SCRAM_SHA_512, 16384))
    loaded = load_snapshot(write_image_snapshot(tmp_path, image, clock=lambda: 5))
    assert loaded == image
    assert loaded.scram.get("carol", ScramMechanism.SCRAM_SHA_512) == image.scram.get(
        "carol", ScramMechanism.SCRAM_SHA_512)


@pytest.mark.parametrize("mechanism", [ScramMechanism.SCRAM_SHA_256,
                                       ScramMechanism.SCRAM_SHA_512])
def test_keys_match_rfc5802_as_scramp_derives_them(mechanism: ScramMechanism) -> None:
    salt, stored_key, server_key, iterations = scramp.ScramMechanism(
        mechanism.mechanism_name).make_auth_info("pencil", iteration_count=4096, salt=SALT)
    ours = ScramCredential.from_password(mechanism, "pencil", SALT, 4096)
    assert (ours.salt, ours.stored_key, ours.server_key, ours.iterations) == (
        salt, stored_key, server_key, iterations)
    salted = salted_password(mechanism, "pencil", SALT, 4096)
    name = mechanism.hash_name
    assert ours.server_key == hmac.new(salted, b"Server Key", name).digest()
    assert ours.stored_key == hashlib.new(name, hmac.new(salted, b"Client Key", name)
                                          .digest()).digest()


def test_rfc7677_test_vector() -> None:
    """RFC 7677 §3: user "user", password "pencil", 4096 iterations."""
    salt = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
    cred = ScramCredential.from_password(ScramMechanism.SCRAM_SHA_256, "pencil", salt, 4096)
    server = scramp.ScramMechanism("SCRAM-SHA-256").make_server(
        lambda _user: (cred.salt, cred.stored_key, cred.server_key, cred.iterations),
        s_nonce="%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0")
    server.set_client_first("n,,n=user,r=rOprNGfwEbeRWgbNEkqO")
    server.get_server_first()
    server.set_client_final("c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
                            "p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
    assert server.get_server_final() == "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="


def test_mechanism_names_and_unknown_ids() -> None:
    assert ScramMechanism.named("SCRAM-SHA-512") is ScramMechanism.SCRAM_SHA_512
    assert ScramMechanism.named("PLAIN") is ScramMechanism.UNKNOWN
    assert ScramMechanism.of(7) is ScramMechanism.UNKNOWN
    assert "secret" not in repr(ScramImage({ScramMechanism.SCRAM_SHA_256: {
        "a": ScramCredential(b"secret", b"secret", b"secret", 4096)}}))


def test_metadata_shell_lists_mechanisms_and_prints_credentials_in_hex() -> None:
    image = replayed(credential_record("alice", ScramMechanism.SCRAM_SHA_512, 8192))
    shell = MetadataShell(image_tree(image, source="test"))
    assert shell.execute("ls /image/scram").lines == ["SCRAM-SHA-256", "SCRAM-SHA-512"]
    assert shell.execute("ls /image/scram/SCRAM-SHA-256").lines == []
    cred = image.scram.get("alice", ScramMechanism.SCRAM_SHA_512)
    assert cred is not None
    assert shell.execute("cat /image/scram/SCRAM-SHA-512/alice").lines == [
        f"ScramCredentialData(salt={SALT.hex()}, storedKey={cred.stored_key.hex()}, "
        f"serverKey={cred.server_key.hex()}, iterations=8192)"]
