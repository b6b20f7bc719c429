"""``metadata-quorum`` without a network: the new controller's identity from its config,
Kafka's output lines, argument checks and the describe layouts for a dynamic quorum."""

from __future__ import annotations

import json
import re
import uuid
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from pykraft.cli.main import app
from pykraft.config.server import Endpoint
from pykraft.errors import ConfigError, StorageError
from pykraft.ids import ZERO_UUID, random_uuid, uuid_to_str
from pykraft.storage.meta_properties import MetaProperties, write_meta_properties
from pykraft.tools.quorum_tool import (
    ControllerIdentity,
    QuorumInfo,
    QuorumToolError,
    Replica,
    added_message,
    as_json,
    controller_identity,
    parse_bootstrap,
    parse_controller_id,
    parse_directory_id,
    removed_message,
    replication_rows,
    status_lines,
)

DIRECTORY_ID = uuid.UUID("6b2a1f4e-9d3c-4b5a-8e7f-1a2b3c4d5e6f")


def _format(directory: Path, directory_id: uuid.UUID | None = DIRECTORY_ID) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    write_meta_properties(directory / "meta.properties",
                          MetaProperties(1, 4, "MkU3OEVBNTcwNTJENDM2Qg", directory_id))


def _props(tmp_path: Path, **overrides: str) -> dict[str, str]:
    props = {
        "process.roles": "controller",
        "node.id": "4",
        "listeners": "CONTROLLER://127.0.0.1:9093",
        "controller.listener.names": "CONTROLLER",
        "log.dirs": str(tmp_path / "data"),
    }
    props.update(overrides)
    return {k: v for k, v in props.items() if v != "<unset>"}


# -- the new controller's identity ----------------------------------------------------------

def test_identity_reads_node_id_directory_id_and_bound_listener(tmp_path: Path) -> None:
    _format(tmp_path / "data")
    identity = controller_identity(_props(tmp_path))
    assert identity == ControllerIdentity(4, DIRECTORY_ID,
                                          (Endpoint("CONTROLLER", "127.0.0.1", 9093),))


def test_identity_prefers_metadata_log_dir_and_advertised_listener(tmp_path: Path) -> None:
    _format(tmp_path / "meta")
    identity = controller_identity(_props(
        tmp_path, **{"metadata.log.dir": str(tmp_path / "meta"),
                     "listeners": "CONTROLLER://:9093,CTL2://0.0.0.0:9094",
                     "advertised.listeners": "CONTROLLER://c4.example:19093",
                     "controller.listener.names": "controller,CTL2"}))
    assert identity.endpoints == (Endpoint("CONTROLLER", "c4.example", 19093),
                                  Endpoint("CTL2", "0.0.0.0", 9094))


def test_identity_empty_host_means_localhost(tmp_path: Path) -> None:
    _format(tmp_path / "data")
    identity = controller_identity(_props(tmp_path, listeners="CONTROLLER://:9093"))
    assert identity.endpoints == (Endpoint("CONTROLLER", "localhost", 9093),)


@pytest.mark.parametrize(("overrides", "message"), [
    ({"node.id": "<unset>"}, "node.id not found in configuration file. Is this a valid "
                             "controller configuration file?"),
    ({"node.id": "-1"}, "node.id was negative in configuration file."),
    ({"node.id": "four"}, "invalid value 'four' for node.id"),
    ({"process.roles": "broker"}, "process.roles did not contain 'controller'"),
    ({"process.roles": "<unset>"}, "process.roles did not contain 'controller'"),
    ({"log.dirs": "<unset>"}, "Neither metadata.log.dir nor log.dirs were found."),
    ({"controller.listener.names": "<unset>"}, "controller.listener.names was not found."),
    ({"controller.listener.names": "CTL"},
     "Cannot find information about controller listener name: CTL"),
])
def test_identity_refuses_a_config_that_is_not_a_controller_s(
    tmp_path: Path, overrides: dict[str, str], message: str,
) -> None:
    _format(tmp_path / "data")
    with pytest.raises(ConfigError, match=re.escape(message)):
        controller_identity(_props(tmp_path, **overrides))


