"""``storage format --add-scram``: Kafka's ScramParser syntax and messages, the bootstrap
checkpoint it writes, and the credentials a controller activates with."""

from __future__ import annotations

import base64
import random
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pykraft.cli.main import app
from pykraft.config.server import ServerConfig
from pykraft.features import parse_release_version
from pykraft.image.scram import ScramCredential, ScramMechanism, salted_password
from pykraft.records.metadata import FeatureLevelRecord, UserScramCredentialRecord
from pykraft.storage.bootstrap import read_bootstrap_checkpoint
from pykraft.tools.scram_args import ScramArgumentError, parse_add_scram
from pykraft.tools.storage_tool import FormatError, FormatRequest, QuorumMode, format_storage

sys.path.insert(0, str(Path(__file__).parent / "controller"))
from controller_harness import Cluster  # type: ignore[import-not-found]

runner = CliRunner()
SALT = b"0123456789abcdef"
SALT64 = base64.b64encode(SALT).decode()


def parsed(argument: str) -> UserScramCredentialRecord:
    return parse_add_scram(argument, new_salt=lambda: SALT)


def credential_of(record: UserScramCredentialRecord) -> ScramCredential:
    return ScramCredential(record.salt, record.stored_key, record.server_key, record.iterations)


def test_password_with_defaults() -> None:
    record = parsed("SCRAM-SHA-256=[name=alice,password=alice-secret]")
    assert (record.name, record.mechanism, record.iterations) == ("alice", 1, 4096)
    assert credential_of(record) == ScramCredential.from_password(
        ScramMechanism.SCRAM_SHA_256, "alice-secret", SALT, 4096)


def test_salt_iterations_and_quoted_salted_password() -> None:
    salted = salted_password(ScramMechanism.SCRAM_SHA_512, "pw", b"N3E", 8192)
    record = parsed(f' SCRAM-SHA-512=[name=bob,iterations=8192,salt="{SALT64}",'
                    f'saltedpassword="{base64.b64encode(salted).decode()}"] ')
    assert (record.name, record.mechanism, record.iterations, record.salt) == (
        "bob", 2, 8192, SALT)
    assert credential_of(record) == ScramCredential.from_salted_password(
        ScramMechanism.SCRAM_SHA_512, SALT, 8192, salted)


def test_random_salts_differ() -> None:
    salts = [parse_add_scram("SCRAM-SHA-256=[name=a,password=p]",
                             new_salt=lambda: random.randbytes(16)).salt for _ in range(2)]
    assert salts[0] != salts[1]


@pytest.mark.parametrize(("argument", "message"), [
    ("SCRAM-SHA-256", "Failed to find equals sign in SCRAM argument 'SCRAM-SHA-256'"),
    ("SCRAM-SHA-1=[name=a,password=b]", "The add-scram mechanism SCRAM-SHA-1 is not supported."),
    ("SCRAM-SHA-256=name=a,password=b]", "Expected configuration string to start with ["),
    ("SCRAM-SHA-256=[name=a,password=b", "Expected configuration string to end with ]"),
    ("SCRAM-SHA-256=[name=a,password]", "No equals sign found in SCRAM component: password"),
    ("SCRAM-SHA-256=[password=b]", "You must supply 'name' to add-scram"),
    ("SCRAM-SHA-256=[name=a,salt=%%%,password=b]", "Failed to decode given salt: %%%"),
    ("SCRAM-SHA-256=[name=a,iterations=many,password=b]",
     "Failed to parse iterations count: many"),
    ("SCRAM-SHA-256=[name=a]",
     "You must supply one of 'password' or 'saltedpassword' to add-scram"),
    ("SCRAM-SHA-256=[name=a,saltedpassword=YCE=]",
     "You must supply 'salt' with 'saltedpassword' to add-scram"),
    (f"SCRAM-SHA-256=[name=a,salt={SALT64},saltedpassword=!]",
     "Failed to decode given saltedPassword: !"),
    ("SCRAM-SHA-256=[name=a,password=b,colour=red,age=3]",
     "Unknown SCRAM configurations: age, colour"),
    ("SCRAM-SHA-256=[name=a,password=b,iterations=4095]",
     "The 'iterations' value must be >= 4096 for add-scram using SCRAM_SHA_256"),
    ("SCRAM-SHA-512=[name=a,password=b,iterations=16385]",
     "The 'iterations' value must be <= 16384 for add-scram using SCRAM_SHA_512"),
])
def test_malformed_arguments_name_the_bad_part(argument: str, message: str) -> None:
    with pytest.raises(ScramArgumentError) as caught:
        parsed(argument)
    assert str(caught.value) == message


