"""A tool pointed at a port where nothing listens says so at once.

A refused connection is a definite answer (unlike a timeout or an election in progress): when
every bootstrap controller refuses, the tools fail with ``Connection to host:port refused``
and exit 1 instead of retrying until their deadline. The long ``--timeout`` below would
make a retrying tool outlast the test's own timeout.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pykraft.cli.main import app
from pykraft.ids import random_uuid
from pykraft.storage.meta_properties import MetaProperties, write_meta_properties

pytestmark = pytest.mark.timeout(10)


@pytest.fixture
def closed_ports() -> Iterator[list[int]]:
    """Two ports bound but not listening: connections to them are refused, and nobody
    else can take them while the test runs."""
    sockets = [socket.socket() for _ in range(2)]
    for sock in sockets:
        sock.bind(("127.0.0.1", 0))
    yield [sock.getsockname()[1] for sock in sockets]
    for sock in sockets:
        sock.close()


def _controller_config(tmp_path: Path) -> Path:
    """A new controller's configuration: add-controller reads its directory id first."""
    data = tmp_path / "data"
    data.mkdir()
    write_meta_properties(data / "meta.properties",
                          MetaProperties(1, 4, "MkU3OEVBNTcwNTJENDM2Qg", random_uuid()))
    config = tmp_path / "c4.properties"
    config.write_text("process.roles=controller\nnode.id=4\ncontroller.listener.names="
                      f"CONTROLLER\nlisteners=CONTROLLER://127.0.0.1:9999\nlog.dirs={data}\n")
    return config


@pytest.mark.parametrize("command", [
    ["metadata-quorum", "--bootstrap-controller", "{bootstrap}", "describe", "--status",
     "--timeout", "60"],
    ["metadata-quorum", "--bootstrap-controller", "{bootstrap}", "describe", "--replication",
     "--timeout", "60"],
    ["metadata-quorum", "--bootstrap-controller", "{bootstrap}", "remove-controller",
     "--controller-id", "3", "--controller-directory-id", "MkU3OEVBNTcwNTJENDM2Qg",
     "--timeout", "60"],
    ["metadata-quorum", "--bootstrap-controller", "{bootstrap}", "--command-config",
     "{config}", "add-controller", "--timeout", "60"],
    ["features", "--bootstrap-controller", "{bootstrap}", "describe", "--timeout", "60"],
    ["features", "--bootstrap-controller", "{bootstrap}", "upgrade", "--feature",
     "kraft.version=1", "--timeout", "60"],
], ids=["status", "replication", "remove-controller", "add-controller", "features describe",
        "features upgrade"])
def test_every_bootstrap_controller_refusing_fails_at_once(
    command: list[str], closed_ports: list[int], tmp_path: Path,
) -> None:
    bootstrap = ",".join(f"127.0.0.1:{port}" for port in closed_ports)
    config = str(_controller_config(tmp_path))
    args = [word.format(bootstrap=bootstrap, config=config) for word in command]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 1, result.output
    assert result.stderr == ("Error: " + "; ".join(
        f"Connection to 127.0.0.1:{port} refused" for port in closed_ports) + "\n")
