"""A listener that runs out of file descriptors on accept (EMFILE) keeps its process alive,
logs it, serves the connections it holds, and accepts again once some close; on uvloop and
on asyncio's loop."""

from __future__ import annotations

import asyncio
import socket
import struct
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent.parent / "integration"))
from security_harness import request_frame

from pykraft.protocol.apis import ApiKey
from pykraft.testing.connections import flood

OPEN_FILES = 64
FLOOD = 150
DEADLINE_S = 30.0
API_VERSIONS = request_frame(ApiKey.API_VERSIONS, 3, client_software_name="t",
                             client_software_version="1")


@pytest.fixture(params=["uvloop", "asyncio"])
def starved(request: pytest.FixtureRequest, tmp_path: Path
            ) -> Iterator[tuple[subprocess.Popen[str], int, Path]]:
    log = tmp_path / "listener.log"
    with log.open("w") as errors:
        process = subprocess.Popen(
            [sys.executable, str(Path(__file__).parent / "starved_listener.py"),
             str(OPEN_FILES), request.param],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=errors, text=True)
    try:
        assert process.stdout is not None
        yield process, int(process.stdout.readline()), log
    finally:
        process.kill()
        process.wait(10)


def _answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=5.0) as sock:
            sock.sendall(API_VERSIONS)
            header = sock.recv(4)
            return len(header) == 4 and struct.unpack(">i", header)[0] > 0
    except OSError:
        return False


def test_accept_out_of_descriptors_is_waited_out(
        starved: tuple[subprocess.Popen[str], int, Path]) -> None:
    process, port, log = starved
    held = asyncio.run(flood("127.0.0.1", port, FLOOD, 3.0))
    try:
        assert held  # the process took what it could, the kernel queued more
        deadline = time.monotonic() + DEADLINE_S
        while "accept_failed" not in log.read_text():
            assert process.poll() is None, log.read_text()
            assert time.monotonic() < deadline, "no accept failed for lack of descriptors"
            time.sleep(0.05)
    finally:
        for sock in held:
            sock.close()
    deadline = time.monotonic() + DEADLINE_S
    while not _answers(port):  # accepting again once descriptors are free
        assert process.poll() is None, log.read_text()
        assert time.monotonic() < deadline, "not accepting again"
    assert process.poll() is None
    assert "Traceback" not in log.read_text()
