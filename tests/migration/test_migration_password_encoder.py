"""Password broker configs stored encoded in ZooKeeper decode as Kafka 3.9.1 encoded them,
and encode as Kafka 3.9.1 decodes them.

The fixture holds what Kafka 3.9.1's ``PasswordEncoder.encrypting`` wrote (jshell on the
kafka-zk jars) with the secret ``enc-secret``: ``ks-pass-é`` with the defaults (CBC,
PBKDF2WithHmacSHA512, 128-bit key, 4096 iterations) and ``other`` with AES/GCM,
PBKDF2WithHmacSHA1, a 256-bit key and 1024 iterations.
"""

from __future__ import annotations

import functools
import random
from pathlib import Path

import pytest

from pykraft.migration.load import migration_load
from pykraft.migration.password_encoder import (
    CBC,
    GCM,
    PasswordDecodeError,
    decode_password,
    encode_password,
)
from pykraft.migration.zk_tree import ZkRead, ZkTree

ENCODED = dict(line.split() for line in (
    Path(__file__).parents[1] / "fixtures/migration/encoded-passwords-kafka391.txt"
).read_text().splitlines())


@pytest.mark.parametrize(("cipher", "clear"), [("CBC", "ks-pass-é"), ("GCM", "other")])
def test_kafkas_encoded_passwords_decode(cipher: str, clear: str) -> None:
    assert decode_password(ENCODED[cipher], "enc-secret") == clear


@pytest.mark.parametrize("cipher", ["CBC", "GCM"])
def test_a_wrong_secret_is_refused(cipher: str) -> None:
    with pytest.raises(PasswordDecodeError, match="could not be decoded"):
        decode_password(ENCODED[cipher], "other-secret")


def test_missing_parameters_are_named() -> None:
    without_salt = ",".join(p for p in ENCODED["CBC"].split(",") if not p.startswith("salt:"))
    with pytest.raises(PasswordDecodeError, match="'salt'"):
        decode_password(without_salt, "enc-secret")


def test_the_load_writes_the_clear_password() -> None:
    value = ENCODED["CBC"]
    tree = ZkTree.from_reads({"/config/brokers/<default>": ZkRead(
        f'{{"version":1,"config":{{"ssl.keystore.password":"{value}"}}}}'.encode())})
    load = migration_load(tree, random.Random(0), password_decoder=functools.partial(
        decode_password, secret="enc-secret"))
    (record,) = load.records
    assert (record.message.resource_name, record.message.value) == ("", "ks-pass-é")


PYKRAFT_ENCODED = dict(line.split() for line in (
    Path(__file__).parents[1] / "fixtures/migration/pykraft-encoded-passwords-kafka391-decodes.txt"
).read_text().splitlines())
"""``s3cret-ü`` encoded by :func:`encode_password` with :func:`_fixed` bytes and the
secret ``enc-secret``; Kafka 3.9.1's ``EncryptingPasswordEncoder`` (jshell on the kafka-zk
jars, configured with the same cipher) decodes both to ``s3cret-ü``."""


def _fixed(size: int) -> bytes:
    return bytes((7 * i + 3) % 256 for i in range(size))


@pytest.mark.parametrize(("name", "cipher"), [("CBC", CBC), ("GCM", GCM)])
def test_encoded_passwords_are_what_kafka_decodes(name: str, cipher: str) -> None:
    encoded = encode_password("s3cret-ü", "enc-secret", _fixed, cipher=cipher)
    assert encoded == PYKRAFT_ENCODED[name]
    assert decode_password(encoded, "enc-secret") == "s3cret-ü"


@pytest.mark.parametrize("name", ["CBC", "GCM"])
def test_encoded_parameters_come_in_kafkas_order(name: str) -> None:
    """Kafka's encoder puts them in a ``HashMap``: its own encodings show the order."""
    def keys(encoded: str) -> list[str]:
        return [pair.partition(":")[0] for pair in encoded.split(",")]

    ours = encode_password("x", "s", _fixed, cipher=GCM if name == "GCM" else CBC)
    assert keys(ours) == keys(ENCODED[name])


def test_an_encoding_kafka_cannot_make_is_refused() -> None:
    with pytest.raises(PasswordDecodeError, match="cannot encode"):
        encode_password("x", "s", _fixed, key_length=100)