def _config(tmp_path: Path, **extra: str) -> ServerConfig:
    return ServerConfig({
        "process.roles": "broker,controller", "node.id": "1",
        "listeners": "PLAINTEXT://127.0.0.1:19092,CONTROLLER://127.0.0.1:19093",
        "controller.listener.names": "CONTROLLER",
        "controller.quorum.bootstrap.servers": "127.0.0.1:19093",
        "log.dirs": f"{tmp_path / 'a'},{tmp_path / 'b'}", **extra})


def test_format_writes_the_credentials_into_every_bootstrap_checkpoint(tmp_path: Path) -> None:
    format_storage(FormatRequest(
        _config(tmp_path), "q1w2e3r4t5y6u7i8o9p0", QuorumMode.STANDALONE,
        scram=("SCRAM-SHA-256=[name=alice,password=alice-secret]",
               "SCRAM-SHA-512=[name=admin,password=admin-secret,iterations=8192]")),
        new_salt=lambda: SALT)
    for directory in ("a", "b"):
        records = [r.message for r in read_bootstrap_checkpoint(tmp_path / directory)]
        assert isinstance(records[0], FeatureLevelRecord)
        assert [(r.name, r.mechanism, r.iterations) for r in records[1:]
                if isinstance(r, UserScramCredentialRecord)] == [
            ("alice", 1, 4096), ("admin", 2, 8192)]
    cluster = Cluster(bootstrap=[r.message for r in read_bootstrap_checkpoint(tmp_path / "a")])
    cluster.elect()
    assert cluster.controller.image.scram.get(
        "alice", ScramMechanism.SCRAM_SHA_256) == ScramCredential.from_password(
        ScramMechanism.SCRAM_SHA_256, "alice-secret", SALT, 4096)
    assert cluster.replayed_image().scram.users() == ["admin", "alice"]


def test_format_refuses_scram_below_3_5_iv2_and_bad_arguments_writing_nothing(
        tmp_path: Path) -> None:
    with pytest.raises(FormatError, match=r"^SCRAM is only supported in metadata.version "
                                          r"3.5-IV2 or later.$"):
        format_storage(FormatRequest(
            _config(tmp_path, **{"controller.quorum.voters": "1@127.0.0.1:19093"}),
            "q1w2e3r4t5y6u7i8o9p0", QuorumMode.STATIC,
            release_version=parse_release_version("3.5-IV1"),
            scram=("SCRAM-SHA-256=[name=a,password=b]",)))
    with pytest.raises(ScramArgumentError):
        format_storage(FormatRequest(_config(tmp_path), "q1w2e3r4t5y6u7i8o9p0",
                                     QuorumMode.STANDALONE, scram=("SCRAM-SHA-256=[name=a]",)))
    assert not (tmp_path / "a").exists()


def test_cli_add_scram(tmp_path: Path) -> None:
    config = tmp_path / "server.properties"
    config.write_text(
        "process.roles=controller\nnode.id=1\nlisteners=CONTROLLER://127.0.0.1:19093\n"
        "controller.listener.names=CONTROLLER\ncontroller.quorum.bootstrap.servers="
        f"127.0.0.1:19093\nlog.dirs={tmp_path / 'data'}\n")
    base = ["storage", "format", "-c", str(config), "-t", "cid", "-s"]
    result = runner.invoke(app, [*base, "--add-scram", "SCRAM-SHA-256=[name=alice]"])
    assert result.exit_code == 1
    assert "You must supply one of 'password' or 'saltedpassword' to add-scram" in result.output
    result = runner.invoke(app, [*base, "-S", "SCRAM-SHA-256=[name=alice,password=a]",
                                 "--add-scram", "SCRAM-SHA-512=[name=bob,password=b]"])
    assert result.exit_code == 0, result.output
    records = [r.message for r in read_bootstrap_checkpoint(tmp_path / "data")]
    assert [r.name for r in records if isinstance(r, UserScramCredentialRecord)] == [
        "alice", "bob"]
    assert all(len(r.salt) >= 12 for r in records if isinstance(r, UserScramCredentialRecord))
