"""``pykraft storage``: format modes, Kafka's rules and messages, and info."""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pykraft.cli.main import app
from pykraft.config.server import ServerConfig
from pykraft.features import parse_release_version
from pykraft.ids import uuid_to_str
from pykraft.records.batch import iter_batches
from pykraft.records.control import ControlType, VotersRecord, decode_control
from pykraft.storage.bootstrap import read_bootstrap_checkpoint
from pykraft.storage.meta_properties import read_meta_properties
from pykraft.tools.storage_tool import FormatError, FormatRequest, QuorumMode, format_storage

runner = CliRunner()
VOTER_CHECKPOINT = "__cluster_metadata-0/00000000000000000000-0000000000.checkpoint"


def _config(tmp_path: Path, **extra: str) -> ServerConfig:
    props = {
        "process.roles": "controller",
        "node.id": "1",
        "listeners": "CONTROLLER://127.0.0.1:19093",
        "controller.listener.names": "CONTROLLER",
        "controller.quorum.bootstrap.servers": "127.0.0.1:19093",
        "log.dirs": f"{tmp_path / 'a'},{tmp_path / 'b'}",
    }
    props.update({k.replace("_", "."): v for k, v in extra.items()})
    return ServerConfig(props)


def _ids() -> Iterator[uuid.UUID]:
    return iter(uuid.UUID(int=(1000 + i) << 64) for i in range(100))


def test_standalone_writes_meta_bootstrap_and_voters(tmp_path: Path) -> None:
    ids = _ids()
    lines = format_storage(
        FormatRequest(_config(tmp_path), "q1w2e3r4t5y6u7i8o9p0", QuorumMode.STANDALONE),
        clock=lambda: 1_700_000_000_000,
        new_uuid=lambda: next(ids),
    )
    assert lines == [
        f"Formatting dynamic metadata voter directory {tmp_path / 'a'} with metadata.version "
        "3.9-IV0.",
        f"Formatting data directory {tmp_path / 'b'} with metadata.version 3.9-IV0.",
    ]
    voter_dir = uuid.UUID(int=1000 << 64)
    meta = read_meta_properties(tmp_path / "a" / "meta.properties")
    assert (meta.version, meta.node_id, meta.cluster_id, meta.directory_id) == (
        1, 1, "q1w2e3r4t5y6u7i8o9p0", voter_dir,
    )
    assert read_meta_properties(tmp_path / "b" / "meta.properties").directory_id != voter_dir
    for d in ("a", "b"):
        (record,) = read_bootstrap_checkpoint(tmp_path / d)
        assert record.type_name == "FEATURE_LEVEL_RECORD"
        assert record.message.name == "metadata.version"
        assert record.message.feature_level == 21
    assert not (tmp_path / "b" / VOTER_CHECKPOINT).exists()
    batches = list(iter_batches((tmp_path / "a" / VOTER_CHECKPOINT).read_bytes()))
    controls = [decode_control(r.key, r.value) for r in batches[0].records()]
    assert [c.type for c in controls] == [
        ControlType.SNAPSHOT_HEADER, ControlType.KRAFT_VERSION, ControlType.KRAFT_VOTERS,
    ]
    voters = controls[2].message
    assert isinstance(voters, VotersRecord)
    (voter,) = voters.voters
    assert (voter.voter_id, voter.voter_directory_id) == (1, voter_dir)
    assert [(e.name, e.host, e.port) for e in voter.endpoints] == [
        ("CONTROLLER", "127.0.0.1", 19093)
    ]


def test_initial_controllers_uses_the_listed_directory_id(tmp_path: Path) -> None:
    listed = uuid.UUID(int=77 << 64)
    other = uuid.UUID(int=78 << 64)
    text = (
        f"1@127.0.0.1:19093:{uuid_to_str(listed)},2@127.0.0.1:19094:{uuid_to_str(other)}"
    )
    format_storage(
        FormatRequest(_config(tmp_path), "cid", QuorumMode.INITIAL_CONTROLLERS, text)
    )
    assert read_meta_properties(tmp_path / "a" / "meta.properties").directory_id == listed
    batches = list(iter_batches((tmp_path / "a" / VOTER_CHECKPOINT).read_bytes()))
    voters = decode_control(batches[0].records()[2].key, batches[0].records()[2].value).message
    assert isinstance(voters, VotersRecord)
    assert [v.voter_id for v in voters.voters] == [1, 2]


