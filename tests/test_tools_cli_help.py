"""Every command's ``--help`` works without a cluster and shows flags as plain flags.

A new user reads ``--help`` before having any bootstrap address: the group callbacks that
check ``--bootstrap-controller`` must not run first, and a boolean flag takes no value, so
its help line must not show a ``<bool>`` placeholder.
"""

from __future__ import annotations

import subprocess
import sys

import pytest
import typer
from typer.testing import CliRunner

from pykraft.cli.main import app


def _command_paths() -> list[tuple[str, ...]]:
    """The path of every group and command under ``pykraft``, the root included."""
    root = typer.main.get_command(app)
    paths: list[tuple[str, ...]] = []

    def walk(command: typer.core.TyperCommand | typer.core.TyperGroup,
             path: tuple[str, ...]) -> None:
        paths.append(path)
        if isinstance(command, typer.core.TyperGroup):
            for name, sub in sorted(command.commands.items()):
                assert isinstance(sub, typer.core.TyperCommand | typer.core.TyperGroup)
                walk(sub, (*path, name))

    assert isinstance(root, typer.core.TyperGroup)
    walk(root, ())
    return paths


PATHS = _command_paths()


def test_the_tree_holds_the_commands_users_met_the_defects_in() -> None:
    assert {("metadata-quorum", "describe"), ("features", "describe"),
            ("storage", "format"), ("cluster", "up")} <= set(PATHS)


@pytest.mark.parametrize("path", PATHS, ids=lambda p: " ".join(p) or "pykraft")
def test_help_needs_no_cluster_and_shows_flags_plainly(path: tuple[str, ...]) -> None:
    result = CliRunner().invoke(app, [*path, "--help"])
    assert result.exit_code == 0, result.output
    assert "Usage:" in result.stdout
    assert "<bool>" not in result.stdout


def test_cluster_up_secure_help_starts_nothing() -> None:
    result = CliRunner().invoke(app, ["cluster", "up", "--secure", "--help"])
    assert result.exit_code == 0, result.output
    assert "--secure" in result.stdout and "SASL_SSL" in result.stdout


def test_a_flag_is_listed_without_a_value_placeholder() -> None:
    result = CliRunner().invoke(app, ["metadata-quorum", "describe", "--help"])
    lines = [line for line in result.stdout.splitlines() if line.strip().startswith("--")]
    assert lines, result.stdout
    flags = {line.split()[0]: line for line in lines}
    assert "<" not in flags["--status"]
    assert "<float>" in flags["--timeout"]


@pytest.mark.parametrize(("args", "message"), [
    (["metadata-quorum", "describe", "--status"],
     "exactly one of --bootstrap-controller and --bootstrap-server is required"),
    (["features", "describe"],
     "exactly one of --bootstrap-controller and --bootstrap-server is required"),
])
def test_a_command_still_needs_its_bootstrap_address(args: list[str], message: str) -> None:
    result = CliRunner().invoke(app, args)
    assert (result.exit_code, result.stderr) == (1, f"Error: {message}\n")


def test_version_prints_the_version_alone() -> None:
    """Kafka's tools' ``--version``: the version on stdout, exit 0, nothing else run."""
    from pykraft import __version__

    result = CliRunner().invoke(app, ["--version"])
    assert (result.exit_code, result.stdout) == (0, f"{__version__}\n")


#: Modules whose import costs most of a second or more: the CLI loads them with the
#: command that needs them, so ``--help`` and the light tools start at once.
HEAVY_MODULES = ("pykraft.messages.kafka", "pykraft.chaos.run", "pykraft.tools.local_cluster",
                 "pykraft.runtime", "pykraft.records.metadata_records", "pykraft.sim.runner",
                 "pykraft.image", "rich.console", "pyspark", "cryptography")


def test_the_command_tree_imports_no_heavy_module() -> None:
    """Building the whole command tree (what ``--help`` of any command does) imports no
    protocol schema, runtime, chaos or simulator module."""
    probe = ("import sys, typer; from pykraft.cli.main import app; typer.main.get_command(app);"
             "print('\\n'.join(sorted(sys.modules)))")
    loaded = subprocess.run([sys.executable, "-c", probe], check=True, capture_output=True,
                            text=True).stdout.split()
    assert [m for m in loaded if m.startswith(HEAVY_MODULES)] == []