def test_identity_needs_a_formatted_metadata_directory(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"Unable to read meta\.properties from"):
        controller_identity(_props(tmp_path))
    _format(tmp_path / "data", directory_id=None)
    with pytest.raises(ConfigError, match="No directory id found in"):
        controller_identity(_props(tmp_path))


def test_identity_reports_a_corrupt_meta_properties(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "meta.properties").write_text("version=1\nnode.id=x\n")
    with pytest.raises(StorageError, match=r"node\.id 'x' is not an integer"):
        controller_identity(_props(tmp_path))


# -- Kafka's lines --------------------------------------------------------------------------

def test_added_and_removed_lines_are_kafka_s() -> None:
    identity = ControllerIdentity(3, DIRECTORY_ID, (Endpoint("CONTROLLER", "h", 9093),
                                                    Endpoint("C2", "::1", 9094)))
    text = uuid_to_str(DIRECTORY_ID)
    assert added_message(identity, dry_run=False) == (
        f"Added controller 3 with directory id {text} and endpoints: "
        "CONTROLLER://h:9093, C2://[::1]:9094")
    assert added_message(identity, dry_run=True).startswith("DRY RUN of adding controller 3 ")
    assert removed_message(3, DIRECTORY_ID, dry_run=False) == (
        f"Removed  KRaft controller 3 with directory id {text}")
    assert removed_message(3, DIRECTORY_ID, dry_run=True) == (
        f"DRY RUN of removing  KRaft controller 3 with directory id {text}")


def test_remove_arguments_are_checked_as_kafka_does() -> None:
    with pytest.raises(QuorumToolError, match="Invalid negative --controller-id: -2"):
        parse_controller_id(-2)
    with pytest.raises(QuorumToolError, match="Failed to parse --controller-directory-id"):
        parse_directory_id("not-a-uuid")


@given(st.uuids())
def test_directory_id_text_round_trips(value: uuid.UUID) -> None:
    assert parse_directory_id(uuid_to_str(value)) == value


def test_bootstrap_is_a_comma_separated_list() -> None:
    assert parse_bootstrap("a:1, [::1]:2,") == (("a", 1), ("::1", 2))
    with pytest.raises(QuorumToolError, match="expected host:port"):
        parse_bootstrap("a:1,b")
    with pytest.raises(QuorumToolError, match="names no host:port"):
        parse_bootstrap(" , ")


# -- describe layouts for a dynamic quorum --------------------------------------------------

def _dynamic_info() -> QuorumInfo:
    ids = {n: random_uuid() for n in (1, 2, 4)}
    voters = tuple(Replica(n, uuid_to_str(ids[n]), 40 - n, 1000, 900) for n in (1, 2))
    return QuorumInfo("cid", 1, 7, 39, voters, (Replica(4, uuid_to_str(ids[4]), 10, 990, -1),),
                      {1: ("CONTROLLER://h:1",), 2: ("CONTROLLER://h:2",)})


def test_status_shows_directory_ids_of_voters_and_observers() -> None:
    info = _dynamic_info()
    lines = status_lines(info)
    v1, v2 = info.voters
    assert lines[6] == (
        f'CurrentVoters:          [{{"id": 1, "directoryId": "{v1.directory_id}", '
        f'"endpoints": ["CONTROLLER://h:1"]}}, {{"id": 2, "directoryId": '
        f'"{v2.directory_id}", "endpoints": ["CONTROLLER://h:2"]}}]')
    assert lines[7] == (f'CurrentObservers:       [{{"id": 4, "directoryId": '
                        f'"{info.observers[0].directory_id}"}}]')
    assert lines[4] == "MaxFollowerLag:         1"


def test_status_shows_an_observer_s_endpoints_when_the_answer_has_them() -> None:
    """Kafka looks up every replica's endpoints by id, observers included: here controller
    2 under a new directory id observes while its old disk is still the voter."""
    info = _dynamic_info()
    again = Replica(2, uuid_to_str(random_uuid()), 10, 990, -1)
    lines = status_lines(QuorumInfo(info.cluster_id, info.leader_id, info.leader_epoch,
                                    info.high_watermark, info.voters, (again,),
                                    info.endpoints))
    assert lines[7] == (f'CurrentObservers:       [{{"id": 2, "directoryId": '
                        f'"{again.directory_id}", "endpoints": ["CONTROLLER://h:2"]}}]')