def test_static_quorum_has_no_voter_checkpoint(tmp_path: Path) -> None:
    config = _config(tmp_path, controller_quorum_voters="1@127.0.0.1:19093")
    lines = format_storage(FormatRequest(config, "cid", QuorumMode.STATIC))
    assert lines[0].startswith(f"Formatting metadata directory {tmp_path / 'a'}")
    assert not (tmp_path / "a" / VOTER_CHECKPOINT).exists()


@pytest.mark.parametrize(
    ("mode", "extra", "features", "release", "message"),
    [
        (QuorumMode.STATIC, {}, (), "3.9", "controller.quorum.voters is not set"),
        (QuorumMode.STANDALONE, {"controller_quorum_voters": "1@h:1"}, (), "3.9",
         "cannot be used when controller.quorum.voters is set"),
        (QuorumMode.STANDALONE, {}, (("kraft.version", 0),), "3.9", "kraft.version=0"),
        (QuorumMode.STANDALONE, {}, (), "3.8", "needs metadata.version 3.9-IV0"),
        (QuorumMode.STATIC, {"controller_quorum_voters": "1@h:1"}, (("kraft.version", 1),),
         "3.9", "kraft.version=1 needs"),
        (QuorumMode.STANDALONE, {}, (("group.version", 1),), "3.9", "unsupported feature"),
    ],
)
def test_invalid_requests_write_nothing(
    tmp_path: Path,
    mode: QuorumMode,
    extra: dict[str, str],
    features: tuple[tuple[str, int], ...],
    release: str,
    message: str,
) -> None:
    request = FormatRequest(
        _config(tmp_path, **extra), "cid", mode, release_version=parse_release_version(release),
        features=features,
    )
    with pytest.raises(FormatError, match=re.escape(message)):
        format_storage(request)
    assert not (tmp_path / "a").exists()


def test_already_formatted_and_ignore_formatted(tmp_path: Path) -> None:
    config = _config(tmp_path, controller_quorum_voters="1@127.0.0.1:19093")
    format_storage(FormatRequest(config, "cid", QuorumMode.STATIC))
    with pytest.raises(FormatError, match="is already formatted"):
        format_storage(FormatRequest(config, "cid", QuorumMode.STATIC))
    assert format_storage(FormatRequest(config, "cid", QuorumMode.STATIC, ignore_formatted=True)) \
        == ["All of the log directories are already formatted."]


def _write_config(tmp_path: Path, quorum: str = "controller.quorum.bootstrap.servers="
                  "127.0.0.1:19093\n") -> Path:
    path = tmp_path / "server.properties"
    path.write_text(
        "process.roles=controller\nnode.id=1\nlisteners=CONTROLLER://127.0.0.1:19093\n"
        f"controller.listener.names=CONTROLLER\n{quorum}log.dirs={tmp_path / 'data'}\n"
    )
    return path


def test_format_refuses_a_config_the_server_refuses(tmp_path: Path) -> None:
    """Kafka's StorageTool loads a KafkaConfig, so a controller with neither
    controller.quorum.voters nor controller.quorum.bootstrap.servers, which no server
    starts with, is refused before anything is written."""
    config = _write_config(tmp_path, quorum="")
    result = runner.invoke(app, ["storage", "format", "-c", str(config), "-t", "cid", "-s"])
    assert result.exit_code == 1
    assert ("If using process.roles, either controller.quorum.bootstrap.servers must contain "
            "the set of bootstrap controllers or controller.quorum.voters must contain a "
            "parseable set of controllers.") in result.output
    assert not (tmp_path / "data").exists()


def test_cli_format_info_and_errors(tmp_path: Path) -> None:
    config = _write_config(tmp_path)
    result = runner.invoke(app, ["storage", "info", "--config", str(config)])
    assert result.exit_code == 1
    assert "does not exist or is not a directory." in result.output
    result = runner.invoke(app, ["storage", "format", "-c", str(config), "-t", "cid"])
    assert result.exit_code == 1
    assert "--standalone, --initial-controllers, or --no-initial-controllers" in result.output
    result = runner.invoke(
        app, ["storage", "format", "-c", str(config), "-t", "cid", "-s", "-N"]
    )
    assert result.exit_code == 1 and "only one of" in result.output
    result = runner.invoke(app, ["storage", "format", "-c", str(config), "-t", "cid", "-s"])
    assert result.exit_code == 0, result.output
    assert "Formatting dynamic metadata voter directory" in result.output
    result = runner.invoke(app, ["storage", "info", "-c", str(config)])
    assert result.exit_code == 0
    assert re.search(r"Found metadata: \{cluster.id=cid, directory.id=\S+, node.id=1, "
                     r"version=1\}", result.output)
    result = runner.invoke(app, ["storage", "format", "-c", str(tmp_path / "nope"), "-t", "c"])
    assert result.exit_code == 1 and "does not exist" in result.output


