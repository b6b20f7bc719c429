"""Password broker configs stored encoded in ZooKeeper decode as Kafka 3.9.1 encoded them.

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
from pykraft.migration.password_encoder import PasswordDecodeError, decode_password
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