def test_replication_rows_carry_directory_ids_and_status() -> None:
    info = _dynamic_info()
    rows = replication_rows(info, human_readable=False)
    assert [(r[0], r[1], r[6]) for r in rows] == [
        ("1", info.voters[0].directory_id, "Leader"),
        ("2", info.voters[1].directory_id, "Follower"),
        ("4", info.observers[0].directory_id, "Observer")]
    assert rows[2][3] == "29"  # lag = leader LEO 39 - observer LEO 10


def test_json_directory_id_is_null_only_for_a_static_voter() -> None:
    info = _dynamic_info()
    static = Replica(9, uuid_to_str(ZERO_UUID), 1, -1, -1)
    parsed = json.loads(as_json(QuorumInfo(
        info.cluster_id, info.leader_id, info.leader_epoch, info.high_watermark,
        (*info.voters, static), info.observers, info.endpoints)))
    assert [v["directoryId"] for v in parsed["voters"]] == [
        info.voters[0].directory_id, info.voters[1].directory_id, None]
    assert parsed["observers"][0]["directoryId"] == info.observers[0].directory_id
    assert parsed["voters"][0]["endpoints"] == ["CONTROLLER://h:1"]


# -- the CLI's own checks (no server needed) ------------------------------------------------

def _run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, ["metadata-quorum", *args])
    return result.exit_code, result.stdout, result.stderr


def test_add_controller_needs_the_new_controller_s_config() -> None:
    code, _, err = _run("--bootstrap-controller", "127.0.0.1:1", "add-controller")
    assert code == 1
    assert "You must supply the configuration file of the controller you are adding" in err


def test_command_config_must_exist(tmp_path: Path) -> None:
    code, _, err = _run("--bootstrap-controller", "127.0.0.1:1", "--command-config",
                        str(tmp_path / "missing.properties"), "add-controller")
    assert code == 1
    assert f"Properties file {tmp_path / 'missing.properties'} does not exist." in err


def test_add_controller_dry_run_prints_without_contacting_anyone(tmp_path: Path) -> None:
    _format(tmp_path / "data")
    config = tmp_path / "c4.properties"
    config.write_text("".join(f"{k}={v}\n" for k, v in _props(tmp_path).items()))
    code, out, _ = _run("--bootstrap-controller", "127.0.0.1:1", "--command-config",
                        str(config), "add-controller", "--dry-run")
    assert code == 0
    assert out == (f"DRY RUN of adding controller 4 with directory id "
                   f"{uuid_to_str(DIRECTORY_ID)} and endpoints: CONTROLLER://127.0.0.1:9093\n")


def test_add_controller_takes_the_config_as_its_own_option_too(tmp_path: Path) -> None:
    _format(tmp_path / "data")
    config = tmp_path / "c4.properties"
    config.write_text("".join(f"{k}={v}\n" for k, v in _props(tmp_path).items()))
    code, out, _ = _run("--bootstrap-controller", "127.0.0.1:1", "add-controller", "--config",
                        str(config), "--dry-run")
    assert code == 0 and out.startswith("DRY RUN of adding controller 4 ")
    code, _, err = _run("--bootstrap-controller", "127.0.0.1:1", "add-controller", "--config",
                        str(tmp_path / "missing.properties"))
    assert code == 1 and "does not exist" in err


def test_remove_controller_dry_run_and_bad_arguments() -> None:
    text = uuid_to_str(DIRECTORY_ID)
    code, out, _ = _run("--bootstrap-controller", "127.0.0.1:1", "remove-controller",
                        "-i", "3", "-d", text, "--dry-run")
    assert (code, out) == (0, f"DRY RUN of removing  KRaft controller 3 with directory id "
                              f"{text}\n")
    code, _, err = _run("--bootstrap-controller", "127.0.0.1:1", "remove-controller",
                        "--controller-id", "-1", "--controller-directory-id", text)
    assert code == 1 and "Invalid negative --controller-id: -1" in err


def test_describe_status_refuses_human_readable() -> None:
    code, _, err = _run("--bootstrap-controller", "127.0.0.1:1", "describe", "--status",
                        "--human-readable")
    assert code == 1
    assert "--human-readable is only supported along with --replication" in err