def test_random_uuid_is_a_kafka_uuid() -> None:
    result = runner.invoke(app, ["storage", "random-uuid"])
    assert result.exit_code == 0
    assert re.fullmatch(r"[A-Za-z0-9_-]{22}\n", result.output)
    assert not result.output.startswith("-")


def test_reserved_directory_ids_are_refused(tmp_path: Path) -> None:
    text = f"1@127.0.0.1:19093:{uuid_to_str(uuid.UUID(int=5))}"
    with pytest.raises(FormatError, match="reserved directory id"):
        format_storage(FormatRequest(_config(tmp_path), "c", QuorumMode.INITIAL_CONTROLLERS, text))


def test_a_cluster_id_that_is_no_kafka_uuid_is_taken_with_a_warning(tmp_path: Path) -> None:
    """Kafka's format takes any cluster id (KIP-78 asks for no UUID); pykraft says on stderr
    that it is not what ``storage random-uuid`` makes, and formats all the same."""
    config = _write_config(tmp_path)
    result = runner.invoke(app, ["storage", "format", "-c", str(config), "-t", "hello", "-s"])
    assert result.exit_code == 0, result.output
    assert result.stderr == (
        "Warning: cluster id 'hello' is not a Kafka UUID (22 characters of URL-safe base64, "
        "as 'storage random-uuid' prints). Kafka accepts any cluster id (KIP-78), but tools "
        "that expect a UUID may not.\n")
    assert "Formatting dynamic metadata voter directory" in result.stdout
    meta = read_meta_properties(tmp_path / "data" / "meta.properties")
    assert meta.cluster_id == "hello"
    (tmp_path / "other").mkdir()
    other = _write_config(tmp_path / "other")
    uuid_id = uuid_to_str(uuid.UUID(int=7 << 64))
    formatted = runner.invoke(app, ["storage", "format", "-c", str(other), "-t", uuid_id, "-s"])
    assert (formatted.exit_code, formatted.stderr) == (0, "")


@pytest.mark.parametrize(("release", "features", "expected"), [
    ("3.9-IV0", (), {}),  # before 4.0-IV2 Kafka finalizes no transaction.version
    ("4.0-IV2", (), {"transaction.version": 2}),
    ("4.0-IV2", (("transaction.version", 0),), {}),
    ("3.9-IV0", (("transaction.version", 1),), {"transaction.version": 1}),
    # eligible leader replicas from 4.1-IV0 (EligibleLeaderReplicasVersion's bootstrap MV)
    ("4.1-IV0", (), {"transaction.version": 2, "eligible.leader.replicas.version": 1}),
    ("4.1-IV0", (("eligible.leader.replicas.version", 0),), {"transaction.version": 2}),
    ("4.0-IV1", (("eligible.leader.replicas.version", 1),),
     {"eligible.leader.replicas.version": 1}),
])
def test_transaction_version_is_formatted_as_kafka_defaults_it(
        tmp_path: Path, release: str, features: tuple[tuple[str, int], ...],
        expected: dict[str, int]) -> None:
    format_storage(FormatRequest(_config(tmp_path), "q1w2e3r4t5y6u7i8o9p0",
                                 QuorumMode.STANDALONE,
                                 release_version=parse_release_version(release),
                                 features=features), new_uuid=lambda: next(_ids()))
    finalized = {r.message.name: r.message.feature_level
                 for r in read_bootstrap_checkpoint(tmp_path / "a")
                 if r.message.name != "metadata.version"}
    assert finalized == expected


def test_eligible_leader_replicas_before_4_0_iv1_are_refused(tmp_path: Path) -> None:
    """Kafka's formatter checks the dependency (Feature.validateVersion)."""
    with pytest.raises(FormatError, match=r"^eligible\.leader\.replicas\.version could not be "
                       r"set to 1 because it depends on metadata\.version level 23$"):
        format_storage(FormatRequest(_config(tmp_path), "q1w2e3r4t5y6u7i8o9p0",
                                     QuorumMode.STANDALONE,
                                     release_version=parse_release_version("3.9-IV0"),
                                     features=(("eligible.leader.replicas.version", 1),)))


def test_a_transaction_version_past_2_is_refused(tmp_path: Path) -> None:
    with pytest.raises(FormatError, match=r"unsupported transaction\.version level 3"):
        format_storage(FormatRequest(_config(tmp_path), "q1w2e3r4t5y6u7i8o9p0",
                                     QuorumMode.STANDALONE,
                                     features=(("transaction.version", 3),)))
